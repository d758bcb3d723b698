#include "mock/AnthropicMock.hpp"

#include "mock/OpenAIMock.hpp"

#include <boost/json.hpp>

#include <array>

namespace sluice::mock::anthropic {

namespace json = boost::json;

namespace {

const json::value* field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return (v && !v->is_null()) ? v : nullptr;
}

ApiError required(std::string_view path) { return error(400, std::string(path) + ": Field required"); }

ApiError badType(std::string_view path, std::string_view what) {
  return error(400, std::string(path) + ": Input should be " + std::string(what));
}

std::int64_t tokensOf(std::size_t bytes) { return static_cast<std::int64_t>((bytes + 3) / 4) + 4; }

// Bytes of a message's content: text, tool_use name and input, tool_result content.
std::size_t contentBytes(const json::value& c) {
  if (c.is_string()) return c.get_string().size();
  std::size_t n = 0;
  if (const auto* a = c.if_array()) {
    for (const auto& b : *a) {
      const auto* bo = b.if_object();
      if (!bo) continue;
      if (const auto* t = field(*bo, "text"); t && t->is_string()) n += t->get_string().size();
      if (const auto* nm = field(*bo, "name"); nm && nm->is_string()) n += nm->get_string().size();
      if (const auto* in = field(*bo, "input")) n += json::serialize(*in).size();
      if (const auto* rc = field(*bo, "content")) n += contentText(*rc).size();
    }
  }
  return n;
}

// model (when asked), system, messages, tools and tool_choice: what messages and count_tokens share.
std::optional<ApiError> parseCommon(const json::value& body, bool with_model, std::string& model,
                                    std::int64_t& tokens, ToolDecision* decision) {
  const json::object* o = body.if_object();
  if (!o) return error(400, "Input should be a valid dictionary or object to extract fields from");
  const auto* m = field(*o, "model");
  if (!m) return required("model");
  if (!m->is_string()) return badType("model", "a valid string");
  model = std::string(m->get_string());
  (void)with_model;

  const auto* msgs = field(*o, "messages");
  if (!msgs) return required("messages");
  if (!msgs->is_array()) return badType("messages", "a valid list");
  const auto& arr = msgs->get_array();
  if (arr.empty()) return error(400, "messages: at least one message is required");

  tokens = 0;
  if (const auto* sys = field(*o, "system")) {
    if (!sys->is_string() && !sys->is_array()) return badType("system", "a valid string");
    const std::size_t b = contentBytes(*sys);
    if (b) tokens += tokensOf(b);
  }
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string at = "messages." + std::to_string(i);
    const auto* mo = arr[i].if_object();
    if (!mo) return badType(at, "a valid dictionary");
    const auto* role = field(*mo, "role");
    if (!role) return required(at + ".role");
    if (!role->is_string()) return badType(at + ".role", "'user' or 'assistant'");
    if (role->get_string() == "system")
      return error(400, "messages: Unexpected role \"system\". The Messages API accepts a top-level `system` "
                        "parameter, not \"system\" as an input message role.");
    if (role->get_string() != "user" && role->get_string() != "assistant")
      return badType(at + ".role", "'user' or 'assistant'");
    const auto* content = field(*mo, "content");
    if (!content) return required(at + ".content");
    if (!content->is_string() && !content->is_array()) return badType(at + ".content", "a valid list");
    tokens += tokensOf(contentBytes(*content));
  }

