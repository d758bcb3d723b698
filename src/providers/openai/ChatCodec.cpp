#include "providers/openai/ChatCodec.hpp"

#include <fmt/format.h>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <ctime>
#include <unordered_map>

#include "core/JsonText.hpp"
#include "providers/CodecUtil.hpp"

namespace sluice::providers::openai {

namespace json = boost::json;
using detail::Fields;
using detail::indexPath;

namespace {

// Google's OpenAI-compatibility convention for Gemini thought signatures on tool calls:
// tool_calls[].extra_content.google.thought_signature.
std::string_view googleSignature(const json::object& tc) {
  auto* ec = tc.if_contains("extra_content");
  if (!ec || !ec->is_object()) return {};
  auto* g = ec->as_object().if_contains("google");
  if (!g || !g->is_object()) return {};
  return detail::asStr(g->as_object().if_contains("thought_signature"));
}

std::optional<ApiError> decodeTextParts(const json::value& content, const std::string& path, std::vector<Part>& out,
                                        bool allowImages) {
  if (content.is_string()) {
    if (!content.as_string().empty()) out.push_back(Part::makeText(std::string(content.as_string())));
    return std::nullopt;
  }
  if (!content.is_array())
    return ApiError::invalid(path, fmt::format("{} must be a string or an array of content parts", path));
  const auto& arr = content.as_array();
  for (std::size_t j = 0; j < arr.size(); ++j) {
    auto pp = indexPath(path, j);
    if (!arr[j].is_object()) return ApiError::invalid(pp, fmt::format("{} must be an object", pp));
    Fields pf{arr[j].as_object(), pp};
    std::string type;
    SLUICE_PROVIDERS_TRY(pf.str("type", type, true));
    if (type == "text" || type == "refusal") {
      std::string text;
      SLUICE_PROVIDERS_TRY(pf.str(type == "text" ? "text" : "refusal", text, true));
      if (!text.empty()) out.push_back(Part::makeText(std::move(text)));
    } else if (type == "image_url" && allowImages) {
      auto* iu = pf.get("image_url");
      std::string url;
      if (iu && iu->is_string()) {
        url = std::string(iu->as_string());
      } else if (iu && iu->is_object()) {
        SLUICE_PROVIDERS_TRY((Fields{iu->as_object(), pf.sub("image_url")}.str("url", url, true)));
      } else {
        return ApiError::invalid(pf.sub("image_url"),
                                 fmt::format("{} must be an object with a url", pf.sub("image_url")));
      }
      Part p;
      p.kind = Part::Kind::Image;
      if (!detail::parseDataUrl(url, p.media_type, p.data)) {
        if (url.starts_with("data:"))
          return ApiError::invalid(pf.sub("image_url.url"),
                                   "image data URLs must be base64: data:<media type>;base64,<data>");
        p.url = std::move(url);
      }
      out.push_back(std::move(p));
    } else {
      return ApiError::invalid(pf.sub("type"),
                               fmt::format("content part type '{}' is not supported here when translating "
                                           "to another provider",
                                           type));
    }
  }
  return std::nullopt;
}

std::optional<ApiError> decodeMessage(const json::value& mv, std::size_t i, Request& out,
                                      std::unordered_map<std::string, std::string>& callNames) {
  auto path = indexPath("messages", i);
  if (!mv.is_object()) return ApiError::invalid(path, fmt::format("{} must be an object", path));
  Fields f{mv.as_object(), path};
  std::string role;
  SLUICE_PROVIDERS_TRY(f.str("role", role, true));
  auto* content = f.get("content");
  if (role == "system" || role == "developer") {
    if (!content) return ApiError::invalid(f.sub("content"), fmt::format("{} is required", f.sub("content")));
    std::vector<Part> parts;
    SLUICE_PROVIDERS_TRY(decodeTextParts(*content, f.sub("content"), parts, false));
    for (auto& p : parts) out.system.push_back(std::move(p));
    return std::nullopt;
  }
  if (role == "user") {
    if (!content) return ApiError::invalid(f.sub("content"), fmt::format("{} is required", f.sub("content")));
    Message m;
    m.role = Role::User;
    SLUICE_PROVIDERS_TRY(decodeTextParts(*content, f.sub("content"), m.parts, true));
    if (m.parts.empty())
      return ApiError::invalid(f.sub("content"), fmt::format("{} must not be empty", f.sub("content")));
    out.messages.push_back(std::move(m));
    return std::nullopt;
  }
  if (role == "assistant") {
    Message m;
    m.role = Role::Assistant;
    std::string reasoning;
    SLUICE_PROVIDERS_TRY(f.str("reasoning_content", reasoning));
    if (!reasoning.empty()) {
      Part r;
      r.kind = Part::Kind::Reasoning;
      r.text = std::move(reasoning);
      m.parts.push_back(std::move(r));
    }
    if (content) SLUICE_PROVIDERS_TRY(decodeTextParts(*content, f.sub("content"), m.parts, false));
    if (f.get("function_call"))
      return ApiError::invalid(f.sub("function_call"),
                               "function_call is deprecated and not translated; use tool_calls");
    if (auto* tcs = f.get("tool_calls")) {
      if (!tcs->is_array())
        return ApiError::invalid(f.sub("tool_calls"), fmt::format("{} must be an array", f.sub("tool_calls")));
      const auto& arr = tcs->as_array();
      for (std::size_t j = 0; j < arr.size(); ++j) {
        auto tp = indexPath(f.sub("tool_calls"), j);
        if (!arr[j].is_object()) return ApiError::invalid(tp, fmt::format("{} must be an object", tp));
        Fields tf{arr[j].as_object(), tp};
        Part p;
        p.kind = Part::Kind::ToolCall;
        SLUICE_PROVIDERS_TRY(tf.str("id", p.id, true));
        auto* fn = tf.get("function");
        if (!fn || !fn->is_object())
          return ApiError::invalid(tf.sub("function"), fmt::format("{} must be an object", tf.sub("function")));
        Fields ff{fn->as_object(), tf.sub("function")};
        SLUICE_PROVIDERS_TRY(ff.str("name", p.name, true));
        SLUICE_PROVIDERS_TRY(ff.str("arguments", p.arguments));
        if (p.arguments.empty()) p.arguments = "{}";
        json::value args;
        boost::system::error_code ec;
        args = sluice::parseJson(p.arguments, ec);
        if (ec || !args.is_object())
          return ApiError::invalid(ff.sub("arguments"),
                                   fmt::format("{} must be a JSON object text", ff.sub("arguments")));
        p.signature.assign(googleSignature(arr[j].as_object()));
        callNames[p.id] = p.name;
        m.parts.push_back(std::move(p));
      }
    }
    if (m.parts.empty()) return ApiError::invalid(path, fmt::format("{} has neither content nor tool_calls", path));
    out.messages.push_back(std::move(m));
    return std::nullopt;
  }
  if (role == "tool") {
    Part p;
    p.kind = Part::Kind::ToolResult;
    SLUICE_PROVIDERS_TRY(f.str("tool_call_id", p.id, true));
    if (auto it = callNames.find(p.id); it != callNames.end()) p.name = it->second;
    if (content) SLUICE_PROVIDERS_TRY(decodeTextParts(*content, f.sub("content"), p.content, false));
    // Consecutive tool messages answer one assistant turn: keep them in one user turn.
    if (!out.messages.empty() && out.messages.back().role == Role::User && !out.messages.back().parts.empty() &&
        out.messages.back().parts.back().kind == Part::Kind::ToolResult) {
      out.messages.back().parts.push_back(std::move(p));
    } else {
      Message m;
      m.role = Role::User;
      m.parts.push_back(std::move(p));
      out.messages.push_back(std::move(m));
    }
    return std::nullopt;
  }
  if (role == "function")
    return ApiError::invalid(f.sub("role"), "role 'function' is deprecated and not translated; use role 'tool'");
  return ApiError::invalid(f.sub("role"), fmt::format("{} '{}' is not one of system, developer, user, assistant, tool",
                                                      f.sub("role"), role));
}

std::optional<ApiError> decodeTools(const Fields& f, Request& out) {
  if (auto* tools = f.get("tools")) {
    if (!tools->is_array()) return ApiError::invalid("tools", "tools must be an array");
    const auto& arr = tools->as_array();
    for (std::size_t i = 0; i < arr.size(); ++i) {
      auto tp = indexPath("tools", i);
      if (!arr[i].is_object()) return ApiError::invalid(tp, fmt::format("{} must be an object", tp));
      Fields tf{arr[i].as_object(), tp};
      std::string type = "function";
      SLUICE_PROVIDERS_TRY(tf.str("type", type));
      if (type != "function")
        return ApiError::invalid(tf.sub("type"),
                                 fmt::format("tool type '{}' has no equivalent at this provider", type));
      auto* fn = tf.get("function");
      if (!fn || !fn->is_object())
        return ApiError::invalid(tf.sub("function"), fmt::format("{} must be an object", tf.sub("function")));
      Fields ff{fn->as_object(), tf.sub("function")};
      Tool t;
      SLUICE_PROVIDERS_TRY(ff.str("name", t.name, true));
      SLUICE_PROVIDERS_TRY(ff.str("description", t.description));
      if (auto* params = ff.get("parameters")) {
        if (!params->is_object())
          return ApiError::invalid(ff.sub("parameters"), fmt::format("{} must be an object", ff.sub("parameters")));
        t.parameters = json::serialize(*params);
      }
      out.tools.push_back(std::move(t));
    }
  }
  if (auto* tc = f.get("tool_choice")) {
    if (tc->is_string()) {
      auto s = tc->as_string();
      if (s == "auto") {
        out.tool_choice.mode = ToolChoice::Mode::Auto;
      } else if (s == "none") {
        out.tool_choice.mode = ToolChoice::Mode::None;
      } else if (s == "required") {
        out.tool_choice.mode = ToolChoice::Mode::Required;
      } else {
        return ApiError::invalid("tool_choice",
                                 "tool_choice must be none, auto, required or {\"type\":\"function\",...}");
      }
    } else if (tc->is_object()) {
      Fields cf{tc->as_object(), "tool_choice"};
      auto* fn = cf.get("function");
      if (!fn || !fn->is_object())
        return ApiError::invalid("tool_choice.function", "tool_choice.function must be an object");
      out.tool_choice.mode = ToolChoice::Mode::Named;
      SLUICE_PROVIDERS_TRY((Fields{fn->as_object(), "tool_choice.function"}.str("name", out.tool_choice.name, true)));
    } else {
      return ApiError::invalid("tool_choice", "tool_choice must be a string or an object");
    }
  }
  SLUICE_PROVIDERS_TRY(f.boolean("parallel_tool_calls", out.parallel_tool_calls));
  return std::nullopt;
}

std::optional<ApiError> decodeResponseFormat(const Fields& f, Request& out) {
  auto* rf = f.get("response_format");
  if (!rf) return std::nullopt;
  if (!rf->is_object()) return ApiError::invalid("response_format", "response_format must be an object");
  Fields rff{rf->as_object(), "response_format"};
  std::string type;
  SLUICE_PROVIDERS_TRY(rff.str("type", type, true));
  if (type == "text") {
    out.response_format.kind = ResponseFormat::Kind::Text;
  } else if (type == "json_object") {
    out.response_format.kind = ResponseFormat::Kind::JsonObject;
  } else if (type == "json_schema") {
    auto* js = rff.get("json_schema");
    if (!js || !js->is_object())
      return ApiError::invalid("response_format.json_schema", "response_format.json_schema must be an object");
    Fields jf{js->as_object(), "response_format.json_schema"};
    out.response_format.kind = ResponseFormat::Kind::JsonSchema;
    SLUICE_PROVIDERS_TRY(jf.str("name", out.response_format.name, true));
    if (auto* s = jf.get("schema")) out.response_format.schema = json::serialize(*s);
    std::optional<bool> strict;
    SLUICE_PROVIDERS_TRY(jf.boolean("strict", strict));
    out.response_format.strict = strict.value_or(false);
  } else {
    return ApiError::invalid("response_format.type", fmt::format("response_format type '{}' is not supported", type));
  }
  return std::nullopt;
}

// Text of text parts joined; false if a part is not text.
bool joinText(const std::vector<Part>& parts, std::string& out) {
  for (const auto& p : parts) {
    if (p.kind != Part::Kind::Text) return false;
    out += p.text;
  }
  return true;
}

json::value textContent(const std::vector<Part>& parts) {
  if (parts.size() == 1) return json::string(parts[0].text);
  json::array arr;
  for (const auto& p : parts) arr.push_back(json::object{{"type", "text"}, {"text", p.text}});
  return arr;
}

json::value parseOr(std::string_view text, json::value dflt) {
  if (text.empty()) return dflt;
  boost::system::error_code ec;
  auto v = sluice::parseJson(text, ec);
  return ec ? dflt : v;
}

std::string_view typeForKind(ErrorKind k) {
  switch (k) {
    case ErrorKind::InvalidRequest:
      return "invalid_request_error";
    case ErrorKind::Authentication:
      return "authentication_error";
    case ErrorKind::Billing:
      return "insufficient_quota";
    case ErrorKind::Permission:
      return "permission_error";
    case ErrorKind::NotFound:
      return "not_found_error";
    case ErrorKind::RequestTooLarge:
      return "invalid_request_error";
    case ErrorKind::RateLimit:
      return "rate_limit_error";
    case ErrorKind::Api:
      return "server_error";
    case ErrorKind::Timeout:
      return "timeout_error";
    case ErrorKind::Overloaded:
      return "server_error";
  }
  return "server_error";
}

std::string_view defaultCodeForKind(ErrorKind k) {
  switch (k) {
    case ErrorKind::Authentication:
      return "invalid_api_key";
    case ErrorKind::Billing:
      return "insufficient_quota";
    case ErrorKind::NotFound:
      return "not_found";
    case ErrorKind::RequestTooLarge:
      return "request_too_large";
    case ErrorKind::RateLimit:
      return "rate_limit_exceeded";
    case ErrorKind::Overloaded:
      return "overloaded";
    default:
      return {};
  }
}

std::optional<ErrorKind> kindForType(std::string_view t) {
  if (t == "invalid_request_error") return ErrorKind::InvalidRequest;
  if (t == "authentication_error") return ErrorKind::Authentication;
  if (t == "permission_error") return ErrorKind::Permission;
  if (t == "not_found_error") return ErrorKind::NotFound;
  if (t == "rate_limit_error" || t == "requests" || t == "tokens") return ErrorKind::RateLimit;
  if (t == "insufficient_quota") return ErrorKind::RateLimit;
  if (t == "server_error" || t == "api_error") return ErrorKind::Api;
  if (t == "timeout_error") return ErrorKind::Timeout;
  if (t == "overloaded_error") return ErrorKind::Overloaded;
  return std::nullopt;
}

FinishReason finishFromName(std::string_view s) {
  if (s == "stop") return FinishReason::Stop;
  if (s == "length") return FinishReason::Length;
  if (s == "tool_calls" || s == "function_call") return FinishReason::ToolCalls;
  if (s == "content_filter") return FinishReason::ContentFilter;
  return FinishReason::Other;
}

Usage usageFrom(const json::value* u) {
  Usage usage;
  if (!u || !u->is_object()) return usage;
  const auto& o = u->as_object();
  usage.input = detail::asInt(o.if_contains("prompt_tokens")).value_or(-1);
  usage.output = detail::asInt(o.if_contains("completion_tokens")).value_or(-1);
  if (auto* d = o.if_contains("prompt_tokens_details"); d && d->is_object()) {
    usage.cached = detail::asInt(d->as_object().if_contains("cached_tokens")).value_or(-1);
    usage.cache_creation = detail::asInt(d->as_object().if_contains("cache_write_tokens")).value_or(-1);
  }
  if (auto* d = o.if_contains("completion_tokens_details"); d && d->is_object())
    usage.reasoning = detail::asInt(d->as_object().if_contains("reasoning_tokens")).value_or(-1);
  return usage;
}

void appendChatUsage(std::string& out, const Usage& u) {
  auto in = u.input < 0 ? 0 : u.input, o = u.output < 0 ? 0 : u.output;
  out += "{\"prompt_tokens\":";
  detail::appendInt(out, in);
  out += ",\"completion_tokens\":";
  detail::appendInt(out, o);
  out += ",\"total_tokens\":";
  detail::appendInt(out, detail::addCounts(in, o));
  out += ",\"prompt_tokens_details\":{\"cached_tokens\":";
  detail::appendInt(out, u.cached < 0 ? 0 : u.cached);
  if (u.cache_creation > 0) {
    out += ",\"cache_write_tokens\":";
    detail::appendInt(out, u.cache_creation);
  }
  out += '}';
  if (u.reasoning > 0) {
    out += ",\"completion_tokens_details\":{\"reasoning_tokens\":";
    detail::appendInt(out, u.reasoning);
    out += '}';
  }
  out += '}';
}

ApiError errorFromValue(int status, const json::value& e) {
  ApiError err;
  err.status = status;
  err.kind = errorKindForStatus(status);
  if (e.is_object()) {
    const auto& o = e.as_object();
    err.message = std::string(detail::asStr(o.if_contains("message")));
    if (auto k = kindForType(detail::asStr(o.if_contains("type")))) {
      // The status decides, except where the type is finer (e.g. 503 says overloaded).
      if (status == 0) err.kind = *k;
    }
    if (auto* c = o.if_contains("code")) {
      if (c->is_string())
        err.code = std::string(c->as_string());
      else if (auto i = detail::asInt(c))
        err.code = std::to_string(*i);
    }
    err.param = std::string(detail::asStr(o.if_contains("param")));
  } else if (e.is_string()) {
    err.message = std::string(e.as_string());
  }
  if (status == 0) err.status = statusForErrorKind(err.kind);
  return err;
}

}  // namespace

std::string_view finishReasonName(FinishReason f) {
  switch (f) {
    case FinishReason::Length:
      return "length";
    case FinishReason::ToolCalls:
      return "tool_calls";
    case FinishReason::ContentFilter:
      return "content_filter";
    default:
      return "stop";
  }
}

std::optional<ApiError> decodeChatRequest(std::string_view body, Request& out) {
  json::value root;
  SLUICE_PROVIDERS_TRY(detail::parseJson(body, root, "request body"));
  if (!root.is_object()) return ApiError::invalid("", "request body must be a JSON object");
  Fields f{root.as_object(), ""};
  SLUICE_PROVIDERS_TRY(f.str("model", out.model, true));
  auto* msgs = f.get("messages");
  if (!msgs) return ApiError::invalid("messages", "messages is required");
  if (!msgs->is_array()) return ApiError::invalid("messages", "messages must be an array");
  if (msgs->as_array().empty()) return ApiError::invalid("messages", "messages must not be empty");
  std::unordered_map<std::string, std::string> callNames;
  const auto& arr = msgs->as_array();
  for (std::size_t i = 0; i < arr.size(); ++i) SLUICE_PROVIDERS_TRY(decodeMessage(arr[i], i, out, callNames));
  if (out.messages.empty())
    return ApiError::invalid("messages", "messages must hold at least one user or assistant message");
  SLUICE_PROVIDERS_TRY(decodeTools(f, out));
  SLUICE_PROVIDERS_TRY(decodeResponseFormat(f, out));
  SLUICE_PROVIDERS_TRY(f.num("temperature", out.temperature));
  SLUICE_PROVIDERS_TRY(f.num("top_p", out.top_p));
  SLUICE_PROVIDERS_TRY(f.integer("max_completion_tokens", out.max_tokens));
  if (!out.max_tokens) SLUICE_PROVIDERS_TRY(f.integer("max_tokens", out.max_tokens));
  if (out.max_tokens && *out.max_tokens < 1) return ApiError::invalid("max_tokens", "max_tokens must be at least 1");
  if (auto* stop = f.get("stop")) {
    if (stop->is_string()) {
      out.stop.emplace_back(stop->as_string());
    } else if (stop->is_array()) {
      for (std::size_t i = 0; i < stop->as_array().size(); ++i) {
        const auto& s = stop->as_array()[i];
        if (!s.is_string()) return ApiError::invalid(indexPath("stop", i), "stop must hold strings");
        out.stop.emplace_back(s.as_string());
      }
    } else {
      return ApiError::invalid("stop", "stop must be a string or an array of strings");
    }
  }
  std::optional<bool> stream;
  SLUICE_PROVIDERS_TRY(f.boolean("stream", stream));
  out.stream = stream.value_or(false);
  if (auto* so = f.get("stream_options"); so && so->is_object()) {
    std::optional<bool> iu;
    SLUICE_PROVIDERS_TRY((Fields{so->as_object(), "stream_options"}.boolean("include_usage", iu)));
    out.include_usage = iu.value_or(false);
  }
  SLUICE_PROVIDERS_TRY(f.str("user", out.user));
  std::optional<std::int64_t> n;
  SLUICE_PROVIDERS_TRY(f.integer("n", n));
  if (n) {
    if (*n < 1) return ApiError::invalid("n", "n must be at least 1");
    out.n = static_cast<int>(*n);
  }
  std::optional<bool> logprobs;
  SLUICE_PROVIDERS_TRY(f.boolean("logprobs", logprobs));
  if (logprobs.value_or(false) || f.get("top_logprobs"))
    return ApiError::invalid("logprobs", "logprobs cannot be translated to this provider");
  std::string effort;
  SLUICE_PROVIDERS_TRY(f.str("reasoning_effort", effort));
  if (effort == "minimal" || effort == "none") {
    out.reasoning_budget = 0;
  } else if (effort == "low") {
    out.reasoning_budget = kReasoningBudgetLow;
  } else if (effort == "medium") {
    out.reasoning_budget = kReasoningBudgetMedium;
  } else if (effort == "high") {
    out.reasoning_budget = kReasoningBudgetHigh;
  } else if (!effort.empty()) {
    return ApiError::invalid("reasoning_effort", "reasoning_effort must be minimal, low, medium or high");
  }
  return std::nullopt;
}

std::optional<ApiError> encodeChatRequest(const Request& req, const EncodeOptions& opts, std::string& out) {
  json::object root;
  root["model"] = opts.model.empty() ? req.model : opts.model;
  json::array msgs;
  if (!req.system.empty()) {
    std::string ignored;
    if (!joinText(req.system, ignored)) return ApiError::invalid("system", "system prompt parts must be text");
    msgs.push_back(json::object{{"role", "system"}, {"content", textContent(req.system)}});
  }
  for (std::size_t i = 0; i < req.messages.size(); ++i) {
    const auto& m = req.messages[i];
    auto path = indexPath("messages", i);
    if (m.role == Role::User) {
      json::array parts;
      for (const auto& p : m.parts) {
        switch (p.kind) {
          case Part::Kind::ToolResult: {
            std::string text;
            if (!joinText(p.content, text))
              return ApiError::invalid(path, "tool results holding images cannot be sent to an OpenAI Chat provider");
            // OpenAI tool messages have no error flag: the documented rule is a text prefix.
            if (p.is_error) text.insert(0, "Error: ");
            msgs.push_back(json::object{{"role", "tool"}, {"tool_call_id", p.id}, {"content", text}});
            break;
          }
          case Part::Kind::Text:
            parts.push_back(json::object{{"type", "text"}, {"text", p.text}});
            break;
          case Part::Kind::Image: {
            std::string url = p.url.empty() ? fmt::format("data:{};base64,{}", p.media_type, p.data) : p.url;
            parts.push_back(json::object{{"type", "image_url"}, {"image_url", json::object{{"url", url}}}});
            break;
          }
          default:
            return ApiError::invalid(path, "user messages may hold only text, images and tool results");
        }
      }
      if (parts.empty()) continue;
      if (parts.size() == 1 && parts[0].as_object().at("type") == "text") {
        msgs.push_back(json::object{{"role", "user"}, {"content", parts[0].as_object().at("text")}});
      } else {
        msgs.push_back(json::object{{"role", "user"}, {"content", std::move(parts)}});
      }
    } else {
      std::string text;
      json::array calls;
      for (const auto& p : m.parts) {
        switch (p.kind) {
          case Part::Kind::Text:
            text += p.text;
            break;
          case Part::Kind::ToolCall:
            calls.push_back(json::object{
                {"id", p.id},
                {"type", "function"},
                {"function", json::object{{"name", p.name}, {"arguments", p.arguments.empty() ? "{}" : p.arguments}}}});
            break;
          case Part::Kind::Reasoning:
          case Part::Kind::RedactedReasoning:
            break;  // not accepted by OpenAI in requests
          default:
            return ApiError::invalid(path, "assistant messages may hold only text, reasoning and tool calls");
        }
      }
      json::object msg{{"role", "assistant"}};
      if (text.empty() && !calls.empty()) {
        msg["content"] = nullptr;
      } else {
        msg["content"] = text;
      }
      if (!calls.empty()) msg["tool_calls"] = std::move(calls);
      msgs.push_back(std::move(msg));
    }
  }
  root["messages"] = std::move(msgs);
  if (!req.tools.empty()) {
    json::array tools;
    for (const auto& t : req.tools) {
      json::object fn{{"name", t.name}};
      if (!t.description.empty()) fn["description"] = t.description;
      fn["parameters"] = parseOr(t.parameters, json::object{{"type", "object"}, {"properties", json::object{}}});
      tools.push_back(json::object{{"type", "function"}, {"function", std::move(fn)}});
    }
    root["tools"] = std::move(tools);
    if (req.parallel_tool_calls) root["parallel_tool_calls"] = *req.parallel_tool_calls;
  }
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
      root["tool_choice"] =
          json::object{{"type", "function"}, {"function", json::object{{"name", req.tool_choice.name}}}};
      break;
  }
  switch (req.response_format.kind) {
    case ResponseFormat::Kind::Unset:
      break;
    case ResponseFormat::Kind::Text:
      root["response_format"] = json::object{{"type", "text"}};
      break;
    case ResponseFormat::Kind::JsonObject:
      root["response_format"] = json::object{{"type", "json_object"}};
      break;
    case ResponseFormat::Kind::JsonSchema: {
      json::object js{{"name", req.response_format.name}};
      if (!req.response_format.schema.empty()) js["schema"] = parseOr(req.response_format.schema, json::object{});
      if (req.response_format.strict) js["strict"] = true;
      root["response_format"] = json::object{{"type", "json_schema"}, {"json_schema", std::move(js)}};
      break;
    }
  }
  if (req.temperature) root["temperature"] = *req.temperature;
  if (req.top_p) root["top_p"] = *req.top_p;
  if (req.max_tokens)
    root[opts.openai_max_completion_tokens ? "max_completion_tokens" : "max_tokens"] = *req.max_tokens;
  if (!req.stop.empty()) {
    json::array stop;
    for (const auto& s : req.stop) stop.push_back(json::string(s));
    root["stop"] = std::move(stop);
  }
  if (req.n > 1) root["n"] = req.n;
  if (!req.user.empty()) root["user"] = req.user;
  if (req.stream) {
    root["stream"] = true;
    root["stream_options"] = json::object{{"include_usage", true}};  // the gateway counts tokens
  }
  out = json::serialize(root);
  return std::nullopt;
}

