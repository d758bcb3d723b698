#include "mock/GeminiMock.hpp"

#include "mock/OpenAIMock.hpp"

#include <boost/json.hpp>

#include <array>
#include <charconv>

namespace sluice::mock::gemini {

namespace json = boost::json;

namespace {

// A field by its camelCase or snake_case name; null counts as absent.
const json::value* field(const json::object& o, std::string_view camel, std::string_view snake = {}) {
  const json::value* v = o.if_contains(camel);
  if ((!v || v->is_null()) && !snake.empty()) v = o.if_contains(snake);
  return (v && !v->is_null()) ? v : nullptr;
}

ApiError invalid(std::string message) { return error(400, std::move(message)); }

std::int64_t tokensOf(std::size_t bytes) { return static_cast<std::int64_t>((bytes + 3) / 4) + 4; }

std::size_t partsBytes(const json::array& parts) {
  std::size_t n = 0;
  for (const auto& p : parts) {
    const auto* po = p.if_object();
    if (!po) continue;
    if (const auto* t = field(*po, "text"); t && t->is_string()) n += t->get_string().size();
    for (auto [camel, snake] : {std::pair{"functionCall", "function_call"}, std::pair{"functionResponse", "function_response"}}) {
      if (const auto* fc = field(*po, camel, snake); fc && fc->is_object()) {
        if (const auto* nm = field(fc->get_object(), "name"); nm && nm->is_string()) n += nm->get_string().size();
        for (std::string_view k : {"args", "response"})
          if (const auto* a = field(fc->get_object(), k)) n += json::serialize(*a).size();
      }
    }
  }
  return n;
}

// contents (required) and systemInstruction: the prompt estimate; optionally the tool request.
std::optional<ApiError> parseContents(const json::object& o, std::int64_t& tokens, ToolRequest* tr) {
  const auto* contents = field(o, "contents");
  if (!contents) return invalid("* GenerateContentRequest.contents: contents is not specified\n");
  if (!contents->is_array())
    return invalid("Invalid JSON payload received. Unknown name \"contents\": Proto field is not repeating, cannot "
                   "start list.");
  const auto& arr = contents->get_array();
  if (arr.empty()) return invalid("* GenerateContentRequest.contents: contents is not specified\n");
  tokens = 0;
  if (const auto* si = field(o, "systemInstruction", "system_instruction")) {
    const auto* sio = si->if_object();
    const auto* parts = sio ? field(*sio, "parts") : nullptr;
    if (parts && parts->is_array()) tokens += tokensOf(partsBytes(parts->get_array()));
  }
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string at = "* GenerateContentRequest.contents[" + std::to_string(i) + "]";
    const auto* co = arr[i].if_object();
    if (!co) return invalid("Invalid JSON payload received. Expected an object for contents[" + std::to_string(i) + "].");
    const auto* parts = field(*co, "parts");
    if (!parts || !parts->is_array() || parts->get_array().empty())
      return invalid(at + ".parts: contents.parts must not be empty.\n");
    if (const auto* role = field(*co, "role")) {
      if (!role->is_string() || (role->get_string() != "user" && role->get_string() != "model" &&
                                 role->get_string() != "function"))
        return invalid("Please use a valid role: user, model.");
    }
    tokens += tokensOf(partsBytes(parts->get_array()));
  }
  if (!tr) return std::nullopt;

