#include "cache/Recorder.hpp"

#include <unordered_map>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "core/Clock.hpp"
#include "core/JsonText.hpp"
#include "providers/bedrock/ConverseCodec.hpp"
#include "providers/anthropic/MessagesCodec.hpp"
#include "providers/gemini/GenerateCodec.hpp"
#include "providers/openai/ChatCodec.hpp"
#include "providers/openai/ResponsesUpstream.hpp"

namespace sluice::cache {

using providers::Format;
using providers::Part;
using providers::StreamEvent;

// Folds canonical stream events into an Entry: consecutive deltas of one kind make one part,
// each delta's length is kept as a piece.
class Recorder::Sink final : public providers::StreamEventSink {
 public:
  explicit Sink(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  void onEvent(const StreamEvent& ev) override {
    if (!failed_.empty()) return;
    using K = StreamEvent::Kind;
    auto& r = e_.response;
    switch (ev.kind) {
      case K::Start:
        if (!ev.id.empty()) r.id = ev.id;
        if (!ev.model.empty()) r.model = ev.model;
        e_.start_usage = ev.usage;
        r.usage.merge(ev.usage);
        break;
      case K::Text:
        append(Part::Kind::Text, ev.text);
        break;
      case K::Reasoning:
        append(Part::Kind::Reasoning, ev.text);
        break;
      case K::ReasoningSignature: {
        // Signs the reasoning just before it; with none, a carrier part (Canonical.hpp).
        auto* last = r.content.empty() ? nullptr : &r.content.back();
        if (!last || last->kind != Part::Kind::Reasoning || !last->signature.empty())
          last = &newPart(Part::Kind::Reasoning);
        last->signature = ev.text;
        charge(ev.text.size());
        break;
      }
      case K::RedactedReasoning:
        newPart(Part::Kind::RedactedReasoning).data = ev.text;
        charge(ev.text.size());
        break;
      case K::ToolCallStart: {
        auto& p = newPart(Part::Kind::ToolCall);
        p.id = ev.id;
        p.name = ev.name;
        p.signature = ev.signature;
        tools_[ev.tool_index] = r.content.size() - 1;
        charge(ev.id.size() + ev.name.size() + ev.signature.size());
        break;
      }
      case K::ToolCallArgs: {
        auto it = tools_.find(ev.tool_index);
        if (it == tools_.end()) return fail("tool-call arguments before the call started");
        r.content[it->second].arguments.append(ev.text);
        e_.pieces[it->second].push_back(static_cast<std::uint32_t>(ev.text.size()));
        charge(ev.text.size());
        break;
      }
      case K::Finish:
        r.finish = ev.finish;
        r.stop_sequence = ev.stop_sequence;
        break;
      case K::Usage:
        r.usage.merge(ev.usage);
        break;
      case K::Ping:
        break;
      case K::Error:
        return fail("the stream reported an error");
      case K::Done:  // the finish reason, not the end event, is what makes an answer whole
        break;
    }
  }

  Entry& entry() { return e_; }
  const std::string& failed() const { return failed_; }
  void fail(std::string why) {
    if (failed_.empty()) failed_ = std::move(why);
    e_ = Entry{};  // let the memory go now
    tools_.clear();
  }

 private:
  Part& newPart(Part::Kind k) {
    auto& p = e_.response.content.emplace_back();
    p.kind = k;
    e_.pieces.emplace_back();
    return p;
  }
  void append(Part::Kind k, std::string_view text) {
    auto& c = e_.response.content;
    // Reasoning that already has its signature is closed: more reasoning starts a new part.
    bool extend = !c.empty() && c.back().kind == k && (k != Part::Kind::Reasoning || c.back().signature.empty());
    auto& p = extend ? c.back() : newPart(k);
    p.text.append(text);
    e_.pieces.back().push_back(static_cast<std::uint32_t>(text.size()));
    charge(text.size());
  }
  void charge(std::size_t n) {
    bytes_ += n + 2;
    if (bytes_ > max_bytes_) fail("the answer is larger than the cache's entry bound");
  }

  Entry e_;
  std::unordered_map<int, std::size_t> tools_;  // tool_index -> content index
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  std::string failed_;
};

namespace {

std::unique_ptr<providers::StreamDecoder> decoderFor(Format f) {
  switch (f) {
    case Format::OpenAIChat:
      return providers::openai::makeChatStreamDecoder();
    case Format::AnthropicMessages:
      return providers::anthropic::makeMessagesStreamDecoder();
    case Format::GeminiGenerate:
      return providers::gemini::makeGenerateStreamDecoder();
    case Format::BedrockConverse:
      return providers::bedrock::makeConverseStreamDecoder();
    case Format::OpenAIResponses:  // a ChatGPT subscription channel's upstream
      return providers::openai::makeResponsesStreamDecoder();
  }
  return nullptr;
}

}  // namespace

Recorder::Recorder(std::unique_ptr<providers::StreamDecoder> dec, std::size_t max_bytes)
    : decoder_(std::move(dec)), sink_(std::make_unique<Sink>(max_bytes)) {}

Recorder::~Recorder() = default;

std::unique_ptr<Recorder> Recorder::forStream(Format f, std::size_t max_bytes) {
  auto dec = decoderFor(f);
  if (!dec) return nullptr;
  return std::unique_ptr<Recorder>(new Recorder(std::move(dec), max_bytes));
}

void Recorder::giveUp(std::string why) {
  if (why_.empty()) why_ = std::move(why);
  sink_->fail(why_);
  decoder_.reset();
}

void Recorder::feed(std::string_view bytes) {
  if (!why_.empty() || bytes.empty()) return;
  if (first_) {
    first_ = false;
    auto pos = bytes.find_first_not_of(" \t\r\n");
    if (pos != std::string_view::npos && bytes[pos] == '[') return giveUp("a JSON-array stream (not SSE)");
  }
  if (!decoder_->feed(bytes, *sink_)) return giveUp("a stream event over the decoder's bound");
  if (!sink_->failed().empty()) giveUp(sink_->failed());
}

std::optional<Entry> Recorder::finish() {
  if (!why_.empty()) return std::nullopt;
  if (decoder_->pending() != 0) {
    // An unterminated last event: feed the blank line that would end it, as a lenient client
    // would; if it still does not parse it was a truncation.
    decoder_->feed("\n\n", *sink_);
    if (decoder_->pending() != 0 || !sink_->failed().empty()) {
      giveUp(sink_->failed().empty() ? "the stream ended inside an event" : sink_->failed());
      return std::nullopt;
    }
  }
  auto& e = sink_->entry();
  if (e.response.finish == providers::FinishReason::Unset) {
    giveUp("the stream ended without a finish reason");
    return std::nullopt;
  }
  e.status = 200;
  e.stored_at_ms = unixNowMs();
  Entry out = std::move(e);
  giveUp("finished");  // one entry per recorder
  return out;
}

std::optional<Entry> Recorder::fromWhole(Format f, int status, std::string_view body, std::size_t max_bytes,
                                         std::string* why) {
  auto fail = [&](const char* reason) -> std::optional<Entry> {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (status < 200 || status > 299) return fail("not a success");
  Entry e;
  std::optional<providers::ApiError> err;
  switch (f) {
    case Format::OpenAIChat:
      err = providers::openai::decodeChatResponse(body, e.response);
      break;
    case Format::AnthropicMessages:
      err = providers::anthropic::decodeMessagesResponse(body, e.response);
      break;
    case Format::GeminiGenerate:
      err = providers::gemini::decodeGenerateResponse(body, e.response);
      break;
    case Format::BedrockConverse:
      err = providers::bedrock::decodeConverseResponse(body, e.response);
      break;
    case Format::OpenAIResponses:
      err = providers::openai::decodeResponsesResponse(body, e.response);
      break;
  }
  if (err) return fail("the body is not a response of its format");
  if (e.response.finish == providers::FinishReason::Unset) return fail("the answer has no finish reason");
  e.status = status;
  e.stored_at_ms = unixNowMs();
  e.pieces.resize(e.response.content.size());
  if (e.byteSize() > max_bytes) return fail("the answer is larger than the cache's entry bound");
  return e;
}

std::optional<Entry> Recorder::fromAnswer(Format f, int status, std::string_view body, std::size_t max_bytes) {
  const auto first = body.find_first_not_of(" \t\r\n");
  if (f != Format::GeminiGenerate || first == std::string_view::npos || body[first] != '[')
    return fromWhole(f, status, body, max_bytes);
  if (status < 200 || status > 299) return std::nullopt;
  boost::system::error_code ec;
  boost::json::value arr = sluice::parseJson(body, ec);
  if (ec || !arr.is_array()) return std::nullopt;
  auto rec = forStream(f, max_bytes);
  if (!rec) return std::nullopt;
  std::string event;
  for (const auto& el : arr.as_array()) {
    event.assign("data: ").append(boost::json::serialize(el)).append("\r\n\r\n");
    rec->feed(event);
  }
  return rec->finish();
}

}  // namespace sluice::cache
