#include "providers/gemini/GenerateCodec.hpp"

#include <fmt/format.h>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cctype>

#include "core/JsonText.hpp"
#include "providers/CodecUtil.hpp"

namespace sluice::providers::gemini {

namespace json = boost::json;
using detail::Fields;
using detail::indexPath;

namespace {

// Gemini's REST API takes both the JSON (camelCase) and the proto (snake_case) field names:
// the key the client used, camelCase when neither is present.
std::string_view pick(const json::object& o, std::string_view camel, std::string_view snake) {
  if (!o.contains(camel) && o.contains(snake)) return snake;
  return camel;
}

const json::value* member(const json::object& o, std::string_view camel, std::string_view snake) {
  auto* v = o.if_contains(camel);
  if (!v || v->is_null()) v = o.if_contains(snake);
  return v && !v->is_null() ? v : nullptr;
}

// Gemini `parameters` / `responseSchema` are an OpenAPI subset with upper-case type names.
void lowerTypes(json::value& v) {
  if (v.is_object()) {
    for (auto& kv : v.as_object()) {
      if (kv.key() == "type" && kv.value().is_string()) {
        auto& s = kv.value().as_string();
        std::string lower(s.data(), s.size());
        for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        s = lower;
      } else {
        lowerTypes(kv.value());
      }
    }
  } else if (v.is_array()) {
    for (auto& e : v.as_array()) lowerTypes(e);
  }
}

std::string schemaText(const json::value& v, bool openApi) {
  if (!openApi) return json::serialize(v);
  json::value copy = v;
  lowerTypes(copy);
  return json::serialize(copy);
}

struct DecodeState {
  int calls = 0;
  std::vector<std::pair<std::string, std::string>> unanswered;  // name, id
};

// functionResponse.response -> tool result content.
void decodeFunctionResponse(const json::value* resp, Part& p) {
  if (!resp || !resp->is_object() || resp->as_object().empty()) return;
  const auto& o = resp->as_object();
  if (o.size() == 1) {
    const auto& kv = *o.begin();
    if ((kv.key() == "output" || kv.key() == "result" || kv.key() == "content") && kv.value().is_string()) {
      if (!kv.value().as_string().empty()) p.content.push_back(Part::makeText(std::string(kv.value().as_string())));
      return;
    }
    if (kv.key() == "error") {
      p.is_error = true;
      p.content.push_back(Part::makeText(kv.value().is_string() ? std::string(kv.value().as_string())
                                                                : json::serialize(kv.value())));
      return;
    }
  }
  p.content.push_back(Part::makeText(json::serialize(*resp)));
}

std::optional<ApiError> decodePart(const json::value& pv, const std::string& pp, Role role, Message& m,
                                   DecodeState& st) {
  if (!pv.is_object()) return ApiError::invalid(pp, fmt::format("{} must be an object", pp));
  const auto& o = pv.as_object();
  Fields f{o, pp};
  std::string sig;
  SLUICE_PROVIDERS_TRY(f.str(pick(o, "thoughtSignature", "thought_signature"), sig));
  std::optional<bool> thought;
  SLUICE_PROVIDERS_TRY(f.boolean("thought", thought));
  Part p;
  std::string_view k;
  if (auto* t = f.get("text")) {
    if (!t->is_string()) return ApiError::invalid(f.sub("text"), fmt::format("{} must be a string", f.sub("text")));
    p.text.assign(t->as_string().data(), t->as_string().size());
    if (thought.value_or(false) && role == Role::Assistant) {
      // Streamed histories hold a thought in many parts: one reasoning part until one is signed.
      if (!m.parts.empty() && m.parts.back().kind == Part::Kind::Reasoning && m.parts.back().signature.empty()) {
        m.parts.back().text += p.text;
        m.parts.back().signature = std::move(sig);
        return std::nullopt;
      }
      if (p.text.empty() && sig.empty()) return std::nullopt;
      p.kind = Part::Kind::Reasoning;
      p.signature = std::move(sig);
      m.parts.push_back(std::move(p));
      return std::nullopt;
    }
    if (p.text.empty()) {
      // An empty part that only carries a signature belongs to the part before it.
      if (!sig.empty() && !m.parts.empty() && m.parts.back().signature.empty()) m.parts.back().signature = sig;
      return std::nullopt;
    }
    p.signature = std::move(sig);
    m.parts.push_back(std::move(p));
    return std::nullopt;
  }
  if (auto* d = f.get(k = pick(o, "inlineData", "inline_data"))) {
    auto dp = f.sub(k);
    if (!d->is_object()) return ApiError::invalid(dp, fmt::format("{} must be an object", dp));
    Fields df{d->as_object(), dp};
    p.kind = Part::Kind::Image;
    auto mk = pick(d->as_object(), "mimeType", "mime_type");
    SLUICE_PROVIDERS_TRY(df.str(mk, p.media_type, true));
    SLUICE_PROVIDERS_TRY(df.str("data", p.data, true));
    if (!p.media_type.starts_with("image/"))
      return ApiError::invalid(df.sub(mk), fmt::format("{} '{}' cannot be translated to another provider: only "
                                                       "images (image/*) can",
                                                       df.sub(mk), p.media_type));
  } else if (auto* fd = f.get(k = pick(o, "fileData", "file_data"))) {
    auto dp = f.sub(k);
    if (!fd->is_object()) return ApiError::invalid(dp, fmt::format("{} must be an object", dp));
    Fields df{fd->as_object(), dp};
    p.kind = Part::Kind::Image;
    auto mk = pick(fd->as_object(), "mimeType", "mime_type");
    SLUICE_PROVIDERS_TRY(df.str(pick(fd->as_object(), "fileUri", "file_uri"), p.url, true));
    SLUICE_PROVIDERS_TRY(df.str(mk, p.media_type));
    if (!p.media_type.empty() && !p.media_type.starts_with("image/"))
      return ApiError::invalid(df.sub(mk), fmt::format("{} '{}' cannot be translated to another provider: only "
                                                       "images (image/*) can",
                                                       df.sub(mk), p.media_type));
  } else if (auto* fc = f.get(k = pick(o, "functionCall", "function_call"))) {
    auto cp = f.sub(k);
    if (role != Role::Assistant)
      return ApiError::invalid(cp, fmt::format("{}: function calls belong in model turns", cp));
    if (!fc->is_object()) return ApiError::invalid(cp, fmt::format("{} must be an object", cp));
    Fields cf{fc->as_object(), cp};
    p.kind = Part::Kind::ToolCall;
    SLUICE_PROVIDERS_TRY(cf.str("name", p.name, true));
    if (p.name.empty()) return ApiError::invalid(cf.sub("name"), fmt::format("{} must not be empty", cf.sub("name")));
    SLUICE_PROVIDERS_TRY(cf.str("id", p.id));
    auto* args = cf.get("args");
    if (args && !args->is_object())
      return ApiError::invalid(cf.sub("args"), fmt::format("{} must be an object", cf.sub("args")));
    p.arguments = args ? json::serialize(*args) : "{}";
    if (p.id.empty()) p.id = fmt::format("call_{}", st.calls);
    ++st.calls;
    st.unanswered.emplace_back(p.name, p.id);
    p.signature = std::move(sig);
  } else if (auto* fr = f.get(k = pick(o, "functionResponse", "function_response"))) {
    auto rp = f.sub(k);
    if (role != Role::User)
      return ApiError::invalid(rp, fmt::format("{}: function responses belong in user turns", rp));
    if (!fr->is_object()) return ApiError::invalid(rp, fmt::format("{} must be an object", rp));
    Fields rf{fr->as_object(), rp};
    p.kind = Part::Kind::ToolResult;
    SLUICE_PROVIDERS_TRY(rf.str("name", p.name, true));
    SLUICE_PROVIDERS_TRY(rf.str("id", p.id));
    auto* resp = rf.get("response");
    if (resp && !resp->is_object())
      return ApiError::invalid(rf.sub("response"), fmt::format("{} must be an object", rf.sub("response")));
    if (rf.get("parts"))
      return ApiError::invalid(rf.sub("parts"),
                               fmt::format("{} (multimodal function responses) cannot be translated", rf.sub("parts")));
    auto& un = st.unanswered;
    if (p.id.empty()) {
      auto it = std::find_if(un.begin(), un.end(), [&](const auto& c) { return c.first == p.name; });
      if (it == un.end())
        return ApiError::invalid(rf.sub("name"),
                                 fmt::format("{}: no earlier functionCall named '{}' is left unanswered", rf.sub("name"),
                                             p.name));
      p.id = it->second;
      un.erase(it);
    } else {
      auto it = std::find_if(un.begin(), un.end(), [&](const auto& c) { return c.second == p.id; });
      if (it != un.end()) un.erase(it);
    }
    decodeFunctionResponse(resp, p);
  } else if (auto* x = f.get(k = pick(o, "executableCode", "executable_code")); x || f.get(k = pick(o, "codeExecutionResult", "code_execution_result"))) {
    return ApiError::invalid(f.sub(k), fmt::format("{} (code execution) cannot be translated to another provider",
                                                   f.sub(k)));
  } else if (!sig.empty()) {
    if (!m.parts.empty() && m.parts.back().signature.empty()) m.parts.back().signature = std::move(sig);
    return std::nullopt;
  } else {
    return ApiError::invalid(pp, fmt::format("{} has no text, inlineData, fileData, functionCall or functionResponse",
                                             pp));
  }
  m.parts.push_back(std::move(p));
  return std::nullopt;
}

std::optional<ApiError> decodeContents(const json::object& root, Request& out) {
  auto* contents = root.if_contains("contents");
  if (!contents || contents->is_null()) return ApiError::invalid("contents", "contents is required");
  if (!contents->is_array()) return ApiError::invalid("contents", "contents must be an array of Content objects");
  const auto& arr = contents->as_array();
  if (arr.empty()) return ApiError::invalid("contents", "contents must not be empty");
  DecodeState st;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    auto path = indexPath("contents", i);
    if (!arr[i].is_object()) return ApiError::invalid(path, fmt::format("{} must be an object", path));
    Fields cf{arr[i].as_object(), path};
    std::string role = "user";
    SLUICE_PROVIDERS_TRY(cf.str("role", role));
    Message m;
    if (role == "user" || role == "function" || role.empty()) {
      m.role = Role::User;
    } else if (role == "model") {
      m.role = Role::Assistant;
    } else {
      return ApiError::invalid(cf.sub("role"), fmt::format("{} '{}' must be user or model", cf.sub("role"), role));
    }
    auto* parts = cf.get("parts");
    if (!parts) return ApiError::invalid(cf.sub("parts"), fmt::format("{} is required", cf.sub("parts")));
    if (!parts->is_array()) return ApiError::invalid(cf.sub("parts"), fmt::format("{} must be an array", cf.sub("parts")));
    if (parts->as_array().empty())
      return ApiError::invalid(cf.sub("parts"), fmt::format("{} must not be empty", cf.sub("parts")));
    for (std::size_t j = 0; j < parts->as_array().size(); ++j)
      SLUICE_PROVIDERS_TRY(decodePart(parts->as_array()[j], indexPath(cf.sub("parts"), j), m.role, m, st));
    if (m.parts.empty()) {
      if (m.role == Role::Assistant) continue;  // e.g. only empty text: nothing to replay
      return ApiError::invalid(cf.sub("parts"), fmt::format("{} holds only empty text", cf.sub("parts")));
    }
    out.messages.push_back(std::move(m));
  }
  if (out.messages.empty()) return ApiError::invalid("contents", "contents must hold at least one non-empty turn");
  return std::nullopt;
}

std::optional<ApiError> decodeSystem(const json::object& root, Request& out) {
  auto key = pick(root, "systemInstruction", "system_instruction");
  auto* si = member(root, "systemInstruction", "system_instruction");
  if (!si) return std::nullopt;
  std::string path(key);
  if (si->is_string()) {
    if (!si->as_string().empty()) out.system.push_back(Part::makeText(std::string(si->as_string())));
    return std::nullopt;
  }
  if (!si->is_object()) return ApiError::invalid(path, fmt::format("{} must be a Content object", path));
  Fields sf{si->as_object(), path};
  auto* parts = sf.get("parts");
  if (!parts || !parts->is_array())
    return ApiError::invalid(sf.sub("parts"), fmt::format("{} must be an array of text parts", sf.sub("parts")));
  for (std::size_t j = 0; j < parts->as_array().size(); ++j) {
    auto pp = indexPath(sf.sub("parts"), j);
    const auto& pv = parts->as_array()[j];
    const json::value* t = pv.is_object() ? pv.as_object().if_contains("text") : nullptr;
    if (!t || !t->is_string()) return ApiError::invalid(pp, fmt::format("{} must be a text part", pp));
    if (!t->as_string().empty()) out.system.push_back(Part::makeText(std::string(t->as_string())));
  }
  return std::nullopt;
}

std::optional<ApiError> decodeTools(const json::object& root, Request& out) {
  if (auto* tools = member(root, "tools", "tools")) {
    if (!tools->is_array()) return ApiError::invalid("tools", "tools must be an array");
    for (std::size_t i = 0; i < tools->as_array().size(); ++i) {
      auto tp = indexPath("tools", i);
      const auto& tv = tools->as_array()[i];
      if (!tv.is_object()) return ApiError::invalid(tp, fmt::format("{} must be an object", tp));
      for (const auto& kv : tv.as_object()) {
        if (kv.key() != "functionDeclarations" && kv.key() != "function_declarations") {
          if (kv.value().is_null()) continue;
          return ApiError::invalid(fmt::format("{}.{}", tp, std::string_view(kv.key())),
                                   fmt::format("tool '{}' has no equivalent at this provider; only "
                                               "functionDeclarations can be translated",
                                               std::string_view(kv.key())));
        }
        auto dp = fmt::format("{}.{}", tp, std::string_view(kv.key()));
        if (!kv.value().is_array()) return ApiError::invalid(dp, fmt::format("{} must be an array", dp));
        for (std::size_t j = 0; j < kv.value().as_array().size(); ++j) {
          auto fp = indexPath(dp, j);
          const auto& dv = kv.value().as_array()[j];
          if (!dv.is_object()) return ApiError::invalid(fp, fmt::format("{} must be an object", fp));
          const auto& d = dv.as_object();
          Fields df{d, fp};
          Tool t;
          SLUICE_PROVIDERS_TRY(df.str("name", t.name, true));
          SLUICE_PROVIDERS_TRY(df.str("description", t.description));
          auto jk = pick(d, "parametersJsonSchema", "parameters_json_schema");
          if (auto* js = df.get(jk)) {
            if (!js->is_object()) return ApiError::invalid(df.sub(jk), fmt::format("{} must be an object", df.sub(jk)));
            t.parameters = schemaText(*js, false);
          } else if (auto* ps = df.get("parameters")) {
            if (!ps->is_object())
              return ApiError::invalid(df.sub("parameters"), fmt::format("{} must be an object", df.sub("parameters")));
            t.parameters = schemaText(*ps, true);
          }
          out.tools.push_back(std::move(t));
        }
      }
    }
  }
  auto tk = pick(root, "toolConfig", "tool_config");
  auto* tc = member(root, "toolConfig", "tool_config");
  if (!tc) return std::nullopt;
  std::string tpath(tk);
  if (!tc->is_object()) return ApiError::invalid(tpath, fmt::format("{} must be an object", tpath));
  auto fk = pick(tc->as_object(), "functionCallingConfig", "function_calling_config");
  auto* fcc = member(tc->as_object(), "functionCallingConfig", "function_calling_config");
  if (!fcc) return std::nullopt;
  auto fpath = fmt::format("{}.{}", tpath, fk);
  if (!fcc->is_object()) return ApiError::invalid(fpath, fmt::format("{} must be an object", fpath));
  Fields ff{fcc->as_object(), fpath};
  std::string mode;
  SLUICE_PROVIDERS_TRY(ff.str("mode", mode));
  std::vector<std::string> allowed;
  auto ak = pick(fcc->as_object(), "allowedFunctionNames", "allowed_function_names");
  if (auto* an = ff.get(ak)) {
    if (!an->is_array()) return ApiError::invalid(ff.sub(ak), fmt::format("{} must be an array of strings", ff.sub(ak)));
    for (std::size_t i = 0; i < an->as_array().size(); ++i) {
      if (!an->as_array()[i].is_string())
        return ApiError::invalid(indexPath(ff.sub(ak), i), fmt::format("{} must hold strings", ff.sub(ak)));
      allowed.emplace_back(an->as_array()[i].as_string());
    }
  }
  if (mode == "AUTO" || mode == "VALIDATED") {
    out.tool_choice.mode = ToolChoice::Mode::Auto;
  } else if (mode == "NONE") {
    out.tool_choice.mode = ToolChoice::Mode::None;
  } else if (mode == "ANY") {
    if (allowed.size() == 1) {
      out.tool_choice.mode = ToolChoice::Mode::Named;
      out.tool_choice.name = allowed[0];
    } else {
      out.tool_choice.mode = ToolChoice::Mode::Required;
      if (!allowed.empty())
        std::erase_if(out.tools, [&](const Tool& t) {
          return std::find(allowed.begin(), allowed.end(), t.name) == allowed.end();
        });
    }
  } else if (!mode.empty() && mode != "MODE_UNSPECIFIED") {
    return ApiError::invalid(ff.sub("mode"), fmt::format("{} must be AUTO, ANY, NONE or VALIDATED", ff.sub("mode")));
  }
  return std::nullopt;
}

std::optional<ApiError> decodeGenerationConfig(const json::object& root, Request& out) {
  auto gk = pick(root, "generationConfig", "generation_config");
  auto* gc = member(root, "generationConfig", "generation_config");
  if (!gc) return std::nullopt;
  std::string path(gk);
  if (!gc->is_object()) return ApiError::invalid(path, fmt::format("{} must be an object", path));
  const auto& g = gc->as_object();
  Fields f{g, path};
  SLUICE_PROVIDERS_TRY(f.num("temperature", out.temperature));
  SLUICE_PROVIDERS_TRY(f.num(pick(g, "topP", "top_p"), out.top_p));
  SLUICE_PROVIDERS_TRY(f.integer(pick(g, "topK", "top_k"), out.top_k));
  auto mk = pick(g, "maxOutputTokens", "max_output_tokens");
  SLUICE_PROVIDERS_TRY(f.integer(mk, out.max_tokens));
  if (out.max_tokens && *out.max_tokens < 1)
    return ApiError::invalid(f.sub(mk), fmt::format("{} must be at least 1", f.sub(mk)));
  auto sk = pick(g, "stopSequences", "stop_sequences");
  if (auto* ss = f.get(sk)) {
    if (!ss->is_array()) return ApiError::invalid(f.sub(sk), fmt::format("{} must be an array of strings", f.sub(sk)));
    for (std::size_t i = 0; i < ss->as_array().size(); ++i) {
      if (!ss->as_array()[i].is_string())
        return ApiError::invalid(indexPath(f.sub(sk), i), fmt::format("{} must hold strings", f.sub(sk)));
      out.stop.emplace_back(ss->as_array()[i].as_string());
    }
  }
  std::optional<std::int64_t> cc;
  auto ck = pick(g, "candidateCount", "candidate_count");
  SLUICE_PROVIDERS_TRY(f.integer(ck, cc));
  if (cc && *cc > 1)
    return ApiError::invalid(f.sub(ck), fmt::format("{} above 1 cannot be translated to another provider", f.sub(ck)));
  std::optional<bool> logprobs;
  auto lk = pick(g, "responseLogprobs", "response_logprobs");
  SLUICE_PROVIDERS_TRY(f.boolean(lk, logprobs));
  if (logprobs.value_or(false)) return ApiError::invalid(f.sub(lk), "logprobs cannot be translated to this provider");
  if (f.get("logprobs")) return ApiError::invalid(f.sub("logprobs"), "logprobs cannot be translated to this provider");
  auto spk = pick(g, "speechConfig", "speech_config");
  if (f.get(spk)) return ApiError::invalid(f.sub(spk), fmt::format("{} cannot be translated to this provider", f.sub(spk)));
  auto rmk = pick(g, "responseModalities", "response_modalities");
  if (auto* rm = f.get(rmk)) {
    if (!rm->is_array()) return ApiError::invalid(f.sub(rmk), fmt::format("{} must be an array", f.sub(rmk)));
    for (const auto& v : rm->as_array()) {
      if (!v.is_string() || (v.as_string() != "TEXT" && v.as_string() != "text"))
        return ApiError::invalid(f.sub(rmk), fmt::format("{}: only TEXT can be translated to this provider", f.sub(rmk)));
    }
  }
  std::string mime;
  auto rk = pick(g, "responseMimeType", "response_mime_type");
  SLUICE_PROVIDERS_TRY(f.str(rk, mime));
  if (mime == "application/json") {
    out.response_format.kind = ResponseFormat::Kind::JsonObject;
  } else if (mime == "text/plain") {
    out.response_format.kind = ResponseFormat::Kind::Text;
  } else if (!mime.empty()) {
    return ApiError::invalid(f.sub(rk), fmt::format("{} '{}' cannot be translated: use text/plain or application/json",
                                                    f.sub(rk), mime));
  }
  auto jk = pick(g, "responseJsonSchema", "response_json_schema");
  auto ok = pick(g, "responseSchema", "response_schema");
  const json::value* schema = f.get(jk);
  bool openApi = false;
  std::string_view schemaKey = jk;
  if (!schema) {
    schema = f.get(ok);
    openApi = true;
    schemaKey = ok;
  }
  if (schema) {
    if (!schema->is_object())
      return ApiError::invalid(f.sub(schemaKey), fmt::format("{} must be an object", f.sub(schemaKey)));
    out.response_format.kind = ResponseFormat::Kind::JsonSchema;
    out.response_format.name = "response";
    out.response_format.schema = schemaText(*schema, openApi);
  }
  auto tk = pick(g, "thinkingConfig", "thinking_config");
  if (auto* tc = f.get(tk)) {
    if (!tc->is_object()) return ApiError::invalid(f.sub(tk), fmt::format("{} must be an object", f.sub(tk)));
    const auto& t = tc->as_object();
    Fields tf{t, f.sub(tk)};
    std::optional<std::int64_t> budget;
    auto bk = pick(t, "thinkingBudget", "thinking_budget");
    SLUICE_PROVIDERS_TRY(tf.integer(bk, budget));
    std::optional<bool> include;
    SLUICE_PROVIDERS_TRY(tf.boolean(pick(t, "includeThoughts", "include_thoughts"), include));
    std::string level;
    auto vk = pick(t, "thinkingLevel", "thinking_level");
    SLUICE_PROVIDERS_TRY(tf.str(vk, level));
    if (budget) {
      if (*budget < -1) return ApiError::invalid(tf.sub(bk), fmt::format("{} must be -1, 0 or positive", tf.sub(bk)));
      if (*budget >= 0) out.reasoning_budget = *budget;
    } else if (!level.empty()) {
      for (auto& c : level) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (level == "minimal") {
        out.reasoning_budget = 0;
      } else if (level == "low") {
        out.reasoning_budget = 1024;
      } else if (level == "medium") {
        out.reasoning_budget = 4096;
      } else if (level == "high") {
        out.reasoning_budget = 16384;
      } else {
        return ApiError::invalid(tf.sub(vk), fmt::format("{} must be minimal, low, medium or high", tf.sub(vk)));
      }
    }
  }
  return std::nullopt;
}

// ---- encoding helpers ------------------------------------------------------------------

json::value argsObject(const std::string& args) {
  if (args.empty()) return json::object{};
  boost::system::error_code ec;
  auto v = sluice::parseJson(args, ec);
  if (!ec && v.is_object()) return v;
  return json::object{{"_raw_arguments", args}};
}

std::string_view guessImageType(std::string_view url) {
  auto q = url.find_first_of("?#");
  auto path = url.substr(0, q);
  auto ends = [&](std::string_view s) {
    if (path.size() < s.size()) return false;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(path[path.size() - s.size() + i])) != s[i]) return false;
    return true;
  };
  if (ends(".png")) return "image/png";
  if (ends(".jpg") || ends(".jpeg")) return "image/jpeg";
  if (ends(".gif")) return "image/gif";
  if (ends(".webp")) return "image/webp";
  if (ends(".heic")) return "image/heic";
  return {};
}