  // The last user (or function) turn: its functionResponse parts answer the last functionCall.
  std::size_t last_user = arr.size();
  for (std::size_t i = arr.size(); i-- > 0;) {
    const auto& co = arr[i].get_object();
    const auto* role = field(co, "role");
    if (role && role->get_string() == "model") continue;
    last_user = i;
    for (const auto& p : field(co, "parts")->get_array()) {
      const auto* po = p.if_object();
      if (!po) continue;
      if (const auto* fr = field(*po, "functionResponse", "function_response"); fr && fr->is_object()) {
        const auto* resp = field(fr->get_object(), "response");
        tr->tool_results.push_back(resp ? contentText(*resp) : std::string());
      } else if (const auto* t = field(*po, "text"); t && t->is_string()) {
        if (!tr->last_user_text.empty()) tr->last_user_text += "\n";
        tr->last_user_text += t->get_string();
      }
    }
    break;
  }
  // A partial answer to continue: a trailing model turn, or the one before a last user turn that
  // asks to continue it.
  auto modelText = [&](std::size_t i) -> std::string {
    if (i >= arr.size()) return {};
    const auto& co = arr[i].get_object();
    const auto* role = field(co, "role");
    if (!role || role->get_string() != "model") return {};
    std::string t;
    for (const auto& p : field(co, "parts")->get_array()) {
      const auto* po = p.if_object();
      const auto* th = po ? field(*po, "thought") : nullptr;
      if (th && th->is_bool() && th->get_bool()) continue;
      if (const auto* s = po ? field(*po, "text") : nullptr; s && s->is_string()) t += s->get_string();
    }
    return t;
  };
  tr->partial_answer = partialAnswer(arr.size(), last_user, tr->last_user_text, modelText);
  return std::nullopt;
}

std::optional<ApiError> readInt(const json::object& o, std::string_view camel, std::string_view snake,
                                std::optional<std::int64_t>& out) {
  const auto* v = field(o, camel, snake);
  if (!v) return std::nullopt;
  std::int64_t i = 0;
  if (!openai::asInteger(*v, i))
    return invalid("Invalid value at 'generation_config." + std::string(snake) + "' (TYPE_INT32), " + json::serialize(*v));
  out = i;
  return std::nullopt;
}

// promptTokenCount with the cached content (Gemini reports no cache writes: they are prompt
// tokens like the rest), candidatesTokenCount without the thoughts (told with the candidates).
std::string usageJson(std::int64_t prompt, std::optional<std::int64_t> candidates, const ExtraUsage& x) {
  const std::int64_t total_prompt = prompt + x.cache_read + x.cache_write;
  const std::int64_t thoughts = candidates ? x.reasoning : 0;
  std::string s = "{\"promptTokenCount\":" + std::to_string(total_prompt);
  if (candidates) s += ",\"candidatesTokenCount\":" + std::to_string(*candidates);
  if (x.cache_read > 0) s += ",\"cachedContentTokenCount\":" + std::to_string(x.cache_read);
  if (thoughts > 0) s += ",\"thoughtsTokenCount\":" + std::to_string(thoughts);
  s += ",\"totalTokenCount\":" + std::to_string(total_prompt + candidates.value_or(0) + thoughts);
  s += ",\"promptTokensDetails\":[{\"modality\":\"TEXT\",\"tokenCount\":" + std::to_string(total_prompt) + "}]}";
  return s;
}

void appendFunctionCalls(std::string& out, const Generation& gen) {
  bool first = true;
  for (const auto& c : gen.tools->calls) {
    if (!first) out += ',';
    first = false;
    out += "{\"functionCall\":{\"name\":";
    appendJsonString(out, c.name);
    out += ",\"args\":";
    out += c.arguments;
    out += "}}";
  }
}

// `,"modelVersion":..,"responseId":..}`
std::string trailer(const GenerateRequest& req, std::string_view response_id) {
  std::string t = ",\"modelVersion\":";
  appendJsonString(t, req.model);
  t += ",\"responseId\":";
  appendJsonString(t, response_id);
  t += '}';
  return t;
}

void appendFloats(std::string& out, const std::vector<float>& v) {
  char num[64];
  out += '[';
  for (std::size_t d = 0; d < v.size(); ++d) {
    if (d) out += ',';
    auto [end, ec] = std::to_chars(num, num + sizeof num, v[d], std::chars_format::fixed);
    out.append(num, ec == std::errc() ? end : num);
  }
  out += ']';
}

struct ModelInfo {
  std::string_view name;
  std::string_view version;
  std::string_view display;
  std::int64_t input_limit;
  std::int64_t output_limit;
  bool embedding;
};

constexpr std::array<ModelInfo, 6> kModels = {{
    {"gemini-2.5-flash", "001", "Gemini 2.5 Flash", 1048576, 65536, false},
    {"gemini-2.5-pro", "2.5", "Gemini 2.5 Pro", 1048576, 65536, false},
    {"gemini-2.0-flash", "2.0", "Gemini 2.0 Flash", 1048576, 8192, false},
    {"gemini-embedding-001", "001", "Gemini Embedding 001", 2048, 1, true},
    {"text-embedding-004", "004", "Text Embedding 004", 2048, 1, true},
    {"mock-model", "1", "Sluice Mock", 1048576, 65536, false},
}};

json::object modelObject(const ModelInfo& m) {
  json::object o;
  o["name"] = "models/" + std::string(m.name);
  o["version"] = m.version;
  o["displayName"] = m.display;
  o["description"] = "A model served by the sluice mock provider.";
  o["inputTokenLimit"] = m.input_limit;
  o["outputTokenLimit"] = m.output_limit;
  json::array methods;
  if (m.embedding) {
    methods = {"embedContent", "batchEmbedContents", "countTokens"};
  } else {
    methods = {"generateContent", "countTokens", "createCachedContent", "batchGenerateContent"};
    o["temperature"] = 1;
    o["topP"] = 0.95;
    o["topK"] = 64;
    o["maxTemperature"] = 2;
  }
  o["supportedGenerationMethods"] = std::move(methods);
  return o;
}

}  // namespace

