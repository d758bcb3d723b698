// OpenAI SSE stream filter (providers/openai/StreamFilter.hpp): arbitrary upstream bytes in
// fuzzer-chosen splits, usage stripping on or off. Input: [flags] [split] [payload].
// Checks: no crash; the client gets the same SSE events (stray blank lines aside) and the same usage whatever the split
// (compared with the payload fed in one piece); without stripping the bytes pass unchanged.
#include <string>

#include "FuzzUtil.hpp"
#include "providers/openai/StreamFilter.hpp"

using sluice::providers::openai::StreamFilter;

namespace {

struct Run {
  std::string out;
  sluice::providers::openai::Usage usage;
};

Run run(bool strip, std::string_view payload, std::uint8_t split) {
  StreamFilter f(strip);
  Run r;
  sluice::fuzz::feedSplit(payload, split, [&](std::string_view chunk) { return f.feed(chunk, r.out); });
  r.out.append(f.leftover());
  r.usage = f.usage();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const bool strip = data[0] & 1;
  const std::string_view payload(reinterpret_cast<const char*>(data) + 2, size - 2);

  Run split = run(strip, payload, data[1]);
  Run whole = run(strip, payload, 0xFF);
  if (sluice::fuzz::sseEvents(split.out) != sluice::fuzz::sseEvents(whole.out))
    sluice::fuzz::fail("StreamFilter output depends on how the stream is split",
                                               "split:\n" + split.out + "\nwhole:\n" + whole.out);
  if (split.usage.prompt_tokens != whole.usage.prompt_tokens ||
      split.usage.completion_tokens != whole.usage.completion_tokens ||
      split.usage.cached_tokens != whole.usage.cached_tokens ||
      split.usage.cache_write_tokens != whole.usage.cache_write_tokens ||
      split.usage.reasoning_tokens != whole.usage.reasoning_tokens)
    sluice::fuzz::fail("StreamFilter usage depends on how the stream is split");
  if (!strip && whole.out != payload) sluice::fuzz::fail("StreamFilter changed bytes without strip_usage");

  sluice::providers::openai::Usage u;
  sluice::providers::openai::parseUsageFromBody(payload, u);
  return 0;
}
