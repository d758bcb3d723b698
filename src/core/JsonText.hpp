// Small JSON text helpers: hand-built output on hot paths (log lines, SSE events), where
// building a boost::json::value first would allocate, reading the JSON-text columns of the
// store, and the one parse every client- and upstream-derived JSON goes through (parseJson).
// Pure functions; thread-safe.
#pragma once
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

// How deep arrays and objects may nest in JSON the gateway reads. Boost.JSON's default (32) is
// below what real tool and structured-output schemas reach inside a request; the bound keeps
// the parser's stack, and every recursive walk of a parsed tree (schema translation, redaction,
// cache keys), small.
inline constexpr std::size_t kMaxJsonDepth = 256;

// Boost.JSON's defaults with max_depth = kMaxJsonDepth: for every json::parser made by hand.
boost::json::parse_options jsonParseOptions();

// json::parse with jsonParseOptions(). Past the limit ec is boost::json::error::too_deep.
boost::json::value parseJson(std::string_view text, boost::system::error_code& ec,
                             boost::json::storage_ptr sp = {});

// parseJson into a buffer of its own (on the caller's stack when it is a local), the heap only
// past kBytes: for a value read and dropped at once on a hot path (an upstream's stream event),
// where a malloc and a free per object, key and string cost more than the parse itself, and the
// tree is freed with the ScratchJson, without a walk. A value it returned must not outlive it;
// one parse per ScratchJson (a second one's tree is added to the same buffer).
class ScratchJson {
 public:
  static constexpr std::size_t kBytes = 4096;
  ScratchJson() = default;
  ScratchJson(const ScratchJson&) = delete;
  ScratchJson& operator=(const ScratchJson&) = delete;
  boost::json::value parse(std::string_view text, boost::system::error_code& ec) {
    return parseJson(text, ec, &mr_);
  }

 private:
  alignas(std::max_align_t) unsigned char buf_[kBytes];
  boost::json::monotonic_resource mr_{buf_, sizeof buf_};
};

bool isTooDeep(const boost::system::error_code& ec);
// "<what> is nested deeper than 256 levels ...": the message of a 400 for a too-deep body.
std::string tooDeepMessage(std::string_view what);

// Appends s as a JSON string literal (quoted, escaped), copying runs of plain bytes in bulk.
// The output is always valid UTF-8: a byte that does not start a well-formed sequence (a body
// cut mid-character, a non-UTF-8 upstream) becomes U+FFFD.
void appendJsonString(std::string& out, std::string_view s);

// The non-empty strings of a JSON array text (`["a","b"]`); other elements, and text that is
// not an array, give nothing.
std::vector<std::string> jsonStringArray(std::string_view text);

}  // namespace sluice