std::optional<ApiError> decodeChatResponse(std::string_view body, Response& out) {
  boost::system::error_code ec;
  auto root = sluice::parseJson(body, ec);
  if (ec || !root.is_object())
    return detail::upstreamStreamError("the upstream answered with a body that is not an OpenAI chat completion");
  const auto& o = root.as_object();
  out.id = std::string(detail::asStr(o.if_contains("id")));
  out.model = std::string(detail::asStr(o.if_contains("model")));
  out.created = detail::asInt(o.if_contains("created")).value_or(0);
  out.usage = usageFrom(o.if_contains("usage"));
  auto* choices = o.if_contains("choices");
  if (!choices || !choices->is_array() || choices->as_array().empty() || !choices->as_array()[0].is_object())
    return detail::upstreamStreamError("the upstream chat completion has no choices");
  const auto& c = choices->as_array()[0].as_object();
  out.finish = finishFromName(detail::asStr(c.if_contains("finish_reason")));
  auto* msg = c.if_contains("message");
  if (!msg || !msg->is_object()) return detail::upstreamStreamError("the upstream chat completion has no message");
  const auto& m = msg->as_object();
  for (const char* key : {"reasoning_content", "reasoning"}) {
    auto r = detail::asStr(m.if_contains(key));
    if (!r.empty()) {
      Part p;
      p.kind = Part::Kind::Reasoning;
      p.text = std::string(r);
      out.content.push_back(std::move(p));
      break;
    }
  }
  auto text = detail::asStr(m.if_contains("content"));
  if (text.empty()) text = detail::asStr(m.if_contains("refusal"));
  if (!text.empty()) out.content.push_back(Part::makeText(std::string(text)));
  if (auto* tcs = m.if_contains("tool_calls"); tcs && tcs->is_array()) {
    std::size_t i = 0;
    for (const auto& tc : tcs->as_array()) {
      if (!tc.is_object()) continue;
      Part p;
      p.kind = Part::Kind::ToolCall;
      p.id = std::string(detail::asStr(tc.as_object().if_contains("id")));
      if (p.id.empty()) p.id = fmt::format("call_{}", i);
      if (auto* fn = tc.as_object().if_contains("function"); fn && fn->is_object()) {
        p.name = std::string(detail::asStr(fn->as_object().if_contains("name")));
        p.arguments = std::string(detail::asStr(fn->as_object().if_contains("arguments")));
      }
      if (p.arguments.empty()) p.arguments = "{}";
      p.signature.assign(googleSignature(tc.as_object()));
      out.content.push_back(std::move(p));
      ++i;
    }
  }
  return std::nullopt;
}

