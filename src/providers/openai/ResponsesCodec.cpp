#include "providers/openai/ResponsesCodec.hpp"

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <ctime>
#include <random>
#include <unordered_map>

#include "core/JsonText.hpp"
#include "providers/CodecUtil.hpp"
#include "providers/openai/ChatCodec.hpp"

namespace sluice::providers::openai {

namespace json = boost::json;
using detail::Fields;
using detail::indexPath;

bool ResponsesEcho::isCustomTool(std::string_view name) const {
  return std::find(custom_tools.begin(), custom_tools.end(), name) != custom_tools.end();
}

const ResponsesEcho::NamespacedTool* ResponsesEcho::namespacedTool(std::string_view offered) const {
  for (const auto& t : namespaced)
    if (t.offered == offered) return &t;
  return nullptr;
}

namespace {

// ---- small rendering helpers ----------------------------------------------------------------

// Shortest round-trip text of a double, always with a fraction or exponent ("1.0", "0.7").
void appendNumber(std::string& out, double d) {
  auto s = fmt::format("{}", d);
  out += s;
  if (s.find_first_of(".eEn") == std::string::npos) out += ".0";  // n: nan/inf never reach here
}

void appendNumberValue(std::string& out, const json::value& v) {
  if (v.is_double()) {
    appendNumber(out, v.as_double());
  } else {
    out += json::serialize(v);
  }
}

std::string randomHex(std::size_t n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(n);
  for (std::size_t i = 0; i < n; ++i) s.push_back(kHex[rng() & 15u]);
  return s;
}

// The stable part of an upstream id ("chatcmpl-abc" / "msg_01X" -> "abc" / "01X"), alphanumerics only.
std::string idBase(std::string_view upstream) {
  auto sep = upstream.find_first_of("_-");
  if (sep != std::string_view::npos && sep < 10) upstream.remove_prefix(sep + 1);
  std::string base;
  for (char c : upstream) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) base.push_back(c);
  }
  if (base.empty()) base = randomHex(32);
  return base;
}

// The custom-tool input carried in canonical arguments {"input": "..."}; the raw text otherwise.
std::string customInputFromArguments(std::string_view args) {
  boost::system::error_code ec;
  auto v = sluice::parseJson(args, ec);
  if (!ec && v.is_object()) {
    if (auto* in = v.as_object().if_contains(kCustomToolInputKey); in && in->is_string())
      return std::string(in->as_string());
  }
  return std::string(args);
}

std::string_view errorCodeFor(const ApiError& err) {
  if (!err.code.empty()) return err.code;
  switch (err.kind) {
    case ErrorKind::RateLimit:
      return "rate_limit_exceeded";
    case ErrorKind::InvalidRequest:
    case ErrorKind::RequestTooLarge:
      return "invalid_request_error";
    case ErrorKind::Authentication:
      return "invalid_api_key";
    default:
      return "server_error";
  }
}

// ---- request decoding -----------------------------------------------------------------------

constexpr std::string_view kCustomToolParameters =
    R"({"type":"object","properties":{"input":{"type":"string","description":"The raw input of the tool, as free-form text (not JSON)."}},"required":["input"],"additionalProperties":false})";

enum class Side { User, Assistant, System };

class RequestDecoder {
 public:
  RequestDecoder(Request& out, ResponsesEcho* echo) : out_(out), echo_(echo) {}

  std::optional<ApiError> decode(const json::object& root) {
    Fields f{root, ""};
    SLUICE_PROVIDERS_TRY(f.str("model", out_.model, true));
    for (const char* key : {"previous_response_id", "conversation"}) {
      if (f.get(key))
        return ApiError::invalid(
            key, fmt::format("{} is not supported: this gateway keeps no conversation state; send the whole "
                             "conversation in input (and store: false)",
                             key));
    }
    std::optional<bool> background;
    SLUICE_PROVIDERS_TRY(f.boolean("background", background));
    if (background.value_or(false))
      return ApiError::invalid("background",
                               "background responses are not supported when translating to another "
                               "provider: the gateway keeps no response state");
    if (f.get("prompt"))
      return ApiError::invalid("prompt",
                               "prompt (a stored prompt template) cannot be translated to another provider; "
                               "send instructions and input instead");
    std::string instructions;
    SLUICE_PROVIDERS_TRY(f.str("instructions", instructions));
    if (!instructions.empty()) out_.system.push_back(Part::makeText(std::move(instructions)));

    SLUICE_PROVIDERS_TRY(decodeTools(f));
    auto* input = f.get("input");
    if (!input) return ApiError::invalid("input", "input is required");
    if (input->is_array()) {
      // additional_tools items first, wherever they sit: history items may call their tools.
      const auto& arr = input->as_array();
      for (std::size_t i = 0; i < arr.size(); ++i)
        SLUICE_PROVIDERS_TRY(decodeAdditionalTools(arr[i], indexPath("input", i)));
    }
    if (input->is_string()) {
      if (input->as_string().empty()) return ApiError::invalid("input", "input must not be empty");
      Message m;
      m.role = Role::User;
      m.parts.push_back(Part::makeText(std::string(input->as_string())));
      out_.messages.push_back(std::move(m));
    } else if (input->is_array()) {
      const auto& arr = input->as_array();
      for (std::size_t i = 0; i < arr.size(); ++i) SLUICE_PROVIDERS_TRY(decodeItem(arr[i], indexPath("input", i)));
      if (out_.messages.empty())
        return ApiError::invalid("input", "input must hold at least one user or assistant item");
    } else {
      return ApiError::invalid("input", "input must be a string or an array of items");
    }

    SLUICE_PROVIDERS_TRY(decodeToolChoice(f));
    SLUICE_PROVIDERS_TRY(f.boolean("parallel_tool_calls", out_.parallel_tool_calls));
    SLUICE_PROVIDERS_TRY(decodeText(f));
    SLUICE_PROVIDERS_TRY(f.num("temperature", out_.temperature));
    SLUICE_PROVIDERS_TRY(f.num("top_p", out_.top_p));
    SLUICE_PROVIDERS_TRY(f.integer("max_output_tokens", out_.max_tokens));
    if (out_.max_tokens && *out_.max_tokens < 1)
      return ApiError::invalid("max_output_tokens", "max_output_tokens must be at least 1");
    std::optional<std::int64_t> topLogprobs;
    SLUICE_PROVIDERS_TRY(f.integer("top_logprobs", topLogprobs));
    if (topLogprobs.value_or(0) > 0)
      return ApiError::invalid("top_logprobs", "top_logprobs cannot be translated to another provider");
    SLUICE_PROVIDERS_TRY(decodeReasoning(f));
    std::optional<bool> stream;
    SLUICE_PROVIDERS_TRY(f.boolean("stream", stream));
    out_.stream = stream.value_or(false);
    out_.include_usage = true;  // a Responses stream always ends with its usage
    SLUICE_PROVIDERS_TRY(f.str("user", out_.user));
    if (out_.user.empty()) SLUICE_PROVIDERS_TRY(f.str("safety_identifier", out_.user));
    if (echo_) buildEcho(root);
    return std::nullopt;
  }

