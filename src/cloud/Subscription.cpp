#include "cloud/Subscription.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>

#include "core/Ascii.hpp"
#include "core/JsonText.hpp"
#include "redact/Base64Url.hpp"

namespace sluice::cloud {

namespace {
namespace json = boost::json;

constexpr std::int64_t kCredMaxMs = std::int64_t{1} << 52;  // far beyond any real expiry

// A value that may go into a header as it is: printable ASCII, no space, bounded.
bool credHeaderSafe(std::string_view s) {
  return !s.empty() && s.size() <= 16384 && std::all_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u < 0x7f;
  });
}

const json::string* credString(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_string()) return nullptr;
  return &it->value().get_string();
}

const json::object* credObject(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_object()) return nullptr;
  return &it->value().get_object();
}

// A non-negative integer member (JSON number, or a string of digits), clamped; nullopt if absent or not one.
std::optional<std::int64_t> credInt(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end()) return std::nullopt;
  const json::value& v = it->value();
  if (v.is_int64()) return v.get_int64() < 0 ? std::nullopt : std::optional(std::min(v.get_int64(), kCredMaxMs));
  if (v.is_uint64()) return static_cast<std::int64_t>(std::min<std::uint64_t>(v.get_uint64(), kCredMaxMs));
  if (v.is_double()) {
    const double d = v.get_double();
    if (!std::isfinite(d) || d < 0) return std::nullopt;
    return d >= static_cast<double>(kCredMaxMs) ? kCredMaxMs : static_cast<std::int64_t>(d);
  }
  if (v.is_string()) {
    const auto& s = v.get_string();
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || p != s.data() + s.size() || n < 0) return std::nullopt;
    return std::min(n, kCredMaxMs);
  }
  return std::nullopt;
}

std::optional<json::object> credParseObject(std::string_view text) {
  boost::system::error_code ec;
  json::value v = parseJson(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.get_object());
}

// The `exp` claim (seconds) of a JWT-shaped access token, in ms; 0 when it has none.
std::int64_t jwtExpiryMs(std::string_view token) {
  const auto a = token.find('.');
  if (a == std::string_view::npos) return 0;
  const auto b = token.find('.', a + 1);
  if (b == std::string_view::npos) return 0;
  std::string_view payload = token.substr(a + 1, b - a - 1);
  while (!payload.empty() && payload.back() == '=') payload.remove_suffix(1);
  auto decoded = redact::detail::decodeB64Url(payload);
  if (!decoded) return 0;
  auto o = credParseObject(*decoded);
  if (!o) return 0;
  auto exp = credInt(*o, "exp");
  return exp && *exp > 0 && *exp < kCredMaxMs / 1000 ? *exp * 1000 : 0;
}

bool checkTokens(SubscriptionCredential& c, std::string* why) {
  auto fail = [&](const char* w) {
    if (why) *why = w;
    return false;
  };
  if (c.access_token.empty() && c.refresh_token.empty())
    return fail("it holds neither an access token nor a refresh token");
  if (!c.access_token.empty() && !credHeaderSafe(c.access_token))
    return fail("its access token holds characters a header cannot carry (spaces, control characters or non-ASCII)");
  if (!c.refresh_token.empty() && !credHeaderSafe(c.refresh_token))
    return fail("its refresh token holds characters a request cannot carry (spaces, control characters or non-ASCII)");
  if (!c.account_id.empty() && (!credHeaderSafe(c.account_id) || c.account_id.size() > 256))
    return fail("its account id holds characters a header cannot carry");
  return true;
}

}  // namespace

std::string_view subscriptionName(SubscriptionKind k) {
  switch (k) {
    case SubscriptionKind::Claude:
      return "claude";
    case SubscriptionKind::ChatGPT:
      return "chatgpt";
    case SubscriptionKind::None:
      break;
  }
  return "";
}

