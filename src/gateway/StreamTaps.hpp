// Stream taps: what the relay runs a same-format stream through. Each passes the upstream's
// SSE events on (the OpenAI one removes what the gateway itself asked for) and reads the
// token usage on the way, so streams are counted without buffering them. One per attempt;
// not thread-safe.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "gateway/Wire.hpp"
#include "providers/Translate.hpp"
#include "providers/openai/StreamFilter.hpp"

namespace sluice::redact {
class TokenCipher;
class SealMemo;
struct RestoreStats;
}  // namespace sluice::redact

namespace sluice::gateway {

using Usage = providers::openai::Usage;

class StreamTap {
 public:
  virtual ~StreamTap() = default;
  // Appends what the client gets to `out`; false when an event grows past the bound.
  virtual bool feed(std::string_view in, std::string& out) = 0;
  // The upstream ended cleanly: appends whatever the client still needs (an unfinished event's
  // bytes; a translated stream's closing events).
  virtual void finish(std::string& out) = 0;
  virtual Usage usage() const = 0;
};

// strip_usage: OpenAI only; the gateway added stream_options.include_usage itself.
std::unique_ptr<StreamTap> makeStreamTap(Wire w, bool strip_usage);
// The bytes as they come, read for nothing (speech, a file's content, the rest of the OpenAI
// API's streams): no usage.
std::unique_ptr<StreamTap> makeByteTap();
// A same-format OpenAI Chat tap that also restores redaction tokens (content and tool-call
// arguments, split across events at any byte), parsing only the events that may hold one.
// memo (optional): the tokens the request sealed, put back without decrypting (Restorer.hpp).
std::unique_ptr<StreamTap> makeRestoringChatTap(bool strip_usage, std::shared_ptr<const redact::TokenCipher> cipher,
                                                std::shared_ptr<redact::RestoreStats> stats,
                                                std::shared_ptr<const redact::SealMemo> memo = nullptr);
// Restores redaction tokens in an OpenAI Chat stream as the client gets it (whole events, as a
// tap gives them), parsing only the events that may hold one; the bytes of a token split across
// events are held (at most a token's length) and given out with the choice's finish chunk, in a
// chunk of their own before [DONE], or at finish. The redaction stage's, one per answer.
class ChatStreamRestorer {
 public:
  virtual ~ChatStreamRestorer() = default;
  // Rewrites `out` (whole events, and at the end of the stream an unfinished one) in place.
  virtual void restore(std::string& out) = 0;
  // The stream ended: appends what is still held, and adds the counts to the stats.
  virtual void finish(std::string& out) = 0;
};
std::unique_ptr<ChatStreamRestorer> makeChatStreamRestorer(std::shared_ptr<const redact::TokenCipher> cipher,
                                                           std::shared_ptr<redact::RestoreStats> stats,
                                                           std::shared_ptr<const redact::SealMemo> memo = nullptr);
// A tap that translates an upstream stream of another format into the client's.
std::unique_ptr<StreamTap> makeTranslatingTap(std::unique_ptr<providers::StreamTranslator> t);
Usage fromCanonical(const providers::Usage& u);

// Usage from a whole (non-streamed) response body in format w.
bool usageFromBody(Wire w, std::string_view body, Usage& usage);

}  // namespace sluice::gateway