std::optional<ApiError> parseGenerateRequest(const json::value& body, std::string_view model, GenerateRequest& out) {
  const auto* o = body.if_object();
  if (!o) return invalid("Invalid JSON payload received. Expected an object.");
  out.model = std::string(model);
  ToolRequest tr;
  if (auto e = parseContents(*o, out.prompt_tokens, &tr)) return e;

  if (const auto* gc = field(*o, "generationConfig", "generation_config")) {
    if (!gc->is_object()) return invalid("Invalid JSON payload received. generationConfig must be an object.");
    const auto& g = gc->get_object();
    if (auto e = readInt(g, "maxOutputTokens", "max_output_tokens", out.max_tokens)) return e;
    if (out.max_tokens && *out.max_tokens < 1) out.max_tokens.reset();  // 0 means "the model's limit"
    std::optional<std::int64_t> n;
    if (auto e = readInt(g, "candidateCount", "candidate_count", n)) return e;
    if (n) {
      if (*n < 1 || *n > kMaxCandidates)
        return invalid("* GenerateContentRequest.generation_config.candidate_count: must be between 1 and " +
                       std::to_string(kMaxCandidates) + "\n");
      out.candidates = static_cast<int>(*n);
    }
    if (const auto* ss = field(g, "stopSequences", "stop_sequences")) {
      if (!ss->is_array()) return invalid("Invalid value at 'generation_config.stop_sequences': expected a list.");
      for (const auto& s : ss->get_array())
        if (s.is_string()) out.stop.emplace_back(s.get_string());
    }
  }

  if (const auto* tools = field(*o, "tools")) {
    if (!tools->is_array()) return invalid("Invalid JSON payload received. tools must be a list.");
    for (const auto& t : tools->get_array()) {
      const auto* to = t.if_object();
      const auto* decls = to ? field(*to, "functionDeclarations", "function_declarations") : nullptr;
      if (!decls || !decls->is_array()) continue;
      std::size_t i = 0;
      for (const auto& d : decls->get_array()) {
        const auto* dobj = d.if_object();
        const auto* name = dobj ? field(*dobj, "name") : nullptr;
        if (!name || !name->is_string() || name->get_string().empty())
          return invalid("* GenerateContentRequest.tools[0].function_declarations[" + std::to_string(i) +
                         "].name: Name cannot be empty.\n");
        const json::value* schema = field(*dobj, "parameters");
        if (!schema) schema = field(*dobj, "parametersJsonSchema", "parameters_json_schema");
        tr.tools.push_back({std::string(name->get_string()), schema});
        ++i;
      }
    }
  }
  if (const auto* tc = field(*o, "toolConfig", "tool_config"); tc && tc->is_object()) {
    if (const auto* fcc = field(tc->get_object(), "functionCallingConfig", "function_calling_config");
        fcc && fcc->is_object()) {
      if (const auto* mode = field(fcc->get_object(), "mode"); mode && mode->is_string()) {
        const auto m = mode->get_string();
        if (m == "NONE") tr.mode = ToolChoiceMode::None;
        else if (m == "ANY") tr.mode = ToolChoiceMode::Required;
      }
      if (const auto* allowed = field(fcc->get_object(), "allowedFunctionNames", "allowed_function_names");
          allowed && allowed->is_array())
        for (const auto& a : allowed->get_array())
          if (a.is_string()) tr.allowed.emplace_back(a.get_string());
    }
  }
  out.tools = decideTools(tr);
  return std::nullopt;
}

std::optional<ApiError> parseCountTokensRequest(const json::value& body, std::int64_t& tokens) {
  const auto* o = body.if_object();
  if (!o) return invalid("Invalid JSON payload received. Expected an object.");
  if (const auto* g = field(*o, "generateContentRequest", "generate_content_request"); g && g->is_object())
    return parseContents(g->get_object(), tokens, nullptr);
  return parseContents(*o, tokens, nullptr);
}

