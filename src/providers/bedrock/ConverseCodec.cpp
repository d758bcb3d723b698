#include "providers/bedrock/ConverseCodec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <set>
#include <unordered_map>

#include "cloud/EventStream.hpp"
#include "core/JsonText.hpp"
#include "providers/CodecUtil.hpp"
#include "providers/anthropic/MessagesCodec.hpp"

namespace sluice::providers::bedrock {
namespace {
namespace json = boost::json;

// Through the project's one parse (its depth bound), for upstream bytes and client schemas alike.
std::optional<json::value> parseJson(std::string_view text) {
  boost::system::error_code ec;
  json::value v = sluice::parseJson(text, ec);
  if (ec) return std::nullopt;
  return v;
}

const json::object* objectAt(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_object() ? &it->value().get_object() : nullptr;
}

const json::array* arrayAt(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_array() ? &it->value().get_array() : nullptr;
}

std::string_view stringAt(const json::object& o, std::string_view key) {
  return detail::asStr(o.if_contains(key));
}

std::int64_t intAt(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end()) return -1;
  if (it->value().is_int64()) return std::max<std::int64_t>(0, it->value().get_int64());
  if (it->value().is_uint64())
    return static_cast<std::int64_t>(std::min<std::uint64_t>(it->value().get_uint64(), INT64_MAX));
  return -1;
}

// A tool call's arguments as Converse's `input`: the object they hold, or the raw text kept.
json::value toolInput(const std::string& args) {
  if (args.empty()) return json::object{};
  auto v = parseJson(args);
  if (v && v->is_object()) return std::move(*v);
  return json::object{{"_raw_arguments", args}};
}

std::optional<std::string_view> imageFormat(std::string_view media_type) {
  for (std::string_view f : {"png", "jpeg", "gif", "webp"}) {
    if (media_type == fmt::format("image/{}", f)) return f;
  }
  if (media_type == "image/jpg") return "jpeg";
  return std::nullopt;
}

std::optional<ApiError> imageBlock(const Part& p, const std::string& where, json::array& out) {
  if (p.data.empty()) {
    return ApiError::invalid(where, "Bedrock takes images as inline bytes (base64), not by URL: send the image's data");
  }
  auto format = imageFormat(p.media_type);
  if (!format) {
    return ApiError::invalid(where, fmt::format("Bedrock takes png, jpeg, gif or webp images, not {}",
                                                p.media_type.empty() ? "an untyped one" : p.media_type));
  }
  out.push_back(
      json::object{{"image", json::object{{"format", *format}, {"source", json::object{{"bytes", p.data}}}}}});
  return std::nullopt;
}

FinishReason finishOf(std::string_view reason) {
  if (reason == "end_turn") return FinishReason::Stop;
  if (reason == "tool_use") return FinishReason::ToolCalls;
  if (reason == "max_tokens" || reason == "model_context_window_exceeded") return FinishReason::Length;
  if (reason == "stop_sequence") return FinishReason::StopSequence;
  if (reason == "guardrail_intervened" || reason == "content_filtered") return FinishReason::ContentFilter;
  return reason.empty() ? FinishReason::Unset : FinishReason::Other;
}

Usage usageOf(const json::object& u) {
  Usage out;
  std::int64_t in = intAt(u, "inputTokens"), read = intAt(u, "cacheReadInputTokens"),
               write = intAt(u, "cacheWriteInputTokens");
  out.output = intAt(u, "outputTokens");
  out.cached = read;
  out.cache_creation = write;
  if (in >= 0) out.input = in + std::max<std::int64_t>(read, 0) + std::max<std::int64_t>(write, 0);
  return out;
}

// `x-amzn-ErrorType` is "Name:namespace-url" (or the name alone).
std::string_view exceptionName(std::string_view error_type) {
  return error_type.substr(0, error_type.find(':'));
}

}  // namespace

