// Small JSON text helpers: hand-built output on hot paths (log lines, SSE events), where
// building a boost::json::value first would allocate, and reading the JSON-text columns of the
// store. Pure functions; thread-safe.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

// Appends s as a JSON string literal (quoted, escaped), copying runs of plain bytes in bulk.
// The output is always valid UTF-8: a byte that does not start a well-formed sequence (a body
// cut mid-character, a non-UTF-8 upstream) becomes U+FFFD.
void appendJsonString(std::string& out, std::string_view s);

// The non-empty strings of a JSON array text (`["a","b"]`); other elements, and text that is
// not an array, give nothing.
std::vector<std::string> jsonStringArray(std::string_view text);

}  // namespace sluice
