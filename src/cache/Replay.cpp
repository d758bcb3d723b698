#include "cache/Replay.hpp"

#include <utility>

#include "providers/anthropic/MessagesCodec.hpp"
#include "providers/gemini/GenerateCodec.hpp"
#include "providers/openai/ChatCodec.hpp"
#include "providers/openai/ResponsesCodec.hpp"

namespace sluice::cache {

using providers::Format;
using providers::Part;
using providers::StreamEvent;
using K = StreamEvent::Kind;

namespace {

std::int64_t createdFor(const Entry& e, const ReplayOptions& opts) {
  return e.response.created != 0 ? e.response.created : opts.created;
}

std::unique_ptr<providers::StreamEncoder> encoderFor(Format client, const Entry& e, const ReplayOptions& opts) {
  switch (client) {
    case Format::OpenAIChat: {
      providers::openai::ChatStreamOptions o;
      o.include_usage = opts.include_usage;
      o.created = createdFor(e, opts);
      return providers::openai::makeChatStreamEncoder(o);
    }
    case Format::AnthropicMessages:
      return providers::anthropic::makeMessagesStreamEncoder();
    case Format::GeminiGenerate: {
      providers::gemini::GenerateStreamOptions o;
      o.json_array = opts.gemini_json_array;
      return providers::gemini::makeGenerateStreamEncoder(o);
    }
    case Format::OpenAIResponses: {
      providers::openai::ResponsesStreamOptions o;
      o.created = createdFor(e, opts);
      o.echo = opts.responses_echo;
      return providers::openai::makeResponsesStreamEncoder(std::move(o));
    }
    case Format::BedrockConverse:  // never a client format
      break;
  }
  return nullptr;
}

// Calls emit(ev) with the event sequence a native stream of `client` would decode to.
template <class Emit>
void unfold(Format client, const Entry& e, Emit&& emit) {
  const auto& r = e.response;
  StreamEvent ev;
  ev.kind = K::Start;
  ev.id = r.id;
  ev.model = r.model;
  ev.usage = e.start_usage;  // as the original stream had it (a live translation shows the same)
  emit(ev);

  // Each delta of `body`, cut as recorded.
  auto deltas = [&](StreamEvent base, const std::string& body, const std::vector<std::uint32_t>* pieces) {
    if (!pieces || pieces->empty()) {
      if (body.empty()) return;
      base.text = body;
      emit(base);
      return;
    }
    std::size_t at = 0;
    for (auto n : *pieces) {
      base.text = std::string_view(body).substr(at, n);
      at += n;
      emit(base);
    }
  };
  int tool = 0;
  for (std::size_t i = 0; i < r.content.size(); ++i) {
    const auto& p = r.content[i];
    const auto* pieces = i < e.pieces.size() ? &e.pieces[i] : nullptr;
    StreamEvent d;
    switch (p.kind) {
      case Part::Kind::Text:
        if (!p.signature.empty()) {  // Gemini: a signed answer part signs the reasoning before it
          d.kind = K::ReasoningSignature;
          d.text = p.signature;
          emit(d);
        }
        d.kind = K::Text;
        deltas(d, p.text, pieces);
        break;
      case Part::Kind::Reasoning:
        d.kind = K::Reasoning;
        deltas(d, p.text, pieces);
        if (!p.signature.empty()) {
          StreamEvent s;
          s.kind = K::ReasoningSignature;
          s.text = p.signature;
          emit(s);
        }
        break;
      case Part::Kind::RedactedReasoning:
        d.kind = K::RedactedReasoning;
        d.text = p.data;
        emit(d);
        break;
      case Part::Kind::ToolCall: {
        d.kind = K::ToolCallStart;
        d.tool_index = tool;
        d.id = p.id;
        d.name = p.name;
        d.signature = p.signature;
        emit(d);
        StreamEvent a;
        a.kind = K::ToolCallArgs;
        a.tool_index = tool++;
        deltas(a, p.arguments, pieces);
        break;
      }
      default:
        break;  // not response content
    }
  }

  StreamEvent fin;
  fin.kind = K::Finish;
  fin.finish = r.finish;
  fin.stop_sequence = r.stop_sequence;
  StreamEvent use;
  use.kind = K::Usage;
  use.usage = r.usage;
  // The order each format's own stream has: OpenAI reports usage in a chunk after the finish;
  // Anthropic (message_delta) and Gemini (the last chunk) decode usage first.
  bool usageFirst = client == Format::AnthropicMessages || client == Format::GeminiGenerate;
  if (usageFirst && r.usage.known()) emit(use);
  emit(fin);
  if (!usageFirst && r.usage.known()) emit(use);
  if (client != Format::GeminiGenerate) {  // Gemini streams have no end event of their own
    StreamEvent done;
    done.kind = K::Done;
    emit(done);
  }
}

}  // namespace

std::string replayWhole(Format client, const Entry& e, const ReplayOptions& opts) {
  providers::Response res = e.response;
  res.created = createdFor(e, opts);
  std::string out;
  switch (client) {
    case Format::OpenAIChat:
      providers::openai::encodeChatResponse(res, out);
      break;
    case Format::AnthropicMessages:
      providers::anthropic::encodeMessagesResponse(res, out);
      break;
    case Format::GeminiGenerate:
      providers::gemini::encodeGenerateResponse(res, out);
      break;
    case Format::OpenAIResponses:
      providers::openai::encodeResponsesResponse(res, out, opts.responses_echo.get());
      break;
    case Format::BedrockConverse:  // never a client format
      break;
  }
  return out;
}

std::vector<std::string> replayStream(Format client, const Entry& e, const ReplayOptions& opts) {
  auto enc = encoderFor(client, e, opts);
  std::vector<std::string> chunks;
  std::string buf;
  unfold(client, e, [&](const StreamEvent& ev) {
    enc->encode(ev, buf);
    if (!buf.empty()) chunks.push_back(std::exchange(buf, std::string()));
  });
  enc->finish(buf);
  if (!buf.empty()) chunks.push_back(std::move(buf));
  return chunks;
}

}  // namespace sluice::cache