void encodeChatResponse(const Response& res, std::string& out) {
  std::string text, reasoning;
  json::array calls;
  for (const auto& p : res.content) {
    if (p.kind == Part::Kind::Text) text += p.text;
    if (p.kind == Part::Kind::Reasoning) reasoning += p.text;
    if (p.kind == Part::Kind::ToolCall) {
      json::object call{{"id", p.id},
                        {"type", "function"},
                        {"function", json::object{{"name", p.name}, {"arguments", p.arguments}}}};
      if (!p.signature.empty())
        call["extra_content"] = json::object{{"google", json::object{{"thought_signature", p.signature}}}};
      calls.push_back(std::move(call));
    }
  }
  json::object msg{{"role", "assistant"}};
  if (text.empty() && !calls.empty()) {
    msg["content"] = nullptr;
  } else {
    msg["content"] = text;
  }
  if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
  if (!calls.empty()) msg["tool_calls"] = std::move(calls);
  json::object root{{"id", res.id},
                    {"object", "chat.completion"},
                    {"created", res.created ? res.created : static_cast<std::int64_t>(std::time(nullptr))},
                    {"model", res.model}};
  root["choices"] = json::array{json::object{{"index", 0},
                                             {"message", std::move(msg)},
                                             {"logprobs", nullptr},
                                             {"finish_reason", finishReasonName(res.finish)}}};
  out = json::serialize(root);
  if (res.usage.known()) {
    out.pop_back();
    out += ",\"usage\":";
    appendChatUsage(out, res.usage);
    out += '}';
  }
}