  ToolRequest tr;
  if (const auto* tools = field(*o, "tools")) {
    if (!tools->is_array()) return badType("tools", "a valid list");
    std::size_t i = 0;
    for (const auto& t : tools->get_array()) {
      const auto* to = t.if_object();
      if (!to) return badType("tools." + std::to_string(i), "a valid dictionary");
      const auto* name = field(*to, "name");
      if (!name || !name->is_string()) return required("tools." + std::to_string(i) + ".name");
      const auto* type = field(*to, "type");
      const bool custom = !type || (type->is_string() && type->get_string() == "custom");
      const auto* schema = field(*to, "input_schema");
      if (custom && !schema) return required("tools." + std::to_string(i) + ".custom.input_schema");
      if (custom) tr.tools.push_back({std::string(name->get_string()), schema});
      ++i;
    }
  }
  if (const auto* tc = field(*o, "tool_choice")) {
    const auto* tco = tc->if_object();
    const auto* type = tco ? field(*tco, "type") : nullptr;
    if (!type || !type->is_string()) return required("tool_choice.type");
    const auto t = type->get_string();
    if (t == "none") tr.mode = ToolChoiceMode::None;
    else if (t == "any") tr.mode = ToolChoiceMode::Required;
    else if (t == "tool") {
      const auto* name = field(*tco, "name");
      if (!name || !name->is_string()) return required("tool_choice.tool.name");
      tr.mode = ToolChoiceMode::Named;
      tr.forced_name = std::string(name->get_string());
    } else if (t != "auto") {
      return error(400, "tool_choice: Input tag '" + std::string(t) +
                            "' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', "
                            "'none'");
    }
    if (const auto* dp = field(*tco, "disable_parallel_tool_use"); dp && dp->is_bool()) tr.parallel = !dp->get_bool();
  }
  // The last user turn; its tool_result blocks are the results that answer the last tool use.
  std::size_t last_user = arr.size();
  for (std::size_t i = arr.size(); i-- > 0;) {
    const auto& mo = arr[i].get_object();
    if (mo.at("role").get_string() != "user") continue;
    last_user = i;
    const auto& content = mo.at("content");
    if (content.is_string()) {
      tr.last_user_text = std::string(content.get_string());
    } else {
      for (const auto& b : content.get_array()) {
        const auto* bo = b.if_object();
        const auto* type = bo ? field(*bo, "type") : nullptr;
        if (!type || !type->is_string()) continue;
        if (type->get_string() == "tool_result") {
          const auto* rc = field(*bo, "content");
          tr.tool_results.push_back(rc ? contentText(*rc) : std::string());
        } else if (type->get_string() == "text") {
          if (const auto* t = field(*bo, "text"); t && t->is_string()) {
            if (!tr.last_user_text.empty()) tr.last_user_text += "\n";
            tr.last_user_text += t->get_string();
          }
        }
      }
    }
    break;
  }
  // A partial answer to continue: a trailing assistant turn (a prefill), or the one before a last
  // user turn that asks to continue it.
  auto assistantText = [&](std::size_t i) -> std::string {
    if (i >= arr.size()) return {};
    const auto& mo = arr[i].get_object();
    if (mo.at("role").get_string() != "assistant") return {};
    return contentText(mo.at("content"));
  };
  tr.partial_answer = partialAnswer(arr.size(), last_user, tr.last_user_text, assistantText);
  if (decision) *decision = decideTools(tr);
  return std::nullopt;
}

// input_tokens without the cache reads and writes; output_tokens with the thinking.
std::string usageFields(std::int64_t input, std::int64_t output, const ExtraUsage& x) {
  std::string s = "\"input_tokens\":" + std::to_string(input);
  s += ",\"cache_creation_input_tokens\":" + std::to_string(x.cache_write);
  s += ",\"cache_read_input_tokens\":" + std::to_string(x.cache_read);
  if (x.cache_write > 0)
    s += ",\"cache_creation\":{\"ephemeral_5m_input_tokens\":" + std::to_string(x.cache_write) +
         ",\"ephemeral_1h_input_tokens\":0}";
  s += ",\"output_tokens\":" + std::to_string(output + x.reasoning);
  return s;
}

std::string usageJson(std::int64_t input, std::int64_t output, const ExtraUsage& x) {
  return "{" + usageFields(input, output, x) + ",\"service_tier\":\"standard\"}";
}

std::string event(std::string_view name, std::string_view data) {
  std::string e;
  e.reserve(name.size() + data.size() + 16);
  e += "event: ";
  e += name;
  e += "\ndata: ";
  e += data;
  e += "\n\n";
  return e;
}

void appendToolUseBlock(std::string& out, const ToolCall& c, bool with_input) {
  out += "{\"type\":\"tool_use\",\"id\":\"toolu_";
  out += c.id_token;
  out += "\",\"name\":";
  appendJsonString(out, c.name);
  out += ",\"input\":";
  out += with_input ? c.arguments : std::string("{}");
  out += '}';
}

std::string blockStart(std::size_t index, std::string_view block) {
  std::string d = "{\"type\":\"content_block_start\",\"index\":" + std::to_string(index) + ",\"content_block\":";
  d += block;
  d += '}';
  return event("content_block_start", d);
}

std::string blockStop(std::size_t index) {
  return event("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":" + std::to_string(index) + "}");
}