 private:
  Message& turn(Role r) {
    if (out_.messages.empty() || out_.messages.back().role != r) {
      Message m;
      m.role = r;
      out_.messages.push_back(std::move(m));
    }
    return out_.messages.back();
  }

  static std::optional<ApiError> decodeImage(const Fields& pf, Part& p) {
    std::string url;
    SLUICE_PROVIDERS_TRY(pf.str("image_url", url));
    if (url.empty()) {
      if (pf.get("file_id"))
        return ApiError::invalid(pf.sub("file_id"),
                                 fmt::format("{} refers to a file stored at OpenAI, which other providers cannot "
                                             "read; send the image as image_url (a URL or a data: URL)",
                                             pf.sub("file_id")));
      return ApiError::invalid(pf.sub("image_url"), fmt::format("{} is required", pf.sub("image_url")));
    }
    p.kind = Part::Kind::Image;
    if (!detail::parseDataUrl(url, p.media_type, p.data)) {
      if (url.starts_with("data:"))
        return ApiError::invalid(pf.sub("image_url"),
                                 "image data URLs must be base64: data:<media type>;base64,<data>");
      p.url = std::move(url);
    }
    return std::nullopt;  // `detail` has no equivalent elsewhere and is dropped
  }

  static std::optional<ApiError> decodeContent(const json::value& content, const std::string& path, Side side,
                                               std::vector<Part>& parts) {
    if (content.is_string()) {
      if (!content.as_string().empty()) parts.push_back(Part::makeText(std::string(content.as_string())));
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
      if (type == "input_text" || type == "output_text" || type == "text" || type == "refusal") {
        std::string text;
        SLUICE_PROVIDERS_TRY(pf.str(type == "refusal" ? "refusal" : "text", text, true));
        if (!text.empty()) parts.push_back(Part::makeText(std::move(text)));
      } else if (type == "input_image" && side == Side::User) {
        Part p;
        SLUICE_PROVIDERS_TRY(decodeImage(pf, p));
        parts.push_back(std::move(p));
      } else if (type == "input_file" || type == "input_audio") {
        return ApiError::invalid(pf.sub("type"),
                                 fmt::format("content part type '{}' cannot be translated to another provider", type));
      } else {
        return ApiError::invalid(pf.sub("type"),
                                 fmt::format("content part type '{}' is not supported in {} content", type,
                                             side == Side::User        ? "user"
                                             : side == Side::Assistant ? "assistant"
                                                                       : "system"));
      }
    }
    return std::nullopt;
  }

  std::optional<ApiError> decodeMessage(const Fields& f) {
    std::string role;
    SLUICE_PROVIDERS_TRY(f.str("role", role, true));
    auto* content = f.get("content");
    if (!content) return ApiError::invalid(f.sub("content"), fmt::format("{} is required", f.sub("content")));
    if (role == "system" || role == "developer") {
      return decodeContent(*content, f.sub("content"), Side::System, out_.system);
    }
    Side side;
    Role r;
    if (role == "user") {
      side = Side::User;
      r = Role::User;
    } else if (role == "assistant") {
      side = Side::Assistant;
      r = Role::Assistant;
    } else {
      return ApiError::invalid(
          f.sub("role"), fmt::format("{} '{}' is not one of user, assistant, system, developer", f.sub("role"), role));
    }
    std::vector<Part> parts;
    SLUICE_PROVIDERS_TRY(decodeContent(*content, f.sub("content"), side, parts));
    if (parts.empty()) return std::nullopt;  // an empty message adds nothing to a turn
    auto& m = turn(r);
    for (auto& p : parts) m.parts.push_back(std::move(p));
    return std::nullopt;
  }

  std::optional<ApiError> decodeCall(const Fields& f, bool custom) {
    Part p;
    p.kind = Part::Kind::ToolCall;
    SLUICE_PROVIDERS_TRY(f.str("call_id", p.id, true));
    SLUICE_PROVIDERS_TRY(f.str("name", p.name, true));
    std::string ns;
    SLUICE_PROVIDERS_TRY(f.str("namespace", ns));
    p.name = offeredName(ns, std::move(p.name));
    if (custom) {
      std::string input;
      SLUICE_PROVIDERS_TRY(f.str("input", input));
      p.arguments = "{\"input\":";
      detail::appendJsonString(p.arguments, input);
      p.arguments += '}';
    } else {
      SLUICE_PROVIDERS_TRY(f.str("arguments", p.arguments));
      if (p.arguments.empty()) p.arguments = "{}";
    }
    call_names_[p.id] = p.name;
    turn(Role::Assistant).parts.push_back(std::move(p));
    return std::nullopt;
  }

  std::optional<ApiError> decodeCallOutput(const Fields& f) {
    Part p;
    p.kind = Part::Kind::ToolResult;
    SLUICE_PROVIDERS_TRY(f.str("call_id", p.id, true));
    if (auto it = call_names_.find(p.id); it != call_names_.end()) p.name = it->second;
    if (auto* output = f.get("output"))
      SLUICE_PROVIDERS_TRY(decodeContent(*output, f.sub("output"), Side::User, p.content));
    turn(Role::User).parts.push_back(std::move(p));
    return std::nullopt;
  }

  std::optional<ApiError> decodeReasoningItem(const Fields& f) {
    std::string text;
    for (const char* key : {"summary", "content"}) {
      auto* arr = f.get(key);
      if (!arr) continue;
      if (!arr->is_array()) return ApiError::invalid(f.sub(key), fmt::format("{} must be an array", f.sub(key)));
      for (std::size_t j = 0; j < arr->as_array().size(); ++j) {
        const auto& e = arr->as_array()[j];
        auto ep = indexPath(f.sub(key), j);
        if (!e.is_object()) return ApiError::invalid(ep, fmt::format("{} must be an object", ep));
        std::string t;
        SLUICE_PROVIDERS_TRY((Fields{e.as_object(), ep}.str("text", t)));
        if (!text.empty() && !t.empty()) text += "\n\n";
        text += t;
      }
      if (!text.empty()) break;  // the summary wins over the raw reasoning_text content
    }
    std::string encrypted;
    SLUICE_PROVIDERS_TRY(f.str("encrypted_content", encrypted));
    Part p;
    if (encrypted.starts_with(kRedactedPrefix)) {
      p.kind = Part::Kind::RedactedReasoning;
      p.data = encrypted.substr(kRedactedPrefix.size());
    } else {
      p.kind = Part::Kind::Reasoning;
      p.text = std::move(text);
      if (encrypted.starts_with(kSignaturePrefix)) p.signature = encrypted.substr(kSignaturePrefix.size());
      // Other encrypted_content is OpenAI's own and unreadable elsewhere: dropped.
      if (p.text.empty() && p.signature.empty()) return std::nullopt;
    }
    turn(Role::Assistant).parts.push_back(std::move(p));
    return std::nullopt;
  }

