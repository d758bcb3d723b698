// Same-format stream taps (gateway/StreamTaps.hpp): makeStreamTap for every Wire, arbitrary
// upstream bytes in fuzzer-chosen splits, then finish() and usage(). Input: [wire/flags]
// [split] [payload]. Checks: no crash; events and usage do not depend on the split; the
// Anthropic and Gemini taps pass every byte on unchanged. Also usageFromBody on the payload, and
// the OpenAI tap that restores redaction tokens (makeRestoringChatTap): no crash, and its
// events do not depend on the split either, nor differ from the plain tap followed by the
// redaction stage's restorer (makeChatStreamRestorer), as the gateway runs them.
#include <memory>
#include <string>

#include "FuzzUtil.hpp"
#include "gateway/StreamTaps.hpp"
#include "redact/Restorer.hpp"
#include "redact/TokenCipher.hpp"

using namespace sluice;

namespace {

struct Run {
  std::string out;
  gateway::Usage usage;
};

Run run(gateway::Wire w, bool strip, std::string_view payload, std::uint8_t split, bool restoring = false) {
  static const auto cipher = std::make_shared<const redact::TokenCipher>("fuzz-stream-tap-key-0123456789", "vk:1");
  auto tap = restoring ? gateway::makeRestoringChatTap(strip, cipher, std::make_shared<redact::RestoreStats>())
                       : gateway::makeStreamTap(w, strip);
  Run r;
  bool ok = fuzz::feedSplit(payload, split, [&](std::string_view chunk) { return tap->feed(chunk, r.out); });
  if (ok) tap->finish(r.out);
  r.usage = tap->usage();
  return r;
}

// As the gateway does it: the relay's plain tap, then the redaction stage's restorer on each
// piece the tap gave (gateway/stages/RedactionStage.cpp).
std::string composed(bool strip, std::string_view payload, std::uint8_t split) {
  static const auto cipher = std::make_shared<const redact::TokenCipher>("fuzz-stream-tap-key-0123456789", "vk:1");
  auto tap = gateway::makeStreamTap(gateway::Wire::OpenAI, strip);
  auto restorer = gateway::makeChatStreamRestorer(cipher, std::make_shared<redact::RestoreStats>());
  std::string all, piece;
  bool ok = fuzz::feedSplit(payload, split, [&](std::string_view chunk) {
    piece.clear();
    if (!tap->feed(chunk, piece)) return false;
    restorer->restore(piece);
    all += piece;
    return true;
  });
  if (ok) {
    piece.clear();
    tap->finish(piece);
    restorer->restore(piece);
    restorer->finish(piece);
    all += piece;
  }
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto w = fuzz::wires()[(data[0] & 0x7F) % fuzz::wires().size()];
  const bool strip = data[0] & 0x80;
  const std::string_view payload(reinterpret_cast<const char*>(data) + 2, size - 2);

  Run split = run(w, strip, payload, data[1]);
  Run whole = run(w, strip, payload, 0xFF);
  if (fuzz::sseEvents(split.out) != fuzz::sseEvents(whole.out))
    fuzz::fail("stream tap output depends on how the stream is split",
                                        "split:\n" + split.out + "\nwhole:\n" + whole.out);
  if (split.usage.prompt_tokens != whole.usage.prompt_tokens ||
      split.usage.completion_tokens != whole.usage.completion_tokens ||
      split.usage.cached_tokens != whole.usage.cached_tokens ||
      split.usage.cache_write_tokens != whole.usage.cache_write_tokens ||
      split.usage.reasoning_tokens != whole.usage.reasoning_tokens)
    fuzz::fail("stream tap usage depends on how the stream is split");
  if (w != gateway::Wire::OpenAI && whole.out != payload) fuzz::fail("pass-through tap changed the bytes");

  if (w == gateway::Wire::OpenAI) {
    Run rs = run(w, strip, payload, data[1], true);
    Run rw = run(w, strip, payload, 0xFF, true);
    if (fuzz::sseEvents(rs.out) != fuzz::sseEvents(rw.out))
      fuzz::fail("restoring tap output depends on how the stream is split", "split:\n" + rs.out + "\nwhole:\n" + rw.out);
    const std::string c = composed(strip, payload, data[1]);
    if (fuzz::sseEvents(c) != fuzz::sseEvents(rw.out))
      fuzz::fail("tap + restorer differs from the restoring tap", "composed:\n" + c + "\ntap:\n" + rw.out);
  }

  gateway::Usage u;
  gateway::usageFromBody(w, payload, u);
  return 0;
}
