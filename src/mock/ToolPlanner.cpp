#include "mock/ToolPlanner.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/JsonText.hpp"

namespace sluice::mock {

namespace json = boost::json;

namespace {

constexpr int kMaxSchemaDepth = 16;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool wordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Position of the first whole-word occurrence of `needle` in `hay`, or npos.
std::size_t findWord(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return std::string_view::npos;
  for (std::size_t p = hay.find(needle); p != std::string_view::npos; p = hay.find(needle, p + 1)) {
    const bool left = p == 0 || !wordChar(hay[p - 1]);
    const std::size_t e = p + needle.size();
    const bool right = e >= hay.size() || !wordChar(hay[e]);
    if (left && right) return p;
  }
  return std::string_view::npos;
}

std::string spaced(std::string_view name) {
  std::string out = lower(name);
  for (auto& c : out)
    if (c == '_' || c == '-' || c == '.') c = ' ';
  return out;
}

std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (wordChar(c) || c == '-') {
      cur.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// Tools named in the text, in the order named.
std::vector<const ToolSpec*> namedTools(const std::vector<const ToolSpec*>& tools, std::string_view text) {
  const std::string t = lower(text);
  std::vector<std::pair<std::size_t, const ToolSpec*>> hits;
  for (const auto* tool : tools) {
    std::size_t at = findWord(t, lower(tool->name));
    const std::string sp = spaced(tool->name);
    if (sp != lower(tool->name) && sp.find(' ') != std::string::npos) at = std::min(at, findWord(t, sp));
    if (at != std::string_view::npos) hits.emplace_back(at, tool);
  }
  std::stable_sort(hits.begin(), hits.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const ToolSpec*> out;
  out.reserve(hits.size());
  for (const auto& h : hits) out.push_back(h.second);
  return out;
}

// "use a tool", "call the weather tool", "invoke any function": the tool asked for, else null.
const ToolSpec* askedTool(const std::vector<const ToolSpec*>& tools, std::string_view text) {
  static const std::vector<std::string_view> kVerbs = {"use", "call", "invoke", "run", "try", "using", "execute"};
  static const std::vector<std::string_view> kFiller = {"a",  "an",   "the", "any",  "your", "one",
                                                        "of", "some", "my",  "that", "this", "its"};
  const auto w = words(text);
  for (std::size_t i = 0; i < w.size(); ++i) {
    const std::string& n = w[i];
    if (!(n.starts_with("tool") || n.starts_with("function"))) continue;
    for (std::size_t back = 1; back <= 5 && back <= i; ++back) {
      const std::size_t v = i - back;
      if (std::find(kVerbs.begin(), kVerbs.end(), w[v]) == kVerbs.end()) continue;
      std::vector<std::string> x;
      for (std::size_t j = v + 1; j < i; ++j)
        if (std::find(kFiller.begin(), kFiller.end(), w[j]) == kFiller.end()) x.push_back(w[j]);
      if (!x.empty()) {
        for (const auto* tool : tools) {
          const std::string sp = spaced(tool->name);
          if (std::all_of(x.begin(), x.end(),
                          [&](const std::string& part) { return sp.find(part) != std::string::npos; }))
            return tool;
        }
      }
      return tools.front();
    }
  }
  return nullptr;
}

const json::value* resolveRef(const json::value& root, std::string_view ref) {
  if (!ref.starts_with("#")) return nullptr;
  ref.remove_prefix(1);
  const json::value* cur = &root;
  while (!ref.empty()) {
    if (ref.front() != '/') return nullptr;
    ref.remove_prefix(1);
    const std::size_t slash = ref.find('/');
    std::string token(ref.substr(0, slash));
    ref = slash == std::string_view::npos ? std::string_view() : ref.substr(slash);
    for (std::size_t p; (p = token.find("~1")) != std::string::npos;) token.replace(p, 2, "/");
    for (std::size_t p; (p = token.find("~0")) != std::string::npos;) token.replace(p, 2, "~");
    if (const auto* o = cur->if_object()) {
      cur = o->if_contains(token);
    } else if (const auto* a = cur->if_array()) {
      char* end = nullptr;
      const unsigned long i = std::strtoul(token.c_str(), &end, 10);
      cur = (end && *end == 0 && i < a->size()) ? &(*a)[i] : nullptr;
    } else {
      cur = nullptr;
    }
    if (!cur) return nullptr;
  }
  return cur;
}

json::value example(const json::value& s, const json::value& root, int depth);

json::value exampleNumber(const json::object& o, bool integer) {
  double v = 1;
  auto num = [&](std::string_view k) -> std::optional<double> {
    const auto* x = o.if_contains(k);
    if (!x) return std::nullopt;
    if (x->is_int64()) return static_cast<double>(x->get_int64());
    if (x->is_uint64()) return static_cast<double>(x->get_uint64());
    if (x->is_double()) return x->get_double();
    return std::nullopt;
  };
  if (auto mn = num("minimum"); mn && v < *mn) v = integer ? std::ceil(*mn) : *mn;
  if (auto mn = num("exclusiveMinimum"); mn && v <= *mn) v = integer ? std::floor(*mn) + 1 : *mn + 1;
  if (auto mx = num("maximum"); mx && v > *mx) v = integer ? std::floor(*mx) : *mx;
  if (auto mx = num("exclusiveMaximum"); mx && v >= *mx) v = integer ? std::ceil(*mx) - 1 : *mx - 1;
  if (std::floor(v) == v && std::fabs(v) < 9e15) return static_cast<std::int64_t>(v);
  return v;
}

json::value exampleObject(const json::object& o, const json::value& root, int depth) {
  json::object out;
  const auto* props = o.if_contains("properties");
  const auto* req = o.if_contains("required");
  if (req && req->is_array()) {
    for (const auto& r : req->get_array()) {
      if (!r.is_string()) continue;
      const json::value* ps = (props && props->is_object()) ? props->get_object().if_contains(r.get_string()) : nullptr;
      out[r.get_string()] = ps ? example(*ps, root, depth + 1) : json::value("example");
    }
  }
  return out;
}

json::value example(const json::value& s, const json::value& root, int depth) {
  if (depth > kMaxSchemaDepth) return nullptr;
  const auto* o = s.if_object();
  if (!o) return "example";
  if (const auto* ref = o->if_contains("$ref"); ref && ref->is_string()) {
    if (const auto* target = resolveRef(root, ref->get_string())) return example(*target, root, depth + 1);
    return "example";
  }
  if (const auto* e = o->if_contains("enum"); e && e->is_array() && !e->get_array().empty()) return e->get_array()[0];
  if (const auto* c = o->if_contains("const")) return *c;
  for (std::string_view k : {"anyOf", "oneOf"}) {
    if (const auto* alts = o->if_contains(k); alts && alts->is_array() && !alts->get_array().empty()) {
      for (const auto& alt : alts->get_array()) {  // the first alternative that is not just null
        const auto* ao = alt.if_object();
        const auto* t = ao ? ao->if_contains("type") : nullptr;
        if (t && t->is_string() && lower(t->get_string()) == "null") continue;
        return example(alt, root, depth + 1);
      }
      return nullptr;
    }
  }
  if (const auto* all = o->if_contains("allOf"); all && all->is_array() && !all->get_array().empty()) {
    json::object merged;
    bool objects = true;
    for (const auto& part : all->get_array()) {
      auto v = example(part, root, depth + 1);
      if (!v.is_object()) {
        objects = false;
        break;
      }
      for (auto& kv : v.get_object()) merged[kv.key()] = kv.value();
    }
    if (objects) return merged;
    return example(all->get_array()[0], root, depth + 1);
  }

  std::string type;
  if (const auto* t = o->if_contains("type")) {
    if (t->is_string()) {
      type = lower(t->get_string());
    } else if (t->is_array()) {
      for (const auto& x : t->get_array())
        if (x.is_string() && lower(x.get_string()) != "null") {
          type = lower(x.get_string());
          break;
        }
      if (type.empty()) type = "null";
    }
  }
  if (type.empty()) {
    if (o->contains("properties") || o->contains("required"))
      type = "object";
    else if (o->contains("items"))
      type = "array";
  }
  if (type == "object") return exampleObject(*o, root, depth);
  if (type == "array") {
    json::array a;
    const json::value* items = o->if_contains("items");
    if (items && items->is_array()) items = items->get_array().empty() ? nullptr : &items->get_array()[0];
    std::size_t n = 1;
    if (const auto* mi = o->if_contains("minItems"); mi && mi->is_int64() && mi->get_int64() > 1)
      n = static_cast<std::size_t>(std::min<std::int64_t>(mi->get_int64(), 16));
    for (std::size_t i = 0; i < n; ++i) a.push_back(items ? example(*items, root, depth + 1) : json::value("example"));
    return a;
  }
  if (type == "integer") return exampleNumber(*o, true);
  if (type == "number") return exampleNumber(*o, false);
  if (type == "boolean") return true;
  if (type == "null") return nullptr;
  if (const auto* f = o->if_contains("format"); f && f->is_string() && (type == "string" || type.empty())) {
    const std::string_view fmt = f->get_string();
    if (fmt == "date-time") return "2024-01-01T00:00:00Z";
    if (fmt == "date") return "2024-01-01";
    if (fmt == "time") return "00:00:00";
    if (fmt == "email") return "user@example.com";
    if (fmt == "uri" || fmt == "url") return "https://example.com";
    if (fmt == "uuid") return "00000000-0000-4000-8000-000000000000";
  }
  return "example";
}

}  // namespace

json::value exampleValue(const json::value& schema) {
  return example(schema, schema, 0);
}

std::string exampleArguments(const json::value* schema) {
  if (!schema || !schema->is_object()) return "{}";
  json::value v = exampleValue(*schema);
  if (!v.is_object()) return "{}";
  return json::serialize(v);
}

std::string contentText(const json::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  if (v.is_null()) return {};
  if (const auto* a = v.if_array()) {
    std::string out;
    bool any = false;
    for (const auto& part : *a) {
      if (part.is_string()) {
        out += part.get_string();
        any = true;
      } else if (const auto* po = part.if_object()) {
        if (const auto* t = po->if_contains("text"); t && t->is_string()) {
          out += t->get_string();
          any = true;
        } else if (const auto* c = po->if_contains("content")) {  // nested (Anthropic tool_result)
          out += contentText(*c);
          any = true;
        }
      }
    }
    return any ? out : json::serialize(v);
  }
  if (const auto* o = v.if_object())
    if (const auto* t = o->if_contains("text"); t && t->is_string()) return std::string(t->get_string());
  return json::serialize(v);
}

namespace {
void replaceStrings(json::value& v, const std::string& with) {
  if (v.is_string()) {
    v = with;
  } else if (auto* o = v.if_object()) {
    for (auto& kv : *o) replaceStrings(kv.value(), with);
  } else if (auto* a = v.if_array()) {
    for (auto& x : *a) replaceStrings(x, with);
  }
}
}  // namespace

void echoUserText(ToolDecision& d) {
  if (d.calls.empty()) {
    if (!d.reply) d.reply = d.user_text;
    return;
  }
  for (auto& c : d.calls) {
    boost::system::error_code ec;
    json::value v = sluice::parseJson(c.arguments, ec);
    if (ec) continue;
    replaceStrings(v, d.user_text);
    c.arguments = json::serialize(v);
  }
}

namespace {
// {"type":"object","properties":{"input":{"type":"string",...}},"required":["input"]}: how a
// gateway offers a free-form (custom) tool to a provider that has none.
bool freeFormSchema(const json::value* schema) {
  const auto* o = schema ? schema->if_object() : nullptr;
  if (!o) return false;
  const auto* props = o->if_contains("properties");
  const auto* req = o->if_contains("required");
  if (!props || !props->is_object() || props->as_object().size() != 1) return false;
  const auto* in = props->as_object().if_contains("input");
  if (!in || !in->is_object()) return false;
  const auto* type = in->as_object().if_contains("type");
  if (!type || !type->is_string() || type->as_string() != "string") return false;
  return req && req->is_array() && req->as_array().size() == 1 && req->as_array()[0] == "input";
}
}  // namespace

std::string customInput(std::string_view last_user_text) {
  auto colon = last_user_text.find(": ");
  if (colon == std::string_view::npos || colon + 2 >= last_user_text.size()) return "example";
  return std::string(last_user_text.substr(colon + 2));
}

bool asksToContinue(std::string_view user_text) {
  return user_text.find("cut off") != std::string_view::npos && user_text.find("Continue") != std::string_view::npos;
}

std::string partialAnswer(std::size_t turns, std::size_t last_user, std::string_view last_user_text,
                          const std::function<std::string(std::size_t)>& assistantText) {
  if (turns == 0) return {};
  std::string partial = assistantText(turns - 1);
  if (partial.empty() && last_user + 1 == turns && last_user > 0 && asksToContinue(last_user_text))
    partial = assistantText(last_user - 1);
  return partial;
}

ToolDecision decideTools(const ToolRequest& req) {
  ToolDecision d;
  d.user_text = req.last_user_text;
  if (!req.partial_answer.empty() && req.tool_results.empty()) {
    d.resume = req.partial_answer;
    return d;
  }
  if (!req.tool_results.empty()) {
    std::string joined;
    for (const auto& r : req.tool_results) {
      if (!joined.empty()) joined += "\n";
      joined += r;
    }
    std::string reply = "The tool returned: ";
    reply += utf8Prefix(joined, kToolResultEcho);
    d.reply = std::move(reply);
    return d;
  }
  if (req.tools.empty() || req.mode == ToolChoiceMode::None) return d;

  std::vector<const ToolSpec*> offered;
  for (const auto& t : req.tools)
    if (req.allowed.empty() || std::find(req.allowed.begin(), req.allowed.end(), t.name) != req.allowed.end())
      offered.push_back(&t);
  if (offered.empty()) return d;

  std::vector<const ToolSpec*> picked;
  if (req.mode == ToolChoiceMode::Named) {
    auto it =
        std::find_if(offered.begin(), offered.end(), [&](const ToolSpec* t) { return t->name == req.forced_name; });
    picked.push_back(it != offered.end() ? *it : offered.front());
  } else {
    picked = namedTools(offered, req.last_user_text);
    if (picked.empty())
      if (const auto* t = askedTool(offered, req.last_user_text)) picked.push_back(t);
    if (picked.empty() && req.mode == ToolChoiceMode::Required) picked.push_back(offered.front());
  }
  if (!req.parallel && picked.size() > 1) picked.resize(1);
  for (const auto* t : picked) {
    ToolCall c;
    c.name = t->name;
    c.ns = t->ns;
    c.custom = t->custom;
    if (t->custom) {
      c.arguments = customInput(req.last_user_text);
    } else if (freeFormSchema(t->schema)) {
      json::object args;
      args["input"] = customInput(req.last_user_text);
      c.arguments = json::serialize(args);
    } else {
      c.arguments = exampleArguments(t->schema);
    }
    c.id_token = randomId("", 24);
    d.calls.push_back(std::move(c));
  }
  return d;
}

Generation planAnswer(const ToolDecision& d, std::size_t chunks, std::optional<std::int64_t> max_tokens,
                      const std::vector<std::string>& stop, int choices) {
  if (!d.calls.empty()) return planToolCalls(d.calls, chunks, choices);
  if (d.resume) return planContinuation(*d.resume, chunks, max_tokens, stop, choices);
  if (d.reply) return planReply(*d.reply, chunks, max_tokens, stop, choices);
  return planGeneration(chunks, max_tokens, stop, choices);
}

}  // namespace sluice::mock