  std::optional<ApiError> decodeItem(const json::value& v, const std::string& path) {
    if (!v.is_object()) return ApiError::invalid(path, fmt::format("{} must be an object", path));
    Fields f{v.as_object(), path};
    std::string type;
    SLUICE_PROVIDERS_TRY(f.str("type", type));
    if (type.empty() || type == "message") return decodeMessage(f);
    if (type == "function_call") return decodeCall(f, false);
    if (type == "custom_tool_call") return decodeCall(f, true);
    if (type == "function_call_output" || type == "custom_tool_call_output") return decodeCallOutput(f);
    if (type == "reasoning") return decodeReasoningItem(f);
    if (type == "additional_tools") return std::nullopt;  // decoded before the other items
    if (type == "item_reference")
      return ApiError::invalid(f.sub("type"),
                               "item_reference items point at stored items; this gateway keeps no "
                               "conversation state: send the items themselves");
    return ApiError::invalid(
        f.sub("type"), fmt::format("input item type '{}' cannot be translated to another provider (built-in OpenAI "
                                   "tools are not available there)",
                                   type));
  }

  std::optional<ApiError> decodeTools(const Fields& f) {
    auto* tools = f.get("tools");
    if (!tools) return std::nullopt;
    if (!tools->is_array()) return ApiError::invalid("tools", "tools must be an array");
    return decodeToolList(tools->as_array(), "tools", {});
  }

  // An {"type":"additional_tools","tools":[...]} input item (Codex's responses-lite shape).
  std::optional<ApiError> decodeAdditionalTools(const json::value& v, const std::string& path) {
    const auto* o = v.if_object();
    if (!o) return std::nullopt;  // reported by decodeItem
    const auto* type = o->if_contains("type");
    if (!type || !type->is_string() || type->as_string() != "additional_tools") return std::nullopt;
    Fields f{*o, path};
    auto* tools = f.get("tools");
    if (!tools) return std::nullopt;
    if (!tools->is_array())
      return ApiError::invalid(f.sub("tools"), fmt::format("{} must be an array", f.sub("tools")));
    return decodeToolList(tools->as_array(), f.sub("tools"), {});
  }

  // The name a tool is offered upstream under: its own, or "<ns>__<name>" when an earlier tool
  // took that name. The same (ns, name) always maps to the same offered name.
  std::string offeredName(std::string_view ns, std::string name) const {
    if (ns.empty()) return name;
    for (const auto& t : namespaced_)
      if (t.ns == ns && t.name == name) return t.offered;
    return name;  // a call of a tool this request does not declare: its own name
  }

  std::string declareName(const std::string& ns, const std::string& name) {
    std::string offered = name;
    if (!ns.empty()) {
      for (const auto& t : namespaced_)
        if (t.ns == ns && t.name == name) return t.offered;  // declared twice: one tool
      if (std::find(declared_.begin(), declared_.end(), offered) != declared_.end()) offered = ns + "__" + name;
      namespaced_.push_back({offered, ns, name});
    }
    declared_.push_back(offered);
    return offered;
  }

  std::optional<ApiError> decodeToolList(const json::array& arr, const std::string& path, const std::string& ns) {
    for (std::size_t i = 0; i < arr.size(); ++i) {
      auto tp = indexPath(path, i);
      if (!arr[i].is_object()) return ApiError::invalid(tp, fmt::format("{} must be an object", tp));
      Fields tf{arr[i].as_object(), tp};
      std::string type;
      SLUICE_PROVIDERS_TRY(tf.str("type", type, true));
      Tool t;
      if (type == "namespace") {
        // A group of tools (Codex's "functions", "collaboration"...): offered flat, by name.
        std::string name;
        SLUICE_PROVIDERS_TRY(tf.str("name", name, true));
        if (!ns.empty())
          return ApiError::invalid(tf.sub("type"), fmt::format("{} is a namespace inside a namespace", tf.sub("type")));
        auto* inner = tf.get("tools");
        if (!inner) continue;
        if (!inner->is_array())
          return ApiError::invalid(tf.sub("tools"), fmt::format("{} must be an array", tf.sub("tools")));
        SLUICE_PROVIDERS_TRY(decodeToolList(inner->as_array(), tf.sub("tools"), name));
        continue;
      }
      if (type == "web_search" || type == "web_search_preview") {
        // OpenAI runs this search itself; no other provider can. Dropped: the model answers
        // without searching (Codex offers it on every request).
        continue;
      }
      if (type == "function") {
        SLUICE_PROVIDERS_TRY(tf.str("name", t.name, true));
        t.name = declareName(ns, t.name);
        SLUICE_PROVIDERS_TRY(tf.str("description", t.description));
        if (auto* params = tf.get("parameters")) {
          if (!params->is_object())
            return ApiError::invalid(tf.sub("parameters"), fmt::format("{} must be an object", tf.sub("parameters")));
          t.parameters = json::serialize(*params);
        }
        // `strict` has no canonical equivalent and is dropped.
      } else if (type == "custom") {
        SLUICE_PROVIDERS_TRY(tf.str("name", t.name, true));
        t.name = declareName(ns, t.name);
        SLUICE_PROVIDERS_TRY(tf.str("description", t.description));
        if (auto* fmtv = tf.get("format")) {
          if (!fmtv->is_object())
            return ApiError::invalid(tf.sub("format"), fmt::format("{} must be an object", tf.sub("format")));
          Fields ff{fmtv->as_object(), tf.sub("format")};
          std::string ftype, syntax, definition;
          SLUICE_PROVIDERS_TRY(ff.str("type", ftype, true));
          if (ftype == "grammar") {
            SLUICE_PROVIDERS_TRY(ff.str("syntax", syntax));
            SLUICE_PROVIDERS_TRY(ff.str("definition", definition, true));
            if (!t.description.empty()) t.description += "\n\n";
            t.description +=
                fmt::format("The input must match this {} grammar:\n{}", syntax.empty() ? "" : syntax, definition);
          } else if (ftype != "text") {
            return ApiError::invalid(ff.sub("type"), fmt::format("custom tool format '{}' is not supported", ftype));
          }
        }
        t.parameters = std::string(kCustomToolParameters);
        custom_tools_.push_back(t.name);
      } else {
        return ApiError::invalid(tf.sub("type"),
                                 fmt::format("tool type '{}' is a built-in OpenAI tool with no equivalent at this "
                                             "provider; remove it or declare a function tool",
                                             type));
      }
      out_.tools.push_back(std::move(t));
    }
    return std::nullopt;
  }