json::object imagePart(const Part& p) {
  if (p.url.empty())
    return json::object{{"inlineData", json::object{{"mimeType", p.media_type}, {"data", p.data}}}};
  json::object fd;
  std::string_view mime = p.media_type.empty() ? guessImageType(p.url) : std::string_view(p.media_type);
  if (!mime.empty()) fd["mimeType"] = mime;
  fd["fileUri"] = p.url;
  return json::object{{"fileData", std::move(fd)}};
}

json::value toolResponse(const Part& p) {
  std::string text;
  for (const auto& c : p.content)
    if (c.kind == Part::Kind::Text) text += c.text;
  if (!text.empty() && text.front() == '{') {
    boost::system::error_code ec;
    auto v = sluice::parseJson(text, ec);
    if (!ec && v.is_object()) {
      if (p.is_error) return json::object{{"error", std::move(v)}};
      return v;
    }
  }
  return json::object{{p.is_error ? "error" : "output", text}};
}

// Gemini usageMetadata from canonical usage.
void appendUsage(std::string& out, const Usage& u) {
  std::int64_t in = u.input > 0 ? u.input : 0, o = u.output > 0 ? u.output : 0;
  std::int64_t r = u.reasoning > 0 ? u.reasoning : 0;
  std::int64_t cand = o - r > 0 ? o - r : 0;
  out += "{\"promptTokenCount\":";
  detail::appendInt(out, in);
  out += ",\"candidatesTokenCount\":";
  detail::appendInt(out, cand);
  out += ",\"totalTokenCount\":";
  detail::appendInt(out, detail::addCounts(in, o));
  if (u.cached > 0) {
    out += ",\"cachedContentTokenCount\":";
    detail::appendInt(out, u.cached);
  }
  if (r > 0) {
    out += ",\"thoughtsTokenCount\":";
    detail::appendInt(out, r);
  }
  out += '}';
}

