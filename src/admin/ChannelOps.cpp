#include "admin/ChannelOps.hpp"

#include "cloud/OAuthToken.hpp"

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <cctype>

#include "admin/Fields.hpp"
#include "cloud/Subscription.hpp"
#include "config/Scalars.hpp"
#include "core/JsonText.hpp"
#include "core/SecretBox.hpp"

namespace sluice::admin {
namespace json = boost::json;

namespace {

using config::hasControlChar;
using config::validChannelName;
using config::validHeaderName;

constexpr std::size_t kMaxUpstreamSecret = 8192;
constexpr std::size_t kMaxEntraId = 256;  // a tenant domain is at most 253
constexpr std::size_t kMaxTokenUrl = 2048;
constexpr config::ChannelType kAllTypes[] = {config::ChannelType::OpenAI,           config::ChannelType::Anthropic,
                                             config::ChannelType::Gemini,           config::ChannelType::Azure,
                                             config::ChannelType::OpenAICompatible, config::ChannelType::Mock,
                                             config::ChannelType::Bedrock,          config::ChannelType::Vertex};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

json::object parsedObject(const std::string& text) {
  boost::system::error_code ec;
  json::value v = sluice::parseJson(text, ec);
  return !ec && v.is_object() ? std::move(v.as_object()) : json::object{};
}

std::string baseUrlField(const json::value& v) {
  if (!v.is_string())
    throw FieldError("base_url", "base_url must be an http:// or https:// URL string; got " + describeJson(v));
  std::string url(v.get_string());
  const auto parsed = boost::urls::parse_uri(url);
  std::string why;
  if (!parsed) {
    why = "not a valid URL";
  } else if (parsed->scheme_id() != boost::urls::scheme::http && parsed->scheme_id() != boost::urls::scheme::https) {
    why = "the scheme must be http or https";
  } else if (!parsed->has_authority() || parsed->encoded_host().empty()) {
    why = "missing host";
  } else if (parsed->has_fragment()) {
    why = "a fragment (#...) is not allowed";
  }
  if (!why.empty())
    throw FieldError("base_url", fmt::format("base_url must be an http:// or https:// URL (the API root as the "
                                             "provider's SDK takes it), got {}: {}",
                                             describeJson(v), why));
  // As the YAML loader does: the proxy appends paths, so a trailing '/' would double it.
  if (!parsed->has_query()) {
    while (!url.empty() && url.back() == '/') url.pop_back();
  }
  return url;
}

// A token endpoint (an azure channel's Entra ID one, a subscription's OAuth one): https, or http
// only on a loopback host (a test's token service), as auth.oidc's issuer; no credentials in it.
// The client secret or the refresh token goes in the body.
std::string tokenUrlField(const json::value& v, std::string_view whose) {
  if (!v.is_string()) throw FieldError("token_url", "token_url must be an https:// URL string; got " + describeJson(v));
  std::string url(v.get_string());
  std::string why;
  if (url.size() > kMaxTokenUrl) {
    why = fmt::format("longer than {} bytes", kMaxTokenUrl);
  } else if (hasControlChar(url)) {
    why = "it contains a control character";
  } else if (const auto parsed = boost::urls::parse_uri(url); !parsed) {
    why = "not a valid URL";
  } else if (parsed->has_userinfo()) {
    why = "credentials in the URL are not allowed";
  } else {
    why = config::credentialUrlProblem(*parsed);
  }
  // The message does not repeat the URL: it may hold what was meant to be a credential.
  if (!why.empty())
    throw FieldError("token_url", fmt::format("token_url must be the {} token endpoint's https:// URL: {}", whose, why));
  return url;
}

// tenant_id and client_id: short printable identifiers; the tenant a GUID or a domain.
std::string entraIdField(const json::value& v, std::string_view field) {
  const bool tenant = field == "tenant_id";
  const bool ok =
      v.is_string() && v.get_string().size() <= kMaxEntraId &&
      (tenant ? config::validEntraTenant(v.get_string()) : !v.get_string().empty() && !hasControlChar(v.get_string()));
  if (!ok)
    throw FieldError(std::string(field),
                     fmt::format("{} must be {}; got {}", field,
                                 tenant ? "an Entra tenant: a GUID or a domain such as contoso.onmicrosoft.com"
                                        : "the Entra application (client) id, a non-empty string",
                                 describeJson(v)));
  return std::string(v.get_string());
}

json::object headersField(const json::value& v, const json::object& stored) {
  if (!v.is_object())
    throw FieldError("headers", "headers must be an object of header names to string values; got " + describeJson(v));
  json::object out;
  std::vector<std::string> seen;
  for (const auto& [name, value] : v.get_object()) {
    const std::string param = fmt::format("headers.{}", std::string_view(name));
    if (!validHeaderName(name))
      throw FieldError(param, fmt::format("\"{}\" is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)",
                                          std::string_view(name)));
    std::string lowered = lower(name);
    if (std::find(seen.begin(), seen.end(), lowered) != seen.end())
      throw FieldError(
          param, fmt::format("duplicate header \"{}\" (header names are case-insensitive)", std::string_view(name)));
    seen.push_back(std::move(lowered));
    if (!value.is_string() || hasControlChar(value.get_string()))
      throw FieldError(
          param, fmt::format("{} must be a string without control characters; got {}", param, describeJson(value)));
    const auto* old = stored.if_contains(name);
    const bool echoed = old && old->is_string() && !old->get_string().empty() &&
                        config::maskSecret(old->get_string()) == value.get_string();
    out[name] = echoed ? *old : value;
  }
  return out;
}

json::object modelMapField(const json::value& v) {
  if (!v.is_object())
    throw FieldError("model_map", "model_map must be an object of client model names to upstream model names; got " +
                                      describeJson(v));
  for (const auto& [from, to] : v.get_object()) {
    const std::string param = fmt::format("model_map.{}", std::string_view(from));
    if (from.empty() || hasControlChar(from))
      throw FieldError("model_map", "model_map has an empty or invalid model name");
    if (!to.is_string() || to.get_string().empty() || hasControlChar(to.get_string()))
      throw FieldError(param, fmt::format("{} must be a non-empty model name; got {}", param, describeJson(to)));
  }
  return v.get_object();
}

std::string typeNames() {
  std::string out;
  for (auto t : kAllTypes) {
    if (!out.empty()) out += ", ";
    out += config::channelTypeName(t);
  }
  return out;
}

json::object maskedHeaders(const json::object& headers) {
  json::object out;
  for (const auto& [k, v] : headers) out[k] = v.is_string() ? json::value(config::maskSecret(v.get_string())) : v;
  return out;
}

// A sealed client_secret as config channels show theirs: masked, "" when there is none, and
// "***" when this process cannot open it.
std::string maskedSealed(const json::object& settings, const SecretBox* box) {
  const auto* v = settings.if_contains("client_secret");
  if (!v || !v->is_string()) return {};
  const auto plain = box ? box->open(v->get_string()) : std::nullopt;
  return plain ? config::maskSecret(*plain) : std::string("***");
}

}  // namespace

void applyChannelFields(store::Channel& ch, const json::object& body, bool creating, const SecretBox* box) {
  rejectUnknownFields(
      body, {"name",    "type",      "base_url",    "models",       "priority",     "weight",         "headers",
             "enabled", "model_map", "api_version", "rpm",          "tpm",          "max_concurrent", "key_rpm",
             "key_tpm", "screening", "cache",       "cache_ttl_ms", "region",       "subscription",   "token_url",
             "project", "location",  "tenant_id",   "client_id",    "client_secret"},
      {"id", "source", "keys", "created_at_ms", "updated_at_ms"});
  if (creating) {
    for (const char* required : {"name", "type", "base_url", "models"}) {
      if (!body.contains(required))
        throw FieldError(required,
                         fmt::format("{} is required (a channel needs name, type, base_url and models)", required));
    }
  }
  if (const auto* v = body.if_contains("name")) {
    if (!v->is_string() || !validChannelName(v->get_string()))
      throw FieldError("name", fmt::format("name {} is not a valid channel name: use 1 to 64 letters, digits, '_', "
                                           "'.' or '-' (it prefixes models as CHANNEL/MODEL)",
                                           describeJson(*v)));
    ch.name = v->get_string();
  }
  if (const auto* v = body.if_contains("type")) {
    const auto type = v->is_string() ? config::parseChannelType(v->get_string()) : std::nullopt;
    if (!type)
      throw FieldError("type", fmt::format("unknown channel type {}; valid types: {}", describeJson(*v), typeNames()));
    ch.type = config::channelTypeName(*type);
  }
  if (const auto* v = body.if_contains("base_url")) ch.base_url = baseUrlField(*v);
  if (const auto* v = body.if_contains("models")) ch.models = nameListField(*v, "models", false);
  if (const auto* v = body.if_contains("priority")) ch.priority = integerField(*v, "priority", -1'000'000, 1'000'000);
  if (const auto* v = body.if_contains("weight")) ch.weight = integerField(*v, "weight", 0, 1'000'000);
  if (const auto* v = body.if_contains("headers"))
    ch.headers = json::serialize(headersField(*v, parsedObject(ch.headers)));
  if (const auto* v = body.if_contains("enabled")) {
    if (!v->is_bool()) throw FieldError("enabled", "enabled must be true or false; got " + describeJson(*v));
    ch.enabled = v->get_bool();
  }
  json::object settings = parsedObject(ch.settings);
  auto set = [&settings](std::string_view name, json::value v) {
    if (v.is_null())
      settings.erase(name);
    else
      settings[name] = std::move(v);
  };
  if (const auto* v = body.if_contains("model_map"))
    set("model_map", v->is_null() ? json::value() : json::value(modelMapField(*v)));
  if (const auto* v = body.if_contains("api_version"))
    set("api_version", v->is_null() ? json::value() : json::value(textField(*v, "api_version", 1, 64)));
  if (const auto* v = body.if_contains("region")) {
    if (!v->is_null() && ch.type != config::channelTypeName(config::ChannelType::Bedrock))
      throw FieldError("region", "only a bedrock channel takes a region");
    if (!v->is_null() && (!v->is_string() || !config::validAwsRegion(v->get_string())))
      throw FieldError("region", "region must be an AWS region such as us-east-1; got " + describeJson(*v));
    set("region", v->is_null() ? json::value() : *v);
  }
  if (const auto* v = body.if_contains("subscription")) {
    const auto kind = v->is_string() ? cloud::parseSubscriptionKind(v->get_string()) : std::nullopt;
    if (!v->is_null() && !kind)
      throw FieldError("subscription", "subscription must be \"claude\" or \"chatgpt\" (or null); got " + describeJson(*v));
    set("subscription", v->is_null() ? json::value() : *v);
  }
  const bool azure = ch.type == config::channelTypeName(config::ChannelType::Azure);
  if (const auto* v = body.if_contains("token_url")) {
    if (v->is_null()) {
      set("token_url", json::value());
    } else {
      set("token_url", json::value(tokenUrlField(*v, azure ? "Entra ID" : "subscription's OAuth")));
    }
  }
  // Entra ID (an azure channel): the client secret is sealed as upstream keys are, and a client
  // that sends back the masked form it read keeps the stored secret.
  for (const char* field : {"tenant_id", "client_id"}) {
    if (const auto* v = body.if_contains(field))
      set(field, v->is_null() ? json::value() : json::value(entraIdField(*v, field)));
  }
  if (const auto* v = body.if_contains("client_secret")) {
    if (v->is_null()) {
      set("client_secret", json::value());
    } else {
      // The message never quotes the value: it is a secret.
      std::string why;
      if (!v->is_string())
        why = "got " + describeJson(*v);
      else if (v->get_string().empty())
        why = "it is empty";
      else if (v->get_string().size() > kMaxUpstreamSecret)
        why = fmt::format("it is longer than {} characters", kMaxUpstreamSecret);
      else if (hasControlChar(v->get_string()))
        why = "it contains a control character (stray newline?)";
      if (!why.empty())
        throw FieldError("client_secret", "client_secret must be the Entra application's secret as a string; " + why);
      const auto* old = settings.if_contains("client_secret");
      const auto was = old && old->is_string() && box ? box->open(old->get_string()) : std::nullopt;
      if (!was || config::maskSecret(*was) != v->get_string()) {
        if (!box)
          throw FieldError("client_secret",
                           "client_secret is stored encrypted and no secret key is configured: set SLUICE_SECRET_KEY "
                           "(or store.secret_key in the config file)");
        set("client_secret", json::value(box->seal(v->get_string())));
      }
    }
  }
  // As the YAML loader: token_url without a subscription is Entra's, and Entra needs all three.
  const bool subscription = settings.contains("subscription");
  for (const char* field : {"tenant_id", "client_id", "client_secret", "token_url"}) {
    const bool token_url = std::string_view(field) == "token_url";
    if (!settings.contains(field) || (subscription && token_url)) continue;
    if (!azure)
      throw FieldError(field, token_url ? std::string("only a subscription channel or an azure channel with Entra ID "
                                                      "takes a token_url")
                                        : fmt::format("only an azure channel takes {} (Entra ID: tenant_id, "
                                                      "client_id, client_secret, token_url)",
                                                      field));
    const char* missing = !settings.contains("client_id")                                      ? "client_id"
                          : !settings.contains("client_secret")                                ? "client_secret"
                          : !settings.contains("tenant_id") && !settings.contains("token_url") ? "tenant_id"
                                                                                               : nullptr;
    if (missing)
      throw FieldError(missing, fmt::format("Entra ID needs tenant_id (or token_url), client_id and client_secret; "
                                            "{} is missing",
                                            missing));
    break;
  }
  if (const auto* sub = settings.if_contains("subscription"); sub && sub->is_string()) {
    const auto kind = cloud::parseSubscriptionKind(sub->get_string());
    const auto want = kind == cloud::SubscriptionKind::Claude ? config::ChannelType::Anthropic : config::ChannelType::OpenAI;
    if (ch.type != config::channelTypeName(want))
      throw FieldError("subscription", fmt::format("a {} subscription is a channel of type {}",
                                                   sub->get_string().c_str(), config::channelTypeName(want)));
  }
  for (const char* field : {"project", "location"}) {
    const auto* v = body.if_contains(field);
    if (!v) continue;
    if (!v->is_null() && ch.type != config::channelTypeName(config::ChannelType::Vertex))
      throw FieldError(field, fmt::format("only a vertex channel takes a {}", field));
    const bool project = std::string_view(field) == "project";
    if (!v->is_null() && (!v->is_string() || !(project ? config::validGcpProject(v->get_string())
                                                      : config::validGcpLocation(v->get_string()))))
      throw FieldError(field, fmt::format("{} must be a Google Cloud {} (lowercase letters, digits, '-'); got {}", field,
                                          project ? "project id" : "location such as us-central1", describeJson(*v)));
    set(field, v->is_null() ? json::value() : *v);
  }
  if (ch.type == config::channelTypeName(config::ChannelType::Vertex) &&
      (!settings.contains("project") || !settings.contains("location")))
    throw FieldError(settings.contains("project") ? "location" : "project",
                     "a vertex channel needs project and location (its model URLs name both)");
  for (const char* limit : {"rpm", "tpm", "max_concurrent", "key_rpm", "key_tpm"}) {
    if (const auto* v = body.if_contains(limit)) {
      const auto n = limitField(*v, limit);
      set(limit, n ? json::value(*n) : json::value());
    }
  }
  applyProtectOverrides(settings, body, "the gateway's");
  ch.settings = json::serialize(settings);
}

json::object channelJson(const store::Channel& ch, json::array keys, const SecretBox* box) {
  boost::system::error_code ec;
  json::value models = sluice::parseJson(ch.models, ec);
  if (ec) models = json::array{};
  const json::object settings = parsedObject(ch.settings);
  auto setting = [&settings](std::string_view name, const json::value& dflt) {
    const auto* v = settings.if_contains(name);
    return v ? *v : dflt;
  };
  return json::object{
      {"id", ch.id},
      {"name", ch.name},
      {"source", "store"},
      {"type", ch.type},
      {"base_url", ch.base_url},
      {"models", std::move(models)},
      {"priority", ch.priority},
      {"weight", ch.weight},
      {"headers", maskedHeaders(parsedObject(ch.headers))},
      {"enabled", ch.enabled},
      {"model_map", setting("model_map", json::object{})},
      {"api_version", setting("api_version", "")},
      {"region", setting("region", "")},
      {"subscription", setting("subscription", nullptr)},
      {"token_url", setting("token_url", nullptr)},
      {"project", setting("project", "")},
      {"location", setting("location", "")},
      {"tenant_id", setting("tenant_id", "")},
      {"client_id", setting("client_id", "")},
      {"client_secret", maskedSealed(settings, box)},
      {"rpm", setting("rpm", nullptr)},
      {"tpm", setting("tpm", nullptr)},
      {"max_concurrent", setting("max_concurrent", nullptr)},
      {"key_rpm", setting("key_rpm", nullptr)},
      {"key_tpm", setting("key_tpm", nullptr)},
      {"screening", setting("screening", nullptr)},
      {"cache", setting("cache", nullptr)},
      {"cache_ttl_ms", setting("cache_ttl_ms", nullptr)},
      {"keys", std::move(keys)},
      {"created_at_ms", ch.created_at_ms},
      {"updated_at_ms", ch.updated_at_ms},
  };
}

json::object configChannelJson(const config::ChannelConfig& ch) {
  auto limit = [](std::int64_t n) { return n > 0 ? json::value(n) : json::value(nullptr); };
  json::array models(ch.models.begin(), ch.models.end());
  json::object headers;
  for (const auto& [k, v] : ch.headers) headers[k] = config::maskSecret(v);
  json::object model_map;
  for (const auto& [k, v] : ch.model_map) model_map[k] = v;
  json::array keys;
  for (const auto& k : ch.keys)
    keys.push_back(json::object{
        {"masked", ch.type == config::ChannelType::Vertex ? cloud::serviceAccountLabel(k) : config::maskSecret(k)}});
  return json::object{
      {"id", nullptr},
      {"name", ch.name},
      {"source", "config"},
      {"type", config::channelTypeName(ch.type)},
      {"base_url", ch.base_url},
      {"models", std::move(models)},
      {"priority", ch.priority},
      {"weight", ch.weight},
      {"headers", std::move(headers)},
      {"enabled", true},
      {"model_map", std::move(model_map)},
      {"api_version", ch.api_version},
      {"region", ch.region},
      {"subscription", ch.subscription.empty() ? json::value(nullptr) : json::value(ch.subscription)},
      {"token_url", ch.token_url.empty() ? json::value(nullptr) : json::value(ch.token_url)},
      {"project", ch.project},
      {"location", ch.location},
      {"tenant_id", ch.tenant_id},
      {"client_id", ch.client_id},
      {"client_secret", config::maskSecret(ch.client_secret)},
      {"rpm", limit(ch.rpm)},
      {"tpm", limit(ch.tpm)},
      {"max_concurrent", limit(ch.max_concurrent)},
      {"key_rpm", limit(ch.key_rpm)},
      {"key_tpm", limit(ch.key_tpm)},
      {"screening", ch.screening ? json::value(config::screenActionName(*ch.screening)) : json::value(nullptr)},
      {"cache", ch.cache ? json::value(*ch.cache) : json::value(nullptr)},
      {"cache_ttl_ms", ch.cache_ttl ? json::value(ch.cache_ttl->count()) : json::value(nullptr)},
      {"keys", std::move(keys)},
  };
}

std::string upstreamSecretField(const json::value& v, std::string_view channel_type) {
  // The message never quotes the value: it is a provider key.
  std::string why;
  if (channel_type == config::channelTypeName(config::ChannelType::Vertex) && v.is_string() && !v.get_string().empty() &&
      v.get_string().size() <= kMaxUpstreamSecret) {
    try {
      return config::vertexKeyJson(std::string(v.get_string()), /*allow_path=*/false);
    } catch (const std::exception& e) {
      throw FieldError("secret", std::string("secret must be the service account's JSON key (the file's content); ") +
                                     e.what());
    }
  }
  if (!v.is_string())
    why = "got " + describeJson(v);
  else if (v.get_string().empty())
    why = "it is empty";
  else if (v.get_string().size() > kMaxUpstreamSecret)
    why = fmt::format("it is longer than {} characters", kMaxUpstreamSecret);
  else if (hasControlChar(v.get_string()))
    why = "it contains a control character (stray newline?)";
  if (!why.empty()) throw FieldError("secret", "secret must be the provider's API key as a string; " + why);
  return std::string(v.get_string());
}

std::string subscriptionSecretField(const json::value& v, std::string_view kind_name) {
  const auto kind = cloud::parseSubscriptionKind(kind_name).value_or(cloud::SubscriptionKind::Claude);
  // The credential file's JSON, as an object or as its text. The message never quotes it.
  std::string text;
  if (v.is_object())
    text = json::serialize(v);
  else if (v.is_string() && v.get_string().size() <= 4 * kMaxUpstreamSecret)
    text = std::string(v.get_string());
  else
    throw FieldError("secret", fmt::format("secret must be the {} credential file's JSON (an object or its text); got {}",
                                           kind_name, v.is_string() ? "a string too long" : describeJson(v)));
  std::string why;
  auto cred = cloud::parseCredential(kind, text, &why);
  if (!cred) throw FieldError("secret", fmt::format("secret is not a {} credential: {}", kind_name, why));
  std::string stored = cloud::serializeCredential(*cred);
  if (stored.size() > kMaxUpstreamSecret)
    throw FieldError("secret", fmt::format("secret is longer than {} characters", kMaxUpstreamSecret));
  return stored;
}

std::string channelSubscription(const store::Channel& ch) {
  const json::object settings = parsedObject(ch.settings);
  const auto* v = settings.if_contains("subscription");
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::string upstreamLabelField(const json::value& v) {
  return textField(v, "label", 0, 128);
}

json::object upstreamKeyJson(const store::UpstreamKey& k, const SecretBox* box) {
  json::value masked = nullptr;
  if (box) {
    if (auto plain = box->open(k.secret_encrypted))
      // JSON is a vertex service account (shown by its client_email) or a subscription's credential
      // file ({credential}); anything else is an API key.
      masked = plain->starts_with("{") && plain->find("\"client_email\"") != std::string::npos
                   ? cloud::serviceAccountLabel(*plain)
                   : config::maskSecret(*plain);
  }
  auto opt = [](const auto& o) { return o ? json::value(*o) : json::value(nullptr); };
  return json::object{
      {"id", k.id},
      {"channel_id", k.channel_id},
      {"label", k.label},
      {"masked", std::move(masked)},
      {"state", k.state == store::UpstreamKeyState::Active ? "active" : "disabled"},
      {"disabled_reason", k.disabled_reason},
      {"cooldown_until_ms", opt(k.cooldown_until_ms)},
      {"created_at_ms", k.created_at_ms},
      {"updated_at_ms", k.updated_at_ms},
  };
}

}  // namespace sluice::admin