struct ModelInfo {
  std::string_view id;
  std::string_view display_name;
  std::string_view created_at;
};

constexpr std::array<ModelInfo, 5> kModels = {{
    {"claude-sonnet-4-20250514", "Claude Sonnet 4", "2025-05-22T00:00:00Z"},
    {"claude-opus-4-20250514", "Claude Opus 4", "2025-05-22T00:00:00Z"},
    {"claude-3-7-sonnet-20250219", "Claude Sonnet 3.7", "2025-02-24T00:00:00Z"},
    {"claude-3-5-haiku-20241022", "Claude Haiku 3.5", "2024-10-22T00:00:00Z"},
    {"mock-model", "Sluice Mock", "2023-11-14T00:00:00Z"},
}};

json::object modelObject(const ModelInfo& m) {
  json::object o;
  o["type"] = "model";
  o["id"] = m.id;
  o["display_name"] = m.display_name;
  o["created_at"] = m.created_at;
  return o;
}

}  // namespace

std::optional<ApiError> parseMessagesRequest(const json::value& body, MessagesRequest& out) {
  if (auto e = parseCommon(body, true, out.model, out.input_tokens, &out.tools)) return e;
  const auto& o = body.get_object();
  const auto* mt = field(o, "max_tokens");
  if (!mt) return required("max_tokens");
  if (!openai::asInteger(*mt, out.max_tokens)) return badType("max_tokens", "a valid integer");
  if (out.max_tokens < 1) return error(400, "max_tokens: Input should be greater than or equal to 1");
  if (const auto* s = field(o, "stream")) {
    if (!s->is_bool()) return badType("stream", "a valid boolean");
    out.stream = s->get_bool();
  }
  if (const auto* ss = field(o, "stop_sequences")) {
    if (!ss->is_array()) return badType("stop_sequences", "a valid list");
    for (const auto& s : ss->get_array()) {
      if (!s.is_string()) return badType("stop_sequences", "a list of strings");
      out.stop.emplace_back(s.get_string());
    }
  }
  return std::nullopt;
}

std::optional<ApiError> parseCountTokensRequest(const json::value& body, std::int64_t& input_tokens) {
  std::string model;
  return parseCommon(body, true, model, input_tokens, nullptr);
}

const char* stopReason(const Generation& gen) {
  if (gen.hasToolCalls()) return "tool_use";
  if (gen.truncated_by_length) return "max_tokens";
  if (gen.stop_sequence) return "stop_sequence";
  return "end_turn";
}

std::string messageJson(const MessagesRequest& req, const Generation& gen, std::string_view id) {
  std::string out;
  out.reserve(512);
  out += "{\"id\":";
  appendJsonString(out, id);
  out += ",\"type\":\"message\",\"role\":\"assistant\",\"model\":";
  appendJsonString(out, req.model);
  out += ",\"content\":[";
  if (gen.hasToolCalls()) {
    bool first = true;
    for (const auto& c : gen.tools->calls) {
      if (!first) out += ',';
      first = false;
      appendToolUseBlock(out, c, true);
    }
  } else {
    out += "{\"type\":\"text\",\"text\":";
    appendJsonString(out, gen.text());
    out += '}';
  }
  out += "],\"stop_reason\":\"";
  out += stopReason(gen);
  out += "\",\"stop_sequence\":";
  if (gen.stop_sequence && !gen.hasToolCalls()) appendJsonString(out, *gen.stop_sequence);
  else out += "null";
  out += ",\"usage\":";
  out += usageJson(req.input_tokens, static_cast<std::int64_t>(gen.tokensPerChoice()), gen.extra);
  out += '}';
  return out;
}