Usage usageFrom(const json::value* v) {
  Usage u;
  if (!v || !v->is_object()) return u;
  const auto& o = v->as_object();
  auto prompt = detail::asInt(o.if_contains("promptTokenCount"));
  auto tool = detail::asInt(o.if_contains("toolUsePromptTokenCount"));
  auto cand = detail::asInt(o.if_contains("candidatesTokenCount"));
  auto thoughts = detail::asInt(o.if_contains("thoughtsTokenCount"));
  auto cached = detail::asInt(o.if_contains("cachedContentTokenCount"));
  if (prompt) u.input = detail::addCounts(*prompt, tool.value_or(0));
  if (cand || thoughts) u.output = detail::addCounts(cand.value_or(0), thoughts.value_or(0));
  if (thoughts) u.reasoning = *thoughts;
  if (cached) u.cached = *cached;
  return u;
}

FinishReason finishFromName(std::string_view s, bool sawCalls) {
  if (s == "STOP") return sawCalls ? FinishReason::ToolCalls : FinishReason::Stop;
  if (s == "MAX_TOKENS") return FinishReason::Length;
  if (s == "SAFETY" || s == "RECITATION" || s == "BLOCKLIST" || s == "PROHIBITED_CONTENT" || s == "SPII" ||
      s == "IMAGE_SAFETY")
    return FinishReason::ContentFilter;
  return FinishReason::Other;
}