void encodeChatError(const ApiError& err, std::string& out) {
  out += "{\"error\":{\"message\":";
  detail::appendJsonString(out, err.message);
  out += ",\"type\":";
  detail::appendJsonString(out, typeForKind(err.kind));
  out += ",\"param\":";
  if (err.param.empty()) {
    out += "null";
  } else {
    detail::appendJsonString(out, err.param);
  }
  out += ",\"code\":";
  auto code = err.code.empty() ? defaultCodeForKind(err.kind) : std::string_view(err.code);
  if (code.empty()) {
    out += "null";
  } else {
    detail::appendJsonString(out, code);
  }
  out += "}}";
}

ApiError decodeChatError(int status, std::string_view body) {
  boost::system::error_code ec;
  auto root = sluice::parseJson(body, ec);
  ApiError err;
  if (!ec && root.is_object()) {
    const auto& o = root.as_object();
    if (auto* e = o.if_contains("error")) {
      err = errorFromValue(status, *e);
    } else {
      err = errorFromValue(status, root);
    }
  } else {
    err.status = status;
    err.kind = errorKindForStatus(status);
  }
  if (err.message.empty()) err.message = detail::fallbackErrorMessage(body, status);
  return err;
}

namespace {

class ChatStreamDecoder final : public detail::JsonEventDecoder {
 private:
  void onData(std::string_view data, StreamEventSink& sink) override {
    StreamEvent ev;
    if (data == "[DONE]") {
      ev.kind = StreamEvent::Kind::Done;
      sink.onEvent(ev);
      return;
    }
    unsigned char buf[4096];
    json::monotonic_resource mr(buf, sizeof buf);
    json::value v;
    const auto* parsed = parseObject(data, mr, v, sink);
    if (!parsed) return;
    const auto& o = *parsed;
    if (auto* e = o.if_contains("error"); e && !e->is_null()) {
      error_ = errorFromValue(0, *e);
      if (error_.message.empty()) error_.message = "the upstream reported an error mid-stream";
      ev.kind = StreamEvent::Kind::Error;
      ev.error = &error_;
      sink.onEvent(ev);
      return;
    }
    if (!started_) {
      started_ = true;
      ev.kind = StreamEvent::Kind::Start;
      ev.id = detail::asStr(o.if_contains("id"));
      ev.model = detail::asStr(o.if_contains("model"));
      // A server that reports usage on every chunk (vLLM continuous_usage_stats) tells the
      // prompt's count at the start; an Anthropic client gets it in message_start.
      ev.usage = usageFrom(o.if_contains("usage"));
      sink.onEvent(ev);
    }
    if (auto* choices = o.if_contains("choices"); choices && choices->is_array() && !choices->as_array().empty()) {
      const auto& c0 = choices->as_array()[0];
      if (c0.is_object()) onChoice(c0.as_object(), sink);
    }
    if (auto* u = o.if_contains("usage"); u && u->is_object()) {
      StreamEvent ue;
      ue.kind = StreamEvent::Kind::Usage;
      ue.usage = usageFrom(u);
      sink.onEvent(ue);
    }
  }