SseScript messageStream(const MessagesRequest& req, const Generation& gen, std::string_view id) {
  SseScript s;
  {
    std::string d = "{\"type\":\"message_start\",\"message\":{\"id\":";
    appendJsonString(d, id);
    d += ",\"type\":\"message\",\"role\":\"assistant\",\"model\":";
    appendJsonString(d, req.model);
    d += ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":";
    d += usageJson(req.input_tokens, 1, {gen.extra.cache_read, gen.extra.cache_write, 0});
    d += "}}";
    s.head.push_back(event("message_start", d));
  }
  std::size_t last_index = 0;
  if (gen.hasToolCalls()) {
    std::string block;
    appendToolUseBlock(block, gen.tools->calls[0], false);
    s.head.push_back(blockStart(0, block));
    last_index = gen.tools->calls.size() - 1;
  } else {
    s.head.push_back(blockStart(0, "{\"type\":\"text\",\"text\":\"\"}"));
  }
  s.head.push_back(event("ping", "{\"type\":\"ping\"}"));

  s.content_count = gen.pieces;
  if (gen.hasToolCalls()) {
    s.content = [gen](std::size_t step, std::string& out) {
      const auto [j, d] = gen.tools->steps[step];
      const ToolCall& c = gen.tools->calls[j];
      if (d == 0 && j > 0) {
        out += blockStop(j - 1);
        std::string block;
        appendToolUseBlock(block, c, false);
        out += blockStart(j, block);
      }
      out += "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":";
      out += std::to_string(j);
      out += ",\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":";
      appendJsonString(out, c.deltas[d]);
      out += "}}\n\n";
    };
  } else {
    s.content = [gen](std::size_t step, std::string& out) {
      out += "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
             "\"delta\":{\"type\":\"text_delta\",\"text\":";
      appendJsonString(out, gen.piece(step));
      out += "}}\n\n";
    };
  }

  s.tail.push_back(blockStop(last_index));
  {
    std::string d = "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"";
    d += stopReason(gen);
    d += "\",\"stop_sequence\":";
    if (gen.stop_sequence && !gen.hasToolCalls()) appendJsonString(d, *gen.stop_sequence);
    else d += "null";
    d += "},\"usage\":{" + usageFields(req.input_tokens, static_cast<std::int64_t>(gen.tokensPerChoice()), gen.extra) +
         "}}";
    s.tail.push_back(event("message_delta", d));
  }
  s.tail.push_back(event("message_stop", "{\"type\":\"message_stop\"}"));
  return s;
}

std::string countTokensJson(std::int64_t input_tokens) {
  return "{\"input_tokens\":" + std::to_string(input_tokens) + "}";
}

std::string modelsJson(std::size_t limit, std::string_view after_id) {
  std::size_t from = 0;
  if (!after_id.empty()) {
    while (from < kModels.size() && kModels[from].id != after_id) ++from;
    from = from < kModels.size() ? from + 1 : kModels.size();
  }
  const std::size_t to = std::min(kModels.size(), from + std::max<std::size_t>(limit, 1));
  json::array data;
  for (std::size_t i = from; i < to; ++i) data.push_back(modelObject(kModels[i]));
  json::object o;
  o["data"] = std::move(data);
  o["has_more"] = to < kModels.size();
  o["first_id"] = from < to ? json::value(kModels[from].id) : json::value(nullptr);
  o["last_id"] = from < to ? json::value(kModels[to - 1].id) : json::value(nullptr);
  return json::serialize(o);
}

std::optional<std::string> modelJson(std::string_view id) {
  for (const auto& m : kModels)
    if (m.id == id) return json::serialize(modelObject(m));
  return std::nullopt;
}

const char* errorType(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 402: return "billing_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 504: return "timeout_error";
    case 529: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

ApiError error(int status, std::string message) {
  ApiError e;
  e.status = status;
  e.type = errorType(status);
  e.message = std::move(message);
  return e;
}

std::string errorJson(const ApiError& e, std::string_view request_id) {
  std::string out = "{\"type\":\"error\",\"error\":{\"type\":";
  appendJsonString(out, e.type);
  out += ",\"message\":";
  appendJsonString(out, e.message);
  out += "},\"request_id\":";
  if (request_id.empty()) out += "null";
  else appendJsonString(out, request_id);
  out += '}';
  return out;
}

ApiError simulatedFailure(int status) {
  std::string what;
  switch (status) {
    case 400: what = "Bad request."; break;
    case 401: what = "invalid x-api-key"; break;
    case 402: what = "Your credit balance is too low to access the Anthropic API."; break;
    case 403: what = "Your API key does not have permission to use the specified resource."; break;
    case 404: what = "Not found."; break;
    case 413: what = "Request exceeds the maximum allowed number of bytes."; break;
    case 429: what = "Number of request tokens has exceeded your per-minute rate limit."; break;
    case 500: what = "Internal server error"; break;
    case 504: what = "Request timed out."; break;
    case 529: what = "Overloaded"; break;
    default: what = "Simulated error.";
  }
  return error(status, "Simulated failure from sluice mock (HTTP " + std::to_string(status) + "): " + what);
}

}  // namespace sluice::mock::anthropic
