#include "mock/OpenAIMock.hpp"

#include <boost/json.hpp>

#include <array>
#include <charconv>
#include <cmath>

namespace sluice::mock::openai {

namespace json = boost::json;

// ------------------------------------------------------------------ request validation

const char* kindName(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64: return "an integer";
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
  }
  return "a value";
}

ApiError invalidType(std::string_view param, std::string_view expected, const json::value& got) {
  ApiError e;
  e.message = "Invalid type for '" + std::string(param) + "': expected " + std::string(expected) + ", but got " +
              kindName(got) + " instead.";
  e.param = std::string(param);
  e.code = "invalid_type";
  return e;
}

ApiError missingParam(std::string_view param) {
  ApiError e;
  e.message = "Missing required parameter: '" + std::string(param) + "'.";
  e.param = std::string(param);
  e.code = "missing_required_parameter";
  return e;
}

ApiError outOfRange(std::string_view param, std::int64_t got, std::int64_t lo, std::int64_t hi) {
  ApiError e;
  e.param = std::string(param);
  if (got < lo) {
    e.message = "Invalid '" + e.param + "': integer below minimum value. Expected a value >= " + std::to_string(lo) +
                ", but got " + std::to_string(got) + " instead.";
    e.code = "integer_below_min_value";
  } else {
    e.message = "Invalid '" + e.param + "': integer above maximum value. Expected a value <= " + std::to_string(hi) +
                ", but got " + std::to_string(got) + " instead.";
    e.code = "integer_above_max_value";
  }
  return e;
}

namespace {

const json::value* field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return (v && !v->is_null()) ? v : nullptr;
}

}  // namespace

// Integers, and doubles with an integral value (JSON has one number type).
bool asInteger(const json::value& v, std::int64_t& out) {
  if (v.is_int64()) {
    out = v.get_int64();
    return true;
  }
  if (v.is_uint64()) {
    out = v.get_uint64() > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(v.get_uint64());
    return true;
  }
  if (v.is_double()) {
    double d = v.get_double();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e18) {
      out = static_cast<std::int64_t>(d);
      return true;
    }
  }
  return false;
}

namespace {

std::optional<ApiError> readInt(const json::object& o, std::string_view key, std::optional<std::int64_t>& out) {
  const json::value* v = field(o, key);
  if (!v) return std::nullopt;
  std::int64_t i = 0;
  if (!asInteger(*v, i)) return invalidType(key, "an integer", *v);
  out = i;
  return std::nullopt;
}

std::optional<ApiError> readBool(const json::object& o, std::string_view key, bool& out) {
  const json::value* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_bool()) return invalidType(key, "a boolean", *v);
  out = v->get_bool();
  return std::nullopt;
}

std::optional<ApiError> readModel(const json::object& o, std::string& out) {
  const json::value* v = field(o, "model");
  if (!v || (v->is_string() && v->get_string().empty())) {
    ApiError e;
    e.message = "you must provide a model parameter";
    return e;
  }
  if (!v->is_string()) return invalidType("model", "a string", *v);
  out = std::string(v->get_string());
  return std::nullopt;
}

std::optional<ApiError> readStop(const json::object& o, std::vector<std::string>& out) {
  const json::value* v = field(o, "stop");
  if (!v) return std::nullopt;
  if (v->is_string()) {
    out.emplace_back(v->get_string());
    return std::nullopt;
  }
  if (!v->is_array()) return invalidType("stop", "a string or an array of strings", *v);
  for (const auto& s : v->get_array()) {
    if (!s.is_string()) return invalidType("stop", "an array of strings", s);
    out.emplace_back(s.get_string());
  }
  return std::nullopt;
}

std::optional<ApiError> readStreaming(const json::object& o, bool& stream, bool& include_usage) {
  if (auto e = readBool(o, "stream", stream)) return e;
  const json::value* so = field(o, "stream_options");
  if (!so) return std::nullopt;
  if (!so->is_object()) return invalidType("stream_options", "an object", *so);
  if (!stream) {
    // OpenAI refuses this combination; a gateway that adds stream_options to a non-streamed
    // request should learn it here rather than in production.
    ApiError e;
    e.message = "The 'stream_options' parameter is only allowed when 'stream' is enabled.";
    e.param = "stream_options";
    return e;
  }
  return readBool(so->get_object(), "include_usage", include_usage);
}