  void onChoice(const json::object& c, StreamEventSink& sink) {
    if (auto* d = c.if_contains("delta"); d && d->is_object()) {
      const auto& delta = d->as_object();
      StreamEvent ev;
      for (const char* key : {"reasoning_content", "reasoning"}) {
        auto r = detail::asStr(delta.if_contains(key));
        if (!r.empty()) {
          ev.kind = StreamEvent::Kind::Reasoning;
          ev.text = r;
          sink.onEvent(ev);
          break;
        }
      }
      for (const char* key : {"content", "refusal"}) {
        auto t = detail::asStr(delta.if_contains(key));
        if (!t.empty()) {
          ev.kind = StreamEvent::Kind::Text;
          ev.text = t;
          sink.onEvent(ev);
        }
      }
      if (auto* tcs = delta.if_contains("tool_calls"); tcs && tcs->is_array()) {
        for (const auto& tc : tcs->as_array()) {
          if (tc.is_object()) onToolCall(tc.as_object(), sink);
        }
      }
    }
    auto fr = detail::asStr(c.if_contains("finish_reason"));
    if (!fr.empty()) {
      StreamEvent ev;
      ev.kind = StreamEvent::Kind::Finish;
      ev.finish = finishFromName(fr);
      sink.onEvent(ev);
    }
  }