bool isAnthropicModel(std::string_view id) {
  // anthropic.claude-..., us.anthropic.claude-..., eu./apac./global. profiles, and their ARNs.
  return id.starts_with("anthropic.") || id.find(".anthropic.") != std::string_view::npos ||
         id.find("/anthropic.") != std::string_view::npos;
}

int statusForException(std::string_view name) {
  std::string n(name);
  if (!n.empty()) n[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(n[0])));
  static const std::unordered_map<std::string, int> kStatus = {
      {"validationException", 400},       {"accessDeniedException", 403},
      {"resourceNotFoundException", 404}, {"modelTimeoutException", 408},
      {"conflictException", 409},         {"modelNotReadyException", 429},
      {"throttlingException", 429},       {"serviceQuotaExceededException", 429},
      {"internalServerException", 500},   {"modelStreamErrorException", 424},
      {"modelErrorException", 424},       {"serviceUnavailableException", 503},
  };
  auto it = kStatus.find(n);
  return it == kStatus.end() ? 500 : it->second;
}

std::string_view stopReasonName(FinishReason f) {
  switch (f) {
    case FinishReason::Stop:
      return "end_turn";
    case FinishReason::ToolCalls:
      return "tool_use";
    case FinishReason::Length:
      return "max_tokens";
    case FinishReason::StopSequence:
      return "stop_sequence";
    case FinishReason::ContentFilter:
      return "content_filtered";
    case FinishReason::Other:
    case FinishReason::Unset:
      break;
  }
  return "end_turn";
}