std::optional<ErrorKind> kindForStatus(std::string_view s) {
  if (s == "INVALID_ARGUMENT" || s == "FAILED_PRECONDITION" || s == "OUT_OF_RANGE") return ErrorKind::InvalidRequest;
  if (s == "UNAUTHENTICATED") return ErrorKind::Authentication;
  if (s == "PERMISSION_DENIED") return ErrorKind::Permission;
  if (s == "NOT_FOUND") return ErrorKind::NotFound;
  if (s == "RESOURCE_EXHAUSTED") return ErrorKind::RateLimit;
  if (s == "INTERNAL" || s == "UNKNOWN" || s == "DATA_LOSS" || s == "CANCELLED") return ErrorKind::Api;
  if (s == "UNAVAILABLE") return ErrorKind::Overloaded;
  if (s == "DEADLINE_EXCEEDED") return ErrorKind::Timeout;
  return std::nullopt;
}

// {"code","message","status","details"} -> ApiError. status 0: take it from the body.
ApiError errorFromObject(int status, const json::object& e) {
  ApiError err;
  err.status = status;
  err.kind = errorKindForStatus(status);
  auto code = detail::asInt(e.if_contains("code"));
  if (status == 0) {
    err.status = code && *code >= 400 && *code < 600 ? static_cast<int>(*code) : 0;
    err.kind = err.status ? errorKindForStatus(err.status) : ErrorKind::Api;
  }
  auto st = detail::asStr(e.if_contains("status"));
  if (auto k = kindForStatus(st)) err.kind = *k;
  if (err.status == 0) err.status = statusForErrorKind(err.kind);
  err.message = std::string(detail::asStr(e.if_contains("message")));
  if (auto* details = e.if_contains("details"); details && details->is_array()) {
    for (const auto& d : details->as_array()) {
      if (!d.is_object()) continue;
      auto* fv = d.as_object().if_contains("fieldViolations");
      if (fv && fv->is_array() && !fv->as_array().empty() && fv->as_array()[0].is_object()) {
        err.param = std::string(detail::asStr(fv->as_array()[0].as_object().if_contains("field")));
        break;
      }
    }
  }
  return err;
}

