// StreamFilter: passes an OpenAI-format SSE stream through event by event, reading the usage
// chunk on the way and, when the gateway added stream_options.include_usage on the client's
// behalf, removing what the client did not ask for (the usage chunk and "usage":null fields).
// One per stream; not thread-safe.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::providers::openai {

// The gateway's token counts of one answer, in OpenAI's sense: prompt_tokens includes the
// cache reads (cached_tokens) and writes (cache_write_tokens), completion_tokens includes the
// reasoning (reasoning_tokens).
struct Usage {
  std::int64_t prompt_tokens = -1;  // -1: not reported
  std::int64_t completion_tokens = -1;
  std::int64_t cached_tokens = 0;
  std::int64_t cache_write_tokens = 0;
  std::int64_t reasoning_tokens = 0;
  bool known() const { return prompt_tokens >= 0; }
};

// Reads usage from a usage JSON object text or a whole response body; false if none.
bool parseUsageFromBody(std::string_view body, Usage& usage);

class StreamFilter {
 public:
  explicit StreamFilter(bool strip_usage) : strip_usage_(strip_usage) {}

  // Feeds upstream bytes; appends what the client should get to `out` (complete events only;
  // an unfinished event is held back). Returns false when an event grows past kMaxEvent.
  bool feed(std::string_view in, std::string& out);
  // Bytes of an unfinished event at end of stream (passed on as they are).
  std::string_view leftover() const { return carry_; }

  const Usage& usage() const { return usage_; }
  bool sawDone() const { return saw_done_; }

  static constexpr std::size_t kMaxEvent = 4u << 20;

 private:
  void processRegion(std::string_view region, std::string& out);
  void processEvent(std::string_view ev, std::string& out);

  bool strip_usage_;
  Usage usage_;
  bool saw_done_ = false;
  std::string carry_;
};

}  // namespace sluice::providers::openai
