// Roles: who may call which admin endpoint, in one table. The master key is the break-glass
// admin; scoped admin tokens (/admin/api/tokens) carry one role each:
//   admin     everything, including tokens and the audit log
//   operator  channels, upstream keys, virtual keys, MCP servers, settings, reload
//   viewer    reads: dashboards, usage, logs without bodies, the running config (masked)
//   member    who they are (/me), the API document, and the keys, usage and teams of their own
//             teams (endpoints marked team-scoped; the handlers narrow what they see and touch)
// An endpoint not in the table is left to the handlers (404 or 405): the table never widens
// what a path does, it only narrows who reaches it.
// Thread-safety: pure functions over constant data.
#pragma once
#include <ostream>  // before verb.hpp: Boost 1.81's string_view streams itself without including it

#include <boost/beast/http/verb.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sluice::admin {

enum class Role { Member = 0, Viewer = 1, Operator = 2, Admin = 3 };

std::optional<Role> parseRole(std::string_view name);  // "admin" | "operator" | "viewer" | "member"
const char* roleName(Role role);

// Who calls the admin API, as the gateway authenticated them.
struct Caller {
  Role role = Role::Admin;
  std::string actor = "master key";  // "master key" | "token:NAME" | "oidc:SUBJECT <EMAIL>"
  std::string address;               // the client address
  // Who it is beyond the role (AdminGate sets kind; the identity comes with an OIDC session):
  // what team membership (by OIDC subject or e-mail) is looked up by.
  std::string kind = "master_key";  // "master_key" | "token" | "oidc"
  std::string subject;              // the IdP's sub (oidc only)
  std::string email;                // the ID token's email (oidc; may be empty)
  std::string name;                 // a display name (oidc: name or preferred_username)
  // A member token's team (a member token names exactly one); team membership is otherwise by
  // the OIDC subject or e-mail above, the e-mail compared without case.
  std::optional<std::int64_t> team_id;
};

struct RoleRule {
  boost::beast::http::verb method;
  std::string_view path;  // under /admin/api; "{x}" matches one non-empty segment
  Role role;              // the least role that may call it
  // A member reaches it too, for their own teams only (keys, usage and teams of those).
  bool team_scoped = false;
};

// The whole table, for the OpenAPI document and its test.
std::span<const RoleRule> roleTable();

// The least role `method path` needs (path under /admin/api, without the query), or nullopt
// when no endpoint has that method and path.
std::optional<Role> requiredRole(boost::beast::http::verb method, std::string_view path);
// Whether a member may call `method path` for their own teams (RoleRule::team_scoped).
bool teamScoped(boost::beast::http::verb method, std::string_view path);

}  // namespace sluice::admin