std::optional<ApiError> readN(const json::object& o, int& n) {
  std::optional<std::int64_t> v;
  if (auto e = readInt(o, "n", v)) return e;
  if (!v) return std::nullopt;
  if (*v < 1 || *v > kMaxChoices) return outOfRange("n", *v, 1, kMaxChoices);
  n = static_cast<int>(*v);
  return std::nullopt;
}

std::optional<ApiError> readMaxTokens(const json::object& o, std::string_view key,
                                      std::optional<std::int64_t>& out) {
  std::optional<std::int64_t> v;
  if (auto e = readInt(o, key, v)) return e;
  if (!v) return std::nullopt;
  if (*v < 1) return outOfRange(key, *v, 1, INT64_MAX);
  out = v;
  return std::nullopt;
}

std::optional<ApiError> requireObject(const json::value& body, const json::object*& o) {
  o = body.if_object();
  if (!o) {
    ApiError e;
    e.message = std::string("Invalid type for request body: expected an object, but got ") + kindName(body) +
                " instead.";
    e.code = "invalid_type";
    return e;
  }
  return std::nullopt;
}

// Bytes of a message's text: content (string or text parts), name, tool calls.
std::size_t messageBytes(const json::object& m) {
  std::size_t n = 0;
  if (const auto* c = field(m, "content")) {
    if (c->is_string()) {
      n += c->get_string().size();
    } else if (c->is_array()) {
      for (const auto& part : c->get_array())
        if (const auto* po = part.if_object())
          if (const auto* t = field(*po, "text"); t && t->is_string()) n += t->get_string().size();
    }
  }
  if (const auto* name = field(m, "name"); name && name->is_string()) n += name->get_string().size();
  if (const auto* calls = field(m, "tool_calls"); calls && calls->is_array()) {
    for (const auto& call : calls->get_array()) {
      const auto* co = call.if_object();
      const auto* fn = co ? field(*co, "function") : nullptr;
      if (!fn || !fn->is_object()) continue;
      for (std::string_view k : {"name", "arguments"})
        if (const auto* s = field(fn->get_object(), k); s && s->is_string()) n += s->get_string().size();
    }
  }
  return n;
}

// tools, tool_choice, parallel_tool_calls and the conversation of a chat request.
std::optional<ApiError> readChatTools(const json::object& o, const json::array& msgs, ToolDecision& out) {
  ToolRequest tr;
  if (const auto* tools = field(o, "tools")) {
    if (!tools->is_array()) return invalidType("tools", "an array", *tools);
    std::size_t i = 0;
    for (const auto& t : tools->get_array()) {
      const auto* to = t.if_object();
      if (!to) return invalidType("tools[" + std::to_string(i) + "]", "an object", t);
      const auto* fn = field(*to, "function");
      if (fn && fn->is_object()) {
        const auto* name = field(fn->get_object(), "name");
        if (!name || !name->is_string()) return missingParam("tools[" + std::to_string(i) + "].function.name");
        tr.tools.push_back({std::string(name->get_string()), field(fn->get_object(), "parameters")});
      }
      ++i;
    }
  }
  if (const auto* tc = field(o, "tool_choice")) {
    if (tc->is_string()) {
      const auto m = tc->get_string();
      if (m == "none") tr.mode = ToolChoiceMode::None;
      else if (m == "required") tr.mode = ToolChoiceMode::Required;
      else if (m != "auto") {
        ApiError e;
        e.message = "Invalid value for 'tool_choice': expected one of 'none', 'auto' or 'required', or an object.";
        e.param = "tool_choice";
        e.code = "invalid_value";
        return e;
      }
    } else if (const auto* tco = tc->if_object()) {
      const auto* fn = field(*tco, "function");
      const auto* name = fn && fn->is_object() ? field(fn->get_object(), "name") : nullptr;
      if (name && name->is_string()) {
        tr.mode = ToolChoiceMode::Named;
        tr.forced_name = std::string(name->get_string());
      }
    } else {
      return invalidType("tool_choice", "a string or an object", *tc);
    }
    if (tr.mode != ToolChoiceMode::None && tr.tools.empty()) {
      ApiError e;
      e.message = "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.";
      e.param = "tool_choice";
      return e;
    }
  }
  if (auto e = readBool(o, "parallel_tool_calls", tr.parallel)) return e;

  std::size_t last_user = msgs.size();
  for (std::size_t i = msgs.size(); i-- > 0;) {
    const auto* mo = msgs[i].if_object();
    const auto* role = mo ? field(*mo, "role") : nullptr;
    if (role && role->is_string() && role->get_string() == "user") {
      last_user = i;
      break;
    }
  }
  if (last_user < msgs.size()) {
    if (const auto* c = field(msgs[last_user].get_object(), "content")) tr.last_user_text = contentText(*c);
    for (std::size_t i = last_user + 1; i < msgs.size(); ++i) {
      const auto* mo = msgs[i].if_object();
      const auto* role = mo ? field(*mo, "role") : nullptr;
      if (!role || !role->is_string() || (role->get_string() != "tool" && role->get_string() != "function")) continue;
      const auto* c = field(*mo, "content");
      tr.tool_results.push_back(c ? contentText(*c) : std::string());
    }
  }
  // A partial answer to continue: a trailing assistant turn, or the one before a last user turn
  // that asks to continue it.
  auto assistantText = [&](std::size_t i) -> std::string {
    const auto* mo = i < msgs.size() ? msgs[i].if_object() : nullptr;
    const auto* role = mo ? field(*mo, "role") : nullptr;
    if (!role || !role->is_string() || role->get_string() != "assistant") return {};
    const auto* c = field(*mo, "content");
    return c && !c->is_null() ? contentText(*c) : std::string();
  };
  tr.partial_answer = partialAnswer(msgs.size(), last_user, tr.last_user_text, assistantText);
  out = decideTools(tr);
  return std::nullopt;
}

