#include "providers/anthropic/MessagesCodec.hpp"

#include <fmt/format.h>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <unordered_map>

#include "core/JsonText.hpp"
#include "providers/CodecUtil.hpp"

namespace sluice::providers::anthropic {

namespace json = boost::json;
using detail::Fields;
using detail::indexPath;

namespace {

std::optional<ApiError> decodeImage(const Fields& bf, Part& p) {
  auto* src = bf.get("source");
  if (!src || !src->is_object())
    return ApiError::invalid(bf.sub("source"), fmt::format("{} must be an object", bf.sub("source")));
  Fields sf{src->as_object(), bf.sub("source")};
  std::string type;
  SLUICE_PROVIDERS_TRY(sf.str("type", type, true));
  p.kind = Part::Kind::Image;
  if (type == "base64") {
    SLUICE_PROVIDERS_TRY(sf.str("media_type", p.media_type, true));
    SLUICE_PROVIDERS_TRY(sf.str("data", p.data, true));
  } else if (type == "url") {
    SLUICE_PROVIDERS_TRY(sf.str("url", p.url, true));
  } else {
    return ApiError::invalid(sf.sub("type"), fmt::format("image source type '{}' cannot be translated", type));
  }
  return std::nullopt;
}

// Text and image blocks (system prompt, tool_result content).
std::optional<ApiError> decodeSimpleContent(const json::value& v, const std::string& path, std::vector<Part>& out,
                                            bool allowImages) {
  if (v.is_string()) {
    if (!v.as_string().empty()) out.push_back(Part::makeText(std::string(v.as_string())));
    return std::nullopt;
  }
  if (!v.is_array()) return ApiError::invalid(path, fmt::format("{} must be a string or an array of blocks", path));
  for (std::size_t j = 0; j < v.as_array().size(); ++j) {
    const auto& b = v.as_array()[j];
    auto bp = indexPath(path, j);
    if (!b.is_object()) return ApiError::invalid(bp, fmt::format("{} must be an object", bp));
    Fields bf{b.as_object(), bp};
    std::string type;
    SLUICE_PROVIDERS_TRY(bf.str("type", type, true));
    if (type == "text") {
      std::string text;
      SLUICE_PROVIDERS_TRY(bf.str("text", text, true));
      if (!text.empty()) out.push_back(Part::makeText(std::move(text)));
    } else if (type == "image" && allowImages) {
      Part p;
      SLUICE_PROVIDERS_TRY(decodeImage(bf, p));
      out.push_back(std::move(p));
    } else {
      return ApiError::invalid(bf.sub("type"), fmt::format("block type '{}' cannot be translated here", type));
    }
  }
  return std::nullopt;
}

std::optional<ApiError> decodeBlock(const json::value& b, const std::string& bp, Role role, Message& m) {
  if (!b.is_object()) return ApiError::invalid(bp, fmt::format("{} must be an object", bp));
  Fields bf{b.as_object(), bp};
  std::string type;
  SLUICE_PROVIDERS_TRY(bf.str("type", type, true));
  Part p;
  if (type == "text") {
    SLUICE_PROVIDERS_TRY(bf.str("text", p.text, true));
    if (p.text.empty()) return std::nullopt;
  } else if (type == "image") {
    SLUICE_PROVIDERS_TRY(decodeImage(bf, p));
  } else if (type == "tool_use" && role == Role::Assistant) {
    p.kind = Part::Kind::ToolCall;
    SLUICE_PROVIDERS_TRY(bf.str("id", p.id, true));
    SLUICE_PROVIDERS_TRY(bf.str("name", p.name, true));
    auto* input = bf.get("input");
    if (input && !input->is_object())
      return ApiError::invalid(bf.sub("input"), fmt::format("{} must be an object", bf.sub("input")));
    p.arguments = input ? json::serialize(*input) : "{}";
  } else if (type == "tool_result" && role == Role::User) {
    p.kind = Part::Kind::ToolResult;
    SLUICE_PROVIDERS_TRY(bf.str("tool_use_id", p.id, true));
    if (auto* c = bf.get("content")) SLUICE_PROVIDERS_TRY(decodeSimpleContent(*c, bf.sub("content"), p.content, true));
    std::optional<bool> isError;
    SLUICE_PROVIDERS_TRY(bf.boolean("is_error", isError));
    p.is_error = isError.value_or(false);
  } else if (type == "thinking" && role == Role::Assistant) {
    p.kind = Part::Kind::Reasoning;
    SLUICE_PROVIDERS_TRY(bf.str("thinking", p.text));
    SLUICE_PROVIDERS_TRY(bf.str("signature", p.signature));
  } else if (type == "redacted_thinking" && role == Role::Assistant) {
    p.kind = Part::Kind::RedactedReasoning;
    SLUICE_PROVIDERS_TRY(bf.str("data", p.data, true));
  } else {
    return ApiError::invalid(bf.sub("type"), fmt::format("content block type '{}' cannot be translated to another "
                                                         "provider{}",
                                                         type, role == Role::User ? " in a user message" : ""));
  }
  m.parts.push_back(std::move(p));
  return std::nullopt;
}

std::optional<ApiError> decodeMessages(const Fields& f, Request& out) {
  auto* msgs = f.get("messages");
  if (!msgs) return ApiError::invalid("messages", "messages is required");
  if (!msgs->is_array()) return ApiError::invalid("messages", "messages must be an array");
  if (msgs->as_array().empty()) return ApiError::invalid("messages", "messages must not be empty");
  std::unordered_map<std::string, std::string> callNames;
  const auto& arr = msgs->as_array();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    auto path = indexPath("messages", i);
    if (!arr[i].is_object()) return ApiError::invalid(path, fmt::format("{} must be an object", path));
    Fields mf{arr[i].as_object(), path};
    std::string role;
    SLUICE_PROVIDERS_TRY(mf.str("role", role, true));
    auto* content = mf.get("content");
    if (!content) return ApiError::invalid(mf.sub("content"), fmt::format("{} is required", mf.sub("content")));
    if (role == "system") {
      SLUICE_PROVIDERS_TRY(decodeSimpleContent(*content, mf.sub("content"), out.system, false));
      continue;
    }
    Message m;
    if (role == "user") {
      m.role = Role::User;
    } else if (role == "assistant") {
      m.role = Role::Assistant;
    } else {
      return ApiError::invalid(mf.sub("role"), fmt::format("{} '{}' must be user or assistant", mf.sub("role"), role));
    }
    if (content->is_string()) {
      if (!content->as_string().empty()) m.parts.push_back(Part::makeText(std::string(content->as_string())));
    } else if (content->is_array()) {
      for (std::size_t j = 0; j < content->as_array().size(); ++j)
        SLUICE_PROVIDERS_TRY(decodeBlock(content->as_array()[j], indexPath(mf.sub("content"), j), m.role, m));
    } else {
      return ApiError::invalid(mf.sub("content"),
                               fmt::format("{} must be a string or an array of blocks", mf.sub("content")));
    }
    if (m.parts.empty())
      return ApiError::invalid(mf.sub("content"), fmt::format("{} must not be empty", mf.sub("content")));
    for (auto& p : m.parts) {
      if (p.kind == Part::Kind::ToolCall) callNames[p.id] = p.name;
      if (p.kind == Part::Kind::ToolResult) {
        if (auto it = callNames.find(p.id); it != callNames.end()) p.name = it->second;
      }
    }
    out.messages.push_back(std::move(m));
  }
  if (out.messages.empty())
    return ApiError::invalid("messages", "messages must hold at least one user or assistant message");
  return std::nullopt;
}

std::optional<ApiError> decodeTools(const Fields& f, Request& out) {
  if (auto* tools = f.get("tools")) {
    if (!tools->is_array()) return ApiError::invalid("tools", "tools must be an array");
    for (std::size_t i = 0; i < tools->as_array().size(); ++i) {
      const auto& tv = tools->as_array()[i];
      auto tp = indexPath("tools", i);
      if (!tv.is_object()) return ApiError::invalid(tp, fmt::format("{} must be an object", tp));
      Fields tf{tv.as_object(), tp};
      std::string type = "custom";
      SLUICE_PROVIDERS_TRY(tf.str("type", type));
      if (type != "custom")
        return ApiError::invalid(tf.sub("type"),
                                 fmt::format("server tool '{}' has no equivalent at this provider", type));
      Tool t;
      SLUICE_PROVIDERS_TRY(tf.str("name", t.name, true));
      SLUICE_PROVIDERS_TRY(tf.str("description", t.description));
      auto* schema = tf.get("input_schema");
      if (!schema || !schema->is_object())
        return ApiError::invalid(tf.sub("input_schema"), fmt::format("{} must be an object", tf.sub("input_schema")));
      t.parameters = json::serialize(*schema);
      out.tools.push_back(std::move(t));
    }
  }
  if (auto* tc = f.get("tool_choice")) {
    if (!tc->is_object()) return ApiError::invalid("tool_choice", "tool_choice must be an object");
    Fields cf{tc->as_object(), "tool_choice"};
    std::string type;
    SLUICE_PROVIDERS_TRY(cf.str("type", type, true));
    if (type == "auto") {
      out.tool_choice.mode = ToolChoice::Mode::Auto;
    } else if (type == "any") {
      out.tool_choice.mode = ToolChoice::Mode::Required;
    } else if (type == "none") {
      out.tool_choice.mode = ToolChoice::Mode::None;
    } else if (type == "tool") {
      out.tool_choice.mode = ToolChoice::Mode::Named;
      SLUICE_PROVIDERS_TRY(cf.str("name", out.tool_choice.name, true));
    } else {
      return ApiError::invalid("tool_choice.type", "tool_choice.type must be auto, any, tool or none");
    }
    std::optional<bool> disable;
    SLUICE_PROVIDERS_TRY(cf.boolean("disable_parallel_tool_use", disable));
    if (disable) out.parallel_tool_calls = !*disable;
  }
  return std::nullopt;
}

std::string_view errorTypeName(ErrorKind k) {
  switch (k) {
    case ErrorKind::InvalidRequest:
      return "invalid_request_error";
    case ErrorKind::Authentication:
      return "authentication_error";
    case ErrorKind::Billing:
      return "billing_error";
    case ErrorKind::Permission:
      return "permission_error";
    case ErrorKind::NotFound:
      return "not_found_error";
    case ErrorKind::RequestTooLarge:
      return "request_too_large";
    case ErrorKind::RateLimit:
      return "rate_limit_error";
    case ErrorKind::Api:
      return "api_error";
    case ErrorKind::Timeout:
      return "timeout_error";
    case ErrorKind::Overloaded:
      return "overloaded_error";
  }
  return "api_error";
}

std::optional<ErrorKind> kindForType(std::string_view t) {
  if (t == "invalid_request_error") return ErrorKind::InvalidRequest;
  if (t == "authentication_error") return ErrorKind::Authentication;
  if (t == "billing_error") return ErrorKind::Billing;
  if (t == "permission_error") return ErrorKind::Permission;
  if (t == "not_found_error") return ErrorKind::NotFound;
  if (t == "request_too_large") return ErrorKind::RequestTooLarge;
  if (t == "rate_limit_error") return ErrorKind::RateLimit;
  if (t == "api_error") return ErrorKind::Api;
  if (t == "timeout_error") return ErrorKind::Timeout;
  if (t == "overloaded_error") return ErrorKind::Overloaded;
  return std::nullopt;
}

FinishReason finishFromName(std::string_view s) {
  if (s == "end_turn" || s == "pause_turn") return FinishReason::Stop;
  if (s == "stop_sequence") return FinishReason::StopSequence;
  if (s == "max_tokens" || s == "model_context_window_exceeded") return FinishReason::Length;
  if (s == "tool_use") return FinishReason::ToolCalls;
  if (s == "refusal") return FinishReason::ContentFilter;
  return FinishReason::Other;
}

// Anthropic's input_tokens excludes cache reads and writes; the canonical input includes them.
struct RawUsage {
  std::int64_t input = -1, read = -1, creation = -1, output = -1;
  void merge(const json::value* u) {
    if (!u || !u->is_object()) return;
    const auto& o = u->as_object();
    if (auto v = detail::asInt(o.if_contains("input_tokens"))) input = *v;
    if (auto v = detail::asInt(o.if_contains("cache_read_input_tokens"))) read = *v;
    if (auto v = detail::asInt(o.if_contains("cache_creation_input_tokens"))) {
      creation = *v;
    } else if (auto* cc = o.if_contains("cache_creation"); cc && cc->is_object()) {
      // Only the per-lifetime split ({ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}):
      // the writes are their sum.
      std::int64_t sum = 0;
      bool any = false;
      for (const auto& kv : cc->as_object()) {
        if (auto n = detail::asInt(&kv.value()); n && *n >= 0) {
          sum = detail::addCounts(sum, *n);
          any = true;
        }
      }
      if (any) creation = sum;
    }
    if (auto v = detail::asInt(o.if_contains("output_tokens"))) output = *v;
  }
  Usage canonical() const {
    Usage u;
    if (input >= 0)
      u.input = detail::addCounts(detail::addCounts(input, read > 0 ? read : 0), creation > 0 ? creation : 0);
    u.output = output;
    u.cached = read;
    u.cache_creation = creation;
    return u;
  }
};

// Writes an Anthropic usage object from canonical usage.
void appendUsage(std::string& out, const Usage& u, bool withInput) {
  out += '{';
  if (withInput) {
    auto cached = u.cached > 0 ? u.cached : 0, creation = u.cache_creation > 0 ? u.cache_creation : 0;
    auto in = u.input >= 0 ? u.input - cached - creation : 0;
    out += "\"input_tokens\":";
    detail::appendInt(out, in < 0 ? 0 : in);
    out += ",\"cache_creation_input_tokens\":";
    detail::appendInt(out, creation);
    out += ",\"cache_read_input_tokens\":";
    detail::appendInt(out, cached);
    out += ',';
  }
  out += "\"output_tokens\":";
  detail::appendInt(out, u.output >= 0 ? u.output : 0);
  out += '}';
}

json::value argumentsObject(const std::string& args) {
  if (args.empty()) return json::object{};
  boost::system::error_code ec;
  auto v = sluice::parseJson(args, ec);
  if (!ec && v.is_object()) return v;
  return json::object{{"_raw_arguments", args}};
}

json::value imageBlock(const Part& p) {
  if (!p.url.empty()) return json::object{{"type", "image"}, {"source", json::object{{"type", "url"}, {"url", p.url}}}};
  return json::object{{"type", "image"},
                      {"source", json::object{{"type", "base64"}, {"media_type", p.media_type}, {"data", p.data}}}};
}

}  // namespace