std::optional<ApiError> parseEmbedRequest(const json::value& body, bool batch, EmbedRequest& out) {
  const auto* o = body.if_object();
  if (!o) return invalid("Invalid JSON payload received. Expected an object.");
  auto one = [&](const json::object& r, std::string_view where) -> std::optional<ApiError> {
    const auto* content = field(r, "content");
    const auto* co = content ? content->if_object() : nullptr;
    const auto* parts = co ? field(*co, "parts") : nullptr;
    if (!parts || !parts->is_array() || parts->get_array().empty())
      return invalid("* " + std::string(where) + ".content.parts: contents.parts must not be empty.\n");
    std::string text;
    for (const auto& p : parts->get_array())
      if (const auto* po = p.if_object())
        if (const auto* t = field(*po, "text"); t && t->is_string()) text += t->get_string();
    out.texts.push_back(std::move(text));
    std::optional<std::int64_t> dims;
    if (const auto* d = field(r, "outputDimensionality", "output_dimensionality")) {
      std::int64_t i = 0;
      if (!openai::asInteger(*d, i) || i < 1 || i > openai::kMaxEmbeddingDimensions)
        return invalid("* " + std::string(where) + ".output_dimensionality: must be between 1 and " +
                       std::to_string(openai::kMaxEmbeddingDimensions) + "\n");
      out.dimensions = static_cast<int>(i);
    }
    return std::nullopt;
  };
  if (!batch) return one(*o, "EmbedContentRequest");
  const auto* reqs = field(*o, "requests");
  if (!reqs || !reqs->is_array() || reqs->get_array().empty())
    return invalid("* BatchEmbedContentsRequest.requests: requests is not specified\n");
  std::size_t i = 0;
  for (const auto& r : reqs->get_array()) {
    const auto* ro = r.if_object();
    if (!ro) return invalid("Invalid JSON payload received. Expected an object for requests[" + std::to_string(i) + "].");
    if (auto e = one(*ro, "BatchEmbedContentsRequest.requests[" + std::to_string(i) + "]")) return e;
    ++i;
  }
  return std::nullopt;
}

const char* finishReason(const Generation& gen) {
  return gen.truncated_by_length && !gen.hasToolCalls() ? "MAX_TOKENS" : "STOP";
}

std::string generateJson(const GenerateRequest& req, const Generation& gen, std::string_view response_id) {
  std::string out;
  out.reserve(512);
  out += "{\"candidates\":[";
  const std::string text = gen.hasToolCalls() ? std::string() : gen.text();
  for (int c = 0; c < gen.choices; ++c) {
    if (c) out += ',';
    out += "{\"content\":{\"parts\":[";
    if (gen.hasToolCalls()) {
      appendFunctionCalls(out, gen);
    } else {
      out += "{\"text\":";
      appendJsonString(out, text);
      out += '}';
    }
    out += "],\"role\":\"model\"},\"finishReason\":\"";
    out += finishReason(gen);
    out += "\",\"index\":" + std::to_string(c) + "}";
  }
  out += "],\"usageMetadata\":";
  out += usageJson(req.prompt_tokens, static_cast<std::int64_t>(gen.completionTokens()), gen.extra);
  out += trailer(req, response_id);
  return out;
}

SseScript generateStream(const GenerateRequest& req, const Generation& gen, std::string_view response_id, bool sse) {
  auto tail = std::make_shared<const std::string>(
      ",\"usageMetadata\":" + usageJson(req.prompt_tokens, std::nullopt, gen.extra) + trailer(req, response_id));
  const std::string open = sse ? "data: " : "";
  const std::string close = sse ? "\r\n\r\n" : "";
  SseScript s;
  if (!sse) s.head.emplace_back("[");
  const bool tools = gen.hasToolCalls();
  s.content_count = tools ? 1 : gen.pieces;
  s.content = [gen, tail, sse, tools](std::size_t step, std::string& out) {
    if (sse) out += "data: ";
    else if (step > 0) out += ",\r\n";
    out += "{\"candidates\":[";
    const std::string piece = tools ? std::string() : gen.piece(step);
    for (int c = 0; c < gen.choices; ++c) {
      if (c) out += ',';
      out += "{\"content\":{\"parts\":[";
      if (tools) {
        appendFunctionCalls(out, gen);
      } else {
        out += "{\"text\":";
        appendJsonString(out, piece);
        out += '}';
      }
      out += "],\"role\":\"model\"},\"index\":";
      out += std::to_string(c);
      out += '}';
    }
    out += ']';
    out += *tail;
    if (sse) out += "\r\n\r\n";
  };
  std::string last = open;
  if (!sse && s.content_count > 0) last.insert(0, ",\r\n");
  last += "{\"candidates\":[";
  for (int c = 0; c < gen.choices; ++c) {
    if (c) last += ',';
    last += "{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"},\"finishReason\":\"";
    last += finishReason(gen);
    last += "\",\"index\":" + std::to_string(c) + "}";
  }
  last += "],\"usageMetadata\":";
  last += usageJson(req.prompt_tokens, static_cast<std::int64_t>(gen.completionTokens()), gen.extra);
  last += trailer(req, response_id);
  last += close;
  if (!sse) last += "]";
  s.tail.push_back(std::move(last));
  return s;
}