// ------------------------------------------------------------------ rendering

std::string usageJson(std::int64_t prompt, std::int64_t completion, bool details, const ExtraUsage& x) {
  prompt += x.cache_read + x.cache_write;
  completion += x.reasoning;
  std::string s;
  s.reserve(256);
  s += "{\"prompt_tokens\":" + std::to_string(prompt);
  s += ",\"completion_tokens\":" + std::to_string(completion);
  s += ",\"total_tokens\":" + std::to_string(prompt + completion);
  if (details) {
    s += ",\"prompt_tokens_details\":{\"cached_tokens\":" + std::to_string(x.cache_read);
    // OpenAI reports no cache writes; OpenAI-compatible routers in front of Anthropic do, here.
    if (x.cache_write > 0) s += ",\"cache_write_tokens\":" + std::to_string(x.cache_write);
    s += ",\"audio_tokens\":0}";
    s += ",\"completion_tokens_details\":{\"reasoning_tokens\":" + std::to_string(x.reasoning) +
         ",\"audio_tokens\":0,\"accepted_prediction_tokens\":0,\"rejected_prediction_tokens\":0}";
  }
  s += '}';
  return s;
}

json::value usageValue(std::int64_t prompt, std::int64_t completion, bool details, const ExtraUsage& x) {
  return json::parse(usageJson(prompt, completion, details, x));
}

constexpr std::string_view kDone = "data: [DONE]\n\n";

// The fields every chunk of one stream shares, up to and including `"choices":[`.
std::string chunkPrefix(std::string_view object, const std::string& model, const ResponseMeta& meta,
                        bool chat) {
  std::string p;
  p += "data: {\"id\":";
  appendJsonString(p, meta.id);
  p += ",\"object\":\"";
  p += object;
  p += "\",\"created\":" + std::to_string(meta.created) + ",\"model\":";
  appendJsonString(p, model);
  if (chat) p += ",\"service_tier\":\"default\"";
  p += ",\"system_fingerprint\":\"";
  p += kSystemFingerprint;
  p += "\",\"choices\":[";
  return p;
}

// `"tool_calls":[{"index":j,"id":..,"type":"function","function":{"name":..,"arguments":""}}]`
void appendToolCallStart(std::string& out, const ToolCall& tc, std::size_t j) {
  out += "\"tool_calls\":[{\"index\":";
  out += std::to_string(j);
  out += ",\"id\":\"call_";
  out += tc.id_token;
  out += "\",\"type\":\"function\",\"function\":{\"name\":";
  appendJsonString(out, tc.name);
  out += ",\"arguments\":\"\"}}]";
}

