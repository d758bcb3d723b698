#include "auth/OidcService.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/parse_query.hpp>
#include <boost/url/url.hpp>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>

#include "auth/Jwt.hpp"
#include "config/Config.hpp"
#include "core/Ascii.hpp"
#include "core/Clock.hpp"
#include "core/JsonText.hpp"
#include "pipeline/VirtualKeySecret.hpp"
#include "store/Store.hpp"
#include "upstream/Post.hpp"

namespace sluice::auth {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace json = boost::json;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kMaxIdpBody = 256 * 1024;
constexpr auto kDiscoveryTtl = std::chrono::hours(1);
constexpr auto kJwksTtl = std::chrono::hours(1);
constexpr auto kJwksRefetch = std::chrono::seconds(5);  // an unknown kid refetches at most this often
constexpr std::int64_t kLoginTtlMs = 10 * 60 * 1000;    // a sign-in must come back within this

bool constEq(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string htmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          out += ' ';
        else
          out += c;
    }
  }
  return out;
}

http::Response withSecurityHeaders(http::Response res) {
  res.set(bhttp::field::cache_control, "no-store");
  res.set("x-content-type-options", "nosniff");
  res.set("referrer-policy", "no-referrer");
  return res;
}

// The page a person sees when signing in fails: what went wrong and a way back.
http::Response errorPage(int status, std::string_view title, std::string_view detail) {
  http::Response res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "text/html; charset=utf-8");
  res.set("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'");
  res.body() = fmt::format(
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Sluice: {0}</title>"
      "<style>body{{font:16px system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem}}</style>"
      "</head><body><h1>{0}</h1><p data-testid=\"auth-error\">{1}</p>"
      "<p><a href=\"/\">Back to the console</a> (sign in again, or with the master key or an admin token)</p>"
      "</body></html>",
      htmlEscape(title), htmlEscape(detail));
  return withSecurityHeaders(std::move(res));
}

http::Response jsonAnswer(int status, const json::value& v) {
  http::Response res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = json::serialize(v);
  return withSecurityHeaders(std::move(res));
}

http::Response redirect(const std::string& location) {
  http::Response res{bhttp::status::found, 11};
  res.set(bhttp::field::location, location);
  return withSecurityHeaders(std::move(res));
}

// The attributes every Sluice cookie carries: the browser keeps it from scripts, sends it only
// over TLS (and to http://localhost) and not on cross-site subrequests.
std::string cookie(std::string_view name, std::string_view value, std::string_view path, std::string_view extra = {}) {
  return fmt::format("{}={}; Path={}; HttpOnly; Secure; SameSite=Lax{}", name, value, path, extra);
}

// application/x-www-form-urlencoded (RFC 6749 Appendix B): unreserved characters as they are.
std::string formEncode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string base64Std(std::string_view raw) {
  std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(raw.data()), static_cast<int>(raw.size()));
  out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return out;
}

std::string stringField(const json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

// A cookie value Sluice made: randomToken(32), 43 base64url characters.
bool plausibleId(std::string_view v) {
  return v.size() == 43 && std::all_of(v.begin(), v.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
         });
}

struct Fetched {
  bool ok = false;
  int status = 0;
  std::string body;
  std::string why;
};

// Arguments by value: a coroutine's reference to a temporary of the caller's full-expression is
// not safe across a suspension with g++ 12.
net::awaitable<Fetched> fetch(upstream::Pool& pool, std::string url, std::chrono::milliseconds timeout,
                              std::string what, std::optional<std::string> form = std::nullopt,
                              std::string authorization = {}) {
  Fetched out;
  upstream::PostTarget target;
  try {
    std::map<std::string, std::string> headers;
    if (!authorization.empty()) headers.emplace("Authorization", authorization);
    target = upstream::makePostTarget(url, headers, timeout, what);
  } catch (const std::exception& e) {
    out.why = e.what();
    co_return out;
  }
  target.get = !form.has_value();
  const std::string payload = form ? *form : std::string();
  upstream::PostResult r =
      co_await upstream::post(pool, target, "application/x-www-form-urlencoded", payload, kMaxIdpBody);
  if (r.failure != upstream::PostResult::Failure::None) {
    out.why = r.timed_out ? fmt::format("{} did not answer within {} ms", what, timeout.count())
                          : fmt::format("{} cannot be reached: {}", what, r.error);
    co_return out;
  }
  out.status = r.status;
  out.body = std::move(r.body);
  out.ok = r.status == 200;
  if (!out.ok) out.why = fmt::format("{} answered HTTP {}", what, r.status);
  co_return out;
}