std::optional<ApiError> encodeConverseRequest(const Request& req, const EncodeOptions& opts, std::string& out) {
  const std::string& model = opts.model.empty() ? req.model : opts.model;
  if (req.n > 1) return ApiError::invalid("n", "Bedrock answers one choice per request: n must be 1");
  if (req.response_format.kind == ResponseFormat::Kind::JsonSchema) {
    return ApiError::invalid("response_format",
                             "Bedrock's Converse API has no structured-output schema: use json_object or tools");
  }
  json::object body;

  json::array system;
  for (const auto& p : req.system) {
    if (!p.text.empty()) system.push_back(json::object{{"text", p.text}});
  }
  if (req.response_format.kind == ResponseFormat::Kind::JsonObject) {
    system.push_back(json::object{{"text", anthropic::kJsonModeInstruction}});
  }
  if (!system.empty()) body["system"] = std::move(system);

  std::set<std::string> called;  // tools named by calls in the history
  bool tool_blocks = false;
  json::array messages;
  for (std::size_t i = 0; i < req.messages.size(); ++i) {
    const Message& m = req.messages[i];
    json::array content;
    for (std::size_t j = 0; j < m.parts.size(); ++j) {
      const Part& p = m.parts[j];
      const std::string where = fmt::format("messages[{}].content[{}]", i, j);
      switch (p.kind) {
        case Part::Kind::Text:
          if (!p.text.empty()) content.push_back(json::object{{"text", p.text}});
          break;
        case Part::Kind::Image:
          SLUICE_PROVIDERS_TRY(imageBlock(p, where, content));
          break;
        case Part::Kind::ToolCall:
          tool_blocks = true;
          called.insert(p.name);
          content.push_back(json::object{
              {"toolUse", json::object{{"toolUseId", p.id}, {"name", p.name}, {"input", toolInput(p.arguments)}}}});
          break;
        case Part::Kind::ToolResult: {
          tool_blocks = true;
          json::array result;
          for (std::size_t k = 0; k < p.content.size(); ++k) {
            const Part& c = p.content[k];
            if (c.kind == Part::Kind::Image) {
              SLUICE_PROVIDERS_TRY(imageBlock(c, fmt::format("{}.content[{}]", where, k), result));
            } else if (c.kind == Part::Kind::Text) {
              result.push_back(json::object{{"text", c.text}});
            }
          }
          if (result.empty()) result.push_back(json::object{{"text", ""}});
          content.push_back(json::object{{"toolResult", json::object{{"toolUseId", p.id},
                                                                     {"content", std::move(result)},
                                                                     {"status", p.is_error ? "error" : "success"}}}});
          break;
        }
        case Part::Kind::Reasoning:
          if (m.role == Role::Assistant && !p.signature.empty() && !p.text.empty()) {
            content.push_back(json::object{
                {"reasoningContent",
                 json::object{{"reasoningText", json::object{{"text", p.text}, {"signature", p.signature}}}}}});
          }
          break;
        case Part::Kind::RedactedReasoning:
          if (m.role == Role::Assistant) {
            content.push_back(json::object{{"reasoningContent", json::object{{"redactedContent", p.data}}}});
          }
          break;
      }
    }
    if (content.empty()) continue;  // Bedrock refuses a message without content
    messages.push_back(
        json::object{{"role", m.role == Role::User ? "user" : "assistant"}, {"content", std::move(content)}});
  }
  body["messages"] = std::move(messages);

  const bool anthropic = isAnthropicModel(model);
  const std::int64_t budget = anthropic ? req.reasoning_budget.value_or(0) : 0;
  json::object inference;
  std::optional<std::int64_t> max_tokens = req.max_tokens;
  if (budget > 0) {
    if (!max_tokens) max_tokens = kDefaultMaxTokens + budget;
    if (*max_tokens <= budget) {
      return ApiError::invalid(
          "max_tokens",
          fmt::format("max_tokens ({}) must be greater than the thinking budget ({})", *max_tokens, budget));
    }
  }
  if (max_tokens) inference["maxTokens"] = *max_tokens;
  if (req.temperature) inference["temperature"] = *req.temperature;
  if (req.top_p) inference["topP"] = *req.top_p;
  if (!req.stop.empty()) {
    json::array stops;
    for (const auto& s : req.stop) stops.push_back(json::string(s));
    inference["stopSequences"] = std::move(stops);
  }
  if (!inference.empty()) body["inferenceConfig"] = std::move(inference);

  json::object extra;
  if (anthropic && req.top_k) extra["top_k"] = *req.top_k;
  if (budget > 0) extra["thinking"] = json::object{{"type", "enabled"}, {"budget_tokens", budget}};
  if (!extra.empty()) body["additionalModelRequestFields"] = std::move(extra);

  const bool offer = req.tool_choice.mode != ToolChoice::Mode::None;
  if ((offer && !req.tools.empty()) || tool_blocks) {
    json::array tools;
    std::set<std::string> declared;
    for (const auto& t : req.tools) {
      auto schema = parseJson(t.parameters);
      json::object spec{{"name", t.name},
                        {"inputSchema", json::object{{"json", schema && schema->is_object()
                                                                  ? std::move(*schema)
                                                                  : json::value(json::object{{"type", "object"}})}}}};
      if (!t.description.empty()) spec["description"] = t.description;
      tools.push_back(json::object{{"toolSpec", std::move(spec)}});
      declared.insert(t.name);
    }
    for (const auto& name : called) {
      if (declared.contains(name) || name.empty()) continue;
      tools.push_back(json::object{
          {"toolSpec",
           json::object{{"name", name}, {"inputSchema", json::object{{"json", json::object{{"type", "object"}}}}}}}});
    }
    json::object config{{"tools", std::move(tools)}};
    switch (req.tool_choice.mode) {
      case ToolChoice::Mode::Auto:
        config["toolChoice"] = json::object{{"auto", json::object{}}};
        break;
      case ToolChoice::Mode::Required:
        config["toolChoice"] = json::object{{"any", json::object{}}};
        break;
      case ToolChoice::Mode::Named:
        config["toolChoice"] = json::object{{"tool", json::object{{"name", req.tool_choice.name}}}};
        break;
      case ToolChoice::Mode::None:
      case ToolChoice::Mode::Unset:
        break;
    }
    body["toolConfig"] = std::move(config);
  }
  out = json::serialize(body);
  return std::nullopt;
}

