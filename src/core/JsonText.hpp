// Small JSON text helpers for hand-built output on hot paths (log lines, SSE events), where
// building a boost::json::value first would allocate. Pure functions; thread-safe.
#pragma once
#include <string>
#include <string_view>

namespace sluice {

// Appends s as a JSON string literal (quoted, escaped), copying runs of plain bytes in bulk.
// The output is always valid UTF-8: a byte that does not start a well-formed sequence (a body
// cut mid-character, a non-UTF-8 upstream) becomes U+FFFD.
void appendJsonString(std::string& out, std::string_view s);

}  // namespace sluice
