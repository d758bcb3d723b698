// Stream translation (providers/Translate.hpp makeStreamTranslator) for every (client,
// upstream) format pair: arbitrary upstream bytes in fuzzer-chosen splits, then finish().
// Input: [client | upstream << 4] [split] [upstream bytes]; bit 3 of the first byte asks for
// the usage chunk. Checks: no crash; the client stream is complete after finish() and every
// data line is JSON ([DONE] aside); events and usage do not depend on the split.
#include <string>

#include "FuzzUtil.hpp"
#include "providers/Translate.hpp"

using namespace sluice;

namespace {

struct Run {
  std::string out;
  providers::Usage usage;
  bool ended = false;
};

Run run(providers::Format client, providers::Format upstream, bool include_usage, std::string_view payload,
        std::uint8_t split) {
  providers::TranslateContext ctx;
  ctx.include_usage = include_usage;
  ctx.created = 1700000000;
  auto t = providers::makeStreamTranslator(client, upstream, ctx);
  Run r;
  fuzz::feedSplit(payload, split, [&](std::string_view chunk) { return t->feed(chunk, r.out); });
  t->finish(r.out);
  r.usage = t->usage();
  r.ended = t->ended();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto client = fuzz::formatAt(data[0] & 0x07);
  const auto upstream = fuzz::formatAt(data[0] >> 4);
  const bool include_usage = data[0] & 0x08;
  const std::string_view payload(reinterpret_cast<const char*>(data) + 2, size - 2);

  Run split = run(client, upstream, include_usage, payload, data[1]);
  if (!split.ended) fuzz::fail("client stream not ended after finish()", split.out);
  fuzz::checkSseOutput(split.out, "translated stream event is not well-formed JSON SSE");
  Run whole = run(client, upstream, include_usage, payload, 0xFF);
  if (fuzz::sseEvents(fuzz::maskRandomIds(split.out)) != fuzz::sseEvents(fuzz::maskRandomIds(whole.out)))
    fuzz::fail("translated stream depends on how the upstream stream is split",
               "split:\n" + split.out + "\nwhole:\n" + whole.out);
  if (split.usage.input != whole.usage.input || split.usage.output != whole.usage.output ||
      split.usage.cached != whole.usage.cached || split.usage.cache_creation != whole.usage.cache_creation ||
      split.usage.reasoning != whole.usage.reasoning)
    fuzz::fail("stream usage depends on how the upstream stream is split");
  return 0;
}