std::string countTokensJson(std::int64_t tokens) {
  return "{\"totalTokens\":" + std::to_string(tokens) + ",\"promptTokensDetails\":[{\"modality\":\"TEXT\",\"tokenCount\":" +
         std::to_string(tokens) + "}]}";
}

std::string embedJson(const EmbedRequest& req, bool batch) {
  std::string out;
  out.reserve(64 + req.texts.size() * (32 + static_cast<std::size_t>(req.dimensions) * 14));
  out += batch ? "{\"embeddings\":[" : "{\"embedding\":";
  for (std::size_t i = 0; i < req.texts.size(); ++i) {
    if (i) out += ',';
    out += "{\"values\":";
    appendFloats(out, embeddingVector(req.texts[i], req.dimensions));
    out += '}';
  }
  out += batch ? "]}" : "}";
  return out;
}

std::string modelsJson(std::size_t page_size, std::string_view page_token) {
  // The page token is the index of the page's first model, as text: opaque to a client.
  std::size_t from = 0;
  if (!page_token.empty()) {
    from = kModels.size();
    if (page_token.starts_with("p") && page_token.size() < 8) {
      const std::string digits(page_token.substr(1));
      if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos)
        from = std::min<std::size_t>(std::stoul(digits), kModels.size());
    }
  }
  const std::size_t to = std::min(kModels.size(), from + std::max<std::size_t>(page_size, 1));
  json::array models;
  for (std::size_t i = from; i < to; ++i) models.push_back(modelObject(kModels[i]));
  json::object o;
  o["models"] = std::move(models);
  if (to < kModels.size()) o["nextPageToken"] = "p" + std::to_string(to);
  return json::serialize(o);
}

std::optional<std::string> modelJson(std::string_view name) {
  for (const auto& m : kModels)
    if (m.name == name) return json::serialize(modelObject(m));
  return std::nullopt;
}

const char* statusName(int status) {
  switch (status) {
    case 400: return "INVALID_ARGUMENT";
    case 401: return "UNAUTHENTICATED";
    case 403: return "PERMISSION_DENIED";
    case 404: return "NOT_FOUND";
    case 409: return "ABORTED";
    case 429: return "RESOURCE_EXHAUSTED";
    case 499: return "CANCELLED";
    case 500: return "INTERNAL";
    case 501: return "NOT_IMPLEMENTED";
    case 503: return "UNAVAILABLE";
    case 504: return "DEADLINE_EXCEEDED";
    default: return status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION";
  }
}

ApiError error(int status, std::string message) {
  ApiError e;
  e.status = status;
  e.type = statusName(status);
  e.message = std::move(message);
  return e;
}

std::string errorJson(const ApiError& e) {
  std::string out = "{\"error\":{\"code\":" + std::to_string(e.status) + ",\"message\":";
  appendJsonString(out, e.message);
  out += ",\"status\":\"";
  out += statusName(e.status);
  out += "\"}}";
  return out;
}

ApiError simulatedFailure(int status) {
  std::string what;
  switch (status) {
    case 400: what = "Request contains an invalid argument."; break;
    case 401: what = "Request had invalid authentication credentials."; break;
    case 403: what = "The caller does not have permission."; break;
    case 404: what = "Requested entity was not found."; break;
    case 429: what = "Resource has been exhausted (e.g. check quota)."; break;
    case 500: what = "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"; break;
    case 503: what = "The model is overloaded. Please try again later."; break;
    case 504: what = "Deadline expired before operation could complete."; break;
    default: what = "Simulated error.";
  }
  return error(status, "Simulated failure from sluice mock (HTTP " + std::to_string(status) + "): " + what);
}

ApiError modelNotFound(std::string_view name) {
  return error(404, "models/" + std::string(name) +
                        " is not found for API version v1beta, or is not supported for generateContent. Call "
                        "ListModels to see the list of available models and their supported methods.");
}

}  // namespace sluice::mock::gemini