// A streamed tool-call answer: the first chunk opens call 0 (with the role), every content step
// is one argument delta, a call's first step opens it; then finish_reason "tool_calls".
SseScript chatToolCallStream(const Generation& gen, const std::shared_ptr<const std::string>& prefix,
                             const std::shared_ptr<const std::string>& suffix, bool include_usage,
                             std::int64_t prompt_tokens) {
  SseScript s;
  const auto& calls = gen.tools->calls;
  for (int c = 0; c < gen.choices; ++c) {
    std::string e = *prefix + "{\"index\":" + std::to_string(c) + ",\"delta\":{\"role\":\"assistant\",\"content\":null,";
    appendToolCallStart(e, calls[0], 0);
    e += ",\"refusal\":null},\"logprobs\":null,\"finish_reason\":null}";
    e += *suffix;
    s.head.push_back(std::move(e));
  }
  s.content_count = gen.pieces;
  s.content = [prefix, suffix, gen](std::size_t step, std::string& out) {
    const auto [j, d] = gen.tools->steps[step];
    const ToolCall& tc = gen.tools->calls[j];
    for (int c = 0; c < gen.choices; ++c) {
      if (d == 0 && j > 0) {
        out += *prefix;
        out += "{\"index\":" + std::to_string(c) + ",\"delta\":{";
        appendToolCallStart(out, tc, j);
        out += "},\"logprobs\":null,\"finish_reason\":null}";
        out += *suffix;
      }
      out += *prefix;
      out += "{\"index\":" + std::to_string(c) + ",\"delta\":{\"tool_calls\":[{\"index\":" + std::to_string(j) +
             ",\"function\":{\"arguments\":";
      appendJsonString(out, tc.deltas[d]);
      out += "}}]},\"logprobs\":null,\"finish_reason\":null}";
      out += *suffix;
    }
  };
  for (int c = 0; c < gen.choices; ++c)
    s.tail.push_back(*prefix + "{\"index\":" + std::to_string(c) +
                     ",\"delta\":{},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}" + *suffix);
  if (include_usage)
    s.tail.push_back(*prefix + "],\"usage\":" +
                     usageJson(prompt_tokens, static_cast<std::int64_t>(gen.completionTokens()), true, gen.extra) +
                     "}\n\n");
  s.tail.emplace_back(kDone);
  return s;
}

struct ModelInfo {
  std::string_view id;
  std::int64_t created;
  std::string_view owned_by;
};

constexpr std::array<ModelInfo, 8> kModels = {{
    {"gpt-4o-mini", 1721172741, "sluice-mock"},
    {"gpt-4o", 1715367049, "sluice-mock"},
    {"gpt-4.1-mini", 1744318173, "sluice-mock"},
    {"gpt-3.5-turbo-instruct", 1692901427, "sluice-mock"},
    {"text-embedding-3-small", 1705948997, "sluice-mock"},
    {"text-embedding-3-large", 1705953180, "sluice-mock"},
    {"mock-model", 1700000000, "sluice-mock"},
    {"mock-embedding", 1700000000, "sluice-mock"},
}};

json::object modelObject(const ModelInfo& m) {
  json::object o;
  o["id"] = m.id;
  o["object"] = "model";
  o["created"] = m.created;
  o["owned_by"] = m.owned_by;
  return o;
}

}  // namespace

// ------------------------------------------------------------------ parsers