// One candidate part of a response -> canonical parts (non-stream).
void decodeResponsePart(const json::object& po, std::vector<Part>& out, int& calls) {
  auto sig = detail::asStr(po.if_contains("thoughtSignature"));
  Part p;
  if (auto* t = po.if_contains("text"); t && t->is_string()) {
    p.text.assign(t->as_string().data(), t->as_string().size());
    auto* th = po.if_contains("thought");
    if (th && th->is_bool() && th->as_bool()) {
      if (!out.empty() && out.back().kind == Part::Kind::Reasoning && out.back().signature.empty()) {
        out.back().text += p.text;
        out.back().signature.assign(sig);
        return;
      }
      p.kind = Part::Kind::Reasoning;
    } else if (p.text.empty()) {
      if (!sig.empty() && !out.empty() && out.back().signature.empty()) out.back().signature.assign(sig);
      return;
    }
  } else if (auto* fc = po.if_contains("functionCall"); fc && fc->is_object()) {
    const auto& c = fc->as_object();
    p.kind = Part::Kind::ToolCall;
    p.name = std::string(detail::asStr(c.if_contains("name")));
    p.id = std::string(detail::asStr(c.if_contains("id")));
    if (p.id.empty()) p.id = fmt::format("call_{}", calls);
    ++calls;
    auto* args = c.if_contains("args");
    p.arguments = args && args->is_object() ? json::serialize(*args) : "{}";
  } else {
    if (!sig.empty() && !out.empty() && out.back().signature.empty()) out.back().signature.assign(sig);
    return;  // inlineData (generated images), executableCode ...: not surfaced to other formats
  }
  p.signature.assign(sig);
  out.push_back(std::move(p));
}

}  // namespace

std::string_view finishReasonName(FinishReason f) {
  switch (f) {
    case FinishReason::Length:
      return "MAX_TOKENS";
    case FinishReason::ContentFilter:
      return "SAFETY";
    case FinishReason::Other:
      return "OTHER";
    default:
      return "STOP";
  }
}

std::string_view statusName(ErrorKind k) {
  switch (k) {
    case ErrorKind::InvalidRequest:
    case ErrorKind::RequestTooLarge:
      return "INVALID_ARGUMENT";
    case ErrorKind::Authentication:
      return "UNAUTHENTICATED";
    case ErrorKind::Billing:
      return "FAILED_PRECONDITION";
    case ErrorKind::Permission:
      return "PERMISSION_DENIED";
    case ErrorKind::NotFound:
      return "NOT_FOUND";
    case ErrorKind::RateLimit:
      return "RESOURCE_EXHAUSTED";
    case ErrorKind::Api:
      return "INTERNAL";
    case ErrorKind::Timeout:
      return "DEADLINE_EXCEEDED";
    case ErrorKind::Overloaded:
      return "UNAVAILABLE";
  }
  return "INTERNAL";
}

std::optional<ApiError> decodeGenerateRequest(std::string_view body, Request& out) {
  json::value root;
  SLUICE_PROVIDERS_TRY(detail::parseJson(body, root, "request body"));
  if (!root.is_object()) return ApiError::invalid("", "request body must be a JSON object");
  const auto& o = root.as_object();
  auto ck = pick(o, "cachedContent", "cached_content");
  if (member(o, "cachedContent", "cached_content"))
    return ApiError::invalid(std::string(ck), fmt::format("{} (a Gemini context cache) cannot be translated to "
                                                          "another provider",
                                                          ck));
  SLUICE_PROVIDERS_TRY(decodeSystem(o, out));
  SLUICE_PROVIDERS_TRY(decodeContents(o, out));
  SLUICE_PROVIDERS_TRY(decodeTools(o, out));
  SLUICE_PROVIDERS_TRY(decodeGenerationConfig(o, out));
  out.include_usage = true;  // Gemini streams always carry usageMetadata
  return std::nullopt;
}

