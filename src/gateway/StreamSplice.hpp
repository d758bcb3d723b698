// StreamSplice: one client stream across the attempts that make it, for routing.on_stall:
// continue. A stream that stalls, is cut or reports an error after it began is resumed on the
// next candidate: that attempt is asked for the rest of the answer (Translate.hpp, Resume) and
// its events are written with the same client-format encoder, so the client reads one answer:
// one start, one role, the text in order, one finish, the usage of every attempt summed.
//
// Each attempt's stream translator writes through an encoder that encoderFor() gives it; they
// all lead to the one encoder made for the first attempt (with the stages' wrap, e.g. the
// restoring one). That encoder is watched on the way: the answer's text as the model wrote it
// (what the next attempt is given as the assistant's partial turn), whether a tool call began
// (a break inside one is not continued: its arguments cannot be resumed), the finish, usage.
// Attempts after the first lose their start (their usage is kept) and their reasoning (the
// client already has the answer's), and have their usage added to what came before.
//
// One per request; used on its worker only. Its encoders point at it and must not outlive it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "providers/Canonical.hpp"

namespace sluice::gateway {

class StreamSplice {
 public:
  using Wrap = std::function<std::unique_ptr<providers::StreamEncoder>(std::unique_ptr<providers::StreamEncoder>)>;

  // The encoder an attempt's translator writes through. `fresh` is the one made for it: the
  // first attempt's (wrapped by `wrap` when set) becomes the stream's; later ones are dropped.
  std::unique_ptr<providers::StreamEncoder> encoderFor(std::unique_ptr<providers::StreamEncoder> fresh,
                                                       const Wrap& wrap);

  // Whether the answer so far can be resumed: the stream began and has not ended, no tool call
  // began and no finish came.
  bool continuable() const;
  // The running attempt broke after the stream began; the next one continues it. Its usage is
  // kept: the input it reported, else `est_input`; the output it reported or its text's estimate
  // (4 bytes a token), whichever is more.
  void broke(std::int64_t est_input);
  // An attempt after the first is running (or is to be made).
  bool continuing() const { return breaks_ > 0; }
  int breaks() const { return breaks_; }

  // The answer's text so far, as the model wrote it (before any stage restored it).
  const std::string& text() const { return text_; }
  // The output tokens of the answer so far (reported or estimated), for the next max_tokens.
  std::int64_t outputSoFar() const;

  // An error event the upstream sent after the stream began, held back (not given to the
  // client) while the answer could still be continued; the relay treats it as a break.
  // Taken once: the next read has none until another arrives.
  std::optional<providers::ApiError> takeHeldError();

  // Ends the client's stream with the format's error event (nothing when it has ended).
  void fail(const providers::ApiError& err, std::string& out);
  // The usage of the answer: every attempt's, summed (known fields only).
  providers::Usage usage() const;

 private:
  class Encoder;
  friend class Encoder;
  void encode(const providers::StreamEvent& ev, std::string& out);
  std::int64_t estimate() const;  // the running attempt's output: its text, 4 bytes a token

  std::unique_ptr<providers::StreamEncoder> encoder_;  // the stream's; the first attempt's
  std::string text_;
  std::size_t attempt_bytes_ = 0;  // the running attempt's text and reasoning, for an estimate
  bool tool_begun_ = false;
  bool finished_ = false;
  bool content_ = false;             // text, reasoning or a tool call has been given to the client
  bool trim_leading_space_ = false;  // the text so far ends in a space the resume left out
  int breaks_ = 0;
  providers::Usage before_;   // the broken attempts', summed
  providers::Usage current_;  // the running attempt's, as it reported it
  std::optional<providers::ApiError> held_error_;
};

}  // namespace sluice::gateway