  std::optional<ApiError> decodeToolChoice(const Fields& f) {
    auto* tc = f.get("tool_choice");
    if (!tc) return std::nullopt;
    if (tc->is_string()) {
      auto s = tc->as_string();
      if (s == "auto") {
        out_.tool_choice.mode = ToolChoice::Mode::Auto;
      } else if (s == "none") {
        out_.tool_choice.mode = ToolChoice::Mode::None;
      } else if (s == "required") {
        out_.tool_choice.mode = ToolChoice::Mode::Required;
      } else {
        return ApiError::invalid("tool_choice",
                                 "tool_choice must be none, auto, required or {\"type\":\"function\","
                                 "\"name\":...}");
      }
      return std::nullopt;
    }
    if (!tc->is_object()) return ApiError::invalid("tool_choice", "tool_choice must be a string or an object");
    Fields cf{tc->as_object(), "tool_choice"};
    std::string type;
    SLUICE_PROVIDERS_TRY(cf.str("type", type, true));
    if (type != "function" && type != "custom")
      return ApiError::invalid("tool_choice.type",
                               fmt::format("tool_choice type '{}' cannot be translated to another provider", type));
    out_.tool_choice.mode = ToolChoice::Mode::Named;
    SLUICE_PROVIDERS_TRY(cf.str("name", out_.tool_choice.name, true));
    std::string ns;
    SLUICE_PROVIDERS_TRY(cf.str("namespace", ns));
    out_.tool_choice.name = offeredName(ns, std::move(out_.tool_choice.name));
    return std::nullopt;
  }

  std::optional<ApiError> decodeText(const Fields& f) {
    auto* text = f.get("text");
    if (!text) return std::nullopt;
    if (!text->is_object()) return ApiError::invalid("text", "text must be an object");
    auto* fm = Fields{text->as_object(), "text"}.get("format");
    if (!fm) return std::nullopt;  // text.verbosity alone: dropped
    if (!fm->is_object()) return ApiError::invalid("text.format", "text.format must be an object");
    Fields ff{fm->as_object(), "text.format"};
    std::string type;
    SLUICE_PROVIDERS_TRY(ff.str("type", type, true));
    auto& rf = out_.response_format;
    if (type == "text") {
      rf.kind = ResponseFormat::Kind::Text;
    } else if (type == "json_object") {
      rf.kind = ResponseFormat::Kind::JsonObject;
    } else if (type == "json_schema") {
      rf.kind = ResponseFormat::Kind::JsonSchema;
      SLUICE_PROVIDERS_TRY(ff.str("name", rf.name, true));
      auto* schema = ff.get("schema");
      if (!schema || !schema->is_object())
        return ApiError::invalid("text.format.schema", "text.format.schema must be an object");
      rf.schema = json::serialize(*schema);
      std::optional<bool> strict;
      SLUICE_PROVIDERS_TRY(ff.boolean("strict", strict));
      rf.strict = strict.value_or(false);
    } else {
      return ApiError::invalid("text.format.type", fmt::format("text.format type '{}' is not supported", type));
    }
    return std::nullopt;
  }

  std::optional<ApiError> decodeReasoning(const Fields& f) {
    auto* r = f.get("reasoning");
    if (!r) return std::nullopt;
    if (!r->is_object()) return ApiError::invalid("reasoning", "reasoning must be an object");
    Fields rf{r->as_object(), "reasoning"};
    std::string effort;
    SLUICE_PROVIDERS_TRY(rf.str("effort", effort));
    if (effort == "none" || effort == "minimal") {
      out_.reasoning_budget = 0;
    } else if (effort == "low") {
      out_.reasoning_budget = kReasoningBudgetLow;
    } else if (effort == "medium") {
      out_.reasoning_budget = kReasoningBudgetMedium;
    } else if (effort == "high" || effort == "xhigh") {
      out_.reasoning_budget = kReasoningBudgetHigh;
    } else if (!effort.empty()) {
      return ApiError::invalid("reasoning.effort", "reasoning.effort must be none, minimal, low, medium or high");
    }
    std::string summary;
    SLUICE_PROVIDERS_TRY(rf.str("summary", summary));  // checked for type, then dropped
    return std::nullopt;
  }

  void buildEcho(const json::object& root) {
    auto& e = *echo_;
    e.model = out_.model;
    e.custom_tools = std::move(custom_tools_);
    e.namespaced = std::move(namespaced_);
    auto get = [&](std::string_view k) -> const json::value* {
      auto* v = root.if_contains(k);
      return v && !v->is_null() ? v : nullptr;
    };
    auto& o = e.fields;
    o += "\"instructions\":";
    if (auto* v = get("instructions"); v && v->is_string()) {
      detail::appendJsonString(o, v->as_string());
    } else {
      o += "null";
    }
    o += ",\"max_output_tokens\":";
    if (auto* v = get("max_output_tokens"); v && v->is_number()) {
      appendNumberValue(o, *v);
    } else {
      o += "null";
    }
    o += ",\"parallel_tool_calls\":";
    o += out_.parallel_tool_calls.value_or(true) ? "true" : "false";
    o += ",\"previous_response_id\":null,\"reasoning\":{\"effort\":";
    const json::value* reasoning = get("reasoning");
    const json::object* ro = reasoning && reasoning->is_object() ? &reasoning->as_object() : nullptr;
    for (const char* key : {"effort", "summary"}) {
      if (key[0] == 's') o += ",\"summary\":";
      const json::value* v = ro ? ro->if_contains(key) : nullptr;
      if (v && v->is_string()) {
        detail::appendJsonString(o, v->as_string());
      } else {
        o += "null";
      }
    }
    // store: what the request said (the gateway's responses stage sets it true when it keeps
    // the answer); absent: nothing keeps it.
    const json::value* store = get("store");
    o += store && store->is_bool() && store->as_bool() ? "},\"store\":true" : "},\"store\":false";
    o += ",\"temperature\":";
    appendNumber(o, out_.temperature.value_or(1.0));
    o += ",\"text\":";
    if (auto* v = get("text"); v && v->is_object()) {
      json::object text = v->as_object();
      if (!text.contains("format")) text["format"] = json::object{{"type", "text"}};
      o += json::serialize(text);
    } else {
      o += "{\"format\":{\"type\":\"text\"}}";
    }
    o += ",\"tool_choice\":";
    if (auto* v = get("tool_choice")) {
      o += json::serialize(*v);
    } else {
      o += "\"auto\"";
    }
    o += ",\"tools\":";
    if (auto* v = get("tools"); v && v->is_array()) {
      o += json::serialize(*v);
    } else {
      o += "[]";
    }
    o += ",\"top_p\":";
    appendNumber(o, out_.top_p.value_or(1.0));
    o += ",\"truncation\":";
    if (auto* v = get("truncation"); v && v->is_string()) {
      detail::appendJsonString(o, v->as_string());
    } else {
      o += "\"disabled\"";
    }
    o += ",\"user\":";
    if (auto* v = get("user"); v && v->is_string()) {
      detail::appendJsonString(o, v->as_string());
    } else {
      o += "null";
    }
    o += ",\"metadata\":";
    if (auto* v = get("metadata"); v && v->is_object()) {
      o += json::serialize(*v);
    } else {
      o += "{}";
    }
  }