std::optional<ApiError> parseChatRequest(const json::value& body, ChatRequest& out) {
  const json::object* o = nullptr;
  if (auto e = requireObject(body, o)) return e;
  if (auto e = readModel(*o, out.model)) return e;
  const json::value* msgs = field(*o, "messages");
  if (!msgs) return missingParam("messages");
  if (!msgs->is_array()) return invalidType("messages", "an array", *msgs);
  if (msgs->get_array().empty()) {
    ApiError e;
    e.message = "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array "
                "instead.";
    e.param = "messages";
    e.code = "empty_array";
    return e;
  }
  std::int64_t tokens = 0;
  std::size_t i = 0;
  for (const auto& m : msgs->get_array()) {
    const auto* mo = m.if_object();
    if (!mo) return invalidType("messages[" + std::to_string(i) + "]", "an object", m);
    const auto* role = field(*mo, "role");
    if (!role) return missingParam("messages[" + std::to_string(i) + "].role");
    if (!role->is_string()) return invalidType("messages[" + std::to_string(i) + "].role", "a string", *role);
    tokens += static_cast<std::int64_t>((messageBytes(*mo) + 3) / 4) + 4;
    ++i;
  }
  out.prompt_tokens = tokens;
  if (auto e = readStreaming(*o, out.stream, out.include_usage)) return e;
  if (auto e = readN(*o, out.n)) return e;
  std::optional<std::int64_t> mt, mct;
  if (auto e = readMaxTokens(*o, "max_tokens", mt)) return e;
  if (auto e = readMaxTokens(*o, "max_completion_tokens", mct)) return e;
  out.max_tokens = mct ? mct : mt;
  if (auto e = readStop(*o, out.stop)) return e;
  if (auto e = readChatTools(*o, msgs->get_array(), out.tools)) return e;
  return std::nullopt;
}

std::optional<ApiError> parseCompletionRequest(const json::value& body, CompletionRequest& out) {
  const json::object* o = nullptr;
  if (auto e = requireObject(body, o)) return e;
  if (auto e = readModel(*o, out.model)) return e;
  const json::value* prompt = field(*o, "prompt");
  if (!prompt) return missingParam("prompt");
  std::int64_t tokens = 0;
  std::size_t prompts = 1;
  if (prompt->is_string()) {
    tokens = estimateTokens(prompt->get_string());
  } else if (prompt->is_array()) {
    const auto& a = prompt->get_array();
    if (a.empty()) return invalidType("prompt", "a non-empty string or array", *prompt);
    if (a.front().is_string()) {
      prompts = a.size();
      for (const auto& p : a) {
        if (!p.is_string()) return invalidType("prompt", "an array of strings", p);
        tokens += estimateTokens(p.get_string());
      }
    } else if (a.front().is_array()) {
      prompts = a.size();
      for (const auto& p : a) {
        if (!p.is_array()) return invalidType("prompt", "an array of token arrays", p);
        tokens += static_cast<std::int64_t>(p.get_array().size());
      }
    } else {
      tokens = static_cast<std::int64_t>(a.size());  // one prompt as token ids
    }
  } else {
    return invalidType("prompt", "a string or an array", *prompt);
  }
  out.prompt_tokens = tokens;
  if (auto e = readStreaming(*o, out.stream, out.include_usage)) return e;
  int n = 1;
  if (auto e = readN(*o, n)) return e;
  if (static_cast<std::size_t>(n) * prompts > static_cast<std::size_t>(kMaxChoices)) {
    ApiError e;
    e.message = "Invalid 'n': n x number of prompts must be at most " + std::to_string(kMaxChoices) + ".";
    e.param = "n";
    return e;
  }
  out.choices = n * static_cast<int>(prompts);
  if (auto e = readMaxTokens(*o, "max_tokens", out.max_tokens)) return e;
  if (auto e = readStop(*o, out.stop)) return e;
  return std::nullopt;
}