std::string_view stopReasonName(FinishReason f) {
  switch (f) {
    case FinishReason::StopSequence:
      return "stop_sequence";
    case FinishReason::Length:
      return "max_tokens";
    case FinishReason::ToolCalls:
      return "tool_use";
    case FinishReason::ContentFilter:
      return "refusal";
    default:
      return "end_turn";
  }
}

std::optional<ApiError> decodeMessagesRequest(std::string_view body, Request& out) {
  json::value root;
  SLUICE_PROVIDERS_TRY(detail::parseJson(body, root, "request body"));
  if (!root.is_object()) return ApiError::invalid("", "request body must be a JSON object");
  Fields f{root.as_object(), ""};
  SLUICE_PROVIDERS_TRY(f.str("model", out.model, true));
  SLUICE_PROVIDERS_TRY(f.integer("max_tokens", out.max_tokens));
  if (out.max_tokens && *out.max_tokens < 1) return ApiError::invalid("max_tokens", "max_tokens must be at least 1");
  if (auto* sys = f.get("system")) SLUICE_PROVIDERS_TRY(decodeSimpleContent(*sys, "system", out.system, false));
  SLUICE_PROVIDERS_TRY(decodeMessages(f, out));
  SLUICE_PROVIDERS_TRY(decodeTools(f, out));
  SLUICE_PROVIDERS_TRY(f.num("temperature", out.temperature));
  SLUICE_PROVIDERS_TRY(f.num("top_p", out.top_p));
  SLUICE_PROVIDERS_TRY(f.integer("top_k", out.top_k));
  if (auto* ss = f.get("stop_sequences")) {
    if (!ss->is_array()) return ApiError::invalid("stop_sequences", "stop_sequences must be an array of strings");
    for (std::size_t i = 0; i < ss->as_array().size(); ++i) {
      const auto& s = ss->as_array()[i];
      if (!s.is_string()) return ApiError::invalid(indexPath("stop_sequences", i), "stop_sequences must hold strings");
      out.stop.emplace_back(s.as_string());
    }
  }
  std::optional<bool> stream;
  SLUICE_PROVIDERS_TRY(f.boolean("stream", stream));
  out.stream = stream.value_or(false);
  out.include_usage = true;  // Anthropic streams always carry usage
  if (auto* md = f.get("metadata"); md && md->is_object())
    SLUICE_PROVIDERS_TRY((Fields{md->as_object(), "metadata"}.str("user_id", out.user)));
  if (auto* th = f.get("thinking")) {
    if (!th->is_object()) return ApiError::invalid("thinking", "thinking must be an object");
    Fields tf{th->as_object(), "thinking"};
    std::string type;
    SLUICE_PROVIDERS_TRY(tf.str("type", type, true));
    if (type == "enabled") {
      std::optional<std::int64_t> budget;
      SLUICE_PROVIDERS_TRY(tf.integer("budget_tokens", budget));
      if (!budget || *budget < 1)
        return ApiError::invalid("thinking.budget_tokens", "thinking.budget_tokens is required");
      out.reasoning_budget = *budget;
    } else if (type == "disabled") {
      out.reasoning_budget = 0;
    } else if (type == "adaptive") {
      // The model decides how much to think: no budget, so the upstream's default applies
      // (what Claude Code sends for models it does not know).
    } else {
      return ApiError::invalid("thinking.type", "thinking.type must be enabled, adaptive or disabled");
    }
  }
  return std::nullopt;
}