  Request& out_;
  ResponsesEcho* echo_;
  std::unordered_map<std::string, std::string> call_names_;
  std::vector<std::string> custom_tools_;
  std::vector<std::string> declared_;  // every offered tool name, in order
  std::vector<ResponsesEcho::NamespacedTool> namespaced_;
};

// ---- response objects -----------------------------------------------------------------------

const std::string& defaultEchoFields() {
  static const std::string fields = [] {
    Request req;
    ResponsesEcho echo;
    RequestDecoder d(req, &echo);
    json::object root{{"model", ""}, {"input", "x"}};
    (void)d.decode(root);
    return echo.fields;
  }();
  return fields;
}

struct OutItem {
  enum class Kind : std::uint8_t { Reasoning, Message, FunctionCall, CustomToolCall };
  Kind kind = Kind::Message;
  std::string id;
  std::string text;  // message text, reasoning summary, function arguments, custom tool input
  std::string call_id;
  std::string name;
  std::string ns;         // calls of a namespaced tool: its namespace (name is its own name)
  std::string encrypted;  // reasoning: encrypted_content (our prefix + signature / redacted data)
  std::string_view status = "completed";
  bool open = false;  // streaming: added, not done yet
};

// A call item's "name" (and "namespace" when the tool was declared in one).
void appendCallName(std::string& out, const OutItem& it) {
  out += ",\"name\":";
  detail::appendJsonString(out, it.name);
  if (!it.ns.empty()) {
    out += ",\"namespace\":";
    detail::appendJsonString(out, it.ns);
  }
}

// A call of the tool offered upstream as `offered`: the item's kind, name and namespace.
void nameCall(OutItem& it, std::string_view offered, const ResponsesEcho* echo) {
  const bool custom = echo && echo->isCustomTool(offered);
  it.kind = custom ? OutItem::Kind::CustomToolCall : OutItem::Kind::FunctionCall;
  if (const auto* t = echo ? echo->namespacedTool(offered) : nullptr) {
    it.name = t->name;
    it.ns = t->ns;
  } else {
    it.name.assign(offered);
  }
}

// One output item. `added` renders the shape of response.output_item.added (empty content).
void appendItem(std::string& out, const OutItem& it, bool added = false) {
  out += "{\"id\":";
  detail::appendJsonString(out, it.id);
  switch (it.kind) {
    case OutItem::Kind::Reasoning:
      out += ",\"type\":\"reasoning\",\"summary\":[";
      if (!added && !it.text.empty()) {
        out += "{\"type\":\"summary_text\",\"text\":";
        detail::appendJsonString(out, it.text);
        out += '}';
      }
      out += ']';
      if (!it.encrypted.empty()) {
        out += ",\"encrypted_content\":";
        detail::appendJsonString(out, it.encrypted);
      }
      break;
    case OutItem::Kind::Message:
      out += ",\"type\":\"message\",\"status\":\"";
      out += it.status;
      out += "\",\"role\":\"assistant\",\"content\":[";
      if (!added) {
        out += "{\"type\":\"output_text\",\"text\":";
        detail::appendJsonString(out, it.text);
        out += ",\"annotations\":[]}";
      }
      out += ']';
      break;
    case OutItem::Kind::FunctionCall:
      out += ",\"type\":\"function_call\",\"status\":\"";
      out += it.status;
      out += "\",\"arguments\":";
      detail::appendJsonString(out, added ? std::string_view() : std::string_view(it.text));
      out += ",\"call_id\":";
      detail::appendJsonString(out, it.call_id);
      appendCallName(out, it);
      break;
    case OutItem::Kind::CustomToolCall:
      out += ",\"type\":\"custom_tool_call\",\"status\":\"";
      out += it.status;
      out += "\",\"call_id\":";
      detail::appendJsonString(out, it.call_id);
      appendCallName(out, it);
      out += ",\"input\":";
      detail::appendJsonString(out, added ? std::string_view() : std::string_view(it.text));
      break;
  }
  out += '}';
}

void appendResponsesUsage(std::string& out, const Usage& u) {
  auto in = u.input < 0 ? 0 : u.input, o = u.output < 0 ? 0 : u.output;
  out += "{\"input_tokens\":";
  detail::appendInt(out, in);
  out += ",\"input_tokens_details\":{\"cached_tokens\":";
  detail::appendInt(out, u.cached < 0 ? 0 : u.cached);
  if (u.cache_creation > 0) {
    out += ",\"cache_write_tokens\":";
    detail::appendInt(out, u.cache_creation);
  }
  out += "},\"output_tokens\":";
  detail::appendInt(out, o);
  out += ",\"output_tokens_details\":{\"reasoning_tokens\":";
  detail::appendInt(out, u.reasoning < 0 ? 0 : u.reasoning);
  out += "},\"total_tokens\":";
  detail::appendInt(out, detail::addCounts(in, o));
  out += '}';
}

struct ResponseHead {
  std::string_view id;
  std::int64_t created = 0;
  std::string_view status;
  std::string_view model;
  std::string_view incomplete_reason;  // empty: null
  const ApiError* error = nullptr;
  const Usage* usage = nullptr;  // null or unknown: null
  const ResponsesEcho* echo = nullptr;
};

void appendResponse(std::string& out, const ResponseHead& h, const std::vector<OutItem>& items) {
  out += "{\"id\":";
  detail::appendJsonString(out, h.id);
  out += ",\"object\":\"response\",\"created_at\":";
  detail::appendInt(out, h.created);
  out += ",\"status\":\"";
  out += h.status;
  out += "\",\"error\":";
  if (h.error) {
    out += "{\"code\":";
    detail::appendJsonString(out, errorCodeFor(*h.error));
    out += ",\"message\":";
    detail::appendJsonString(out, h.error->message);
    out += '}';
  } else {
    out += "null";
  }
  out += ",\"incomplete_details\":";
  if (h.incomplete_reason.empty()) {
    out += "null";
  } else {
    out += "{\"reason\":\"";
    out += h.incomplete_reason;
    out += "\"}";
  }
  out += ",\"model\":";
  detail::appendJsonString(out, h.model.empty() && h.echo ? std::string_view(h.echo->model) : h.model);
  out += ",\"output\":[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    appendItem(out, items[i]);
  }
  out += "],\"usage\":";
  if (h.usage && h.usage->known()) {
    appendResponsesUsage(out, *h.usage);
  } else {
    out += "null";
  }
  out += ',';
  out += h.echo && !h.echo->fields.empty() ? h.echo->fields : defaultEchoFields();
  out += '}';
}

