#include "admin/TokenOps.hpp"

#include <fmt/format.h>
#include <boost/json/value.hpp>

#include "admin/Fields.hpp"
#include "admin/Roles.hpp"
#include "config/Scalars.hpp"
#include "core/JsonText.hpp"
#include "pipeline/VirtualKeySecret.hpp"

namespace sluice::admin {

namespace json = boost::json;

namespace {

json::value optInt(const std::optional<std::int64_t>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

constexpr std::int64_t kMaxExpiresInS = 10LL * 365 * 86'400;  // ten years

std::int64_t expiresInField(const json::value& v) {
  if (v.is_string()) {
    const auto& s = v.get_string();
    const auto d = config::parseDuration(std::string_view(s.data(), s.size()));
    if (!d || d->count() < 1000 || d->count() / 1000 > kMaxExpiresInS)
      throw FieldError("expires_in", fmt::format("expires_in must be a duration from 1s to 10 years, such as \"90d\" "
                                                 "or \"12h\", or a number of seconds; got {}",
                                                 describeJson(v)));
    return d->count();
  }
  return integerField(v, "expires_in", 1, kMaxExpiresInS) * 1000;
}

}  // namespace

json::object tokenView(const store::AdminToken& t, std::int64_t now_ms) {
  const char* status = t.revoked_at_ms                                   ? "revoked"
                       : (t.expires_at_ms && *t.expires_at_ms <= now_ms) ? "expired"
                                                                         : "active";
  return json::object{{"id", t.id},
                      {"name", t.name},
                      {"role", t.role},
                      {"token_prefix", t.token_prefix},
                      {"status", status},
                      {"expires_at_ms", optInt(t.expires_at_ms)},
                      {"revoked_at_ms", optInt(t.revoked_at_ms)},
                      {"created_by", t.created_by},
                      {"created_at_ms", t.created_at_ms},
                      {"team_id", optInt(t.team_id)}};
}

store::AdminToken newToken(const json::object& body, const std::string& created_by, std::int64_t now_ms,
                           std::string& secret) {
  rejectUnknownFields(
      body, {"name", "role", "expires_in", "team"},
      {"id", "token_prefix", "status", "expires_at_ms", "revoked_at_ms", "created_by", "created_at_ms"});
  store::AdminToken t;
  const auto* name = body.if_contains("name");
  if (!name) throw FieldError("name", "name is required: who or what uses the token, e.g. \"ci-deploy\"");
  t.name = textField(*name, "name", 1, 128);
  const auto* role = body.if_contains("role");
  if (!role) throw FieldError("role", "role is required: admin, operator, viewer, or member (with a team)");
  const std::string r = textField(*role, "role", 1, 16);
  const auto parsed = parseRole(r);
  if (!parsed)
    throw FieldError("role", fmt::format("role must be admin, operator, viewer or member; got \"{}\"", r));
  // A member token works for one team (the caller resolves `team`); other roles see every team.
  const auto* team = body.if_contains("team");
  if (*parsed == Role::Member && (!team || team->is_null()))
    throw FieldError("team", "a member token needs a team: \"team\": the team's id or name");
  if (*parsed != Role::Member && team)
    throw FieldError("team", fmt::format("only member tokens have a team; a {} token reaches every team", r));
  t.role = roleName(*parsed);
  if (const auto* e = body.if_contains("expires_in"); e && !e->is_null()) t.expires_at_ms = now_ms + expiresInField(*e);
  secret = pipeline::generateSecret(kAdminTokenScheme, kAdminTokenRandomChars);
  t.token_hash = pipeline::hashVirtualKeySecret(secret);
  t.token_prefix = secret.substr(0, kAdminTokenScheme.size() + 5);
  t.created_by = created_by;
  return t;
}

json::object auditView(const store::AuditEntry& e) {
  boost::system::error_code ec;
  json::value before = sluice::parseJson(e.before, ec);
  if (ec) before = nullptr;
  json::value after = sluice::parseJson(e.after, ec);
  if (ec) after = nullptr;
  return json::object{{"id", e.id},
                      {"time_ms", e.time_ms},
                      {"actor", e.actor},
                      {"role", e.role},
                      {"address", e.address},
                      {"action", e.action},
                      {"method", e.method},
                      {"path", e.path},
                      {"target", e.target},
                      {"status", e.status},
                      {"before", std::move(before)},
                      {"after", std::move(after)}};
}

}  // namespace sluice::admin