std::optional<ApiError> encodeMessagesRequest(const Request& req, const EncodeOptions& opts, std::string& out) {
  if (req.n > 1) return ApiError::invalid("n", "n > 1 is not supported by Anthropic Messages");
  if (req.temperature && (*req.temperature < 0 || *req.temperature > 1))
    return ApiError::invalid(
        "temperature",
        fmt::format("temperature must be between 0 and 1 for Anthropic models (got {})", *req.temperature));
  if (req.response_format.kind == ResponseFormat::Kind::JsonSchema)
    return ApiError::invalid("response_format",
                             "response_format json_schema is not supported by Anthropic Messages; "
                             "use json_object or a tool with the schema");
  json::object root;
  root["model"] = opts.model.empty() ? req.model : opts.model;
  std::int64_t budget = req.reasoning_budget.value_or(0);
  std::int64_t maxTokens = req.max_tokens.value_or(kDefaultMaxTokens + budget);
  if (budget > 0 && maxTokens <= budget)
    return ApiError::invalid(
        "max_tokens", fmt::format("max_tokens ({}) must be greater than the thinking budget ({})", maxTokens, budget));
  root["max_tokens"] = maxTokens;

  json::array system;
  for (const auto& p : req.system) {
    if (p.kind != Part::Kind::Text) return ApiError::invalid("system", "system prompt parts must be text");
    system.push_back(json::object{{"type", "text"}, {"text", p.text}});
  }
  if (req.response_format.kind == ResponseFormat::Kind::JsonObject)
    system.push_back(json::object{{"type", "text"}, {"text", kJsonModeInstruction}});
  if (!system.empty()) root["system"] = std::move(system);

  json::array msgs;
  for (std::size_t i = 0; i < req.messages.size(); ++i) {
    const auto& m = req.messages[i];
    auto path = indexPath("messages", i);
    std::string_view role = m.role == Role::User ? "user" : "assistant";
    json::array blocks;
    for (const auto& p : m.parts) {
      switch (p.kind) {
        case Part::Kind::Text:
          blocks.push_back(json::object{{"type", "text"}, {"text", p.text}});
          break;
        case Part::Kind::Image:
          if (m.role != Role::User) return ApiError::invalid(path, "images are allowed only in user messages");
          blocks.push_back(imageBlock(p));
          break;
        case Part::Kind::ToolCall:
          blocks.push_back(json::object{
              {"type", "tool_use"}, {"id", p.id}, {"name", p.name}, {"input", argumentsObject(p.arguments)}});
          break;
        case Part::Kind::ToolResult: {
          json::object tr{{"type", "tool_result"}, {"tool_use_id", p.id}};
          if (p.content.size() == 1 && p.content[0].kind == Part::Kind::Text) {
            tr["content"] = p.content[0].text;
          } else if (!p.content.empty()) {
            json::array c;
            for (const auto& cp : p.content) {
              if (cp.kind == Part::Kind::Image) {
                c.push_back(imageBlock(cp));
              } else {
                c.push_back(json::object{{"type", "text"}, {"text", cp.text}});
              }
            }
            tr["content"] = std::move(c);
          }
          if (p.is_error) tr["is_error"] = true;
          blocks.push_back(std::move(tr));
          break;
        }
        case Part::Kind::Reasoning:
          // Anthropic verifies the signature; unsigned reasoning cannot be replayed.
          if (!p.signature.empty())
            blocks.push_back(json::object{{"type", "thinking"}, {"thinking", p.text}, {"signature", p.signature}});
          break;
        case Part::Kind::RedactedReasoning:
          blocks.push_back(json::object{{"type", "redacted_thinking"}, {"data", p.data}});
          break;
      }
    }
    if (blocks.empty()) continue;
    detail::appendTurn(msgs, role, "content", std::move(blocks));
  }
  if (msgs.empty()) return ApiError::invalid("messages", "messages must hold at least one non-empty message");
  root["messages"] = std::move(msgs);

  if (!req.tools.empty()) {
    json::array tools;
    for (const auto& t : req.tools) {
      json::object tool{{"name", t.name}};
      if (!t.description.empty()) tool["description"] = t.description;
      json::value schema = json::object{{"type", "object"}, {"properties", json::object{}}};
      if (!t.parameters.empty()) {
        boost::system::error_code ec;
        auto v = sluice::parseJson(t.parameters, ec);
        if (!ec && v.is_object() && !v.as_object().empty()) schema = std::move(v);
      }
      tool["input_schema"] = std::move(schema);
      tools.push_back(std::move(tool));
    }
    root["tools"] = std::move(tools);
    json::object choice;
    switch (req.tool_choice.mode) {
      case ToolChoice::Mode::Unset:
      case ToolChoice::Mode::Auto:
        choice["type"] = "auto";
        break;
      case ToolChoice::Mode::None:
        choice["type"] = "none";
        break;
      case ToolChoice::Mode::Required:
        choice["type"] = "any";
        break;
      case ToolChoice::Mode::Named:
        choice["type"] = "tool";
        choice["name"] = req.tool_choice.name;
        break;
    }
    bool noParallel =
        req.parallel_tool_calls && !*req.parallel_tool_calls && req.tool_choice.mode != ToolChoice::Mode::None;
    if (noParallel) choice["disable_parallel_tool_use"] = true;
    if (req.tool_choice.mode != ToolChoice::Mode::Unset || noParallel) root["tool_choice"] = std::move(choice);
  }
  if (!req.stop.empty()) {
    json::array stop;
    for (const auto& s : req.stop) stop.push_back(json::string(s));
    root["stop_sequences"] = std::move(stop);
  }
  if (req.temperature) root["temperature"] = *req.temperature;
  if (req.top_p) root["top_p"] = *req.top_p;
  if (req.top_k) root["top_k"] = *req.top_k;
  if (budget > 0) root["thinking"] = json::object{{"type", "enabled"}, {"budget_tokens", budget}};
  if (!req.user.empty()) root["metadata"] = json::object{{"user_id", req.user}};
  if (req.stream) root["stream"] = true;
  out = json::serialize(root);
  return std::nullopt;
}

