// CodecUtil: helpers shared by the provider codecs: SSE framing, JSON field access with
// path-aware errors, and fast hand-built JSON text for stream events. Internal to providers/
// (mcp/ reads its servers' SSE answers with the same SseSplitter).
#pragma once
#include <boost/json/fwd.hpp>
#include <boost/json/memory_resource.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/system/error_code.hpp>

#include <memory>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "core/JsonText.hpp"

namespace boost::json {
class parser;  // held by pointer below; its header is heavy and only CodecUtil.cpp needs it
}  // namespace boost::json
#include "providers/Canonical.hpp"

// Returns the error of an std::optional<ApiError>-returning call, if any.
#define SLUICE_PROVIDERS_TRY(expr)   \
  do {                               \
    if (auto e_ = (expr)) return e_; \
  } while (0)

namespace sluice::providers::detail {

using sluice::appendJsonString;  // core/JsonText.hpp
void appendInt(std::string& out, std::int64_t v);

// The first `needle` in `hay` at or after `pos`, or npos. Built for the stream filters' short
// needles over one SSE event: string_view::find calls memchr once per occurrence of the needle's
// first character ('"' and the same letters are everywhere in JSON), and glibc's memmem sets up
// its two-way search per call (30% of the restoring tap in bench/protect_bench.cpp). This checks
// two of the needle's bytes at 16 positions at once (SSE2) and compares only where both agree.
std::size_t findBytes(std::string_view hay, std::string_view needle, std::size_t pos = 0);

// Splits an SSE byte stream into events, holding back at most one unfinished event.
// For each complete event calls handler(event_name, data) with `data` the joined data lines.
class SseSplitter {
 public:
  template <class Handler>
  bool feed(std::string_view in, Handler&& handler) {
    if (carry_.empty()) {
      auto end = lastEventEnd(in);
      forEach(in.substr(0, end), handler);
      carry_.assign(in.substr(end));
    } else {
      // Only the appended bytes (and the 3 before them) can complete an event.
      std::size_t from = carry_.size() > 3 ? carry_.size() - 3 : 0;
      carry_.append(in);
      auto end = lastEventEnd(std::string_view(carry_).substr(from));
      if (end != 0) {
        end += from;
        forEach(std::string_view(carry_).substr(0, end), handler);
        carry_.erase(0, end);
      }
    }
    return carry_.size() <= StreamDecoder::kMaxEvent;
  }
  std::size_t pending() const { return carry_.size(); }

 private:
  template <class Handler>
  void forEach(std::string_view region, Handler& handler) {
    std::size_t pos = 0;
    while (pos < region.size()) {
      auto end = nextEventEnd(region, pos);
      std::string_view name, data;
      if (parseEvent(region.substr(pos, end - pos), name, data)) handler(name, data);
      pos = end;
    }
  }
  bool parseEvent(std::string_view ev, std::string_view& name, std::string_view& data);
  static std::size_t nextEventEnd(std::string_view s, std::size_t pos);
  static std::size_t lastEventEnd(std::string_view s);

  std::string carry_;
  std::string joined_;  // data of a multi-line event
};

// Parses one stream event after another with the same parser, so its working memory is
// allocated once per stream rather than once per event (measured: the per-event parser set-up
// was a visible share of translated streaming). The value lives in `sp` (a per-event arena).
class EventParser {
 public:
  EventParser();
  ~EventParser();
  boost::json::value parse(std::string_view text, boost::system::error_code& ec, boost::json::storage_ptr sp);

 private:
  std::unique_ptr<boost::json::parser> p_;
};

// Typed access to a JSON object's members; `path` names the object for error messages.
struct Fields {
  const boost::json::object& obj;
  std::string path;

  const boost::json::value* get(std::string_view key) const;  // null when absent or JSON null
  std::string sub(std::string_view key) const;                // "path.key"
  // Each returns an error when present with the wrong type; absent leaves `out` untouched.
  std::optional<ApiError> str(std::string_view key, std::string& out, bool required = false) const;
  std::optional<ApiError> num(std::string_view key, std::optional<double>& out) const;
  std::optional<ApiError> integer(std::string_view key, std::optional<std::int64_t>& out) const;
  std::optional<ApiError> boolean(std::string_view key, std::optional<bool>& out) const;
};

std::string indexPath(std::string_view base, std::size_t i);  // base[i]
std::optional<std::int64_t> asInt(const boost::json::value* v);
// Token counts added from untrusted usage objects: saturating, never overflowing.
inline std::int64_t addCounts(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
std::string_view asStr(const boost::json::value* v);  // empty when not a string

// Appends one turn {"role": role, items_key: items} to `turns`, or, when the last turn has the
// same role, appends the items to it: Anthropic and Gemini want alternating roles, so tool
// results followed by the user's text become one user turn.
void appendTurn(boost::json::array& turns, std::string_view role, std::string_view items_key, boost::json::array items);

// Parses `text` as JSON; on failure returns a 400 naming `what`.
std::optional<ApiError> parseJson(std::string_view text, boost::json::value& out, std::string_view what);

// Parses a data: URL "data:<mime>;base64,<data>"; false if `url` is not one.
bool parseDataUrl(std::string_view url, std::string& media_type, std::string& data);

// Stream-side rendering of an upstream error event that has no usable body.
ApiError upstreamStreamError(std::string message);

// An upstream error body that is not the provider's JSON: its first bytes (cut on a character
// boundary) or a generic line, for the error message.
std::string fallbackErrorMessage(std::string_view body, int status);

// The shell every provider's stream decoder shares: SSE framing, one JSON parser per stream,
// and the error event for malformed input. Subclasses handle each event's data in onData() and
// use parseObject() to read it.
class JsonEventDecoder : public StreamDecoder {
 public:
  bool feed(std::string_view bytes, StreamEventSink& sink) final {
    return sse_.feed(bytes, [&](std::string_view, std::string_view data) { onData(data, sink); });
  }
  std::size_t pending() const final { return sse_.pending(); }

 protected:
  virtual void onData(std::string_view data, StreamEventSink& sink) = 0;
  // The event's JSON object, stored in `arena` through `holder`; null (and an error event sent)
  // when the data is not a JSON object.
  const boost::json::object* parseObject(std::string_view data, boost::json::memory_resource& arena,
                                         boost::json::value& holder, StreamEventSink& sink);
  void emitError(ApiError err, StreamEventSink& sink);

  ApiError error_;  // the one an Error event points at

 private:
  SseSplitter sse_;
  EventParser parser_;
};

}  // namespace sluice::providers::detail