std::optional<ApiError> parseEmbeddingsRequest(const json::value& body, EmbeddingsRequest& out) {
  const json::object* o = nullptr;
  if (auto e = requireObject(body, o)) return e;
  if (auto e = readModel(*o, out.model)) return e;
  const json::value* input = field(*o, "input");
  if (!input) return missingParam("input");
  auto invalidInput = [] {
    ApiError e;
    e.message = "'$.input' is invalid: expected a non-empty string, an array of non-empty strings, an array of "
                "token ids, or an array of token id arrays.";
    e.param = "input";
    return e;
  };
  auto tokenText = [](const json::array& a, std::string& text) {
    for (const auto& t : a) {
      std::int64_t id = 0;
      if (!asInteger(t, id)) return false;
      text += std::to_string(id);
      text += ',';
    }
    return !a.empty();
  };
  std::int64_t tokens = 0;
  if (input->is_string()) {
    if (input->get_string().empty()) return invalidInput();
    out.inputs.emplace_back(input->get_string());
    tokens = estimateTokens(input->get_string());
  } else if (input->is_array()) {
    const auto& a = input->get_array();
    if (a.empty()) return invalidInput();
    if (a.front().is_string()) {
      for (const auto& s : a) {
        if (!s.is_string() || s.get_string().empty()) return invalidInput();
        out.inputs.emplace_back(s.get_string());
        tokens += estimateTokens(s.get_string());
      }
    } else if (a.front().is_array()) {
      for (const auto& t : a) {
        std::string text = "tokens:";
        if (!t.is_array() || !tokenText(t.get_array(), text)) return invalidInput();
        tokens += static_cast<std::int64_t>(t.get_array().size());
        out.inputs.push_back(std::move(text));
      }
    } else {
      std::string text = "tokens:";
      if (!tokenText(a, text)) return invalidInput();
      tokens = static_cast<std::int64_t>(a.size());
      out.inputs.push_back(std::move(text));
    }
  } else {
    return invalidType("input", "a string or an array", *input);
  }
  out.prompt_tokens = tokens;

  std::optional<std::int64_t> dims;
  if (auto e = readInt(*o, "dimensions", dims)) return e;
  if (dims) {
    if (*dims < 1 || *dims > kMaxEmbeddingDimensions) return outOfRange("dimensions", *dims, 1, kMaxEmbeddingDimensions);
    out.dimensions = static_cast<int>(*dims);
  }
  if (const auto* f = field(*o, "encoding_format")) {
    if (!f->is_string()) return invalidType("encoding_format", "a string", *f);
    if (f->get_string() == "base64") {
      out.base64 = true;
    } else if (f->get_string() != "float") {
      ApiError e;
      e.message = "Invalid value for 'encoding_format': expected one of 'float' or 'base64', but got '" +
                  std::string(f->get_string()) + "'.";
      e.param = "encoding_format";
      e.code = "invalid_value";
      return e;
    }
  }
  return std::nullopt;
}

// ------------------------------------------------------------------ chat completions

std::string chatCompletionJson(const ChatRequest& req, const Generation& gen, const ResponseMeta& meta) {
  const std::string text = gen.text();
  json::array choices;
  json::array calls;
  if (gen.hasToolCalls()) {
    for (const auto& tc : gen.tools->calls) {
      json::object fn;
      fn["name"] = tc.name;
      fn["arguments"] = tc.arguments;
      json::object call;
      call["id"] = "call_" + tc.id_token;
      call["type"] = "function";
      call["function"] = std::move(fn);
      calls.push_back(std::move(call));
    }
  }
  for (int c = 0; c < gen.choices; ++c) {
    json::object msg;
    msg["role"] = "assistant";
    if (gen.hasToolCalls()) {
      msg["content"] = nullptr;
      msg["tool_calls"] = calls;
    } else {
      msg["content"] = text;
    }
    msg["refusal"] = nullptr;
    msg["annotations"] = json::array();
    json::object choice;
    choice["index"] = c;
    choice["message"] = std::move(msg);
    choice["logprobs"] = nullptr;
    choice["finish_reason"] = gen.finishReason();
    choices.push_back(std::move(choice));
  }
  json::object o;
  o["id"] = meta.id;
  o["object"] = "chat.completion";
  o["created"] = meta.created;
  o["model"] = req.model;
  o["choices"] = std::move(choices);
  o["usage"] = usageValue(req.prompt_tokens, static_cast<std::int64_t>(gen.completionTokens()), true, gen.extra);
  o["service_tier"] = "default";
  o["system_fingerprint"] = kSystemFingerprint;
  return json::serialize(o);
}

