#include "mock/SubscriptionMock.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <chrono>

#include "cloud/Subscription.hpp"
#include "core/Ascii.hpp"
#include "core/JsonText.hpp"
#include "mock/MockGeneration.hpp"
#include "redact/Base64Url.hpp"

namespace sluice::mock {

namespace json = boost::json;
namespace bhttp = boost::beast::http;

namespace {

std::int64_t nowS() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

http::Response jsonAnswer(int status, std::string body) {
  http::Response res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = std::move(body);
  return res;
}

std::string subB64Url(std::string_view s) {
  std::string out;
  redact::detail::appendB64Url(out, reinterpret_cast<const unsigned char*>(s.data()), s.size());
  return out;
}

// The bearer token of an Authorization header, or "".
std::string bearerOf(const http::Request& req) {
  const std::string_view auth = req[bhttp::field::authorization];
  if (auth.size() > 7 && sluice::iequals(auth.substr(0, 7), "Bearer ")) return std::string(auth.substr(7));
  return {};
}

std::optional<json::object> bodyObject(const http::Request& req) {
  boost::system::error_code ec;
  json::value v = sluice::parseJson(req.body(), ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.as_object());
}

std::string stringOf(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::int64_t intOf(const json::object& o, std::string_view key, std::int64_t dflt) {
  const auto* v = o.if_contains(key);
  return v && v->is_int64() ? v->as_int64() : dflt;
}

http::Response anthropicError(int status, std::string_view type, std::string_view message) {
  json::object err{{"type", type}, {"message", message}};
  return jsonAnswer(status, json::serialize(json::object{{"type", "error"}, {"error", std::move(err)}}));
}

http::Response openaiError(int status, std::string_view type, std::string_view code, std::string_view message) {
  json::object err{{"message", message}, {"type", type}, {"code", code}};
  return jsonAnswer(status, json::serialize(json::object{{"error", std::move(err)}}));
}

// What ChatGPT's Codex endpoint refuses of a request body, as it answers ({"detail":...}): it
// streams every answer, keeps none (store must be there and false), needs the instructions the
// Codex CLI always sends, and takes no max_output_tokens. Empty: none of that.
std::string codexBodyProblem(std::string_view body) {
  boost::system::error_code ec;
  json::value v = sluice::parseJson(body, ec);
  if (ec || !v.is_object()) return "Invalid JSON in request body";
  const json::object& o = v.as_object();
  const auto* stream = o.if_contains("stream");
  if (!stream || !stream->is_bool() || !stream->as_bool()) return "Stream must be set to true";
  const auto* store = o.if_contains("store");
  if (!store || !store->is_bool() || store->as_bool()) return "Store must be set to false";
  const auto* ins = o.if_contains("instructions");
  if (!ins || !ins->is_string() || ins->as_string().empty()) return "Instructions are required";
  if (o.contains("max_output_tokens")) return "Unsupported parameter: max_output_tokens";
  return {};
}

}  // namespace

bool SubscriptionMock::handles(std::string_view path) {
  return path == "/v1/oauth/token" || path == "/oauth/token" || path.starts_with("/mock/subscription/");
}

http::Response SubscriptionMock::serve(const http::Request& req, std::string_view path) {
  const bool post = req.method() == bhttp::verb::post;
  if (path == "/v1/oauth/token" && post) return refresh(req, true);
  if (path == "/oauth/token" && post) return refresh(req, false);
  if (path == "/mock/subscription/stats") return jsonAnswer(200, statsJson());
  auto body = bodyObject(req);
  std::lock_guard lock(mu_);
  if (path == "/mock/subscription/reset" && post) {
    spent_.clear();
    revoked_.clear();
    revoked_access_.clear();
    issued_access_.clear();
    exhausted_.clear();
    refreshes_ = refused_ = reused_ = oauth_requests_ = expired_ = limited_ = revoked_refusals_ = codex_refused_ = 0;
    last_bearer_.clear();
    last_account_.clear();
    ttl_s_ = 3600;
    return jsonAnswer(200, R"({"ok":true})");
  }
  if (!body || !post) return jsonAnswer(400, R"({"error":"a control is a POST of a JSON object"})");
  if (path == "/mock/subscription/config") {
    ttl_s_ = std::max<std::int64_t>(1, intOf(*body, "ttl_s", ttl_s_));
    return jsonAnswer(200, R"({"ok":true})");
  }
  if (path == "/mock/subscription/exhaust") {
    const std::string token = stringOf(*body, "token");
    const std::int64_t after = intOf(*body, "reset_after_s", 3600);
    if (after <= 0)
      exhausted_.erase(token);
    else
      exhausted_[token] = nowS() + after;
    return jsonAnswer(200, R"({"ok":true})");
  }
  if (path == "/mock/subscription/revoke") {
    // {"refresh_token"} and/or {"access_token"}: each stops working (an access token before its expiry).
    if (const std::string rt = stringOf(*body, "refresh_token"); !rt.empty()) revoked_.insert(rt);
    if (const std::string at = stringOf(*body, "access_token"); !at.empty()) revoked_access_.insert(at);
    return jsonAnswer(200, R"({"ok":true})");
  }
  return jsonAnswer(404, R"({"error":"unknown subscription control"})");
}

http::Response SubscriptionMock::refresh(const http::Request& req, bool claude) {
  const auto kind = claude ? cloud::SubscriptionKind::Claude : cloud::SubscriptionKind::ChatGPT;
  auto body = bodyObject(req);
  auto bad = [&](std::string_view what) {
    return claude ? jsonAnswer(400,
                               json::serialize(json::object{{"error", "invalid_request"}, {"error_description", what}}))
                  : openaiError(400, "invalid_request_error", "invalid_request", what);
  };
  if (!body) return bad("the body is not a JSON object");
  if (stringOf(*body, "grant_type") != "refresh_token") return bad("grant_type must be refresh_token");
  if (stringOf(*body, "client_id") != cloud::oauthClientId(kind)) return bad("unknown client_id");
  if (!claude && stringOf(*body, "scope") != "openid profile email") return bad("scope must be openid profile email");
  const std::string token = stringOf(*body, "refresh_token");
  if (token.empty()) return bad("refresh_token is required");
  std::lock_guard lock(mu_);
  if (revoked_.contains(token) || spent_.contains(token)) {
    ++refused_;
    if (spent_.contains(token)) ++reused_;
    const bool reuse = spent_.contains(token);
    if (claude)
      return jsonAnswer(
          400, json::serialize(json::object{
                   {"error", "invalid_grant"},
                   {"error_description", reuse ? "Refresh token has already been used" : "Refresh token revoked"}}));
    return openaiError(401, "invalid_request_error", reuse ? "refresh_token_reused" : "refresh_token_invalidated",
                       reuse ? "Your refresh token has already been used to generate a new access token. Please try "
                               "signing in again."
                             : "Your refresh token has been invalidated. Please try signing in again.");
  }
  spent_.insert(token);
  ++refreshes_;
  ++serial_;
  const std::int64_t exp = nowS() + ttl_s_;
  const std::string refresh =
      fmt::format("{}{}-{}", claude ? "sk-ant-ort01-mock-" : "rt-mock-", serial_, randomId("", 12));
  std::string access;
  json::object out;
  if (claude) {
    access = fmt::format("sk-ant-oat01-mock-{}-{}", serial_, randomId("", 12));
    out = {{"token_type", "Bearer"},
           {"access_token", access},
           {"expires_in", ttl_s_},
           {"refresh_token", refresh},
           {"scope", "user:inference user:profile"}};
  } else {
    // ChatGPT's access token is a JWT; its lifetime is only in its exp claim.
    const std::string claims = json::serialize(json::object{{"exp", exp}, {"iat", nowS()}, {"n", serial_}});
    access = subB64Url(R"({"alg":"RS256","typ":"JWT"})") + "." + subB64Url(claims) + "." + randomId("", 16);
    out = {{"id_token", "mock.id." + randomId("", 8)}, {"access_token", access}, {"refresh_token", refresh}};
  }
  issued_access_[access] = exp;
  return jsonAnswer(200, json::serialize(out));
}

SubscriptionMock::Verdict SubscriptionMock::check(const http::Request& req, bool claude) {
  Verdict v;
  const std::string bearer = bearerOf(req);
  const std::string account(req["chatgpt-account-id"]);
  const std::string bad_body = claude ? std::string() : codexBodyProblem(req.body());
  std::lock_guard lock(mu_);
  ++oauth_requests_;
  last_bearer_ = bearer;
  last_account_ = account;
  if (claude) {
    bool beta = false;
    for (const auto& f : req) {
      if (!sluice::iequals(f.name_string(), "anthropic-beta")) continue;
      beta = beta || std::string_view(f.value()).find("oauth-2025-04-20") != std::string_view::npos;
    }
    if (!beta) {
      v.refusal = anthropicError(401, "authentication_error", "OAuth authentication is currently not supported.");
      return v;
    }
  } else {
    if (bearer.empty()) {
      v.refusal = openaiError(401, "invalid_request_error", "missing_authorization", "Missing bearer authentication");
      return v;
    }
    if (account.empty()) {
      v.refusal = openaiError(401, "invalid_request_error", "missing_account", "Missing chatgpt-account-id");
      return v;
    }
    if (!bad_body.empty()) {
      ++codex_refused_;
      v.refusal = jsonAnswer(400, json::serialize(json::object{{"detail", bad_body}}));
      return v;
    }
  }
  const std::int64_t now = nowS();
  if (revoked_access_.contains(bearer)) {
    ++revoked_refusals_;
    v.refusal = claude ? anthropicError(401, "authentication_error", "OAuth token has been revoked.")
                       : openaiError(401, "invalid_request_error", "token_revoked",
                                     "Provided authentication token has been revoked.");
    return v;
  }
  if (auto it = issued_access_.find(bearer); it != issued_access_.end() && it->second <= now) {
    ++expired_;
    v.refusal = claude ? anthropicError(401, "authentication_error", "OAuth token has expired.")
                       : openaiError(401, "invalid_request_error", "token_expired",
                                     "Provided authentication token is expired.");
    return v;
  }
  // Usage windows: an account told to be used up reports 100% until its reset.
  std::int64_t reset = 0;
  for (const std::string& who : {bearer, account}) {
    if (auto it = exhausted_.find(who); !who.empty() && it != exhausted_.end() && it->second > now)
      reset = std::max(reset, it->second);
  }
  const std::int64_t window_reset = reset ? reset : now + 5 * 3600;
  if (claude) {
    v.headers = {{"anthropic-ratelimit-unified-status", reset ? "rejected" : "allowed"},
                 {"anthropic-ratelimit-unified-reset", std::to_string(window_reset)},
                 {"anthropic-ratelimit-unified-5h-status", reset ? "rejected" : "allowed"},
                 {"anthropic-ratelimit-unified-5h-utilization", reset ? "1.0" : "0.12"},
                 {"anthropic-ratelimit-unified-5h-reset", std::to_string(window_reset)},
                 {"anthropic-ratelimit-unified-7d-utilization", "0.04"},
                 {"anthropic-ratelimit-unified-7d-reset", std::to_string(now + 7 * 86400)},
                 {"anthropic-ratelimit-unified-representative-claim", "five_hour"}};
  } else {
    v.headers = {{"x-codex-primary-used-percent", reset ? "100.0" : "12.0"},
                 {"x-codex-primary-window-minutes", "300"},
                 {"x-codex-primary-reset-after-seconds", std::to_string(window_reset - now)},
                 {"x-codex-secondary-used-percent", "4.0"},
                 {"x-codex-secondary-window-minutes", "10080"},
                 {"x-codex-secondary-reset-after-seconds", std::to_string(7 * 86400)}};
  }
  if (reset) {
    ++limited_;
    http::Response res =
        claude ? anthropicError(429, "rate_limit_error", "This request would exceed your account's rate limit.")
               : jsonAnswer(429, json::serialize(json::object{
                                     {"error", json::object{{"type", "usage_limit_reached"},
                                                            {"message", "The usage limit has been reached"},
                                                            {"resets_in_seconds", reset - now}}}}));
    for (const auto& [n, val] : v.headers) res.set(n, val);
    v.refusal = std::move(res);
  }
  return v;
}

std::string SubscriptionMock::statsJson() {
  std::lock_guard lock(mu_);
  return json::serialize(json::object{{"refreshes", refreshes_},
                                      {"refused", refused_},
                                      {"reused", reused_},
                                      {"oauth_requests", oauth_requests_},
                                      {"expired", expired_},
                                      {"limited", limited_},
                                      {"revoked_refusals", revoked_refusals_},
                                      {"codex_refused", codex_refused_},
                                      {"last_bearer", last_bearer_},
                                      {"last_account", last_account_}});
}

}  // namespace sluice::mock