std::optional<ApiError> decodeMessagesResponse(std::string_view body, Response& out) {
  boost::system::error_code ec;
  auto root = sluice::parseJson(body, ec);
  if (ec || !root.is_object())
    return detail::upstreamStreamError("the upstream answered with a body that is not an Anthropic message");
  const auto& o = root.as_object();
  out.id = std::string(detail::asStr(o.if_contains("id")));
  out.model = std::string(detail::asStr(o.if_contains("model")));
  out.finish = finishFromName(detail::asStr(o.if_contains("stop_reason")));
  out.stop_sequence = std::string(detail::asStr(o.if_contains("stop_sequence")));
  RawUsage ru;
  ru.merge(o.if_contains("usage"));
  out.usage = ru.canonical();
  auto* content = o.if_contains("content");
  if (!content || !content->is_array()) return detail::upstreamStreamError("the upstream message has no content array");
  for (const auto& b : content->as_array()) {
    if (!b.is_object()) continue;
    const auto& bo = b.as_object();
    auto type = detail::asStr(bo.if_contains("type"));
    Part p;
    if (type == "text") {
      p.text = std::string(detail::asStr(bo.if_contains("text")));
    } else if (type == "thinking") {
      p.kind = Part::Kind::Reasoning;
      p.text = std::string(detail::asStr(bo.if_contains("thinking")));
      p.signature = std::string(detail::asStr(bo.if_contains("signature")));
    } else if (type == "redacted_thinking") {
      p.kind = Part::Kind::RedactedReasoning;
      p.data = std::string(detail::asStr(bo.if_contains("data")));
    } else if (type == "tool_use") {
      p.kind = Part::Kind::ToolCall;
      p.id = std::string(detail::asStr(bo.if_contains("id")));
      p.name = std::string(detail::asStr(bo.if_contains("name")));
      auto* input = bo.if_contains("input");
      p.arguments = input && input->is_object() ? json::serialize(*input) : "{}";
    } else {
      continue;  // server tool blocks: not surfaced to other formats
    }
    out.content.push_back(std::move(p));
  }
  return std::nullopt;
}