std::optional<ApiError> encodeGenerateRequest(const Request& req, const EncodeOptions&, std::string& out) {
  if (req.n > 1) return ApiError::invalid("n", "n > 1 is not supported when translating to Gemini");
  json::object root;
  json::array contents;
  for (std::size_t i = 0; i < req.messages.size(); ++i) {
    const auto& m = req.messages[i];
    auto path = indexPath("messages", i);
    std::string_view role = m.role == Role::User ? "user" : "model";
    json::array parts;
    std::string carried;  // the signature of a reasoning part with no text: it signs the next part
    auto push = [&](json::object part, const std::string& sig) {
      const std::string& s = sig.empty() ? carried : sig;
      if (!s.empty()) part["thoughtSignature"] = s;
      carried.clear();
      parts.push_back(std::move(part));
    };
    for (const auto& p : m.parts) {
      switch (p.kind) {
        case Part::Kind::Text:
          push(json::object{{"text", p.text}}, p.signature);
          break;
        case Part::Kind::Image:
          push(imagePart(p), p.signature);
          break;
        case Part::Kind::ToolCall:
          push(json::object{{"functionCall", json::object{{"name", p.name}, {"args", argsObject(p.arguments)}}}},
               p.signature);
          break;
        case Part::Kind::ToolResult: {
          if (p.name.empty())
            return ApiError::invalid(path, fmt::format("the tool result for call '{}' has no matching tool call in "
                                                       "the conversation; Gemini needs the function's name",
                                                       p.id));
          parts.push_back(json::object{
              {"functionResponse", json::object{{"name", p.name}, {"response", toolResponse(p)}}}});
          for (const auto& c : p.content)
            if (c.kind == Part::Kind::Image) parts.push_back(imagePart(c));
          break;
        }
        case Part::Kind::Reasoning:
          if (p.signature.empty()) break;  // unsigned reasoning is not replayed
          if (p.text.empty()) {
            carried = p.signature;
          } else {
            parts.push_back(json::object{{"text", p.text}, {"thought", true}, {"thoughtSignature", p.signature}});
          }
          break;
        case Part::Kind::RedactedReasoning:
          break;  // Anthropic-only
      }
    }
    if (!carried.empty()) {
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (!it->as_object().contains("thoughtSignature")) {
          it->as_object()["thoughtSignature"] = carried;
          break;
        }
      }
    }
    if (parts.empty()) continue;
    detail::appendTurn(contents, role, "parts", std::move(parts));
  }
  if (contents.empty()) return ApiError::invalid("messages", "messages must hold at least one non-empty message");
  // Gemini 3 rejects a function-call turn without a signature; histories it did not produce
  // carry Google's documented placeholder on the first call.
  for (auto& c : contents) {
    auto& co = c.as_object();
    if (detail::asStr(co.if_contains("role")) != "model") continue;
    json::object* first = nullptr;
    bool signedCall = false;
    for (auto& p : co["parts"].as_array()) {
      auto& po = p.as_object();
      if (!po.contains("functionCall")) continue;
      if (!first) first = &po;
      signedCall = signedCall || po.contains("thoughtSignature");
    }
    if (first && !signedCall) (*first)["thoughtSignature"] = kSkipSignature;
  }
  root["contents"] = std::move(contents);
  if (!req.system.empty()) {
    json::array sys;
    for (const auto& p : req.system) {
      if (p.kind != Part::Kind::Text) return ApiError::invalid("system", "system prompt parts must be text");
      sys.push_back(json::object{{"text", p.text}});
    }
    root["systemInstruction"] = json::object{{"parts", std::move(sys)}};
  }
  if (!req.tools.empty()) {
    json::array decls;
    for (const auto& t : req.tools) {
      json::object d{{"name", t.name}};
      if (!t.description.empty()) d["description"] = t.description;
      if (!t.parameters.empty()) {
        boost::system::error_code ec;
        auto v = sluice::parseJson(t.parameters, ec);
        if (!ec && v.is_object() && !v.as_object().empty()) d["parametersJsonSchema"] = std::move(v);
      }
      decls.push_back(std::move(d));
    }
    root["tools"] = json::array{json::object{{"functionDeclarations", std::move(decls)}}};
    json::object fcc;
    switch (req.tool_choice.mode) {
      case ToolChoice::Mode::Unset:
        break;
      case ToolChoice::Mode::Auto:
        fcc["mode"] = "AUTO";
        break;
      case ToolChoice::Mode::None:
        fcc["mode"] = "NONE";
        break;
      case ToolChoice::Mode::Required:
        fcc["mode"] = "ANY";
        break;
      case ToolChoice::Mode::Named:
        fcc["mode"] = "ANY";
        fcc["allowedFunctionNames"] = json::array{json::string(req.tool_choice.name)};
        break;
    }
    if (!fcc.empty()) root["toolConfig"] = json::object{{"functionCallingConfig", std::move(fcc)}};
  }
  json::object gc;
  if (!req.stop.empty()) {
    json::array stop;
    for (const auto& s : req.stop) stop.push_back(json::string(s));
    gc["stopSequences"] = std::move(stop);
  }
  if (req.temperature) gc["temperature"] = *req.temperature;
  if (req.top_p) gc["topP"] = *req.top_p;
  if (req.top_k) gc["topK"] = *req.top_k;
  if (req.max_tokens) gc["maxOutputTokens"] = *req.max_tokens;
  switch (req.response_format.kind) {
    case ResponseFormat::Kind::Unset:
      break;
    case ResponseFormat::Kind::Text:
      gc["responseMimeType"] = "text/plain";
      break;
    case ResponseFormat::Kind::JsonObject:
      gc["responseMimeType"] = "application/json";
      break;
    case ResponseFormat::Kind::JsonSchema: {
      gc["responseMimeType"] = "application/json";
      boost::system::error_code ec;
      auto v = sluice::parseJson(req.response_format.schema, ec);
      if (!ec && v.is_object()) gc["responseJsonSchema"] = std::move(v);
      break;
    }
  }
  if (req.reasoning_budget) {
    if (*req.reasoning_budget > 0) {
      gc["thinkingConfig"] = json::object{{"thinkingBudget", *req.reasoning_budget}, {"includeThoughts", true}};
    } else {
      gc["thinkingConfig"] = json::object{{"thinkingBudget", 0}};
    }
  }
  if (!gc.empty()) root["generationConfig"] = std::move(gc);
  out = json::serialize(root);
  return std::nullopt;
}

std::optional<ApiError> decodeGenerateResponse(std::string_view body, Response& out) {
  boost::system::error_code ec;
  auto root = sluice::parseJson(body, ec);
  // A streamGenerateContent answer without alt=sse is an array of responses; take the first.
  if (!ec && root.is_array() && !root.as_array().empty()) root = root.as_array()[0];
  if (ec || !root.is_object())
    return detail::upstreamStreamError("the upstream answered with a body that is not a Gemini GenerateContentResponse");
  const auto& o = root.as_object();
  out.id = std::string(detail::asStr(o.if_contains("responseId")));
  out.model = std::string(detail::asStr(o.if_contains("modelVersion")));
  out.usage = usageFrom(o.if_contains("usageMetadata"));
  auto* cands = o.if_contains("candidates");
  if (!cands || !cands->is_array() || cands->as_array().empty() || !cands->as_array()[0].is_object()) {
    auto* pf = o.if_contains("promptFeedback");
    if (pf && pf->is_object() && !detail::asStr(pf->as_object().if_contains("blockReason")).empty()) {
      out.finish = FinishReason::ContentFilter;
      return std::nullopt;
    }
    return detail::upstreamStreamError("the upstream Gemini response has no candidates");
  }
  const auto& c = cands->as_array()[0].as_object();
  int calls = 0;
  if (auto* content = c.if_contains("content"); content && content->is_object()) {
    if (auto* parts = content->as_object().if_contains("parts"); parts && parts->is_array()) {
      for (const auto& pv : parts->as_array())
        if (pv.is_object()) decodeResponsePart(pv.as_object(), out.content, calls);
    }
  }
  auto fr = detail::asStr(c.if_contains("finishReason"));
  out.finish = fr.empty() ? (calls ? FinishReason::ToolCalls : FinishReason::Stop) : finishFromName(fr, calls > 0);
  return std::nullopt;
}

