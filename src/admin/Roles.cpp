#include "admin/Roles.hpp"

#include <vector>

namespace sluice::admin {

namespace {

using V = boost::beast::http::verb;

// Reads need viewer (log bodies need operator: AdminApi leaves them out below it); changes to
// what the gateway serves need operator; who may change the admin plane itself, admin.
constexpr RoleRule kTable[] = {
    {V::get, "/me", Role::Member},
    {V::get, "/openapi.json", Role::Member},
    // Request logs, usage, dashboards.
    {V::get, "/logs", Role::Viewer},
    {V::get, "/logs/{id}", Role::Viewer},
    {V::get, "/usage", Role::Viewer, true},
    {V::get, "/stats", Role::Viewer},
    // Virtual keys; a member manages those of their teams.
    {V::get, "/keys", Role::Viewer, true},
    {V::post, "/keys", Role::Operator, true},
    {V::get, "/keys/{id}", Role::Viewer, true},
    {V::patch, "/keys/{id}", Role::Operator, true},
    {V::delete_, "/keys/{id}", Role::Operator, true},
    {V::post, "/keys/{id}/revoke", Role::Operator, true},
    // Teams: operators and admins make and change them; a member reads their own.
    {V::get, "/teams", Role::Viewer, true},
    {V::post, "/teams", Role::Operator},
    {V::get, "/teams/{id}", Role::Viewer, true},
    {V::patch, "/teams/{id}", Role::Operator},
    {V::delete_, "/teams/{id}", Role::Operator},
    // Channels and their upstream keys.
    {V::get, "/channels", Role::Viewer},
    {V::post, "/channels", Role::Operator},
    {V::get, "/channels/{id}", Role::Viewer},
    {V::patch, "/channels/{id}", Role::Operator},
    {V::delete_, "/channels/{id}", Role::Operator},
    {V::get, "/channels/{id}/keys", Role::Viewer},
    {V::post, "/channels/{id}/keys", Role::Operator},
    {V::get, "/channels/{id}/keys/{key_id}", Role::Viewer},
    {V::patch, "/channels/{id}/keys/{key_id}", Role::Operator},
    {V::delete_, "/channels/{id}/keys/{key_id}", Role::Operator},
    // MCP servers behind /mcp.
    {V::get, "/mcp-servers", Role::Viewer},
    {V::post, "/mcp-servers", Role::Operator},
    {V::get, "/mcp-servers/{id}", Role::Viewer},
    {V::patch, "/mcp-servers/{id}", Role::Operator},
    {V::delete_, "/mcp-servers/{id}", Role::Operator},
    // The upstream keys' live health.
    {V::get, "/upstream-keys", Role::Viewer},
    {V::post, "/upstream-keys/{ref}/enable", Role::Operator},
    {V::post, "/upstream-keys/{ref}/disable", Role::Operator},
    {V::post, "/upstream-keys/{ref}/probe", Role::Operator},
    // The running gateway.
    {V::get, "/config", Role::Viewer},
    {V::post, "/reload", Role::Operator},
    {V::get, "/model-discovery", Role::Viewer},
    {V::get, "/pricing", Role::Viewer},
    {V::get, "/settings", Role::Viewer},
    {V::patch, "/settings", Role::Operator},
    // The admin plane itself.
    {V::get, "/tokens", Role::Admin},
    {V::post, "/tokens", Role::Admin},
    {V::get, "/tokens/{id}", Role::Admin},
    {V::delete_, "/tokens/{id}", Role::Admin},
    {V::post, "/tokens/{id}/revoke", Role::Admin},
    {V::get, "/audit", Role::Admin},
};

bool matches(std::string_view tmpl, std::string_view path) {
  // Segment by segment; "{x}" takes one non-empty segment.
  while (!tmpl.empty() || !path.empty()) {
    if (tmpl.empty() || path.empty() || tmpl.front() != '/' || path.front() != '/') return false;
    tmpl.remove_prefix(1);
    path.remove_prefix(1);
    const auto te = tmpl.find('/'), pe = path.find('/');
    const std::string_view t = tmpl.substr(0, te), p = path.substr(0, pe);
    if (p.empty()) return false;
    if (!(t.starts_with('{') && t.ends_with('}')) && t != p) return false;
    tmpl.remove_prefix(te == std::string_view::npos ? tmpl.size() : te);
    path.remove_prefix(pe == std::string_view::npos ? path.size() : pe);
  }
  return true;
}

}  // namespace

std::optional<Role> parseRole(std::string_view name) {
  if (name == "admin") return Role::Admin;
  if (name == "operator") return Role::Operator;
  if (name == "viewer") return Role::Viewer;
  if (name == "member") return Role::Member;
  return std::nullopt;
}

const char* roleName(Role role) {
  switch (role) {
    case Role::Admin:
      return "admin";
    case Role::Operator:
      return "operator";
    case Role::Viewer:
      return "viewer";
    case Role::Member:
      return "member";
  }
  return "member";
}

std::span<const RoleRule> roleTable() {
  return kTable;
}

std::optional<Role> requiredRole(boost::beast::http::verb method, std::string_view path) {
  for (const auto& r : kTable)
    if (r.method == method && matches(r.path, path)) return r.role;
  return std::nullopt;
}

bool teamScoped(boost::beast::http::verb method, std::string_view path) {
  for (const auto& r : kTable)
    if (r.method == method && matches(r.path, path)) return r.team_scoped;
  return false;
}

}  // namespace sluice::admin