  void onToolCall(const json::object& tc, StreamEventSink& sink) {
    auto index = detail::asInt(tc.if_contains("index")).value_or(0);
    if (index < 0 || index > 1024) return;
    auto i = static_cast<std::size_t>(index);
    if (started_calls_.size() <= i) started_calls_.resize(i + 1, false);
    std::string_view name, args;
    if (auto* fn = tc.if_contains("function"); fn && fn->is_object()) {
      name = detail::asStr(fn->as_object().if_contains("name"));
      args = detail::asStr(fn->as_object().if_contains("arguments"));
    }
    auto id = detail::asStr(tc.if_contains("id"));
    if (!started_calls_[i] && (!id.empty() || !name.empty() || !args.empty())) {
      started_calls_[i] = true;
      std::string synth;
      if (id.empty()) {  // some OpenAI-compatible servers omit it
        synth = fmt::format("call_{}", i);
        id = synth;
      }
      StreamEvent ev;
      ev.kind = StreamEvent::Kind::ToolCallStart;
      ev.tool_index = static_cast<int>(i);
      ev.id = id;
      ev.name = name;
      ev.signature = googleSignature(tc);
      sink.onEvent(ev);
    }
    if (!args.empty()) {
      StreamEvent ev;
      ev.kind = StreamEvent::Kind::ToolCallArgs;
      ev.tool_index = static_cast<int>(i);
      ev.text = args;
      sink.onEvent(ev);
    }
  }