std::string_view incompleteReason(FinishReason f) {
  if (f == FinishReason::Length) return "max_output_tokens";
  if (f == FinishReason::ContentFilter) return "content_filter";
  return {};
}

std::string itemId(std::string_view prefix, std::string_view base, std::size_t index) {
  return fmt::format("{}_{}_{}", prefix, base, index);
}

// ---- custom tool input, decoded incrementally from streamed arguments JSON ------------------

// Streams the characters of the top-level "input" string of a JSON object arriving in pieces.
// Anything else (other members, nested values) is skipped; malformed JSON just stops the output
// (the done event carries the final value computed from the whole text).
class InputExtractor {
 public:
  void feed(std::string_view s, std::string& out) {
    for (char c : s) step(c, out);
  }

 private:
  enum class St : std::uint8_t {
    Start,
    Key,
    KeyText,
    KeyEsc,
    Colon,
    Value,
    Input,
    InputEsc,
    Hex,
    SkipString,
    SkipStringEsc,
    Nested,
    NestedString,
    NestedEsc,
    Scalar,
    After,
    Done
  };

  void emit(std::uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  void flushHigh(std::string& out) {
    if (high_) emit(0xFFFD, out);
    high_ = 0;
  }
  static bool ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

  void step(char c, std::string& out) {
    switch (st_) {
      case St::Start:
        if (c == '{')
          st_ = St::Key;
        else if (!ws(c))
          st_ = St::Done;
        break;
      case St::Key:
        if (c == '"') {
          key_.clear();
          st_ = St::KeyText;
        } else if (c == '}') {
          st_ = St::Done;
        }
        break;
      case St::KeyText:
        if (c == '\\')
          st_ = St::KeyEsc;
        else if (c == '"')
          st_ = St::Colon;
        else
          key_.push_back(c);
        break;
      case St::KeyEsc:
        key_.push_back(c);
        st_ = St::KeyText;
        break;
      case St::Colon:
        if (c == ':') st_ = St::Value;
        break;
      case St::Value:
        if (ws(c)) break;
        if (c == '"') {
          st_ = key_ == kCustomToolInputKey && !seen_ ? St::Input : St::SkipString;
          if (st_ == St::Input) seen_ = true;
        } else if (c == '{' || c == '[') {
          depth_ = 1;
          st_ = St::Nested;
        } else {
          st_ = St::Scalar;
        }
        break;
      case St::Input:
        if (c == '\\') {
          st_ = St::InputEsc;
        } else if (c == '"') {
          flushHigh(out);
          st_ = St::After;
        } else {
          flushHigh(out);
          out.push_back(c);
        }
        break;
      case St::InputEsc: {
        st_ = St::Input;
        char e = 0;
        switch (c) {
          case 'n':
            e = '\n';
            break;
          case 't':
            e = '\t';
            break;
          case 'r':
            e = '\r';
            break;
          case 'b':
            e = '\b';
            break;
          case 'f':
            e = '\f';
            break;
          case 'u':
            hex_ = 0;
            hex_digits_ = 0;
            st_ = St::Hex;
            return;
          default:
            e = c;  // " \ /
        }
        flushHigh(out);
        out.push_back(e);
        break;
      }
      case St::Hex: {
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) {
          st_ = St::Done;
          break;
        }
        hex_ = (hex_ << 4) | static_cast<std::uint32_t>(d);
        if (++hex_digits_ < 4) break;
        st_ = St::Input;
        if (hex_ >= 0xD800 && hex_ <= 0xDBFF) {
          flushHigh(out);
          high_ = hex_;
        } else if (hex_ >= 0xDC00 && hex_ <= 0xDFFF) {
          if (high_) {
            emit(0x10000 + ((high_ - 0xD800) << 10) + (hex_ - 0xDC00), out);
            high_ = 0;
          } else {
            emit(0xFFFD, out);
          }
        } else {
          flushHigh(out);
          emit(hex_, out);
        }
        break;
      }
      case St::SkipString:
        if (c == '\\')
          st_ = St::SkipStringEsc;
        else if (c == '"')
          st_ = St::After;
        break;
      case St::SkipStringEsc:
        st_ = St::SkipString;
        break;
      case St::Nested:
        if (c == '"')
          st_ = St::NestedString;
        else if (c == '{' || c == '[')
          ++depth_;
        else if ((c == '}' || c == ']') && --depth_ == 0)
          st_ = St::After;
        break;
      case St::NestedString:
        if (c == '\\')
          st_ = St::NestedEsc;
        else if (c == '"')
          st_ = St::Nested;
        break;
      case St::NestedEsc:
        st_ = St::NestedString;
        break;
      case St::Scalar:
      case St::After:
        if (c == ',')
          st_ = St::Key;
        else if (c == '}')
          st_ = St::Done;
        break;
      case St::Done:
        break;
    }
  }

  St st_ = St::Start;
  std::string key_;
  bool seen_ = false;
  int depth_ = 0;
  std::uint32_t hex_ = 0;
  int hex_digits_ = 0;
  std::uint32_t high_ = 0;
};

// ---- stream encoder -------------------------------------------------------------------------

class ResponsesStreamEncoder final : public StreamEncoder {
 public:
  explicit ResponsesStreamEncoder(ResponsesStreamOptions opts) : opts_(std::move(opts)) {
    if (opts_.created == 0) opts_.created = static_cast<std::int64_t>(std::time(nullptr));
  }