void encodeMessagesResponse(const Response& res, std::string& out) {
  json::array content;
  for (const auto& p : res.content) {
    switch (p.kind) {
      case Part::Kind::Text:
        content.push_back(json::object{{"type", "text"}, {"text", p.text}});
        break;
      case Part::Kind::Reasoning:
        content.push_back(json::object{{"type", "thinking"}, {"thinking", p.text}, {"signature", p.signature}});
        break;
      case Part::Kind::RedactedReasoning:
        content.push_back(json::object{{"type", "redacted_thinking"}, {"data", p.data}});
        break;
      case Part::Kind::ToolCall:
        // A Gemini function-call signature rides in a carrier thinking block (GenerateCodec.hpp).
        if (!p.signature.empty())
          content.push_back(json::object{{"type", "thinking"}, {"thinking", ""}, {"signature", p.signature}});
        content.push_back(json::object{
            {"type", "tool_use"}, {"id", p.id}, {"name", p.name}, {"input", argumentsObject(p.arguments)}});
        break;
      default:
        break;
    }
  }
  json::object root{{"id", res.id}, {"type", "message"}, {"role", "assistant"}, {"model", res.model}};
  root["content"] = std::move(content);
  root["stop_reason"] = stopReasonName(res.finish);
  if (res.finish == FinishReason::StopSequence && !res.stop_sequence.empty()) {
    root["stop_sequence"] = res.stop_sequence;
  } else {
    root["stop_sequence"] = nullptr;
  }
  out = json::serialize(root);
  out.pop_back();
  out += ",\"usage\":";
  appendUsage(out, res.usage, true);
  out += '}';
}