// The query's parameters, decoded; a name given twice is refused (which one would count?).
std::optional<std::map<std::string, std::string>> queryParams(const std::string& query) {
  std::map<std::string, std::string> out;
  auto parsed = boost::urls::parse_query(query);
  if (!parsed) return std::nullopt;
  for (auto p : *parsed) {
    // Percent-decoded; '+' is a space (application/x-www-form-urlencoded).
    boost::urls::encoding_opts opts;
    opts.space_as_plus = true;
    if (!out.emplace(p.key.decode(opts), p.value.decode(opts)).second) return std::nullopt;
  }
  return out;
}

std::string actorOf(const std::string& subject, const std::string& email) {
  return email.empty() ? "oidc:" + subject : fmt::format("oidc:{} <{}>", subject, email);
}

}  // namespace

std::string cookieValue(const http::Request& req, std::string_view name) {
  const auto [first, last] = req.equal_range(bhttp::field::cookie);
  for (auto f = first; f != last; ++f) {
    std::string_view rest(f->value().data(), f->value().size());
    while (!rest.empty()) {
      const auto semi = rest.find(';');
      std::string_view pair = rest.substr(0, semi);
      rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
      while (!pair.empty() && (pair.front() == ' ' || pair.front() == '\t')) pair.remove_prefix(1);
      const auto eq = pair.find('=');
      if (eq == std::string_view::npos || pair.substr(0, eq) != name) continue;
      std::string_view v = pair.substr(eq + 1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
      return std::string(v);
    }
  }
  return {};
}

struct OidcService::Idp {
  std::string issuer;  // what the cache is for (a reload may change it)
  std::optional<Discovery> discovery;
  SteadyClock::time_point discovery_at{};
  std::vector<Jwk> keys;
  SteadyClock::time_point keys_at{};
  bool keys_loaded = false;
};

struct OidcService::StoreState {
  std::unique_ptr<store::Store> store;
};

OidcService::OidcService(std::string store_url)
    : idp_(std::make_unique<Idp>()), store_url_(std::move(store_url)), db_(std::make_unique<StoreState>()) {}

OidcService::~OidcService() {
  db_pool_.join();
}

net::awaitable<bool> OidcService::withStore(StoreWork work, std::string& why) {
  auto job = std::make_shared<StoreWork>(std::move(work));
  auto task = [this, job]() -> net::awaitable<std::string> {
    try {
      if (!db_->store) {
        db_->store = store::Store::open(store_url_);
        db_->store->migrate();
      }
      (*job)(*db_->store);
      co_return std::string();
    } catch (const std::exception& e) {
      db_->store.reset();  // reconnect next time
      co_return std::string(e.what());
    }
  };
  why = co_await net::co_spawn(db_pool_, std::move(task), net::use_awaitable);
  co_return why.empty();
}

net::awaitable<std::optional<Discovery>> OidcService::discovery(const config::Config& cfg, upstream::Pool& pool,
                                                                std::string& why) {
  const auto& o = cfg.auth.oidc;
  {
    std::lock_guard lk(mu_);
    if (idp_->issuer != o.issuer) {
      *idp_ = Idp();
      idp_->issuer = o.issuer;
    }
    if (idp_->discovery && SteadyClock::now() - idp_->discovery_at < kDiscoveryTtl) co_return idp_->discovery;
  }
  std::string base = o.issuer;
  while (!base.empty() && base.back() == '/') base.pop_back();
  Fetched f = co_await fetch(pool, base + "/.well-known/openid-configuration", o.timeout,
                             "the identity provider's discovery document");
  std::optional<Discovery> d;
  if (f.ok)
    d = parseDiscovery(f.body, o.issuer, why);
  else
    why = f.why;
  std::lock_guard lk(mu_);
  if (idp_->issuer != o.issuer) co_return d;
  if (d) {
    idp_->discovery = d;
    idp_->discovery_at = SteadyClock::now();
    co_return d;
  }
  spdlog::warn("oidc: {}", why);
  co_return idp_->discovery;  // a stale one while the IdP is down; nullopt the first time
}

net::awaitable<std::vector<Jwk>> OidcService::keys(const config::Config& cfg, upstream::Pool& pool, const Discovery& d,
                                                   bool refresh, std::string& why) {
  {
    std::lock_guard lk(mu_);
    const auto age = SteadyClock::now() - idp_->keys_at;
    const bool fresh = idp_->keys_loaded && age < kJwksTtl;
    if (fresh && (!refresh || age < kJwksRefetch)) co_return idp_->keys;
  }
  Fetched f = co_await fetch(pool, d.jwks_uri, cfg.auth.oidc.timeout, "the identity provider's JWKS");
  std::optional<std::vector<Jwk>> parsed;
  if (f.ok)
    parsed = parseJwks(f.body, why);
  else
    why = f.why;
  std::lock_guard lk(mu_);
  if (parsed) {
    idp_->keys = std::move(*parsed);
    idp_->keys_loaded = true;
  } else {
    spdlog::warn("oidc: {}", why);
  }
  idp_->keys_at = SteadyClock::now();  // a failure waits kJwksRefetch too
  co_return idp_->keys;
}

net::awaitable<http::Response> OidcService::handle(const config::Config& cfg, upstream::Pool& pool,
                                                   const http::Request& req, const std::string& path,
                                                   const std::string& query) {
  const bool on = cfg.auth.oidc.enabled();
  const auto m = req.method();
  const bool get = m == bhttp::verb::get || m == bhttp::verb::head;
  if (path == "/auth/info" && get) {
    json::object info{{"oidc", on}};
    if (on) info["login_url"] = "/auth/login";
    co_return jsonAnswer(200, info);
  }
  if (!on)
    co_return jsonAnswer(404, json::object{{"error", json::object{{"message", "auth.oidc is not configured"},
                                                                  {"type", "invalid_request_error"},
                                                                  {"code", "not_found"}}}});
  if (path == "/auth/login" && get) co_return co_await login(cfg, pool);
  if (path == "/auth/callback" && get) co_return co_await callback(cfg, pool, req, query);
  if (path == "/auth/logout" && m == bhttp::verb::post) co_return co_await logout(cfg, req);
  co_return jsonAnswer(
      404,
      json::object{{"error", json::object{{"message", "no route for " + std::string(req.method_string()) + " " + path},
                                          {"type", "invalid_request_error"},
                                          {"code", "not_found"}}}});
}

net::awaitable<http::Response> OidcService::login(const config::Config& cfg, upstream::Pool& pool) {
  const auto& o = cfg.auth.oidc;
  std::string why;
  std::optional<Discovery> d = co_await discovery(cfg, pool, why);
  if (!d) co_return errorPage(502, "The identity provider cannot be reached", why);
  const std::string loginId = randomToken();
  const std::string state = randomToken(), nonce = randomToken(), verifier = randomToken();
  store::OidcSession row;
  row.id_hash = pipeline::hashVirtualKeySecret(loginId);
  row.kind = "login";
  row.data = json::serialize(json::object{{"state", state}, {"nonce", nonce}, {"verifier", verifier}});
  row.created_at_ms = unixNowMs();
  row.seen_at_ms = row.created_at_ms;
  row.expires_at_ms = row.created_at_ms + kLoginTtlMs;
  const std::int64_t idle = o.session_idle.count();
  StoreWork keep = [row, idle](store::Store& s) {
    s.deleteExpiredOidcSessions(row.created_at_ms, idle);
    s.putOidcSession(row);
  };
  const bool stored = co_await withStore(std::move(keep), why);
  if (!stored) co_return errorPage(503, "Sign-in is unavailable", "the store cannot keep the sign-in: " + why);
  auto parsedAuthz = boost::urls::parse_uri(d->authorization_endpoint);
  if (!parsedAuthz) co_return errorPage(502, "Sign-in failed", "the IdP's authorization_endpoint is not a URL");
  boost::urls::url u(*parsedAuthz);
  std::string scope;
  for (const auto& s : o.scopes) scope += (scope.empty() ? "" : " ") + s;
  auto params = u.params();
  params.append({"response_type", "code"});
  params.append({"client_id", o.client_id});
  params.append({"redirect_uri", o.redirect_url});
  params.append({"scope", scope});
  params.append({"state", state});
  params.append({"nonce", nonce});
  params.append({"code_challenge", pkceChallenge(verifier)});
  params.append({"code_challenge_method", "S256"});
  http::Response res = redirect(std::string(u.buffer()));
  res.set(bhttp::field::set_cookie, cookie(kLoginCookie, loginId, "/auth", "; Max-Age=600"));
  co_return res;
}

net::awaitable<http::Response> OidcService::callback(const config::Config& cfg, upstream::Pool& pool,
                                                     const http::Request& req, const std::string& query) {
  const auto& o = cfg.auth.oidc;
  auto q = queryParams(query);
  if (!q) co_return errorPage(400, "Sign-in failed", "the callback's query is malformed or repeats a parameter");
  if (auto it = q->find("error"); it != q->end()) {
    std::string detail = "the identity provider refused the sign-in: " + it->second.substr(0, 200);
    if (auto d = q->find("error_description"); d != q->end()) detail += " (" + d->second.substr(0, 300) + ")";
    co_return errorPage(403, "Sign-in refused", detail);
  }
  const std::string loginId = cookieValue(req, kLoginCookie);
  if (!plausibleId(loginId))
    co_return errorPage(400, "Sign-in failed",
                        "this browser has no sign-in under way (it expired, or was started in another browser): "
                        "start again from the console");
  // The sign-in is used once, whatever happens next.
  std::optional<store::OidcSession> row;
  std::string why;
  const std::string loginHash = pipeline::hashVirtualKeySecret(loginId);
  StoreWork consume = [&row, loginHash](store::Store& s) {
    row = s.findOidcSession(loginHash);
    if (row) s.deleteOidcSession(loginHash);
  };
  const bool read = co_await withStore(std::move(consume), why);
  if (!read) co_return errorPage(503, "Sign-in is unavailable", "the store cannot be read: " + why);
  const auto now = unixNowMs();
  if (!row || row->kind != "login" || row->expires_at_ms <= now)
    co_return errorPage(400, "Sign-in failed",
                        "this sign-in expired or was already used: start again from the console");
  boost::system::error_code ec;
  json::value data = sluice::parseJson(row->data, ec);
  if (ec || !data.is_object()) co_return errorPage(500, "Sign-in failed", "the stored sign-in is unreadable");
  const std::string state = stringField(data.as_object(), "state");
  const std::string nonce = stringField(data.as_object(), "nonce");
  const std::string verifier = stringField(data.as_object(), "verifier");
  auto st = q->find("state");
  if (st == q->end() || !constEq(st->second, state))
    co_return errorPage(400, "Sign-in failed", "the state the identity provider sent back is not this sign-in's");
  auto code = q->find("code");
  if (code == q->end() || code->second.empty() || code->second.size() > 4096)
    co_return errorPage(400, "Sign-in failed", "the identity provider sent no authorization code");

  std::optional<Discovery> d = co_await discovery(cfg, pool, why);
  if (!d) co_return errorPage(502, "The identity provider cannot be reached", why);
  std::string form = "grant_type=authorization_code&code=" + formEncode(code->second) +
                     "&redirect_uri=" + formEncode(o.redirect_url) + "&code_verifier=" + formEncode(verifier);
  std::string authorization;
  if (d->client_secret_post) {
    form += "&client_id=" + formEncode(o.client_id) + "&client_secret=" + formEncode(o.client_secret);
  } else {
    authorization = "Basic " + base64Std(formEncode(o.client_id) + ":" + formEncode(o.client_secret));
  }
  Fetched tok = co_await fetch(pool, d->token_endpoint, o.timeout, "the identity provider's token endpoint",
                               std::move(form), std::move(authorization));
  if (tok.status == 0) co_return errorPage(502, "The identity provider cannot be reached", tok.why);
  json::value answer = sluice::parseJson(tok.body, ec);
  const json::object empty;
  const json::object& a = !ec && answer.is_object() ? answer.as_object() : empty;
  if (!tok.ok) {
    std::string err = stringField(a, "error");
    std::string desc = stringField(a, "error_description");
    co_return errorPage(502, "Sign-in failed",
                        fmt::format("the token endpoint refused the code: HTTP {} {}{}", tok.status, err.substr(0, 100),
                                    desc.empty() ? "" : " (" + desc.substr(0, 300) + ")"));
  }
  const std::string idToken = stringField(a, "id_token");
  if (idToken.empty()) co_return errorPage(502, "Sign-in failed", "the token endpoint answered without an id_token");

  std::optional<Jwt> jwt = parseJwt(idToken, why);
  if (!jwt) co_return errorPage(403, "Sign-in failed", why);
  bool verified = false;
  for (int attempt = 0; attempt < 2 && !verified; ++attempt) {
    std::vector<Jwk> ks = co_await keys(cfg, pool, *d, attempt == 1, why);
    bool known = false;
    for (const auto& k : ks) {
      if (!jwt->kid.empty() && k.kid != jwt->kid) continue;
      known = true;
      if (verifyJwt(*jwt, k)) {
        verified = true;
        break;
      }
    }
    if (known && !verified) break;  // a key we know, a signature that does not verify
  }
  if (!verified)
    co_return errorPage(403, "Sign-in failed",
                        "the ID token's signature does not verify with the identity provider's keys (jwks_uri)");
  const std::string bad = checkClaims(jwt->claims, ClaimRules{o.issuer, o.client_id, nonce, now / 1000, 60});
  if (!bad.empty()) co_return errorPage(403, "Sign-in failed", bad);

  const std::string subject = stringField(jwt->claims, "sub");
  // Team membership goes by e-mail, and at some IdPs a user types in any address: one the IdP
  // says it has not verified names no one here (absent, as Entra leaves it, it is taken).
  std::string email = stringField(jwt->claims, "email");
  if (const auto* v = jwt->claims.if_contains("email_verified");
      v && ((v->is_bool() && !v->as_bool()) || (v->is_string() && sluice::iequals(v->as_string(), "false"))))
    email.clear();
  std::string name = stringField(jwt->claims, "name");
  if (name.empty()) name = stringField(jwt->claims, "preferred_username");
  std::optional<std::string> role = roleFromClaims(jwt->claims, o.roles_claim, o.role_map);
  if (!role) {
    spdlog::info("oidc: sign-in of {} refused: no group in {} maps to a role", actorOf(subject, email), o.roles_claim);
    co_return errorPage(403, "No access",
                        fmt::format("you signed in as {}, but none of your groups (claim \"{}\") is given a role in "
                                    "auth.oidc.role_map: ask an administrator to map one",
                                    email.empty() ? subject : email, o.roles_claim));
  }
  const std::string sessionId = randomToken();
  store::OidcSession s;
  s.id_hash = pipeline::hashVirtualKeySecret(sessionId);
  s.kind = "session";
  s.subject = subject.substr(0, 255);
  s.email = email.substr(0, 255);
  s.name = name.substr(0, 255);
  s.role = *role;
  s.csrf_token = randomToken();
  s.created_at_ms = now;
  s.seen_at_ms = now;
  s.expires_at_ms = now + o.session_max.count();
  StoreWork put = [s](store::Store& db) { db.putOidcSession(s); };
  if (!co_await withStore(std::move(put), why))
    co_return errorPage(503, "Sign-in is unavailable", "the store cannot keep the session: " + why);
  spdlog::info("oidc: {} signed in with the {} role", actorOf(s.subject, s.email), s.role);
  http::Response res = redirect("/");
  res.insert(bhttp::field::set_cookie, cookie(kSessionCookie, sessionId, "/"));
  res.insert(bhttp::field::set_cookie, cookie(kLoginCookie, "", "/auth", "; Max-Age=0"));
  co_return res;
}

net::awaitable<http::Response> OidcService::logout(const config::Config& cfg, const http::Request& req) {
  const auto& o = cfg.auth.oidc;
  const std::string id = cookieValue(req, kSessionCookie);
  if (plausibleId(id)) {
    const std::string hash = pipeline::hashVirtualKeySecret(id);
    std::optional<store::OidcSession> row;
    std::string why;
    StoreWork find = [&row, hash](store::Store& s) { row = s.findOidcSession(hash); };
    if (!co_await withStore(std::move(find), why))
      co_return jsonAnswer(503, json::object{{"error", json::object{{"message", "the store cannot be read: " + why},
                                                                    {"type", "api_error"}}}});
    if (row && row->kind == "session") {
      if (!csrfAllows(req, row->csrf_token))
        co_return jsonAnswer(
            403,
            json::object{{"error", json::object{{"message", std::string("sign-out needs the session's CSRF token in ") +
                                                                kCsrfHeader},
                                                {"type", "permission_error"},
                                                {"code", "csrf"}}}});
      StoreWork drop = [hash](store::Store& s) { s.deleteOidcSession(hash); };
      co_await withStore(std::move(drop), why);
      spdlog::info("oidc: {} signed out", actorOf(row->subject, row->email));
    }
  }
  json::object out{{"signed_out", true}};
  std::string end;
  {
    std::lock_guard lk(mu_);
    if (idp_->discovery && idp_->issuer == o.issuer) end = idp_->discovery->end_session_endpoint;
  }
  if (auto parsedEnd = boost::urls::parse_uri(end); !end.empty() && parsedEnd) {
    boost::urls::url u(*parsedEnd);
    u.params().append({"client_id", o.client_id});
    if (!o.post_logout_redirect_url.empty())
      u.params().append({"post_logout_redirect_uri", o.post_logout_redirect_url});
    out["logout_url"] = std::string(u.buffer());
  }
  http::Response res = jsonAnswer(200, out);
  res.set(bhttp::field::set_cookie, cookie(kSessionCookie, "", "/", "; Max-Age=0"));
  co_return res;
}

net::awaitable<OidcService::SessionCheck> OidcService::authenticate(const config::Config& cfg, const http::Request& req,
                                                                    std::string remote) {
  SessionCheck out;
  if (!cfg.auth.oidc.enabled()) co_return out;
  const std::string id = cookieValue(req, kSessionCookie);
  if (id.empty()) co_return out;
  out.present = true;
  if (!plausibleId(id)) {
    out.why = "the console session cookie is malformed: sign in again";
    co_return out;
  }
  const std::string hash = pipeline::hashVirtualKeySecret(id);
  const auto now = unixNowMs();
  const std::int64_t idle = cfg.auth.oidc.session_idle.count();
  std::optional<store::OidcSession> row;
  std::string why;
  StoreWork check = [&row, hash, now, idle](store::Store& s) {
    row = s.findOidcSession(hash);
    if (!row) return;
    if (row->kind != "session" || row->expires_at_ms <= now || row->seen_at_ms + idle <= now) {
      s.deleteOidcSession(hash);
      row.reset();
      return;
    }
    if (now - row->seen_at_ms >= 1000) s.touchOidcSession(hash, now);
  };
  const bool ok = co_await withStore(std::move(check), why);
  if (!ok) {
    out.why = "the store cannot check console sessions now: " + why;
    co_return out;
  }
  if (!row) {
    out.why = "the console session has ended (signed out, idle or too old): sign in again";
    co_return out;
  }
  const auto role = admin::parseRole(row->role);
  if (!role) {
    out.why = "the console session has an unknown role: sign in again";
    co_return out;
  }
  admin::Caller c;
  c.role = *role;
  c.actor = actorOf(row->subject, row->email);
  c.address = std::move(remote);
  c.kind = "oidc";
  c.subject = row->subject;
  c.email = row->email;
  c.name = row->name;
  out.caller = std::move(c);
  out.csrf_token = row->csrf_token;
  co_return out;
}

bool OidcService::csrfAllows(const http::Request& req, const std::string& csrf_token) {
  if (csrf_token.empty()) return false;
  if (auto site = req["sec-fetch-site"]; !site.empty()) {
    const std::string_view s(site.data(), site.size());
    if (!sluice::iequals(s, "same-origin") && !sluice::iequals(s, "none")) return false;
  }
  auto sent = req[kCsrfHeader];
  return constEq(std::string_view(sent.data(), sent.size()), csrf_token);
}

}  // namespace sluice::auth