SseScript chatCompletionStream(const ChatRequest& req, const Generation& gen, const ResponseMeta& meta) {
  // Chunks are spliced from a shared prefix and suffix: this is the mock's hot path.
  auto prefix = std::make_shared<const std::string>(chunkPrefix("chat.completion.chunk", req.model, meta, true));
  auto suffix = std::make_shared<const std::string>(req.include_usage ? "],\"usage\":null}\n\n" : "]}\n\n");
  SseScript s;
  if (gen.hasToolCalls()) return chatToolCallStream(gen, prefix, suffix, req.include_usage, req.prompt_tokens);
  for (int c = 0; c < gen.choices; ++c) {
    s.head.push_back(*prefix + "{\"index\":" + std::to_string(c) +
                     ",\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},"
                     "\"logprobs\":null,\"finish_reason\":null}" +
                     *suffix);
  }
  s.content_count = gen.pieces;
  s.content = [prefix, suffix, gen](std::size_t step, std::string& out) {
    const std::string piece = gen.piece(step);
    for (int c = 0; c < gen.choices; ++c) {
      out += *prefix;
      out += "{\"index\":";
      out += std::to_string(c);
      out += ",\"delta\":{\"content\":";
      appendJsonString(out, piece);
      out += "},\"logprobs\":null,\"finish_reason\":null}";
      out += *suffix;
    }
  };
  for (int c = 0; c < gen.choices; ++c) {
    s.tail.push_back(*prefix + "{\"index\":" + std::to_string(c) +
                     ",\"delta\":{},\"logprobs\":null,\"finish_reason\":\"" + gen.finishReason() + "\"}" +
                     *suffix);
  }
  if (req.include_usage) {
    s.tail.push_back(*prefix + "],\"usage\":" +
                     usageJson(req.prompt_tokens, static_cast<std::int64_t>(gen.completionTokens()), true, gen.extra) +
                     "}\n\n");
  }
  s.tail.emplace_back(kDone);
  return s;
}

// ------------------------------------------------------------------ legacy completions

std::string completionJson(const CompletionRequest& req, const Generation& gen, const ResponseMeta& meta) {
  const std::string text = gen.text();
  json::array choices;
  for (int c = 0; c < gen.choices; ++c) {
    json::object choice;
    choice["text"] = text;
    choice["index"] = c;
    choice["logprobs"] = nullptr;
    choice["finish_reason"] = gen.finishReason();
    choices.push_back(std::move(choice));
  }
  json::object o;
  o["id"] = meta.id;
  o["object"] = "text_completion";
  o["created"] = meta.created;
  o["model"] = req.model;
  o["system_fingerprint"] = kSystemFingerprint;
  o["choices"] = std::move(choices);
  o["usage"] = usageValue(req.prompt_tokens, static_cast<std::int64_t>(gen.completionTokens()), false, {});
  return json::serialize(o);
}

SseScript completionStream(const CompletionRequest& req, const Generation& gen, const ResponseMeta& meta) {
  auto prefix = std::make_shared<const std::string>(chunkPrefix("text_completion", req.model, meta, false));
  auto suffix = std::make_shared<const std::string>(req.include_usage ? "],\"usage\":null}\n\n" : "]}\n\n");
  SseScript s;
  s.content_count = gen.pieces;
  s.content = [prefix, suffix, gen](std::size_t step, std::string& out) {
    const std::string piece = gen.piece(step);
    for (int c = 0; c < gen.choices; ++c) {
      out += *prefix;
      out += "{\"text\":";
      appendJsonString(out, piece);
      out += ",\"index\":";
      out += std::to_string(c);
      out += ",\"logprobs\":null,\"finish_reason\":null}";
      out += *suffix;
    }
  };
  for (int c = 0; c < gen.choices; ++c) {
    s.tail.push_back(*prefix + "{\"text\":\"\",\"index\":" + std::to_string(c) +
                     ",\"logprobs\":null,\"finish_reason\":\"" + gen.finishReason() + "\"}" + *suffix);
  }
  if (req.include_usage) {
    s.tail.push_back(*prefix + "],\"usage\":" +
                     usageJson(req.prompt_tokens, static_cast<std::int64_t>(gen.completionTokens()), false, {}) +
                     "}\n\n");
  }
  s.tail.emplace_back(kDone);
  return s;
}

// ------------------------------------------------------------------ embeddings, models