  void encode(const StreamEvent& ev, std::string& out) override {
    if (ended_) return;
    using K = StreamEvent::Kind;
    switch (ev.kind) {
      case K::Start:
        usage_.merge(ev.usage);
        if (!started_) start(ev.id, ev.model, out);
        break;
      case K::Text: {
        ensureStarted(out);
        if (ev.text.empty()) break;
        auto& it = openItem(OutItem::Kind::Message, "msg", out);
        it.text.append(ev.text);
        begin("response.output_text.delta", out);
        itemRef(it, out);
        out += ",\"content_index\":0,\"delta\":";
        detail::appendJsonString(out, ev.text);
        out += ",\"logprobs\":[]}\n\n";
        break;
      }
      case K::Reasoning: {
        ensureStarted(out);
        if (ev.text.empty()) break;
        auto& it = openItem(OutItem::Kind::Reasoning, "rs", out);
        it.text.append(ev.text);
        begin("response.reasoning_summary_text.delta", out);
        itemRef(it, out);
        out += ",\"summary_index\":0,\"delta\":";
        detail::appendJsonString(out, ev.text);
        out += "}\n\n";
        break;
      }
      case K::ReasoningSignature:
        if (current_ >= 0 && items_[current_].kind == OutItem::Kind::Reasoning) {
          auto& it = items_[current_];
          if (it.encrypted.empty()) it.encrypted = kSignaturePrefix;
          it.encrypted.append(ev.text);
        }
        break;
      case K::RedactedReasoning: {
        ensureStarted(out);
        closeAll(out);
        OutItem it;
        it.kind = OutItem::Kind::Reasoning;
        it.id = itemId("rs", base_, items_.size());
        it.encrypted = std::string(kRedactedPrefix) + std::string(ev.text);
        items_.push_back(std::move(it));
        added(items_.size() - 1, out);
        itemDone(items_.size() - 1, out);
        break;
      }
      case K::ToolCallStart:
        ensureStarted(out);
        startTool(ev.tool_index, ev.id, ev.name, out);
        break;
      case K::ToolCallArgs: {
        ensureStarted(out);
        int idx = toolItem(ev.tool_index);
        if (idx < 0) {
          startTool(ev.tool_index, {}, {}, out);
          idx = toolItem(ev.tool_index);
        }
        auto& it = items_[idx];
        if (!it.open || ev.text.empty()) break;  // a late fragment of a closed call is dropped
        auto& tool = tools_[ev.tool_index];
        tool.raw.append(ev.text);
        if (it.kind == OutItem::Kind::FunctionCall) {
          begin("response.function_call_arguments.delta", out);
          itemRef(it, out);
          out += ",\"delta\":";
          detail::appendJsonString(out, ev.text);
          out += "}\n\n";
        } else {
          std::string decoded;
          tool.extractor.feed(ev.text, decoded);
          if (decoded.empty()) break;
          it.text += decoded;
          begin("response.custom_tool_call_input.delta", out);
          itemRef(it, out);
          out += ",\"delta\":";
          detail::appendJsonString(out, decoded);
          out += "}\n\n";
        }
        break;
      }
      case K::Finish:
        finish_ = ev.finish;
        if (finish_ == FinishReason::Unset) finish_ = FinishReason::Stop;
        break;
      case K::Usage:
        usage_.merge(ev.usage);
        break;
      case K::Ping:
        break;  // the Responses stream has no keep-alive event
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
  struct ToolState {
    int item = -1;
    std::string raw;  // the arguments JSON text as streamed
    InputExtractor extractor;
  };

  const ResponsesEcho* echo() const { return opts_.echo.get(); }

  void begin(std::string_view type, std::string& out) {
    out += "event: ";
    out += type;
    out += "\ndata: {\"type\":\"";
    out += type;
    out += "\",\"sequence_number\":";
    detail::appendInt(out, seq_++);
  }
  void itemRef(const OutItem& it, std::string& out) {
    out += ",\"item_id\":";
    detail::appendJsonString(out, it.id);
    out += ",\"output_index\":";
    detail::appendInt(out, static_cast<std::int64_t>(&it - items_.data()));
  }

  void responseEvent(std::string_view type, std::string_view status, std::string& out,
                     const ApiError* error = nullptr) {
    begin(type, out);
    out += ",\"response\":";
    ResponseHead h;
    h.id = id_;
    h.created = opts_.created;
    h.status = status;
    h.model = model_;
    h.echo = echo();
    h.error = error;
    bool final = status != "in_progress";
    if (status == "incomplete") h.incomplete_reason = incompleteReason(finish_);
    if (final) h.usage = &usage_;
    static const std::vector<OutItem> kNone;
    appendResponse(out, h, final ? items_ : kNone);
    out += "}\n\n";
  }

  void start(std::string_view id, std::string_view model, std::string& out) {
    started_ = true;
    base_ = idBase(id);
    id_ = "resp_" + base_;
    model_.assign(model);
    responseEvent("response.created", "in_progress", out);
    responseEvent("response.in_progress", "in_progress", out);
  }
  void ensureStarted(std::string& out) {
    if (!started_) start({}, {}, out);
  }

  void added(std::size_t index, std::string& out) {
    begin("response.output_item.added", out);
    out += ",\"output_index\":";
    detail::appendInt(out, static_cast<std::int64_t>(index));
    out += ",\"item\":";
    items_[index].status = "in_progress";
    appendItem(out, items_[index], true);
    out += "}\n\n";
  }

  // The open message or reasoning item of `kind`, opening one (and closing others) if needed.
  OutItem& openItem(OutItem::Kind kind, std::string_view prefix, std::string& out) {
    if (current_ >= 0 && items_[current_].kind == kind) return items_[current_];
    closeAll(out);
    OutItem it;
    it.kind = kind;
    it.id = itemId(prefix, base_, items_.size());
    it.open = true;
    items_.push_back(std::move(it));
    current_ = static_cast<int>(items_.size() - 1);
    added(items_.size() - 1, out);
    auto& item = items_[current_];
    if (kind == OutItem::Kind::Message) {
      begin("response.content_part.added", out);
      itemRef(item, out);
      out += ",\"content_index\":0,\"part\":{\"type\":\"output_text\",\"text\":\"\",\"annotations\":[]}}\n\n";
    } else {
      begin("response.reasoning_summary_part.added", out);
      itemRef(item, out);
      out += ",\"summary_index\":0,\"part\":{\"type\":\"summary_text\",\"text\":\"\"}}\n\n";
    }
    return item;
  }

  int toolItem(int toolIndex) const {
    auto it = tools_.find(toolIndex);
    return it == tools_.end() ? -1 : it->second.item;
  }

  void startTool(int toolIndex, std::string_view callId, std::string_view name, std::string& out) {
    if (toolItem(toolIndex) >= 0) return;  // a repeated start for the same call
    closeCurrent(out);                     // parallel calls stay open until something else starts
    OutItem it;
    nameCall(it, name, echo());
    const bool custom = it.kind == OutItem::Kind::CustomToolCall;
    it.id = itemId(custom ? "ctc" : "fc", base_, items_.size());
    it.call_id = callId.empty() ? fmt::format("call_{}", toolIndex) : std::string(callId);
    it.open = true;
    items_.push_back(std::move(it));
    tools_[toolIndex].item = static_cast<int>(items_.size() - 1);
    open_tools_.push_back(toolIndex);
    added(items_.size() - 1, out);
  }

  void itemDone(std::size_t index, std::string& out) {
    auto& it = items_[index];
    it.open = false;
    it.status = "completed";
    begin("response.output_item.done", out);
    out += ",\"output_index\":";
    detail::appendInt(out, static_cast<std::int64_t>(index));
    out += ",\"item\":";
    appendItem(out, it);
    out += "}\n\n";
  }

  void closeCurrent(std::string& out) {
    if (current_ < 0) return;
    auto index = static_cast<std::size_t>(current_);
    current_ = -1;
    auto& it = items_[index];
    if (it.kind == OutItem::Kind::Message) {
      begin("response.output_text.done", out);
      itemRef(it, out);
      out += ",\"content_index\":0,\"text\":";
      detail::appendJsonString(out, it.text);
      out += ",\"logprobs\":[]}\n\n";
      begin("response.content_part.done", out);
      itemRef(it, out);
      out += ",\"content_index\":0,\"part\":{\"type\":\"output_text\",\"text\":";
      detail::appendJsonString(out, it.text);
      out += ",\"annotations\":[]}}\n\n";
    } else {
      begin("response.reasoning_summary_text.done", out);
      itemRef(it, out);
      out += ",\"summary_index\":0,\"text\":";
      detail::appendJsonString(out, it.text);
      out += "}\n\n";
      begin("response.reasoning_summary_part.done", out);
      itemRef(it, out);
      out += ",\"summary_index\":0,\"part\":{\"type\":\"summary_text\",\"text\":";
      detail::appendJsonString(out, it.text);
      out += "}}\n\n";
    }
    itemDone(index, out);
  }

  void closeTools(std::string& out) {
    for (int toolIndex : open_tools_) {
      auto& tool = tools_[toolIndex];
      auto index = static_cast<std::size_t>(tool.item);
      auto& it = items_[index];
      if (it.kind == OutItem::Kind::FunctionCall) {
        it.text = tool.raw.empty() ? std::string("{}") : tool.raw;
        begin("response.function_call_arguments.done", out);
        itemRef(it, out);
        out += ",\"name\":";
        detail::appendJsonString(out, it.name);
        out += ",\"arguments\":";
        detail::appendJsonString(out, it.text);
        out += "}\n\n";
      } else {
        it.text = customInputFromArguments(tool.raw);
        begin("response.custom_tool_call_input.done", out);
        itemRef(it, out);
        out += ",\"input\":";
        detail::appendJsonString(out, it.text);
        out += "}\n\n";
      }
      itemDone(index, out);
    }
    open_tools_.clear();
  }

  void closeAll(std::string& out) {
    closeCurrent(out);
    closeTools(out);
  }

  void closeStream(std::string& out) {
    ensureStarted(out);
    closeAll(out);
    auto reason = incompleteReason(finish_);
    if (!reason.empty()) {
      for (auto& it : items_) {
        if (it.kind == OutItem::Kind::Message) it.status = "incomplete";
      }
      responseEvent("response.incomplete", "incomplete", out);
    } else {
      responseEvent("response.completed", "completed", out);
    }
    ended_ = true;
  }

  void writeError(const ApiError& err, std::string& out) {
    // Items still open are reported as they are, incomplete; no done events for them.
    for (auto& it : items_) {
      if (it.open) it.status = "incomplete";
    }
    for (auto& [toolIndex, tool] : tools_) {
      auto& it = items_[static_cast<std::size_t>(tool.item)];
      if (it.open) it.text = it.kind == OutItem::Kind::FunctionCall ? tool.raw : customInputFromArguments(tool.raw);
    }
    begin("error", out);
    out += ",\"code\":";
    detail::appendJsonString(out, errorCodeFor(err));
    out += ",\"message\":";
    detail::appendJsonString(out, err.message);
    out += ",\"param\":";
    if (err.param.empty()) {
      out += "null";
    } else {
      detail::appendJsonString(out, err.param);
    }
    out += "}\n\n";
    responseEvent("response.failed", "failed", out, &err);
    ended_ = true;
  }

  ResponsesStreamOptions opts_;
  std::int64_t seq_ = 0;
  bool started_ = false;
  bool ended_ = false;
  std::string base_, id_, model_;
  std::vector<OutItem> items_;
  int current_ = -1;  // the open message / reasoning item
  std::unordered_map<int, ToolState> tools_;
  std::vector<int> open_tools_;
  FinishReason finish_ = FinishReason::Unset;
  Usage usage_;
};

}  // namespace

// ---- public API -----------------------------------------------------------------------------

std::optional<ApiError> decodeResponsesRequest(std::string_view body, Request& out, ResponsesEcho* echo) {
  json::value root;
  SLUICE_PROVIDERS_TRY(detail::parseJson(body, root, "request body"));
  if (!root.is_object()) return ApiError::invalid("", "request body must be a JSON object");
  RequestDecoder d(out, echo);
  return d.decode(root.as_object());
}

void encodeResponsesResponse(const Response& res, std::string& out, const ResponsesEcho* echo) {
  auto base = idBase(res.id);
  std::vector<OutItem> items;
  auto reason = incompleteReason(res.finish);
  for (const auto& p : res.content) {
    switch (p.kind) {
      case Part::Kind::Text:
        if (p.text.empty()) break;
        if (!items.empty() && items.back().kind == OutItem::Kind::Message) {
          items.back().text += p.text;
        } else {
          OutItem it;
          it.kind = OutItem::Kind::Message;
          it.id = itemId("msg", base, items.size());
          it.text = p.text;
          it.status = reason.empty() ? "completed" : "incomplete";
          items.push_back(std::move(it));
        }
        break;
      case Part::Kind::Reasoning:
      case Part::Kind::RedactedReasoning: {
        OutItem it;
        it.kind = OutItem::Kind::Reasoning;
        it.id = itemId("rs", base, items.size());
        if (p.kind == Part::Kind::Reasoning) {
          it.text = p.text;
          if (!p.signature.empty()) it.encrypted = std::string(kSignaturePrefix) + p.signature;
        } else {
          it.encrypted = std::string(kRedactedPrefix) + p.data;
        }
        items.push_back(std::move(it));
        break;
      }
      case Part::Kind::ToolCall: {
        OutItem it;
        nameCall(it, p.name, echo);
        const bool custom = it.kind == OutItem::Kind::CustomToolCall;
        it.id = itemId(custom ? "ctc" : "fc", base, items.size());
        it.call_id = p.id;
        it.text = custom ? customInputFromArguments(p.arguments) : (p.arguments.empty() ? "{}" : p.arguments);
        items.push_back(std::move(it));
        break;
      }
      default:
        break;  // images / tool results never appear in a response
    }
  }
  std::string id = "resp_" + base;
  ResponseHead h;
  h.id = id;
  h.created = res.created ? res.created : static_cast<std::int64_t>(std::time(nullptr));
  h.status = reason.empty() ? "completed" : "incomplete";
  h.incomplete_reason = reason;
  h.model = res.model;
  h.usage = &res.usage;
  h.echo = echo;
  out.clear();
  appendResponse(out, h, items);
}

void encodeResponsesError(const ApiError& err, std::string& out) {
  encodeChatError(err, out);
}

ApiError decodeResponsesError(int status, std::string_view body) {
  ApiError err = decodeChatError(status, body);
  // ChatGPT's Codex endpoint refuses a request with {"detail":"..."}.
  boost::system::error_code ec;
  const json::value root = sluice::parseJson(body, ec);
  if (!ec && root.is_object() && !root.as_object().contains("error")) {
    if (const auto said = detail::asStr(root.as_object().if_contains("detail")); !said.empty())
      err.message = std::string(said);
  }
  return err;
}

std::unique_ptr<StreamEncoder> makeResponsesStreamEncoder(ResponsesStreamOptions opts) {
  return std::make_unique<ResponsesStreamEncoder>(std::move(opts));
}

}  // namespace sluice::providers::openai