std::optional<SubscriptionKind> parseSubscriptionKind(std::string_view name) {
  if (name == "claude") return SubscriptionKind::Claude;
  if (name == "chatgpt") return SubscriptionKind::ChatGPT;
  return std::nullopt;
}

std::string_view defaultTokenUrl(SubscriptionKind k) {
  return k == SubscriptionKind::Claude ? "https://console.anthropic.com/v1/oauth/token"
                                       : "https://auth.openai.com/oauth/token";
}

std::string_view defaultSubscriptionBaseUrl(SubscriptionKind k) {
  return k == SubscriptionKind::Claude ? "https://api.anthropic.com" : "https://chatgpt.com/backend-api/codex";
}

std::string_view oauthClientId(SubscriptionKind k) {
  // The public clients of Claude Code and of the Codex CLI (PKCE clients: no secret).
  return k == SubscriptionKind::Claude ? "9d1c250a-e61b-44d9-88ed-5944d1962f5e" : "app_EMoamEEZ73f0CkXaXp7hrann";
}

std::optional<SubscriptionCredential> parseCredential(SubscriptionKind k, std::string_view text, std::string* why) {
  auto fail = [&](std::string w) {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  auto o = credParseObject(text);
  if (!o) return fail("a subscription credential is a JSON object (the CLI's credential file); this is not one");
  SubscriptionCredential c;
  auto take = [](const json::object& from, std::string_view key, std::string& to) {
    if (const json::string* s = credString(from, key)) to = std::string(*s);
  };
  if (credString(*o, "access_token") || credString(*o, "refresh_token")) {
    // The stored form (either kind).
    take(*o, "access_token", c.access_token);
    take(*o, "refresh_token", c.refresh_token);
    take(*o, "account_id", c.account_id);
    c.expires_at_ms = credInt(*o, "expires_at_ms").value_or(0);
    c.lifetime_ms = credInt(*o, "lifetime_ms").value_or(0);
  } else if (k == SubscriptionKind::Claude) {
    const json::object* oauth = credObject(*o, "claudeAiOauth");
    const json::object& from = oauth ? *oauth : *o;  // the inner object pasted alone works too
    if (!credString(from, "accessToken") && !credString(from, "refreshToken"))
      return fail(
          "it is not Claude Code's credential file: expected {\"claudeAiOauth\":{\"accessToken\",\"refreshToken\","
          "\"expiresAt\"}} (~/.claude/.credentials.json)");
    take(from, "accessToken", c.access_token);
    take(from, "refreshToken", c.refresh_token);
    c.expires_at_ms = credInt(from, "expiresAt").value_or(0);
  } else {
    const json::object* tokens = credObject(*o, "tokens");
    if (!tokens || (!credString(*tokens, "access_token") && !credString(*tokens, "refresh_token")))
      return fail(
          "it is not Codex's credential file: expected {\"tokens\":{\"access_token\",\"refresh_token\","
          "\"account_id\"}} (~/.codex/auth.json after `codex login`)");
    take(*tokens, "access_token", c.access_token);
    take(*tokens, "refresh_token", c.refresh_token);
    take(*tokens, "account_id", c.account_id);
    c.expires_at_ms = jwtExpiryMs(c.access_token);
  }
  if (!checkTokens(c, why)) return std::nullopt;
  if (c.refresh_token.empty() && c.expires_at_ms == 0)
    return fail("it has no refresh token and no expiry: it cannot be kept signed in");
  if (k == SubscriptionKind::ChatGPT && c.account_id.empty())
    return fail("it has no account id (tokens.account_id), which ChatGPT's Codex endpoint requires");
  return c;
}

std::string serializeCredential(const SubscriptionCredential& c) {
  json::object o;
  o["access_token"] = c.access_token;
  o["refresh_token"] = c.refresh_token;
  if (!c.account_id.empty()) o["account_id"] = c.account_id;
  o["expires_at_ms"] = c.expires_at_ms;
  o["lifetime_ms"] = c.lifetime_ms;
  return json::serialize(o);
}

bool needsRefresh(const SubscriptionCredential& c, std::int64_t now_ms) {
  if (c.access_token.empty() || c.expires_at_ms <= 0) return true;
  std::int64_t margin = 5 * 60 * 1000;
  if (c.lifetime_ms > 0) margin = std::min(margin, c.lifetime_ms / 2);
  return now_ms >= c.expires_at_ms - margin;
}

bool stillValid(const SubscriptionCredential& c, std::int64_t now_ms) {
  return !c.access_token.empty() && c.expires_at_ms > 0 && now_ms + 2000 < c.expires_at_ms;
}

std::string refreshRequestBody(SubscriptionKind k, std::string_view refresh_token) {
  json::object o;
  o["grant_type"] = "refresh_token";
  o["refresh_token"] = refresh_token;
  o["client_id"] = oauthClientId(k);
  if (k == SubscriptionKind::ChatGPT) o["scope"] = "openid profile email";
  return json::serialize(o);
}

RefreshOutcome parseRefreshAnswer(SubscriptionKind k, int status, std::string_view body,
                                  const SubscriptionCredential& old, std::int64_t now_ms) {
  RefreshOutcome out;
  auto o = credParseObject(body);
  std::string error, description;
  if (o) {
    if (const json::string* e = credString(*o, "error")) {
      error = std::string(*e);
    } else if (const json::object* eo = credObject(*o, "error")) {  // {"error":{"type"/"code","message"}}
      if (const json::string* t = credString(*eo, "code"))
        error = std::string(*t);
      else if (const json::string* t2 = credString(*eo, "type"))
        error = std::string(*t2);
      if (const json::string* m = credString(*eo, "message")) description = std::string(*m);
    }
    if (const json::string* d = credString(*o, "error_description")) description = std::string(*d);
  }
  // Bounded and printable: it ends up in the key's health and the logs.
  auto clean = [](std::string s) {
    if (s.size() > 200) s.resize(200);
    for (char& ch : s)
      if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) == 0x7f) ch = ' ';
    return s;
  };
  error = clean(std::move(error));
  description = clean(std::move(description));
  if (error == "invalid_grant" || error == "refresh_token_reused" || error == "refresh_token_expired" ||
      error == "refresh_token_invalidated") {
    out.invalid_grant = true;
    out.why = description.empty() ? error : error + ": " + description;
    return out;
  }
  if (status < 200 || status >= 300 || !o || !error.empty()) {
    out.why = fmt::format("the token endpoint answered {}{}{}", status, error.empty() ? "" : " " + error,
                          description.empty() ? "" : " (" + description + ")");
    return out;
  }
  SubscriptionCredential c = old;
  const json::string* access = credString(*o, "access_token");
  if (!access || !credHeaderSafe(*access)) {
    out.why = "the token endpoint's answer has no usable \"access_token\"";
    return out;
  }
  c.access_token = std::string(*access);
  if (const json::string* r = credString(*o, "refresh_token")) {
    if (!credHeaderSafe(*r)) {
      out.why = "the token endpoint's answer has an unusable \"refresh_token\"";
      return out;
    }
    c.refresh_token = std::string(*r);
  }
  std::int64_t expires_at = 0;
  if (auto in = credInt(*o, "expires_in"); in && *in > 0)
    expires_at = now_ms + std::min<std::int64_t>(*in, 1 << 30) * 1000;
  if (expires_at == 0) expires_at = jwtExpiryMs(c.access_token);
  if (expires_at == 0 && k == SubscriptionKind::ChatGPT) expires_at = now_ms + 3600 * 1000;  // refreshed hourly then
  if (expires_at <= now_ms) {
    out.why = "the token endpoint's answer has no lifetime for the new access token";
    return out;
  }
  c.expires_at_ms = expires_at;
  c.lifetime_ms = expires_at - now_ms;
  out.credential = std::move(c);
  return out;
}

