#include "gateway/StreamSplice.hpp"

#include <algorithm>
#include <utility>

#include "providers/Translate.hpp"

namespace sluice::gateway {

namespace {

bool isSpace(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

// a + b where a is known (b unknown counts as 0); -1 when a is not known.
std::int64_t addKnown(std::int64_t a, std::int64_t b) {
  return a < 0 ? -1 : a + std::max<std::int64_t>(b, 0);
}
// a + b, each unknown counting as 0; -1 when neither is known.
std::int64_t addAny(std::int64_t a, std::int64_t b) {
  return a < 0 && b < 0 ? -1 : std::max<std::int64_t>(a, 0) + std::max<std::int64_t>(b, 0);
}

// Every count of `a` and `b`, added with `add`.
providers::Usage combine(const providers::Usage& a, const providers::Usage& b,
                         std::int64_t (*add)(std::int64_t, std::int64_t)) {
  providers::Usage s;
  s.input = add(a.input, b.input);
  s.output = add(a.output, b.output);
  s.cached = add(a.cached, b.cached);
  s.cache_creation = add(a.cache_creation, b.cache_creation);
  s.reasoning = add(a.reasoning, b.reasoning);
  return s;
}

}  // namespace

// What a translator holds: every call goes to the splice, which owns the stream's encoder.
class StreamSplice::Encoder final : public providers::StreamEncoder {
 public:
  explicit Encoder(StreamSplice& s) : s_(s) {}
  void encode(const providers::StreamEvent& ev, std::string& out) override { s_.encode(ev, out); }
  void finish(std::string& out) override {
    if (s_.encoder_) s_.encoder_->finish(out);
  }
  bool ended() const override { return !s_.encoder_ || s_.encoder_->ended(); }

 private:
  StreamSplice& s_;
};

std::unique_ptr<providers::StreamEncoder> StreamSplice::encoderFor(std::unique_ptr<providers::StreamEncoder> fresh,
                                                                   const Wrap& wrap) {
  if (!continuing()) {
    // The stream's first attempt (or one after a first that failed before anything reached the
    // client): it starts the client's stream afresh.
    encoder_ = wrap ? wrap(std::move(fresh)) : std::move(fresh);
    text_.clear();
    attempt_bytes_ = 0;
    tool_begun_ = finished_ = content_ = false;
    current_ = providers::Usage{};
    held_error_.reset();
  }
  return std::make_unique<Encoder>(*this);
}

bool StreamSplice::continuable() const {
  return encoder_ && !encoder_->ended() && !tool_begun_ && !finished_;
}

std::int64_t StreamSplice::estimate() const {
  return static_cast<std::int64_t>((attempt_bytes_ + 3) / 4);
}

void StreamSplice::broke(std::int64_t est_input) {
  providers::Usage u = current_;
  if (u.input < 0) u.input = std::max<std::int64_t>(est_input, 0);
  // A stream that broke may have reported only a start's placeholder (Anthropic's message_start
  // says 1): what it wrote is at least its text's estimate.
  u.output = std::max(u.output, estimate());
  before_ = combine(before_, u, addAny);
  current_ = providers::Usage{};
  attempt_bytes_ = 0;
  held_error_.reset();
  ++breaks_;
  // Anthropic refuses a prefill that ends in white space, so the resume leaves it out; the
  // continuation may then start with it again, which the client must not get twice.
  trim_leading_space_ = providers::prefillText(text_).size() < text_.size();
}

std::int64_t StreamSplice::outputSoFar() const {
  return std::max<std::int64_t>(before_.output, 0) + std::max(current_.output, estimate());
}

providers::Usage StreamSplice::usage() const {
  return combine(current_, before_, addAny);
}

std::optional<providers::ApiError> StreamSplice::takeHeldError() {
  return std::exchange(held_error_, std::nullopt);
}

void StreamSplice::fail(const providers::ApiError& err, std::string& out) {
  if (!encoder_ || encoder_->ended()) return;
  providers::StreamEvent ev;
  ev.kind = providers::StreamEvent::Kind::Error;
  ev.error = &err;
  encoder_->encode(ev, out);
}

void StreamSplice::encode(const providers::StreamEvent& in, std::string& out) {
  if (!encoder_) return;
  using K = providers::StreamEvent::Kind;
  const providers::StreamEvent* e = &in;
  providers::StreamEvent trimmed;  // a continuation's first text, less the space already sent
  if (continuing()) {
    // A continuation: the client's stream has its start and the answer's reasoning already.
    switch (in.kind) {
      case K::Start:
      case K::Usage: {
        current_.merge(in.usage);
        if (!current_.known()) return;
        providers::StreamEvent u;
        u.kind = K::Usage;
        u.usage = combine(current_, before_, addKnown);
        encoder_->encode(u, out);
        return;
      }
      case K::Reasoning:
        attempt_bytes_ += in.text.size();
        return;
      case K::ReasoningSignature:
      case K::RedactedReasoning:
        return;
      case K::Text:
        if (trim_leading_space_) {
          std::string_view t = in.text;
          while (!t.empty() && isSpace(t.front())) t.remove_prefix(1);
          if (t.empty()) return;
          trim_leading_space_ = false;
          trimmed = in;
          trimmed.text = t;
          e = &trimmed;
        }
        break;
      default:
        break;
    }
  }
  const providers::StreamEvent& ev = *e;
  switch (ev.kind) {
    case K::Start:
    case K::Usage:
      current_.merge(ev.usage);
      break;
    case K::Text:
      text_.append(ev.text);
      attempt_bytes_ += ev.text.size();
      content_ = content_ || !ev.text.empty();
      break;
    case K::Reasoning:
      attempt_bytes_ += ev.text.size();
      content_ = content_ || !ev.text.empty();
      break;
    case K::ToolCallStart:
      tool_begun_ = true;
      content_ = true;
      break;
    case K::Finish:
      finished_ = true;
      break;
    case K::Error:
      // After content, while the answer can be resumed: held; the relay continues it elsewhere.
      // One before any content is the stream's own answer (a `return` rule let it through).
      if (content_ && continuable()) {
        held_error_ = *ev.error;
        return;
      }
      break;
    default:
      break;
  }
  encoder_->encode(ev, out);
}

}  // namespace sluice::gateway
