#include "providers/openai/ResponsesUpstream.hpp"

#include <fmt/format.h>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <map>
#include <vector>

#include "core/JsonText.hpp"
#include "providers/CodecUtil.hpp"
#include "providers/openai/ChatCodec.hpp"

namespace sluice::providers::openai {

namespace json = boost::json;
using detail::indexPath;

// Named, not anonymous: the unity build puts this file in one unit with the other codecs.
namespace responses_upstream {

json::value parseOr(const std::string& text, json::value fallback) {
  boost::system::error_code ec;
  json::value v = sluice::parseJson(text, ec);
  return ec ? fallback : v;
}

bool joinText(const std::vector<Part>& parts, std::string& out) {
  for (const auto& p : parts) {
    if (p.kind != Part::Kind::Text) return false;
    if (!out.empty() && !p.text.empty()) out += "\n\n";
    out += p.text;
  }
  return true;
}

std::string_view effortFor(std::int64_t budget) {
  if (budget <= kReasoningBudgetLow) return "low";
  if (budget <= kReasoningBudgetMedium) return "medium";
  return "high";
}

Usage usageOf(const json::value* u) {
  Usage usage;
  if (!u || !u->is_object()) return usage;
  const auto& o = u->as_object();
  usage.input = detail::asInt(o.if_contains("input_tokens")).value_or(-1);
  usage.output = detail::asInt(o.if_contains("output_tokens")).value_or(-1);
  if (auto* d = o.if_contains("input_tokens_details"); d && d->is_object())
    usage.cached = detail::asInt(d->as_object().if_contains("cached_tokens")).value_or(-1);
  if (auto* d = o.if_contains("output_tokens_details"); d && d->is_object())
    usage.reasoning = detail::asInt(d->as_object().if_contains("reasoning_tokens")).value_or(-1);
  return usage;
}

// How an answer that stopped early says why (response.incomplete_details.reason).
FinishReason incompleteFinish(const json::object& response) {
  const auto* d = response.if_contains("incomplete_details");
  const auto reason = d && d->is_object() ? detail::asStr(d->as_object().if_contains("reason")) : std::string_view();
  if (reason == "max_output_tokens") return FinishReason::Length;
  if (reason == "content_filter") return FinishReason::ContentFilter;
  return FinishReason::Other;
}

// The status an error object's code stands for (the Responses API names no status in a stream).
int statusForCode(std::string_view code) {
  if (code == "rate_limit_exceeded" || code == "usage_limit_reached" || code == "insufficient_quota") return 429;
  if (code == "context_length_exceeded" || code == "invalid_prompt" || code == "invalid_request_error") return 400;
  if (code == "server_is_overloaded" || code == "slow_down") return 503;
  return 502;
}

ApiError errorOf(const json::object& e, std::string_view fallback) {
  ApiError err;
  const std::string_view code = detail::asStr(e.if_contains("code"));
  err.status = statusForCode(code);
  err.kind = errorKindForStatus(err.status);
  err.code = std::string(code);
  err.message = std::string(detail::asStr(e.if_contains("message")));
  if (err.message.empty()) err.message = std::string(fallback);
  return err;
}

// The text of a message item's content parts (output_text and refusal).
void messageText(const json::object& item, std::string& out) {
  const auto* content = item.if_contains("content");
  if (!content || !content->is_array()) return;
  for (const auto& c : content->as_array()) {
    if (!c.is_object()) continue;
    const auto& co = c.as_object();
    const auto type = detail::asStr(co.if_contains("type"));
    if (type == "output_text") out += detail::asStr(co.if_contains("text"));
    if (type == "refusal") out += detail::asStr(co.if_contains("refusal"));
  }
}

// A reasoning item's summary text (or its reasoning_text content when the summary is empty).
std::string reasoningText(const json::object& item) {
  std::string text;
  for (const char* key : {"summary", "content"}) {
    const auto* arr = item.if_contains(key);
    if (!arr || !arr->is_array()) continue;
    for (const auto& s : arr->as_array()) {
      if (!s.is_object()) continue;
      if (!text.empty()) text += "\n\n";
      text += detail::asStr(s.as_object().if_contains("text"));
    }
    if (!text.empty()) break;
  }
  return text;
}

class ResponsesStreamDecoder final : public detail::JsonEventDecoder {
 private:
  void onData(std::string_view data, StreamEventSink& sink) override {
    if (ended_ || data == "[DONE]") return;
    unsigned char buf[4096];
    json::monotonic_resource mr(buf, sizeof buf);
    json::value v;
    const auto* parsed = parseObject(data, mr, v, sink);
    if (!parsed) return;
    const auto& o = *parsed;
    const std::string_view type = detail::asStr(o.if_contains("type"));
    const auto* r = o.if_contains("response");
    const json::object* response = r && r->is_object() ? &r->as_object() : nullptr;
    StreamEvent ev;
    if (type == "error") {
      // {"type":"error","code","message"} (or the same under "error").
      const auto* inner = o.if_contains("error");
      fail(inner && inner->is_object() ? errorOf(inner->as_object(), "the upstream reported an error mid-stream")
                                       : errorOf(o, "the upstream reported an error mid-stream"),
           sink);
      return;
    }
    if (type == "response.failed") {
      const auto* e = response ? response->if_contains("error") : nullptr;
      fail(e && e->is_object() ? errorOf(e->as_object(), "the response failed")
                               : ApiError{502, ErrorKind::Api, "the response failed", {}, {}},
           sink);
      return;
    }
    if (!started_) {  // response.created, or whatever event comes first
      started_ = true;
      ev.kind = StreamEvent::Kind::Start;
      if (response) {
        ev.id = detail::asStr(response->if_contains("id"));
        ev.model = detail::asStr(response->if_contains("model"));
      }
      sink.onEvent(ev);
      ev = StreamEvent{};
    }
    if (type == "response.output_text.delta" || type == "response.refusal.delta") {
      ev.kind = StreamEvent::Kind::Text;
      ev.text = detail::asStr(o.if_contains("delta"));
      if (!ev.text.empty()) sink.onEvent(ev);
    } else if (type == "response.reasoning_summary_text.delta" || type == "response.reasoning_text.delta") {
      ev.kind = StreamEvent::Kind::Reasoning;
      ev.text = detail::asStr(o.if_contains("delta"));
      if (!ev.text.empty()) sink.onEvent(ev);
    } else if (type == "response.output_item.added" || type == "response.output_item.done") {
      const auto* it = o.if_contains("item");
      if (!it || !it->is_object()) return;
      const auto& item = it->as_object();
      if (detail::asStr(item.if_contains("type")) != "function_call") return;
      const auto index = detail::asInt(o.if_contains("output_index")).value_or(-1);
      Call* c = callAt(index, sink, item);
      if (c && type == "response.output_item.done" && !c->args_seen) {
        // The arguments came whole, not as deltas.
        c->args_seen = true;
        ev.kind = StreamEvent::Kind::ToolCallArgs;
        ev.tool_index = c->tool_index;
        ev.text = detail::asStr(item.if_contains("arguments"));
        if (!ev.text.empty()) sink.onEvent(ev);
      }
    } else if (type == "response.function_call_arguments.delta") {
      const auto index = detail::asInt(o.if_contains("output_index")).value_or(-1);
      auto found = calls_.find(index);
      if (found == calls_.end()) return;  // a delta of a call never announced
      found->second.args_seen = true;
      ev.kind = StreamEvent::Kind::ToolCallArgs;
      ev.tool_index = found->second.tool_index;
      ev.text = detail::asStr(o.if_contains("delta"));
      if (!ev.text.empty()) sink.onEvent(ev);
    } else if (type == "response.completed" || type == "response.incomplete") {
      ended_ = true;
      StreamEvent fin;
      fin.kind = StreamEvent::Kind::Finish;
      if (type == "response.incomplete" && response)
        fin.finish = incompleteFinish(*response);
      else
        fin.finish = calls_.empty() ? FinishReason::Stop : FinishReason::ToolCalls;
      sink.onEvent(fin);
      if (response) {
        StreamEvent use;
        use.kind = StreamEvent::Kind::Usage;
        use.usage = usageOf(response->if_contains("usage"));
        if (use.usage.known()) sink.onEvent(use);
      }
      StreamEvent done;
      done.kind = StreamEvent::Kind::Done;
      sink.onEvent(done);
    }
  }