void encodeGenerateResponse(const Response& res, std::string& out) {
  json::array parts;
  for (const auto& p : res.content) {
    json::object part;
    switch (p.kind) {
      case Part::Kind::Text:
        part["text"] = p.text;
        break;
      case Part::Kind::Reasoning:
        part["text"] = p.text;
        part["thought"] = true;
        break;
      case Part::Kind::ToolCall: {
        json::object fc;
        if (!p.id.empty()) fc["id"] = p.id;
        fc["name"] = p.name;
        fc["args"] = argsObject(p.arguments);
        part["functionCall"] = std::move(fc);
        break;
      }
      default:
        continue;
    }
    if (!p.signature.empty()) part["thoughtSignature"] = p.signature;
    parts.push_back(std::move(part));
  }
  if (parts.empty()) parts.push_back(json::object{{"text", ""}});
  json::object cand{{"content", json::object{{"parts", std::move(parts)}, {"role", "model"}}},
                    {"finishReason", finishReasonName(res.finish)},
                    {"index", 0}};
  json::object root{{"candidates", json::array{std::move(cand)}}};
  if (!res.model.empty()) root["modelVersion"] = res.model;
  if (!res.id.empty()) root["responseId"] = res.id;
  out = json::serialize(root);
  if (res.usage.known()) {
    out.pop_back();
    out += ",\"usageMetadata\":";
    appendUsage(out, res.usage);
    out += '}';
  }
}

void encodeGenerateError(const ApiError& err, std::string& out) {
  out += "{\"error\":{\"code\":";
  detail::appendInt(out, err.status);
  out += ",\"message\":";
  detail::appendJsonString(out, err.message);
  out += ",\"status\":\"";
  out += statusName(err.kind);
  out += "\"}}";
}

ApiError decodeGenerateError(int status, std::string_view body) {
  ApiError err;
  err.status = status;
  err.kind = errorKindForStatus(status);
  boost::system::error_code ec;
  auto root = sluice::parseJson(body, ec);
  if (!ec && root.is_array() && !root.as_array().empty()) root = root.as_array()[0];
  if (!ec && root.is_object()) {
    if (auto* e = root.as_object().if_contains("error"); e && e->is_object()) err = errorFromObject(status, e->as_object());
  }
  if (err.message.empty()) err.message = detail::fallbackErrorMessage(body, status);
  return err;
}

namespace {

class GenerateStreamDecoder final : public detail::JsonEventDecoder {
 private:
  void onData(std::string_view data, StreamEventSink& sink) override {
    StreamEvent ev;
    if (data.empty()) return;
    if (data == "[DONE]") {  // not Gemini's, but relays add it
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
    if (auto* e = o.if_contains("error"); e && e->is_object()) {
      error_ = errorFromObject(0, e->as_object());
      if (error_.message.empty()) error_.message = "the upstream reported an error mid-stream";
      ev.kind = StreamEvent::Kind::Error;
      ev.error = &error_;
      sink.onEvent(ev);
      return;
    }
    Usage usage = usageFrom(o.if_contains("usageMetadata"));
    if (!started_) {
      started_ = true;
      ev.kind = StreamEvent::Kind::Start;
      ev.id = detail::asStr(o.if_contains("responseId"));
      ev.model = detail::asStr(o.if_contains("modelVersion"));
      ev.usage = usage;
      sink.onEvent(ev);
    }
    std::string_view finish;
    auto* cands = o.if_contains("candidates");
    if (cands && cands->is_array() && !cands->as_array().empty() && cands->as_array()[0].is_object()) {
      const auto& c = cands->as_array()[0].as_object();
      if (auto* content = c.if_contains("content"); content && content->is_object()) {
        if (auto* parts = content->as_object().if_contains("parts"); parts && parts->is_array()) {
          for (const auto& pv : parts->as_array())
            if (pv.is_object()) onPart(pv.as_object(), sink);
        }
      }
      finish = detail::asStr(c.if_contains("finishReason"));
    } else if (auto* pf = o.if_contains("promptFeedback"); pf && pf->is_object()) {
      if (!detail::asStr(pf->as_object().if_contains("blockReason")).empty()) finish = "SAFETY";
    }
    if (usage.known()) {
      StreamEvent ue;
      ue.kind = StreamEvent::Kind::Usage;
      ue.usage = usage;
      sink.onEvent(ue);
    }
    if (!finish.empty()) {
      StreamEvent fe;
      fe.kind = StreamEvent::Kind::Finish;
      fe.finish = finishFromName(finish, tools_ > 0);
      sink.onEvent(fe);
    }
  }

  void onPart(const json::object& po, StreamEventSink& sink) {
    auto sig = detail::asStr(po.if_contains("thoughtSignature"));
    StreamEvent ev;
    if (auto* fc = po.if_contains("functionCall"); fc && fc->is_object()) {
      const auto& c = fc->as_object();
      int index = tools_++;
      std::string synth;
      ev.kind = StreamEvent::Kind::ToolCallStart;
      ev.tool_index = index;
      ev.id = detail::asStr(c.if_contains("id"));
      if (ev.id.empty()) {
        synth = fmt::format("call_{}", index);
        ev.id = synth;
      }
      ev.name = detail::asStr(c.if_contains("name"));
      ev.signature = sig;
      sink.onEvent(ev);
      auto* args = c.if_contains("args");
      std::string text = args && args->is_object() ? json::serialize(*args) : std::string("{}");
      StreamEvent ae;
      ae.kind = StreamEvent::Kind::ToolCallArgs;
      ae.tool_index = index;
      ae.text = text;
      sink.onEvent(ae);
      return;
    }
    auto* t = po.if_contains("text");
    if (!t || !t->is_string()) {
      if (!sig.empty()) emitSignature(sig, sink);
      return;
    }
    auto* th = po.if_contains("thought");
    bool thought = th && th->is_bool() && th->as_bool();
    std::string_view text(t->as_string().data(), t->as_string().size());
    if (thought) {
      if (!text.empty()) {
        ev.kind = StreamEvent::Kind::Reasoning;
        ev.text = text;
        sink.onEvent(ev);
      }
      if (!sig.empty()) emitSignature(sig, sink);
      return;
    }
    // A signature on an answer part signs the reasoning before it: send it first.
    if (!sig.empty()) emitSignature(sig, sink);
    if (!text.empty()) {
      ev.kind = StreamEvent::Kind::Text;
      ev.text = text;
      sink.onEvent(ev);
    }
  }

  static void emitSignature(std::string_view sig, StreamEventSink& sink) {
    StreamEvent ev;
    ev.kind = StreamEvent::Kind::ReasoningSignature;
    ev.text = sig;
    sink.onEvent(ev);
  }

  bool started_ = false;
  int tools_ = 0;
  ApiError error_;
};

class GenerateStreamEncoder final : public StreamEncoder {
 public:
  explicit GenerateStreamEncoder(const GenerateStreamOptions& opts) : opts_(opts) {}