  bool started_ = false;
  std::vector<bool> started_calls_;
  ApiError error_;
};

class ChatStreamEncoder final : public StreamEncoder {
 public:
  explicit ChatStreamEncoder(const ChatStreamOptions& opts) : opts_(opts) {
    if (opts_.created == 0) opts_.created = static_cast<std::int64_t>(std::time(nullptr));
  }

  void encode(const StreamEvent& ev, std::string& out) override {
    if (ended_) return;
    using K = StreamEvent::Kind;
    switch (ev.kind) {
      case K::Start:
        if (!started_) start(ev.id, ev.model, out);
        break;
      case K::Text:
        ensureStarted(out);
        open(out);
        out += "\"content\":";
        detail::appendJsonString(out, ev.text);
        close(out);
        break;
      case K::Reasoning:
        ensureStarted(out);
        open(out);
        out += "\"reasoning_content\":";
        detail::appendJsonString(out, ev.text);
        close(out);
        break;
      case K::ToolCallStart:
        ensureStarted(out);
        open(out);
        out += "\"tool_calls\":[{\"index\":";
        detail::appendInt(out, ev.tool_index);
        out += ",\"id\":";
        detail::appendJsonString(out, ev.id);
        out += ",\"type\":\"function\",\"function\":{\"name\":";
        detail::appendJsonString(out, ev.name);
        out += ",\"arguments\":\"\"}";
        if (!ev.signature.empty()) {
          out += ",\"extra_content\":{\"google\":{\"thought_signature\":";
          detail::appendJsonString(out, ev.signature);
          out += "}}";
        }
        out += "}]";
        close(out);
        break;
      case K::ToolCallArgs:
        ensureStarted(out);
        open(out);
        out += "\"tool_calls\":[{\"index\":";
        detail::appendInt(out, ev.tool_index);
        out += ",\"function\":{\"arguments\":";
        detail::appendJsonString(out, ev.text);
        out += "}}]";
        close(out);
        break;
      case K::Finish:
        ensureStarted(out);
        if (!finish_sent_) writeFinish(ev.finish, out);
        break;
      case K::Usage:
        usage_.merge(ev.usage);
        break;
      case K::Done:
        closeStream(out);
        break;
      case K::Error:
        ensureStarted(out);
        writeError(*ev.error, out);
        break;
      case K::ReasoningSignature:
      case K::RedactedReasoning:
      case K::Ping:
        break;  // no OpenAI equivalent
    }
  }

