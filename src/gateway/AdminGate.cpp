#include "gateway/AdminGate.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string_view>

#include "admin/AdminApi.hpp"
#include "admin/Roles.hpp"
#include "admin/TokenOps.hpp"
#include "auth/OidcService.hpp"
#include "config/Config.hpp"
#include "core/Clock.hpp"
#include "core/JsonText.hpp"
#include "gateway/Auth.hpp"
#include "gateway/LiveAdmin.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/Wire.hpp"

namespace sluice::gateway {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace json = boost::json;

namespace {

bool isRead(bhttp::verb m) {
  return m == bhttp::verb::get || m == bhttp::verb::head;
}

// What a write did, from its method and path: the audit row's action.
std::string actionOf(bhttp::verb m, std::string_view path) {
  if (path == "/reload") return "reload";
  if (path == "/settings") return "settings";
  for (std::string_view verb : {"revoke", "enable", "disable", "probe"})
    if (path.ends_with(fmt::format("/{}", verb))) return std::string(verb);
  if (m == bhttp::verb::post) return "create";
  if (m == bhttp::verb::delete_) return "delete";
  return "update";
}

// The object a write acts on, as an admin path (/keys/12, /channels/3/keys/5, /settings): the
// path without an action suffix; a create names what it made from the answer's id.
std::string targetOf(std::string_view path, const std::string& action, const json::value& after) {
  std::string t(path);
  if (action == "revoke" || action == "enable" || action == "disable" || action == "probe") t.resize(t.rfind('/'));
  if (action == "create" && after.is_object()) {
    const auto& o = after.get_object();
    const json::value* id = o.if_contains("id");
    for (const char* wrapper : {"key", "token"})
      if (!id)
        if (const auto* inner = o.if_contains(wrapper); inner && inner->is_object())
          id = inner->as_object().if_contains("id");
    if (id && id->is_int64()) t += fmt::format("/{}", id->as_int64());
  }
  return t;
}

// An answer's body as JSON for the audit row, the secret of a new key or token left out.
json::value auditBody(const http::Response& res) {
  if (res.body().empty()) return nullptr;
  boost::system::error_code ec;
  json::value v = sluice::parseJson(res.body(), ec);
  if (ec) return nullptr;
  if (v.is_object()) v.as_object().erase("secret");
  return v;
}

http::Response refusal(int status, std::string_view code, const std::string& message) {
  auto res =
      errorResponse(Wire::OpenAI, status, status == 403 ? "permission_error" : "invalid_request_error", code, message);
  if (status == 401) res.set(bhttp::field::www_authenticate, "Bearer");
  return res;
}

}  // namespace

net::awaitable<http::Response> AdminGate::handle(const Snapshot& snap, upstream::Pool& pool, const http::Request& req,
                                                 const std::string& path, const std::string& query,
                                                 const std::string& remote) {
  // Who: the master key (the break-glass admin) or an admin token; anything else is a 401
  // before any handler runs.
  const std::string key = presentedKey(req, query);
  const auto& master = snap.cfg->auth.master_key;
  admin::Caller caller;
  caller.address = remote;
  std::string csrf;  // a console session's CSRF token (OIDC); bearer keys need none
  if (!key.empty() && !master.empty() && constantTimeEquals(key, master)) {
    caller.role = admin::Role::Admin;
    caller.actor = "master key";
  } else if (key.starts_with(admin::kAdminTokenScheme)) {
    admin::AdminApi::TokenCheck check = co_await api_.authenticateToken(key, remote);
    if (!check.caller) co_return refusal(401, "invalid_api_key", check.why);
    caller = std::move(*check.caller);
    caller.kind = "token";
  } else {
    // A console session (auth.oidc), when no key came: the cookie alone does not make a write;
    // the page's CSRF token must come with it, so another site cannot make the browser write here.
    auth::OidcService::SessionCheck session;
    if (key.empty() && oidc_) session = co_await oidc_->authenticate(*snap.cfg, req, remote);
    if (!session.present)
      co_return refusal(401, "invalid_api_key",
                        "the admin API takes the master key or an admin token: 'Authorization: Bearer KEY'");
    if (!session.caller) co_return refusal(401, "session_expired", session.why);
    if (!isRead(req.method()) && !auth::OidcService::csrfAllows(req, session.csrf_token))
      co_return refusal(403, "csrf",
                        fmt::format("a write with the console session cookie needs the session's CSRF token in the "
                                    "{} header (from GET /admin/api/me), from the console's own origin",
                                    auth::kCsrfHeader));
    caller = std::move(*session.caller);
    csrf = std::move(session.csrf_token);
  }

  const bhttp::verb method = req.method();
  // The role table matches whole segments, but the stored-object handlers skip empty ones: with
  // "/tokens/" or "//tokens" the table would find no entry (so no role check) and the handler
  // would still serve /tokens. A path with an empty segment is no endpoint, for any role.
  auto noEndpoint = [&] {
    return refusal(404, "not_found",
                   fmt::format("no admin endpoint {} {}; the endpoints are listed at /admin/api/openapi.json",
                               std::string(bhttp::to_string(method)), path.substr(0, 200)));
  };
  if (path.size() < 2 || path.find("//") != std::string::npos || path.ends_with('/')) co_return noEndpoint();
  if (path == "/me" && method == bhttp::verb::get) {
    http::Response res{bhttp::status::ok, 11};
    res.set(bhttp::field::content_type, "application/json");
    json::object me{{"actor", caller.actor}, {"role", admin::roleName(caller.role)}, {"kind", caller.kind}};
    if (caller.kind == "oidc") {
      me["subject"] = caller.subject;
      me["email"] = caller.email;
      me["name"] = caller.name;
      me["csrf_token"] = csrf;
    }
    if (caller.team_id) me["team_id"] = *caller.team_id;  // a member token's team
    res.set(bhttp::field::cache_control, "no-store");
    res.body() = json::serialize(me);
    co_return res;
  }

  // May they: the one table. A member passes where the table lets them reach their own teams;
  // the handlers narrow it. What the table does not know reaches the handlers (their 404 / 405)
  // only for an admin: whatever way a path might be spelled so that a handler serves it but the
  // table misses it, no other role gets past here with it.
  const bool memberScoped = caller.role == admin::Role::Member && admin::teamScoped(method, path);
  const auto need = admin::requiredRole(method, path);
  if (!need && caller.role < admin::Role::Admin && !memberScoped) co_return noEndpoint();
  if (need && caller.role < *need && !memberScoped) {
    co_return refusal(
        403, "forbidden",
        fmt::format("{} /admin/api{} needs the {} role; {} has the {} role", std::string(bhttp::to_string(method)),
                    path, admin::roleName(*need), caller.actor, admin::roleName(caller.role)));
  }

  auto dispatch = [&](const http::Request& q, const std::string& p) -> net::awaitable<http::Response> {
    std::optional<http::Response> live = co_await live_.handle(snap, pool, q, p);
    if (live) co_return std::move(*live);
    http::Response res = co_await api_.handle(q, p, query, caller);
    co_return res;
  };

  if (isRead(method)) {
    http::Response res = co_await dispatch(req, path);
    co_return res;
  }

  // A write: the object as it was (what a GET of it answers, when there is one), the write,
  // then one audit row if it succeeded.
  const std::string action = actionOf(method, path);
  json::value before = nullptr;
  if (action != "create" && action != "reload") {
    const std::string object = targetOf(path, action, nullptr);
    http::Request get{bhttp::verb::get, "/admin/api" + object, 11};
    if (admin::requiredRole(bhttp::verb::get, object)) {
      http::Response was = co_await dispatch(get, object);
      if (was.result_int() == 200) before = auditBody(was);
    } else if (constexpr std::string_view kUpstream = "/upstream-keys/"; object.starts_with(kUpstream)) {
      // An upstream key has no GET of its own: its entry as GET /upstream-keys lists it.
      before = LiveAdmin::upstreamKeyStatus(snap, std::string_view(object).substr(kUpstream.size()));
    }
  }
  http::Response res = co_await dispatch(req, path);
  const int status = res.result_int();
  if (status >= 200 && status < 300) {
    json::value after = method == bhttp::verb::delete_ ? json::value(nullptr) : auditBody(res);
    store::AuditEntry e;
    e.time_ms = unixNowMs();
    e.actor = caller.actor;
    e.role = admin::roleName(caller.role);
    e.address = remote;
    e.action = action;
    e.method = std::string(bhttp::to_string(method));
    e.path = path;
    e.target = targetOf(path, action, after);
    e.status = status;
    e.before = json::serialize(before);
    e.after = json::serialize(after);
    co_await api_.appendAudit(std::move(e));
  }
  co_return res;
}

}  // namespace sluice::gateway