void encodeMessagesError(const ApiError& err, std::string& out) {
  out += "{\"type\":\"error\",\"error\":{\"type\":";
  detail::appendJsonString(out, errorTypeName(err.kind));
  out += ",\"message\":";
  detail::appendJsonString(out, err.message);
  out += "}}";
}

ApiError decodeMessagesError(int status, std::string_view body) {
  ApiError err;
  err.status = status;
  err.kind = errorKindForStatus(status);
  boost::system::error_code ec;
  auto root = sluice::parseJson(body, ec);
  if (!ec && root.is_object()) {
    const json::value* e = root.as_object().if_contains("error");
    if (e && e->is_object()) {
      if (auto k = kindForType(detail::asStr(e->as_object().if_contains("type")))) err.kind = *k;
      err.message = std::string(detail::asStr(e->as_object().if_contains("message")));
    }
  }
  if (err.message.empty()) err.message = detail::fallbackErrorMessage(body, status);
  return err;
}

namespace {

class MessagesStreamDecoder final : public detail::JsonEventDecoder {
 private:
  enum class Block : std::int8_t { Other, Text, Thinking, Tool };
  struct BlockInfo {
    Block kind = Block::Other;
    int tool = 0;
  };

  BlockInfo* block(const json::object& o) {
    auto idx = detail::asInt(o.if_contains("index")).value_or(-1);
    if (idx < 0 || idx > 4096) return nullptr;
    if (blocks_.size() <= static_cast<std::size_t>(idx)) blocks_.resize(static_cast<std::size_t>(idx) + 1);
    return &blocks_[static_cast<std::size_t>(idx)];
  }

  // The bulk of a stream is text_delta events; one without escapes needs no JSON tree
  // (measured: the per-event parse was most of the translation cost).
  bool fastTextDelta(std::string_view data, StreamEventSink& sink) {
    static constexpr std::string_view kHead = R"({"type":"content_block_delta","index":)";
    static constexpr std::string_view kMid = R"(,"delta":{"type":"text_delta","text":")";
    static constexpr std::string_view kTail = "\"}}";
    if (!data.starts_with(kHead)) return false;
    std::size_t i = kHead.size(), start = i;
    std::size_t idx = 0;
    while (i < data.size() && i - start < 4 && data[i] >= '0' && data[i] <= '9') idx = idx * 10 + (data[i++] - '0');
    if (i == start || data.substr(i, kMid.size()) != kMid) return false;
    i += kMid.size();
    auto end = data.find('"', i);
    if (end == std::string_view::npos || data.substr(end) != kTail) return false;
    auto text = data.substr(i, end - i);
    for (char c : text)
      if (c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;  // escapes: the full parser
    if (blocks_.size() <= idx) blocks_.resize(idx + 1);
    if (text.empty()) return true;
    StreamEvent ev;
    ev.kind = StreamEvent::Kind::Text;
    ev.text = text;
    sink.onEvent(ev);
    return true;
  }

