// Teams (/admin/api/teams): which fields a client may write and how they are checked, the JSON
// a team is shown in, and who belongs to it. Apart from the dispatch in AdminApi.cpp so the
// fuzz harness drives the same checks. Pure functions; thread-safe.
#pragma once
#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "store/Store.hpp"

namespace sluice::admin {

inline constexpr std::size_t kMaxTeamName = 64;
inline constexpr std::size_t kMaxTeamMembers = 1000;
inline constexpr std::size_t kMaxSubject = 255;  // OpenID Connect Core 1.0 §2: "sub" is at most 255 ASCII characters
inline constexpr std::size_t kMaxEmail = 254;    // RFC 5321 §4.5.3.1.3 path limit, less the brackets

// A team name: 1-64 of A-Z a-z 0-9 . _ -, starting with a letter or digit, not all digits (a
// path names a team by id or name, so a name never looks like an id).
bool validTeamName(std::string_view name);

// Checks the fields in `body` and applies them to `team`; an absent field stays as it is.
// Writable: name (required when creating), rpm, tpm, budget_daily_usd, budget_monthly_usd,
// budget_total_usd (null removes one), members (replaces the list), add_members and
// remove_members (PATCH: change it). A member is {"email": "..."} or {"subject": "..."}; e-mail
// addresses are kept in lower case. Throws FieldError naming the first bad field.
void applyTeamFields(store::Team& team, const boost::json::object& body, bool creating);

// Whether an OIDC identity belongs to the team: its subject exactly, its e-mail without case.
bool isTeamMember(const store::Team& team, std::string_view subject, std::string_view email);

// {id, name, rpm, tpm, budget_daily_usd, budget_monthly_usd, budget_total_usd, members: [{email}
// | {subject}], keys (how many virtual keys it has), spend {day_usd, month_usd, total_usd} (the sum
// of its keys'), created_at_ms, updated_at_ms}.
boost::json::object teamJson(const store::Team& team, std::int64_t keys, const store::KeySpend& spend);

}  // namespace sluice::admin
