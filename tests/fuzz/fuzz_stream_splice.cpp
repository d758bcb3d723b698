// routing.on_stall: continue (gateway/StreamSplice.hpp): one client stream made of two upstream
// streams, the first broken at a fuzzer-chosen byte, the second of another (or the same) format.
// Input: [client | first << 4] [second] [cut hi] [cut lo] [upstream bytes]; bytes before the cut
// go to the first attempt's translator, the rest to the continuation's when the first could be
// continued, else the stream is failed. Checks: no crash; the client stream is ended after
// finish() (or the failure); every data line is JSON ([DONE] aside); one start event for the
// formats that have one (Anthropic message_start, Responses response.created).
#include <string>

#include "FuzzUtil.hpp"
#include "gateway/StreamSplice.hpp"
#include "providers/Translate.hpp"

using namespace sluice;

namespace {

std::unique_ptr<providers::StreamTranslator> attempt(gateway::StreamSplice& s, providers::Format client,
                                                     providers::Format upstream) {
  providers::TranslateContext tc;
  tc.include_usage = true;
  tc.created = 1700000000;
  tc.wrap_encoder = [&s](std::unique_ptr<providers::StreamEncoder> fresh) {
    return s.encoderFor(std::move(fresh), {});
  };
  return providers::makeStreamTranslator(client, upstream, tc);
}

std::size_t lineCount(const std::string& out, std::string_view line) {
  std::size_t n = 0, at = 0;
  while (at < out.size()) {
    std::size_t end = out.find('\n', at);
    if (end == std::string::npos) end = out.size();
    if (std::string_view(out).substr(at, end - at) == line) ++n;
    at = end + 1;
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const auto client = fuzz::formatAt(data[0] & 0x07);
  const auto first = fuzz::formatAt(data[0] >> 4);
  const auto second = fuzz::formatAt(data[1]);
  const std::string_view payload(reinterpret_cast<const char*>(data) + 4, size - 4);
  const std::size_t cut = std::min<std::size_t>((std::size_t(data[2]) << 8) | data[3], payload.size());

  gateway::StreamSplice s;
  std::string out;
  auto a = attempt(s, client, first);
  const bool fed = a->feed(payload.substr(0, cut), out);
  const bool held = s.takeHeldError().has_value();
  if (fed && (s.continuable() || held)) {
    s.broke(10);
    a.reset();
    auto b = attempt(s, client, second);
    if (b->feed(payload.substr(cut), out) && !s.takeHeldError()) {
      b->finish(out);
    } else {
      s.fail(providers::ApiError{502, providers::ErrorKind::Api, "broken", {}, {}}, out);
    }
    if (!b->ended()) fuzz::fail("continued client stream not ended", out);
  } else {
    s.fail(providers::ApiError{502, providers::ErrorKind::Api, "broken", {}, {}}, out);
    if (!a->ended()) fuzz::fail("failed client stream not ended", out);
  }
  fuzz::checkSseOutput(out, "spliced stream event is not well-formed JSON SSE");
  if (lineCount(out, "event: message_start") > 1) fuzz::fail("two message_start events", out);
  if (lineCount(out, "event: response.created") > 1) fuzz::fail("two response.created events", out);
  return 0;
}