  void onData(std::string_view data, StreamEventSink& sink) override {
    if (fastTextDelta(data, sink)) return;
    unsigned char buf[4096];
    json::monotonic_resource mr(buf, sizeof buf);
    json::value v;
    const auto* parsed = parseObject(data, mr, v, sink);
    if (!parsed) return;
    const auto& o = *parsed;
    auto type = detail::asStr(o.if_contains("type"));
    StreamEvent ev;
    if (type == "content_block_delta") {
      auto* b = block(o);
      auto* d = o.if_contains("delta");
      if (!b || !d || !d->is_object()) return;
      const auto& delta = d->as_object();
      auto dt = detail::asStr(delta.if_contains("type"));
      if (dt == "text_delta") {
        ev.kind = StreamEvent::Kind::Text;
        ev.text = detail::asStr(delta.if_contains("text"));
      } else if (dt == "input_json_delta") {
        if (b->kind != Block::Tool) return;
        ev.kind = StreamEvent::Kind::ToolCallArgs;
        ev.tool_index = b->tool;
        ev.text = detail::asStr(delta.if_contains("partial_json"));
      } else if (dt == "thinking_delta") {
        ev.kind = StreamEvent::Kind::Reasoning;
        ev.text = detail::asStr(delta.if_contains("thinking"));
      } else if (dt == "signature_delta") {
        ev.kind = StreamEvent::Kind::ReasoningSignature;
        ev.text = detail::asStr(delta.if_contains("signature"));
      } else {
        return;  // citations_delta and future kinds
      }
      if (!ev.text.empty()) sink.onEvent(ev);
    } else if (type == "content_block_start") {
      auto* b = block(o);
      auto* cb = o.if_contains("content_block");
      if (!b || !cb || !cb->is_object()) return;
      const auto& c = cb->as_object();
      auto bt = detail::asStr(c.if_contains("type"));
      if (bt == "text") {
        b->kind = Block::Text;
        ev.kind = StreamEvent::Kind::Text;
        ev.text = detail::asStr(c.if_contains("text"));
        if (!ev.text.empty()) sink.onEvent(ev);
      } else if (bt == "thinking") {
        b->kind = Block::Thinking;
        ev.kind = StreamEvent::Kind::Reasoning;
        ev.text = detail::asStr(c.if_contains("thinking"));
        if (!ev.text.empty()) sink.onEvent(ev);
      } else if (bt == "redacted_thinking") {
        ev.kind = StreamEvent::Kind::RedactedReasoning;
        ev.text = detail::asStr(c.if_contains("data"));
        sink.onEvent(ev);
      } else if (bt == "tool_use") {
        b->kind = Block::Tool;
        b->tool = tools_++;
        ev.kind = StreamEvent::Kind::ToolCallStart;
        ev.tool_index = b->tool;
        ev.id = detail::asStr(c.if_contains("id"));
        ev.name = detail::asStr(c.if_contains("name"));
        sink.onEvent(ev);
        // Some relays put the whole input in the start block.
        if (auto* in = c.if_contains("input"); in && in->is_object() && !in->as_object().empty()) {
          std::string args = json::serialize(*in);
          StreamEvent ae;
          ae.kind = StreamEvent::Kind::ToolCallArgs;
          ae.tool_index = b->tool;
          ae.text = args;
          sink.onEvent(ae);
        }
      }
    } else if (type == "message_start") {
      auto* m = o.if_contains("message");
      if (m && m->is_object()) {
        const auto& mo = m->as_object();
        usage_.merge(mo.if_contains("usage"));
        ev.id = detail::asStr(mo.if_contains("id"));
        ev.model = detail::asStr(mo.if_contains("model"));
      }
      ev.kind = StreamEvent::Kind::Start;
      ev.usage = usage_.canonical();
      sink.onEvent(ev);
    } else if (type == "message_delta") {
      usage_.merge(o.if_contains("usage"));
      ev.kind = StreamEvent::Kind::Usage;
      ev.usage = usage_.canonical();
      sink.onEvent(ev);
      if (auto* d = o.if_contains("delta"); d && d->is_object()) {
        auto sr = detail::asStr(d->as_object().if_contains("stop_reason"));
        if (!sr.empty()) {
          StreamEvent fe;
          fe.kind = StreamEvent::Kind::Finish;
          fe.finish = finishFromName(sr);
          fe.stop_sequence = detail::asStr(d->as_object().if_contains("stop_sequence"));
          sink.onEvent(fe);
        }
      }
    } else if (type == "message_stop") {
      ev.kind = StreamEvent::Kind::Done;
      sink.onEvent(ev);
    } else if (type == "ping") {
      ev.kind = StreamEvent::Kind::Ping;
      sink.onEvent(ev);
    } else if (type == "error") {
      error_ = ApiError{};
      error_.kind = ErrorKind::Api;
      if (auto* e = o.if_contains("error"); e && e->is_object()) {
        if (auto k = kindForType(detail::asStr(e->as_object().if_contains("type")))) error_.kind = *k;
        error_.message = std::string(detail::asStr(e->as_object().if_contains("message")));
      }
      if (error_.message.empty()) error_.message = "the upstream reported an error mid-stream";
      error_.status = statusForErrorKind(error_.kind);
      ev.kind = StreamEvent::Kind::Error;
      ev.error = &error_;
      sink.onEvent(ev);
    }
    // content_block_stop and unknown event types carry nothing to translate.
  }

