// ResponseCapture: the final Responses API `response` object of an answer, read from what the
// client gets (a native openai stream, or one the gateway translated; or a whole body), so the
// response stage can store it. Keeps at most one event (or body) of max_bytes; a bigger one is
// noted, not kept. Pure; not thread-safe (one per request).
#pragma once
#include <boost/json/object.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "providers/CodecUtil.hpp"

namespace sluice::gateway {

class ResponseCapture {
 public:
  explicit ResponseCapture(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // Each attempt's answer starts afresh.
  void start(bool stream);
  void feed(std::string_view bytes);
  void finish();

  // The response of the stream's response.completed / response.incomplete event, or of a whole
  // body that is a response object (with an id). Empty after take().
  std::optional<boost::json::object> take();
  bool tooLarge() const { return too_large_; }

 private:
  void noteEvent(std::string_view name, std::string_view data);

  std::size_t max_bytes_;
  bool stream_ = false;
  bool too_large_ = false;
  bool broken_ = false;  // the stream framing passed its bound: nothing more is read
  std::string whole_;
  providers::detail::SseSplitter split_;
  std::optional<boost::json::object> final_;
};

}  // namespace sluice::gateway