std::string embeddingsJson(const EmbeddingsRequest& req) {
  // Written by hand: floats in their shortest plain-decimal form, as OpenAI prints them
  // (Boost.JSON would print doubles in exponent notation).
  std::string out;
  const std::size_t dims = static_cast<std::size_t>(req.dimensions);
  out.reserve(128 + req.inputs.size() * (64 + (req.base64 ? dims * 4 / 3 + 4 : dims * 14)));
  out += "{\"object\":\"list\",\"data\":[";
  char num[64];
  for (std::size_t i = 0; i < req.inputs.size(); ++i) {
    auto v = embeddingVector(req.inputs[i], req.dimensions);
    if (i) out += ',';
    out += "{\"object\":\"embedding\",\"index\":" + std::to_string(i) + ",\"embedding\":";
    if (req.base64) {
      appendJsonString(out, base64Floats(v));
    } else {
      out += '[';
      for (std::size_t d = 0; d < v.size(); ++d) {
        if (d) out += ',';
        auto [end, ec] = std::to_chars(num, num + sizeof num, v[d], std::chars_format::fixed);
        out.append(num, ec == std::errc() ? end : num);
      }
      out += ']';
    }
    out += '}';
  }
  out += "],\"model\":";
  appendJsonString(out, req.model);
  out += ",\"usage\":{\"prompt_tokens\":" + std::to_string(req.prompt_tokens) +
         ",\"total_tokens\":" + std::to_string(req.prompt_tokens) + "}}";
  return out;
}

std::string modelsJson() {
  json::array data;
  for (const auto& m : kModels) data.push_back(modelObject(m));
  json::object o;
  o["object"] = "list";
  o["data"] = std::move(data);
  return json::serialize(o);
}

std::optional<std::string> modelJson(std::string_view id) {
  for (const auto& m : kModels)
    if (m.id == id) return json::serialize(modelObject(m));
  return std::nullopt;
}

// ------------------------------------------------------------------ errors

std::string errorJson(const ApiError& e) {
  json::object err;
  err["message"] = e.message;
  err["type"] = e.type;
  err["param"] = e.param.empty() ? json::value(nullptr) : json::value(e.param);
  err["code"] = e.code.empty() ? json::value(nullptr) : json::value(e.code);
  json::object o;
  o["error"] = std::move(err);
  return json::serialize(o);
}

ApiError invalidJsonError(std::string_view detail) {
  ApiError e;
  e.message = "We could not parse the JSON body of your request (" + std::string(detail) +
              "). The API expects a JSON object as the request body.";
  return e;
}

ApiError unknownPathError(std::string_view method, std::string_view path) {
  ApiError e;
  e.status = 404;
  e.message = "Invalid URL (" + std::string(method) + " " + std::string(path) + ")";
  return e;
}

ApiError methodNotAllowedError(std::string_view method, std::string_view path, std::string_view allowed) {
  ApiError e;
  e.status = 405;
  e.message = "Method " + std::string(method) + " is not allowed for " + std::string(path) + "; use " +
              std::string(allowed) + ".";
  e.code = "method_not_allowed";
  return e;
}

ApiError modelNotFoundError(std::string_view id) {
  ApiError e;
  e.status = 404;
  e.message = "The model '" + std::string(id) + "' does not exist or you do not have access to it.";
  e.code = "model_not_found";
  return e;
}

ApiError simulatedFailure(int status) {
  ApiError e;
  e.status = status;
  std::string what;
  switch (status) {
    case 400: what = "Bad request."; break;
    case 401:
      what = "Incorrect API key provided.";
      e.code = "invalid_api_key";
      break;
    case 403:
      what = "You are not allowed to access this resource.";
      e.type = "request_forbidden";
      e.code = "forbidden";
      break;
    case 404:
      what = "The model does not exist or you do not have access to it.";
      e.code = "model_not_found";
      break;
    case 408:
      what = "Request timed out.";
      e.code = "timeout";
      break;
    case 429:
      what = "Rate limit reached for requests. Please try again later.";
      e.type = "requests";
      e.code = "rate_limit_exceeded";
      break;
    case 500:
      what = "The server had an error while processing your request.";
      e.type = "server_error";
      break;
    case 502:
      what = "Bad gateway.";
      e.type = "server_error";
      e.code = "bad_gateway";
      break;
    case 503:
      what = "The engine is currently overloaded, please try again later.";
      e.type = "server_error";
      e.code = "service_unavailable";
      break;
    case 504:
      what = "Gateway timeout.";
      e.type = "server_error";
      e.code = "timeout";
      break;
    default:
      what = "Simulated error.";
      e.type = status >= 500 ? "server_error" : "invalid_request_error";
  }
  e.message = "Simulated failure from sluice mock (HTTP " + std::to_string(status) + "): " + what;
  return e;
}

}  // namespace sluice::mock::openai