  void encode(const StreamEvent& ev, std::string& out) override {
    if (ended_) return;
    using K = StreamEvent::Kind;
    switch (ev.kind) {
      case K::Start:
        usage_.merge(ev.usage);
        if (!started_) start(ev.id, ev.model);
        break;
      case K::Text:
        if (ev.text.empty()) break;
        flushCalls(out);
        ensureStarted();
        part_.assign("{\"text\":");
        detail::appendJsonString(part_, ev.text);
        part_ += '}';
        writeChunk(part_, out);
        break;
      case K::Reasoning:
        if (ev.text.empty()) break;
        flushCalls(out);
        ensureStarted();
        part_.assign("{\"text\":");
        detail::appendJsonString(part_, ev.text);
        part_ += ",\"thought\":true}";
        writeChunk(part_, out);
        break;
      case K::ReasoningSignature:
        if (ev.text.empty()) break;
        flushCalls(out);
        ensureStarted();
        part_.assign("{\"text\":\"\",\"thought\":true,\"thoughtSignature\":");
        detail::appendJsonString(part_, ev.text);
        part_ += '}';
        writeChunk(part_, out);
        break;
      case K::ToolCallStart: {
        ensureStarted();
        Call c;
        c.index = ev.tool_index;
        c.id.assign(ev.id);
        c.name.assign(ev.name);
        c.signature.assign(ev.signature);
        calls_.push_back(std::move(c));
        break;
      }
      case K::ToolCallArgs:
        for (auto it = calls_.rbegin(); it != calls_.rend(); ++it) {
          if (it->index == ev.tool_index) {
            it->args.append(ev.text);
            break;
          }
        }
        break;
      case K::Finish:
        flushCalls(out);
        finish_ = ev.finish;
        break;
      case K::Usage:
        usage_.merge(ev.usage);
        break;
      case K::Done:
        closeStream(out);
        break;
      case K::Error:
        calls_.clear();  // arguments may be cut off
        writeError(*ev.error, out);
        break;
      case K::RedactedReasoning:
      case K::Ping:
        break;  // no Gemini equivalent
    }
  }

  void finish(std::string& out) override {
    if (ended_) return;
    if (finish_ != FinishReason::Unset) {
      closeStream(out);
      return;
    }
    calls_.clear();
    writeError(detail::upstreamStreamError("the upstream stream ended before the response was complete"), out);
  }

  bool ended() const override { return ended_; }

 private:
  struct Call {
    int index = 0;
    std::string id, name, signature, args;
  };

  void start(std::string_view id, std::string_view model) {
    started_ = true;
    suffix_.clear();
    if (!model.empty()) {
      suffix_ += ",\"modelVersion\":";
      detail::appendJsonString(suffix_, model);
    }
    if (!id.empty()) {
      suffix_ += ",\"responseId\":";
      detail::appendJsonString(suffix_, id);
    }
  }
  void ensureStarted() {
    if (!started_) start({}, {});
  }
  void openEvent(std::string& out) {
    if (opts_.json_array) {
      out += first_ ? "[" : ",\r\n";
    } else {
      out += "data: ";
    }
    first_ = false;
  }
  void closeEvent(std::string& out) {
    if (!opts_.json_array) out += "\r\n\r\n";
  }
  void writeChunk(std::string_view parts, std::string& out) {
    openEvent(out);
    out += "{\"candidates\":[{\"content\":{\"parts\":[";
    out += parts;
    out += "],\"role\":\"model\"},\"index\":0}]";
    out += suffix_;
    out += '}';
    closeEvent(out);
  }
  void flushCalls(std::string& out) {
    if (calls_.empty()) return;
    part_.clear();
    for (const auto& c : calls_) {
      if (!part_.empty()) part_ += ',';
      part_ += "{\"functionCall\":{";
      if (!c.id.empty()) {
        part_ += "\"id\":";
        detail::appendJsonString(part_, c.id);
        part_ += ',';
      }
      part_ += "\"name\":";
      detail::appendJsonString(part_, c.name);
      part_ += ",\"args\":";
      // Arguments arrive as JSON text in fragments; Gemini sends an object. Checked once per call.
      boost::system::error_code ec;
      auto v = sluice::parseJson(c.args.empty() ? std::string_view("{}") : std::string_view(c.args), ec);
      if (!ec && v.is_object()) {
        part_ += c.args.empty() ? std::string_view("{}") : std::string_view(c.args);
      } else {
        part_ += "{\"_raw_arguments\":";
        detail::appendJsonString(part_, c.args);
        part_ += '}';
      }
      part_ += '}';
      if (!c.signature.empty()) {
        part_ += ",\"thoughtSignature\":";
        detail::appendJsonString(part_, c.signature);
      }
      part_ += '}';
    }
    calls_.clear();
    writeChunk(part_, out);
  }
  void closeStream(std::string& out) {
    ensureStarted();
    flushCalls(out);
    openEvent(out);
    out += "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"},\"finishReason\":\"";
    out += finishReasonName(finish_);
    out += "\",\"index\":0}]";
    if (usage_.known()) {
      out += ",\"usageMetadata\":";
      appendUsage(out, usage_);
    }
    out += suffix_;
    out += '}';
    closeEvent(out);
    if (opts_.json_array) out += "]";
    ended_ = true;
  }
  void writeError(const ApiError& err, std::string& out) {
    openEvent(out);
    encodeGenerateError(err, out);
    closeEvent(out);
    if (opts_.json_array) out += "]";
    ended_ = true;
  }

  GenerateStreamOptions opts_;
  std::string suffix_;
  std::string part_;
  std::vector<Call> calls_;
  bool started_ = false;
  bool first_ = true;
  bool ended_ = false;
  FinishReason finish_ = FinishReason::Unset;
  Usage usage_;
};

}  // namespace

std::unique_ptr<StreamDecoder> makeGenerateStreamDecoder() {
  return std::make_unique<GenerateStreamDecoder>();
}

std::unique_ptr<StreamEncoder> makeGenerateStreamEncoder(const GenerateStreamOptions& opts) {
  return std::make_unique<GenerateStreamEncoder>(opts);
}

}  // namespace sluice::providers::gemini
