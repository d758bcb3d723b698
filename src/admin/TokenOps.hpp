// Scoped admin tokens (/admin/api/tokens) and the audit log (/admin/api/audit): their JSON
// views and the validation of a new token, apart from the dispatch in AdminApi.cpp.
// Pure functions over store rows; thread-safe.
#pragma once
#include <boost/json/object.hpp>

#include <cstdint>
#include <string>

#include "store/Store.hpp"

namespace sluice::admin {

inline constexpr std::string_view kAdminTokenScheme = "sk-sla-";
inline constexpr std::size_t kAdminTokenRandomChars = 40;

// {id, name, role, token_prefix, status (active | revoked | expired), expires_at_ms,
// revoked_at_ms, created_by, created_at_ms, team_id}: never the hash.
boost::json::object tokenView(const store::AdminToken& t, std::int64_t now_ms);

// A new token from a POST body {name, role, team?, expires_in?}: name 1-128 characters, role one
// of admin / operator / viewer / member; team (an id or a name, which the caller resolves and
// sets on the row) is required with member and refused with the others;
// expires_in a number of seconds or a duration ("90d", "12h"). Throws FieldError. The secret
// is made here and returned; the row holds its hash and prefix.
store::AdminToken newToken(const boost::json::object& body, const std::string& created_by, std::int64_t now_ms,
                           std::string& secret);

// One audit row as the API shows it: before and after as JSON values.
boost::json::object auditView(const store::AuditEntry& e);

}  // namespace sluice::admin
