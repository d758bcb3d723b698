#include "cache/CacheKey.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <boost/json.hpp>
#include <cmath>
#include <initializer_list>

#include "core/JsonText.hpp"

namespace sluice::cache {

namespace json = boost::json;
using providers::Format;

namespace {

constexpr std::string_view kKeyVersion = "sluice-cache-v1";

const json::value* member(const json::object& o, std::string_view k) {
  const auto* v = o.if_contains(k);
  return v && !v->is_null() ? v : nullptr;
}
// The first present of two spellings (Gemini's camelCase and proto snake_case).
const json::value* member2(const json::object& o, std::string_view a, std::string_view b) {
  if (const auto* v = member(o, a)) return v;
  return member(o, b);
}
bool isTrue(const json::value* v) { return v && v->is_bool() && v->as_bool(); }
// A number above `limit` (any JSON number type); non-numbers are not.
bool numberAbove(const json::value* v, double limit) {
  if (!v) return false;
  if (v->is_int64()) return static_cast<double>(v->as_int64()) > limit;
  if (v->is_uint64()) return static_cast<double>(v->as_uint64()) > limit;
  if (v->is_double()) return v->as_double() > limit;
  return false;
}
bool numberIs(const json::value* v, double x) {
  if (!v) return false;
  if (v->is_int64()) return static_cast<double>(v->as_int64()) == x;
  if (v->is_uint64()) return static_cast<double>(v->as_uint64()) == x;
  if (v->is_double()) return v->as_double() == x;
  return false;
}
void erase(json::object& o, std::initializer_list<std::string_view> keys) {
  for (auto k : keys) o.erase(k);
}

// Writes v canonically: sorted members, no whitespace, normalized numbers.
void writeCanonical(const json::value& v, std::string& out) {
  switch (v.kind()) {
    case json::kind::null:
      out += "null";
      return;
    case json::kind::bool_:
      out += v.get_bool() ? "true" : "false";
      return;
    case json::kind::int64:
      out += std::to_string(v.get_int64());
      return;
    case json::kind::uint64:
      out += std::to_string(v.get_uint64());
      return;
    case json::kind::double_: {
      double d = v.get_double();
      constexpr double kExact = 9007199254740992.0;  // 2^53
      if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) <= kExact) {
        out += std::to_string(static_cast<std::int64_t>(d));
      } else {
        char buf[32];
        auto r = std::to_chars(buf, buf + sizeof buf, d);  // shortest round-trip form
        out.append(buf, r.ptr);
      }
      return;
    }
    case json::kind::string:
      appendJsonString(out, std::string_view(v.get_string().data(), v.get_string().size()));
      return;
    case json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& e : v.get_array()) {
        if (!first) out += ',';
        first = false;
        writeCanonical(e, out);
      }
      out += ']';
      return;
    }
    case json::kind::object: {
      const auto& o = v.get_object();
      std::vector<const json::key_value_pair*> members;
      members.reserve(o.size());
      for (const auto& kv : o) members.push_back(&kv);
      std::sort(members.begin(), members.end(), [](const auto* a, const auto* b) { return a->key() < b->key(); });
      out += '{';
      bool first = true;
      for (const auto* kv : members) {
        if (!first) out += ',';
        first = false;
        appendJsonString(out, std::string_view(kv->key().data(), kv->key().size()));
        out += ':';
        writeCanonical(kv->value(), out);
      }
      out += '}';
      return;
    }
  }
}

// Each returns a reason when the request is uncacheable, after removing what does not count.
std::string prepareChat(json::object& o) {
  if (numberAbove(member(o, "n"), 1)) return "n > 1 (a cache entry holds one answer)";
  if (isTrue(member(o, "logprobs")) || member(o, "top_logprobs")) return "logprobs requested (not replayable)";
  if (member(o, "audio")) return "audio output requested (not replayable)";
  if (const auto* m = member(o, "modalities"); m && m->is_array()) {
    for (const auto& x : m->as_array())
      if (x.is_string() && x.as_string() != "text") return "non-text output modality (not replayable)";
  }
  if (const auto* t = member(o, "tools"); t && t->is_array()) {
    for (const auto& tool : t->as_array()) {
      if (!tool.is_object()) continue;
      const auto* type = member(tool.as_object(), "type");
      if (type && !(type->is_string() && type->as_string() == "function"))
        return "a tool other than a function (server-side tool results are not replayable)";
    }
  }
  if (numberIs(member(o, "n"), 1)) o.erase("n");
  erase(o, {"stream", "stream_options", "user", "safety_identifier", "metadata", "store", "service_tier",
            "prompt_cache_key", "prompt_cache_retention"});
  return {};
}

std::string prepareResponses(json::object& o) {
  if (member(o, "previous_response_id")) return "previous_response_id (the answer depends on stored state)";
  if (member(o, "conversation")) return "conversation (the answer depends on stored state)";
  if (member(o, "prompt")) return "prompt template (the answer depends on stored state)";
  if (isTrue(member(o, "background"))) return "background request";
  if (member(o, "top_logprobs")) return "logprobs requested (not replayable)";
  if (const auto* t = member(o, "tools"); t && t->is_array()) {
    for (const auto& tool : t->as_array()) {
      if (!tool.is_object()) continue;
      const auto* type = member(tool.as_object(), "type");
      if (type && !(type->is_string() && (type->as_string() == "function" || type->as_string() == "custom")))
        return "a built-in tool (server-side tool results are not replayable)";
    }
  }
  erase(o, {"stream", "stream_options", "user", "safety_identifier", "metadata", "store", "service_tier",
            "prompt_cache_key", "prompt_cache_retention"});
  return {};
}