  std::vector<BlockInfo> blocks_;
  int tools_ = 0;
  RawUsage usage_;
  ApiError error_;
};

class MessagesStreamEncoder final : public StreamEncoder {
 public:
  void encode(const StreamEvent& ev, std::string& out) override {
    if (ended_) return;
    using K = StreamEvent::Kind;
    switch (ev.kind) {
      case K::Start:
        usage_.merge(ev.usage);
        if (!started_) start(ev.id, ev.model, out);
        break;
      case K::Text:
        ensureStarted(out);
        if (open_ != Open::Text) openBlock(Open::Text, "{\"type\":\"text\",\"text\":\"\"}", out);
        delta(open_index_, out);
        out += "{\"type\":\"text_delta\",\"text\":";
        detail::appendJsonString(out, ev.text);
        out += "}}\n\n";
        break;
      case K::Reasoning:
        ensureStarted(out);
        if (open_ != Open::Thinking) openBlock(Open::Thinking, "{\"type\":\"thinking\",\"thinking\":\"\"}", out);
        delta(open_index_, out);
        out += "{\"type\":\"thinking_delta\",\"thinking\":";
        detail::appendJsonString(out, ev.text);
        out += "}}\n\n";
        break;
      case K::ReasoningSignature:
        if (open_ != Open::Thinking) break;
        delta(open_index_, out);
        out += "{\"type\":\"signature_delta\",\"signature\":";
        detail::appendJsonString(out, ev.text);
        out += "}}\n\n";
        break;
      case K::RedactedReasoning: {
        ensureStarted(out);
        std::string block = "{\"type\":\"redacted_thinking\",\"data\":";
        detail::appendJsonString(block, ev.text);
        block += '}';
        openBlock(Open::Other, block, out);
        closeBlock(out);
        break;
      }
      case K::ToolCallStart: {
        ensureStarted(out);
        if (!ev.signature.empty()) {
          // A Gemini function-call signature rides in a carrier thinking block (GenerateCodec.hpp).
          openBlock(Open::Thinking, "{\"type\":\"thinking\",\"thinking\":\"\"}", out);
          delta(open_index_, out);
          out += "{\"type\":\"signature_delta\",\"signature\":";
          detail::appendJsonString(out, ev.signature);
          out += "}}\n\n";
        }
        std::string block = "{\"type\":\"tool_use\",\"id\":";
        detail::appendJsonString(block, ev.id);
        block += ",\"name\":";
        detail::appendJsonString(block, ev.name);
        block += ",\"input\":{}}";
        openBlock(Open::Tool, block, out);
        open_tool_ = ev.tool_index;
        if (tool_blocks_.size() <= static_cast<std::size_t>(ev.tool_index)) tool_blocks_.resize(ev.tool_index + 1, -1);
        tool_blocks_[ev.tool_index] = open_index_;
        break;
      }
      case K::ToolCallArgs: {
        ensureStarted(out);
        int index = -1;
        if (open_ == Open::Tool && open_tool_ == ev.tool_index) {
          index = open_index_;
        } else if (static_cast<std::size_t>(ev.tool_index) < tool_blocks_.size()) {
          index = tool_blocks_[ev.tool_index];  // interleaved upstream: deltas keep their block index
        }
        if (index < 0) break;
        delta(index, out);
        out += "{\"type\":\"input_json_delta\",\"partial_json\":";
        detail::appendJsonString(out, ev.text);
        out += "}}\n\n";
        break;
      }
      case K::Finish:
        finish_ = ev.finish;
        stop_sequence_.assign(ev.stop_sequence);
        break;
      case K::Usage:
        usage_.merge(ev.usage);
        break;
      case K::Ping:
        ensureStarted(out);
        out += "event: ping\ndata: {\"type\":\"ping\"}\n\n";
        break;
      case K::Done:
        closeStream(out);
        break;
      case K::Error:
        ensureStarted(out);
        writeError(*ev.error, out);
        break;
    }
  }

  void finish(std::string& out) override {
    if (ended_) return;
    if (finish_ != FinishReason::Unset) {
      closeStream(out);
      return;
    }
    ensureStarted(out);
    writeError(detail::upstreamStreamError("the upstream stream ended before the response was complete"), out);
  }

  bool ended() const override { return ended_; }

 private:
  enum class Open { None, Text, Thinking, Tool, Other };

  void start(std::string_view id, std::string_view model, std::string& out) {
    started_ = true;
    out += "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":";
    detail::appendJsonString(out, id.empty() ? std::string_view("msg_sluice") : id);
    out += ",\"type\":\"message\",\"role\":\"assistant\",\"model\":";
    detail::appendJsonString(out, model);
    out += ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":";
    appendUsage(out, usage_, true);
    out += "}}\n\n";
  }
  void ensureStarted(std::string& out) {
    if (!started_) start({}, {}, out);
  }
  void openBlock(Open kind, std::string_view block, std::string& out) {
    closeBlock(out);
    open_ = kind;
    open_index_ = next_index_++;
    out += "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":";
    detail::appendInt(out, open_index_);
    out += ",\"content_block\":";
    out += block;
    out += "}\n\n";
  }
  void closeBlock(std::string& out) {
    if (open_ == Open::None) return;
    out += "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":";
    detail::appendInt(out, open_index_);
    out += "}\n\n";
    open_ = Open::None;
  }
  void delta(int index, std::string& out) {
    out += "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":";
    detail::appendInt(out, index);
    out += ",\"delta\":";
  }
  void closeStream(std::string& out) {
    ensureStarted(out);
    closeBlock(out);
    out += "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"";
    out += stopReasonName(finish_);
    out += "\",\"stop_sequence\":";
    if (finish_ == FinishReason::StopSequence && !stop_sequence_.empty()) {
      detail::appendJsonString(out, stop_sequence_);
    } else {
      out += "null";
    }
    out += "},\"usage\":";
    appendUsage(out, usage_, usage_.input >= 0);
    out += "}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    ended_ = true;
  }
  void writeError(const ApiError& err, std::string& out) {
    closeBlock(out);
    out += "event: error\ndata: ";
    encodeMessagesError(err, out);
    out += "\n\n";
    ended_ = true;
  }

  bool started_ = false;
  bool ended_ = false;
  Open open_ = Open::None;
  int open_index_ = -1;
  int next_index_ = 0;
  int open_tool_ = -1;
  std::vector<int> tool_blocks_;
  FinishReason finish_ = FinishReason::Unset;
  std::string stop_sequence_;
  Usage usage_;
};

}  // namespace

std::unique_ptr<StreamDecoder> makeMessagesStreamDecoder() {
  return std::make_unique<MessagesStreamDecoder>();
}
std::unique_ptr<StreamEncoder> makeMessagesStreamEncoder() {
  return std::make_unique<MessagesStreamEncoder>();
}

}  // namespace sluice::providers::anthropic