std::string signInAgainReason(SubscriptionKind k, std::string_view detail) {
  return fmt::format(
      "the subscription's refresh token was refused ({}): it was revoked or already used; sign in again ({}) and paste "
      "the new credential file ({}) as a new key",
      detail.empty() ? "invalid_grant" : detail, k == SubscriptionKind::Claude ? "claude /login" : "codex login",
      k == SubscriptionKind::Claude ? "~/.claude/.credentials.json" : "~/.codex/auth.json");
}

UsageWindows readUsageWindows(SubscriptionKind k, const std::vector<std::pair<std::string, std::string>>& headers,
                              std::int64_t now_ms) {
  UsageWindows w;
  auto number = [](std::string_view v, double& out) {
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    if (v.empty() || v.size() > 32) return false;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    return ec == std::errc() && p == v.data() + v.size() && std::isfinite(out) && out >= 0;
  };
  auto resetAt = [&](std::int64_t at) {
    if (at > now_ms && at - now_ms <= 8LL * 24 * 3600 * 1000) w.reset_at_ms = std::max(w.reset_at_ms, at);
  };
  if (k == SubscriptionKind::Claude) {
    constexpr std::string_view kPrefix = "anthropic-ratelimit-unified-";
    std::int64_t overall_reset = 0;
    for (const auto& [name, value] : headers) {
      if (name.size() <= kPrefix.size() || !sluice::iequals(std::string_view(name).substr(0, kPrefix.size()), kPrefix))
        continue;
      const std::string_view rest = std::string_view(name).substr(kPrefix.size());
      double d = 0;
      if (sluice::iequals(rest, "status")) {
        if (sluice::iequals(value, "rejected")) w.exhausted = true;
      } else if (rest.ends_with("utilization") && number(value, d)) {
        w.used_fraction = std::max(w.used_fraction, d);
        if (d >= 1.0) w.exhausted = true;
      } else if (sluice::iequals(rest, "reset") && number(value, d) && d < 1e11) {
        overall_reset = static_cast<std::int64_t>(d) * 1000;
      }  // a window's own -reset is read below, when no overall reset is given
    }
    if (w.exhausted) {
      resetAt(overall_reset);
      if (w.reset_at_ms == 0) {  // no overall reset: the latest reset of a window used up
        for (const auto& [name, value] : headers) {
          if (name.size() <= kPrefix.size() ||
              !sluice::iequals(std::string_view(name).substr(0, kPrefix.size()), kPrefix))
            continue;
          const std::string_view rest = std::string_view(name).substr(kPrefix.size());
          double d = 0;
          if (rest.ends_with("-reset") && number(value, d) && d < 1e11) resetAt(static_cast<std::int64_t>(d) * 1000);
        }
      }
    }
    return w;
  }
  // ChatGPT (Codex): a primary (short) and a secondary (weekly) window.
  for (std::string_view win : {std::string_view("primary"), std::string_view("secondary")}) {
    double used = -1, after = -1, at = -1;
    for (const auto& [name, value] : headers) {
      const std::string prefix = fmt::format("x-codex-{}-", win);
      if (name.size() <= prefix.size() || !sluice::iequals(std::string_view(name).substr(0, prefix.size()), prefix))
        continue;
      const std::string_view rest = std::string_view(name).substr(prefix.size());
      double d = 0;
      if (!number(value, d)) continue;
      if (sluice::iequals(rest, "used-percent"))
        used = d;
      else if (sluice::iequals(rest, "reset-after-seconds"))
        after = d;
      else if (sluice::iequals(rest, "reset-at") && d < 1e11)
        at = d;
    }
    if (used < 0) continue;
    w.used_fraction = std::max(w.used_fraction, used / 100.0);
    if (used >= 100.0) {
      w.exhausted = true;
      if (after >= 0 && after < 1e7)
        resetAt(now_ms + static_cast<std::int64_t>(after * 1000));
      else if (at > 0)
        resetAt(static_cast<std::int64_t>(at) * 1000);
    }
  }
  return w;
}

}  // namespace sluice::cloud