void eraseCacheControl(json::value* arr) {
  if (!arr || !arr->is_array()) return;
  for (auto& e : arr->as_array())
    if (e.is_object()) e.as_object().erase("cache_control");
}

std::string prepareMessages(json::object& o) {
  if (auto* t = o.if_contains("tools"); t && t->is_array()) {
    for (auto& tool : t->as_array()) {
      if (!tool.is_object()) continue;
      const auto* type = member(tool.as_object(), "type");
      if (type && !(type->is_string() && type->as_string() == "custom"))
        return "a server or built-in tool (its results are not replayable)";
    }
    eraseCacheControl(t);
  }
  eraseCacheControl(o.if_contains("system"));
  if (auto* ms = o.if_contains("messages"); ms && ms->is_array()) {
    for (auto& m : ms->as_array()) {
      if (!m.is_object()) continue;
      m.as_object().erase("cache_control");
      eraseCacheControl(m.as_object().if_contains("content"));
    }
  }
  erase(o, {"stream", "metadata", "service_tier"});
  return {};
}

std::string prepareGenerate(json::object& o, std::string_view path_model) {
  if (member2(o, "cachedContent", "cached_content")) return "cachedContent (the answer depends on stored state)";
  if (const auto* t = member(o, "tools"); t && t->is_array()) {
    for (const auto& tool : t->as_array()) {
      if (!tool.is_object()) continue;
      for (const auto& kv : tool.as_object())
        if (kv.key() != "functionDeclarations" && kv.key() != "function_declarations")
          return "a built-in tool (server-side tool results are not replayable)";
    }
  }
  for (std::string_view gcName : {"generationConfig", "generation_config"}) {
    auto* gcv = o.if_contains(gcName);
    if (!gcv || !gcv->is_object()) continue;
    auto& gc = gcv->as_object();
    const auto* cc = member2(gc, "candidateCount", "candidate_count");
    if (numberAbove(cc, 1)) return "candidateCount > 1 (a cache entry holds one answer)";
    if (numberIs(cc, 1)) erase(gc, {"candidateCount", "candidate_count"});
    if (isTrue(member2(gc, "responseLogprobs", "response_logprobs")) || member(gc, "logprobs"))
      return "logprobs requested (not replayable)";
    if (const auto* m = member2(gc, "responseModalities", "response_modalities"); m && m->is_array()) {
      for (const auto& x : m->as_array())
        if (x.is_string() && x.as_string() != "TEXT" && x.as_string() != "text")
          return "non-text output modality (not replayable)";
    }
  }
  o.erase("labels");
  o["model"] = path_model;  // the body has none: the URL names it
  return {};
}

std::string hexSha256(std::string_view a, std::string_view b) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 && EVP_DigestUpdate(ctx, a.data(), a.size()) == 1 &&
            EVP_DigestUpdate(ctx, b.data(), b.size()) == 1 && EVP_DigestFinal_ex(ctx, md, &len) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    hex += kHex[md[i] >> 4];
    hex += kHex[md[i] & 15];
  }
  return hex;
}

}  // namespace

std::string canonicalRequestText(Format client, std::string_view body, std::string_view path_model, std::string* why) {
  auto fail = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return std::string();
  };
  boost::system::error_code ec;
  json::value v = sluice::parseJson(body, ec);
  if (ec) return fail("the body is not valid JSON");
  if (!v.is_object()) return fail("the body is not a JSON object");
  auto& o = v.as_object();
  std::string reason;
  switch (client) {
    case Format::OpenAIChat:
      reason = prepareChat(o);
      break;
    case Format::OpenAIResponses:
      reason = prepareResponses(o);
      break;
    case Format::AnthropicMessages:
      reason = prepareMessages(o);
      break;
    case Format::GeminiGenerate:
      reason = prepareGenerate(o, path_model);
      break;
    case Format::BedrockConverse:  // never a client format
      reason = "not a client format";
      break;
  }
  if (!reason.empty()) return fail(std::move(reason));
  std::string out;
  out.reserve(body.size());
  writeCanonical(v, out);
  return out;
}

KeyResult makeCacheKey(Format client, std::string_view body, std::string_view ns, std::string_view path_model) {
  KeyResult r;
  std::string text = canonicalRequestText(client, body, path_model, &r.uncacheable);
  if (text.empty()) return r;
  // Length-prefixed so no namespace can run into the format or the body.
  std::string head;
  head.reserve(64 + ns.size());
  head.append(kKeyVersion).append("\n").append(std::to_string(ns.size())).append(":").append(ns);
  head.append("\n").append(providers::formatName(client)).append("\n");
  std::string hex = hexSha256(head, text);
  if (hex.empty()) {
    r.uncacheable = "SHA-256 unavailable";
    return r;
  }
  r.key = CacheKey{std::move(hex)};
  return r;
}

std::string namespaceFor(std::optional<std::int64_t> virtual_key_id, bool shared) {
  if (shared) return "shared";
  if (!virtual_key_id) return "master";
  return "vk:" + std::to_string(*virtual_key_id);
}

}  // namespace sluice::cache