  void finish(std::string& out) override {
    if (ended_) return;
    if (finish_sent_) {
      closeStream(out);
      return;
    }
    ensureStarted(out);
    writeError(detail::upstreamStreamError("the upstream stream ended before the response was complete"), out);
  }

  bool ended() const override { return ended_; }

 private:
  void start(std::string_view id, std::string_view model, std::string& out) {
    started_ = true;
    prefix_ = "data: {\"id\":";
    detail::appendJsonString(prefix_, id.empty() ? std::string_view("chatcmpl-sluice") : id);
    prefix_ += ",\"object\":\"chat.completion.chunk\",\"created\":";
    detail::appendInt(prefix_, opts_.created);
    prefix_ += ",\"model\":";
    detail::appendJsonString(prefix_, model);
    prefix_ += ",\"choices\":[";
    open(out);
    out += "\"role\":\"assistant\",\"content\":\"\"";
    close(out);
  }
  void ensureStarted(std::string& out) {
    if (!started_) start({}, {}, out);
  }
  void open(std::string& out) {
    out += prefix_;
    out += "{\"index\":0,\"delta\":{";
  }
  void close(std::string& out) { out += "},\"finish_reason\":null}]}\n\n"; }
  void writeFinish(FinishReason f, std::string& out) {
    finish_sent_ = true;
    out += prefix_;
    out += "{\"index\":0,\"delta\":{},\"finish_reason\":\"";
    out += finishReasonName(f);
    out += "\"}]}\n\n";
  }
  void closeStream(std::string& out) {
    ensureStarted(out);
    if (!finish_sent_) writeFinish(FinishReason::Stop, out);
    if (opts_.include_usage && usage_.known()) {
      out += prefix_;
      out += "],\"usage\":";
      appendChatUsage(out, usage_);
      out += "}\n\n";
    }
    out += "data: [DONE]\n\n";
    ended_ = true;
  }
  void writeError(const ApiError& err, std::string& out) {
    out += "data: ";
    encodeChatError(err, out);
    out += "\n\ndata: [DONE]\n\n";
    ended_ = true;
  }

  ChatStreamOptions opts_;
  std::string prefix_;
  bool started_ = false;
  bool finish_sent_ = false;
  bool ended_ = false;
  Usage usage_;
};

}  // namespace

std::unique_ptr<StreamDecoder> makeChatStreamDecoder() {
  return std::make_unique<ChatStreamDecoder>();
}

std::unique_ptr<StreamEncoder> makeChatStreamEncoder(const ChatStreamOptions& opts) {
  return std::make_unique<ChatStreamEncoder>(opts);
}

}  // namespace sluice::providers::openai