std::optional<ApiError> decodeConverseResponse(std::string_view text, Response& out) {
  auto v = parseJson(text);
  if (!v || !v->is_object())
    return ApiError{502, ErrorKind::Api, "Bedrock answered with a body that is not a JSON object", {}, {}};
  const json::object& o = v->get_object();
  const json::object* output = objectAt(o, "output");
  const json::object* message = output ? objectAt(*output, "message") : nullptr;
  const json::array* content = message ? arrayAt(*message, "content") : nullptr;
  if (!content) return ApiError{502, ErrorKind::Api, "Bedrock's answer has no output.message.content", {}, {}};
  for (const auto& b : *content) {
    if (!b.is_object()) continue;
    const json::object& block = b.get_object();
    if (auto it = block.find("text"); it != block.end() && it->value().is_string()) {
      out.content.push_back(Part::makeText(std::string(it->value().get_string())));
    } else if (const json::object* use = objectAt(block, "toolUse")) {
      Part p;
      p.kind = Part::Kind::ToolCall;
      p.id = stringAt(*use, "toolUseId");
      p.name = stringAt(*use, "name");
      auto in = use->find("input");
      p.arguments = in == use->end() ? "{}" : json::serialize(in->value());
      out.content.push_back(std::move(p));
    } else if (const json::object* rc = objectAt(block, "reasoningContent")) {
      if (const json::object* rt = objectAt(*rc, "reasoningText")) {
        Part p;
        p.kind = Part::Kind::Reasoning;
        p.text = stringAt(*rt, "text");
        p.signature = stringAt(*rt, "signature");
        out.content.push_back(std::move(p));
      } else if (std::string_view red = stringAt(*rc, "redactedContent"); !red.empty()) {
        Part p;
        p.kind = Part::Kind::RedactedReasoning;
        p.data = red;
        out.content.push_back(std::move(p));
      }
    }
  }
  out.finish = finishOf(stringAt(o, "stopReason"));
  if (const json::object* extra = objectAt(o, "additionalModelResponseFields")) {
    out.stop_sequence = stringAt(*extra, "stop_sequence");
  }
  if (const json::object* u = objectAt(o, "usage")) out.usage = usageOf(*u);
  return std::nullopt;
}

ApiError decodeConverseError(int status, std::string_view body, std::string_view error_type) {
  ApiError e;
  std::string_view name = exceptionName(error_type);
  e.status = status >= 400 ? status : statusForException(name);
  e.kind = errorKindForStatus(e.status);
  auto v = parseJson(body);
  if (v && v->is_object()) {
    std::string_view m = stringAt(v->get_object(), "message");
    if (m.empty()) m = stringAt(v->get_object(), "Message");
    e.message = m;
  }
  if (e.message.empty()) e.message = fmt::format("Bedrock answered {}", e.status);
  if (!name.empty()) e.message = fmt::format("{}: {}", name, e.message);
  if (name == "ModelNotReadyException") e.kind = ErrorKind::Overloaded;
  return e;
}

namespace {

class ConverseStreamDecoder final : public StreamDecoder {
 public:
  bool feed(std::string_view bytes, StreamEventSink& sink) override {
    messages_.clear();
    bool ok = frames_.feed(bytes, messages_);
    for (const auto& m : messages_) handle(m, sink);
    if (!ok && !failed_) {
      failed_ = true;
      error_ = ApiError{502, ErrorKind::Api, std::string(frames_.error()), {}, {}};
      StreamEvent ev;
      ev.kind = StreamEvent::Kind::Error;
      ev.error = &error_;
      sink.onEvent(ev);
    }
    return ok;
  }
  std::size_t pending() const override { return frames_.idle() ? 0 : std::max<std::size_t>(frames_.buffered(), 1); }

