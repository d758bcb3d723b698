#include "gateway/StreamSplice.hpp"

#include <algorithm>

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
  before_.input = addAny(before_.input, u.input);
  before_.output = addAny(before_.output, u.output);
  before_.cached = addAny(before_.cached, u.cached);
  before_.cache_creation = addAny(before_.cache_creation, u.cache_creation);
  before_.reasoning = addAny(before_.reasoning, u.reasoning);
  current_ = providers::Usage{};
  attempt_bytes_ = 0;
  held_error_.reset();
  ++breaks_;
  // Anthropic refuses a prefill that ends in white space, so the resume leaves it out; the
  // continuation may then start with it again, which the client must not get twice.
  trim_leading_space_ = !text_.empty() && isSpace(text_.back());
}

std::int64_t StreamSplice::outputSoFar() const {
  return std::max<std::int64_t>(before_.output, 0) + std::max(current_.output, estimate());
}

providers::Usage StreamSplice::summed(const providers::Usage& u) const {
  providers::Usage s = u;
  s.input = addKnown(u.input, before_.input);
  s.output = addKnown(u.output, before_.output);
  s.cached = addKnown(u.cached, before_.cached);
  s.cache_creation = addKnown(u.cache_creation, before_.cache_creation);
  s.reasoning = addKnown(u.reasoning, before_.reasoning);
  return s;
}

providers::Usage StreamSplice::usage() const {
  if (!continuing()) return current_;
  providers::Usage s;
  s.input = addAny(current_.input, before_.input);
  s.output = addAny(current_.output, before_.output);
  s.cached = addAny(current_.cached, before_.cached);
  s.cache_creation = addAny(current_.cache_creation, before_.cache_creation);
  s.reasoning = addAny(current_.reasoning, before_.reasoning);
  return s;
}

void StreamSplice::fail(const providers::ApiError& err, std::string& out) {
  if (!encoder_ || encoder_->ended()) return;
  providers::StreamEvent ev;
  ev.kind = providers::StreamEvent::Kind::Error;
  ev.error = &err;
  encoder_->encode(ev, out);
}

void StreamSplice::encode(const providers::StreamEvent& ev, std::string& out) {
  if (!encoder_) return;
  using K = providers::StreamEvent::Kind;
  if (continuing()) {
    // A continuation: the client's stream has its start and the answer's reasoning already.
    switch (ev.kind) {
      case K::Start:
      case K::Usage: {
        current_.merge(ev.usage);
        if (!current_.known()) return;
        providers::StreamEvent u;
        u.kind = K::Usage;
        u.usage = summed(current_);
        encoder_->encode(u, out);
        return;
      }
      case K::Reasoning:
        attempt_bytes_ += ev.text.size();
        return;
      case K::ReasoningSignature:
      case K::RedactedReasoning:
        return;
      case K::Text:
        if (trim_leading_space_) {
          std::string_view t = ev.text;
          while (!t.empty() && isSpace(t.front())) t.remove_prefix(1);
          if (t.empty()) return;
          trim_leading_space_ = false;
          providers::StreamEvent trimmed = ev;
          trimmed.text = t;
          text_.append(t);
          attempt_bytes_ += t.size();
          content_ = true;
          encoder_->encode(trimmed, out);
          return;
        }
        break;
      default:
        break;
    }
  }
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