  struct Call {
    int tool_index = 0;
    bool args_seen = false;
  };

  // The call at `output_index`, announced (ToolCallStart) the first time; null past kMaxCalls.
  Call* callAt(std::int64_t output_index, StreamEventSink& sink, const json::object& item) {
    auto found = calls_.find(output_index);
    if (found != calls_.end()) return &found->second;
    if (calls_.size() >= kMaxCalls) return nullptr;
    Call& c = calls_[output_index];
    c.tool_index = next_tool_++;
    StreamEvent ev;
    ev.kind = StreamEvent::Kind::ToolCallStart;
    ev.tool_index = c.tool_index;
    ev.id = detail::asStr(item.if_contains("call_id"));
    std::string synth;
    if (ev.id.empty()) {
      synth = fmt::format("call_{}", c.tool_index);
      ev.id = synth;
    }
    ev.name = detail::asStr(item.if_contains("name"));
    sink.onEvent(ev);
    return &c;
  }

  void fail(ApiError err, StreamEventSink& sink) {
    ended_ = true;
    error_ = std::move(err);
    StreamEvent ev;
    ev.kind = StreamEvent::Kind::Error;
    ev.error = &error_;
    sink.onEvent(ev);
  }

  static constexpr std::size_t kMaxCalls = 1024;  // as the Chat decoder's tool indexes
  bool started_ = false;
  bool ended_ = false;
  int next_tool_ = 0;
  std::map<std::int64_t, Call> calls_;  // by output_index
};

}  // namespace responses_upstream

std::optional<ApiError> encodeResponsesRequest(const Request& req, const EncodeOptions& opts, std::string& out) {
  if (req.n > 1) return ApiError::invalid("n", "n > 1 cannot be sent to a Responses API provider");
  json::object root;
  root["model"] = opts.model.empty() ? req.model : opts.model;
  std::string instructions;
  if (!responses_upstream::joinText(req.system, instructions))
    return ApiError::invalid("system", "system prompt parts must be text");
  if (instructions.empty() && opts.codex) instructions = kDefaultInstructions;
  if (!instructions.empty()) root["instructions"] = instructions;
  json::array input;
  for (std::size_t i = 0; i < req.messages.size(); ++i) {
    const auto& m = req.messages[i];
    const auto path = indexPath("messages", i);
    json::array content;
    // A message item of the parts gathered so far, before a call or a result comes between.
    auto flush = [&](std::string_view role) {
      if (content.empty()) return;
      input.push_back(json::object{{"type", "message"}, {"role", role}, {"content", std::move(content)}});
      content = json::array();
    };
    if (m.role == Role::User) {
      for (const auto& p : m.parts) {
        switch (p.kind) {
          case Part::Kind::Text:
            content.push_back(json::object{{"type", "input_text"}, {"text", p.text}});
            break;
          case Part::Kind::Image: {
            std::string url = p.url.empty() ? fmt::format("data:{};base64,{}", p.media_type, p.data) : p.url;
            content.push_back(json::object{{"type", "input_image"}, {"image_url", url}});
            break;
          }
          case Part::Kind::ToolResult: {
            flush("user");
            std::string text;
            if (!responses_upstream::joinText(p.content, text))
              return ApiError::invalid(path, "tool results holding images cannot be sent to a Responses API provider");
            if (p.is_error) text.insert(0, "Error: ");  // no error flag: the documented prefix, as for Chat
            input.push_back(json::object{{"type", "function_call_output"}, {"call_id", p.id}, {"output", text}});
            break;
          }
          default:
            return ApiError::invalid(path, "user messages may hold only text, images and tool results");
        }
      }
      flush("user");
    } else {
      for (const auto& p : m.parts) {
        switch (p.kind) {
          case Part::Kind::Text:
            content.push_back(json::object{{"type", "output_text"}, {"text", p.text}});
            break;
          case Part::Kind::ToolCall:
            flush("assistant");
            input.push_back(json::object{{"type", "function_call"},
                                         {"call_id", p.id},
                                         {"name", p.name},
                                         {"arguments", p.arguments.empty() ? "{}" : p.arguments}});
            break;
          case Part::Kind::Reasoning:
          case Part::Kind::RedactedReasoning:
            break;  // nothing stored to refer to, and only OpenAI's own encrypted reasoning is read
          default:
            return ApiError::invalid(path, "assistant messages may hold only text, reasoning and tool calls");
        }
      }
      flush("assistant");
    }
  }
  root["input"] = std::move(input);
  if (!req.tools.empty()) {
    json::array tools;
    for (const auto& t : req.tools) {
      json::object fn{{"type", "function"}, {"name", t.name}};
      if (!t.description.empty()) fn["description"] = t.description;
      fn["parameters"] =
          responses_upstream::parseOr(t.parameters, json::object{{"type", "object"}, {"properties", json::object{}}});
      fn["strict"] = false;
      tools.push_back(std::move(fn));
    }
    root["tools"] = std::move(tools);
  }
  if (req.parallel_tool_calls) root["parallel_tool_calls"] = *req.parallel_tool_calls;
  switch (req.tool_choice.mode) {
    case ToolChoice::Mode::Unset:
      break;
    case ToolChoice::Mode::Auto:
      root["tool_choice"] = "auto";
      break;
    case ToolChoice::Mode::None:
      root["tool_choice"] = "none";
      break;
    case ToolChoice::Mode::Required:
      root["tool_choice"] = "required";
      break;
    case ToolChoice::Mode::Named:
      root["tool_choice"] = json::object{{"type", "function"}, {"name", req.tool_choice.name}};
      break;
  }
  switch (req.response_format.kind) {
    case ResponseFormat::Kind::Unset:
    case ResponseFormat::Kind::Text:
      break;
    case ResponseFormat::Kind::JsonObject:
      root["text"] = json::object{{"format", json::object{{"type", "json_object"}}}};
      break;
    case ResponseFormat::Kind::JsonSchema: {
      json::object f{{"type", "json_schema"},
                     {"name", req.response_format.name.empty() ? "response" : req.response_format.name}};
      f["schema"] = responses_upstream::parseOr(req.response_format.schema, json::object{});
      if (req.response_format.strict) f["strict"] = true;
      root["text"] = json::object{{"format", std::move(f)}};
      break;
    }
  }
  if (req.reasoning_budget && *req.reasoning_budget > 0)
    root["reasoning"] =
        json::object{{"effort", responses_upstream::effortFor(*req.reasoning_budget)}, {"summary", "auto"}};
  if (opts.codex) {
    root["store"] = false;
    root["stream"] = true;
  } else {
    if (req.temperature) root["temperature"] = *req.temperature;
    if (req.top_p) root["top_p"] = *req.top_p;
    if (req.max_tokens) root["max_output_tokens"] = *req.max_tokens;
    if (!req.user.empty()) root["user"] = req.user;
    if (req.stream) root["stream"] = true;
  }
  out = json::serialize(root);
  return std::nullopt;
}

std::optional<ApiError> decodeResponsesResponse(std::string_view body, Response& out) {
  json::value root;
  SLUICE_PROVIDERS_TRY(detail::parseJson(body, root, "response body"));
  if (!root.is_object()) return ApiError{502, ErrorKind::Api, "the upstream response is not a JSON object", {}, {}};
  const auto& o = root.as_object();
  out.id = std::string(detail::asStr(o.if_contains("id")));
  out.model = std::string(detail::asStr(o.if_contains("model")));
  out.created = detail::asInt(o.if_contains("created_at")).value_or(0);
  out.usage = responses_upstream::usageOf(o.if_contains("usage"));
  bool calls = false;
  if (const auto* output = o.if_contains("output"); output && output->is_array()) {
    for (const auto& it : output->as_array()) {
      if (!it.is_object()) continue;
      const auto& item = it.as_object();
      const auto type = detail::asStr(item.if_contains("type"));
      if (type == "message") {
        std::string text;
        responses_upstream::messageText(item, text);
        if (!text.empty()) out.content.push_back(Part::makeText(std::move(text)));
      } else if (type == "reasoning") {
        std::string text = responses_upstream::reasoningText(item);
        if (text.empty()) continue;
        Part p;
        p.kind = Part::Kind::Reasoning;
        p.text = std::move(text);
        out.content.push_back(std::move(p));
      } else if (type == "function_call") {
        Part p;
        p.kind = Part::Kind::ToolCall;
        p.id = std::string(detail::asStr(item.if_contains("call_id")));
        if (p.id.empty()) p.id = fmt::format("call_{}", out.content.size());
        p.name = std::string(detail::asStr(item.if_contains("name")));
        p.arguments = std::string(detail::asStr(item.if_contains("arguments")));
        out.content.push_back(std::move(p));
        calls = true;
      }
    }
  }
  if (detail::asStr(o.if_contains("status")) == "incomplete")
    out.finish = responses_upstream::incompleteFinish(o);
  else
    out.finish = calls ? FinishReason::ToolCalls : FinishReason::Stop;
  return std::nullopt;
}

std::optional<std::string> codexRequestBody(std::string_view body, std::string_view model) {
  boost::system::error_code ec;
  json::value root = sluice::parseJson(body, ec);
  if (ec || !root.is_object()) return std::nullopt;
  auto& o = root.as_object();
  if (!model.empty()) o["model"] = model;
  o["stream"] = true;
  o["store"] = false;
  if (detail::asStr(o.if_contains("instructions")).empty()) o["instructions"] = kDefaultInstructions;
  for (const char* refused : {"max_output_tokens", "temperature", "top_p"}) o.erase(refused);
  return json::serialize(root);
}

bool looksLikeSse(std::string_view body) {
  while (!body.empty() && (body.front() == ' ' || body.front() == '\r' || body.front() == '\n')) body.remove_prefix(1);
  return body.starts_with("event:") || body.starts_with("data:") || body.starts_with(":");
}

std::optional<ApiError> assembleResponsesStream(std::string_view sse, std::string& response_json) {
  detail::SseSplitter split;
  detail::EventParser parser;
  std::map<std::int64_t, json::value> items;  // output_item.done items by output_index
  std::optional<json::value> final_response;
  std::optional<ApiError> err;
  auto onEvent = [&](std::string_view, std::string_view data) {
    if (final_response || err || data == "[DONE]") return;
    boost::system::error_code ec;
    json::value v = parser.parse(data, ec, {});
    if (ec || !v.is_object()) {
      err = ApiError{502, ErrorKind::Api, "the upstream stream held an event that is not a JSON object", {}, {}};
      return;
    }
    auto& o = v.as_object();
    const std::string_view type = detail::asStr(o.if_contains("type"));
    auto* r = o.if_contains("response");
    if (type == "error") {
      const auto* inner = o.if_contains("error");
      err = responses_upstream::errorOf(inner && inner->is_object() ? inner->as_object() : o,
                                        "the upstream reported an error");
    } else if (type == "response.failed") {
      const auto* e = r && r->is_object() ? r->as_object().if_contains("error") : nullptr;
      err = e && e->is_object() ? responses_upstream::errorOf(e->as_object(), "the response failed")
                                : ApiError{502, ErrorKind::Api, "the response failed", {}, {}};
    } else if (type == "response.output_item.done") {
      auto* item = o.if_contains("item");
      const auto index = detail::asInt(o.if_contains("output_index")).value_or(static_cast<std::int64_t>(items.size()));
      if (item && item->is_object()) items[index] = std::move(*item);
    } else if ((type == "response.completed" || type == "response.incomplete") && r && r->is_object()) {
      final_response = std::move(*r);
    }
  };
  split.feed(sse, onEvent);
  if (split.pending() != 0) split.feed("\n\n", onEvent);  // a last event without its blank line
  if (err) return err;
  if (!final_response)
    return ApiError{502, ErrorKind::Api, "the upstream stream ended before its response.completed event", {}, {}};
  auto& resp = final_response->as_object();
  auto* output = resp.if_contains("output");
  if (!output || !output->is_array() || output->as_array().empty()) {
    json::array filled;
    for (auto& [index, item] : items) filled.push_back(std::move(item));
    resp["output"] = std::move(filled);
  }
  response_json = json::serialize(resp);
  return std::nullopt;
}

std::unique_ptr<StreamDecoder> makeResponsesStreamDecoder() {
  return std::make_unique<responses_upstream::ResponsesStreamDecoder>();
}

}  // namespace sluice::providers::openai