 private:
  void handle(const cloud::EventStreamMessage& m, StreamEventSink& sink) {
    std::string_view type = m.header(":message-type");
    if (type == "exception" || type == "error") {
      std::string_view name = type == "error" ? m.header(":error-code") : m.header(":exception-type");
      std::string message;
      if (auto v = parseJson(m.payload); v && v->is_object()) message = stringAt(v->get_object(), "message");
      if (type == "error" && message.empty()) message = m.header(":error-message");
      error_ = ApiError{statusForException(name), ErrorKind::Api, fmt::format("{}: {}", name, message), {}, {}};
      error_.kind = errorKindForStatus(error_.status);
      StreamEvent ev;
      ev.kind = StreamEvent::Kind::Error;
      ev.error = &error_;
      sink.onEvent(ev);
      return;
    }
    auto v = parseJson(m.payload);
    if (!v || !v->is_object()) return;
    const json::object& o = v->get_object();
    std::string_view event = m.header(":event-type");
    StreamEvent ev;
    if (event == "messageStart") {
      ev.kind = StreamEvent::Kind::Start;
      sink.onEvent(ev);
    } else if (event == "contentBlockStart") {
      const json::object* start = objectAt(o, "start");
      const json::object* use = start ? objectAt(*start, "toolUse") : nullptr;
      if (!use) return;
      int index = next_tool_++;
      tool_of_block_[intAt(o, "contentBlockIndex")] = index;
      ev.kind = StreamEvent::Kind::ToolCallStart;
      ev.tool_index = index;
      ev.id = stringAt(*use, "toolUseId");
      ev.name = stringAt(*use, "name");
      sink.onEvent(ev);
    } else if (event == "contentBlockDelta") {
      const json::object* delta = objectAt(o, "delta");
      if (!delta) return;
      if (auto it = delta->find("text"); it != delta->end() && it->value().is_string()) {
        ev.kind = StreamEvent::Kind::Text;
        ev.text = it->value().get_string();
        sink.onEvent(ev);
      } else if (const json::object* use = objectAt(*delta, "toolUse")) {
        auto block = tool_of_block_.find(intAt(o, "contentBlockIndex"));
        if (block == tool_of_block_.end()) return;
        ev.kind = StreamEvent::Kind::ToolCallArgs;
        ev.tool_index = block->second;
        ev.text = stringAt(*use, "input");
        if (!ev.text.empty()) sink.onEvent(ev);
      } else if (const json::object* rc = objectAt(*delta, "reasoningContent")) {
        if (auto t = rc->find("text"); t != rc->end() && t->value().is_string()) {
          ev.kind = StreamEvent::Kind::Reasoning;
          ev.text = t->value().get_string();
        } else if (auto s = rc->find("signature"); s != rc->end() && s->value().is_string()) {
          ev.kind = StreamEvent::Kind::ReasoningSignature;
          ev.text = s->value().get_string();
        } else if (auto r = rc->find("redactedContent"); r != rc->end() && r->value().is_string()) {
          ev.kind = StreamEvent::Kind::RedactedReasoning;
          ev.text = r->value().get_string();
        } else {
          return;
        }
        sink.onEvent(ev);
      }
    } else if (event == "messageStop") {
      ev.kind = StreamEvent::Kind::Finish;
      ev.finish = finishOf(stringAt(o, "stopReason"));
      if (const json::object* extra = objectAt(o, "additionalModelResponseFields")) {
        ev.stop_sequence = stringAt(*extra, "stop_sequence");
      }
      sink.onEvent(ev);
    } else if (event == "metadata") {
      if (const json::object* u = objectAt(o, "usage")) {
        ev.kind = StreamEvent::Kind::Usage;
        ev.usage = usageOf(*u);
        sink.onEvent(ev);
      }
      StreamEvent done;
      done.kind = StreamEvent::Kind::Done;
      sink.onEvent(done);
    }
  }

  cloud::EventStreamDecoder frames_;
  std::vector<cloud::EventStreamMessage> messages_;
  std::unordered_map<std::int64_t, int> tool_of_block_;
  int next_tool_ = 0;
  bool failed_ = false;
  ApiError error_;
};

}  // namespace

std::unique_ptr<StreamDecoder> makeConverseStreamDecoder() {
  return std::make_unique<ConverseStreamDecoder>();
}

}  // namespace sluice::providers::bedrock
