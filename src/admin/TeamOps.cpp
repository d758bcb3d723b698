#include "admin/TeamOps.hpp"

#include <fmt/format.h>
#include <boost/json/value.hpp>

#include <algorithm>
#include <tuple>

#include "admin/Fields.hpp"
#include "core/Ascii.hpp"

namespace sluice::admin {

namespace json = boost::json;

namespace {

bool nameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// An e-mail address as OIDC providers send it: one '@' between a non-empty local part and a
// domain, no spaces, quotes or control characters (what a person reads in a list stays what
// the provider will send).
bool plausibleEmail(std::string_view s) {
  const auto at = s.find('@');
  if (at == std::string_view::npos || at == 0 || at + 1 >= s.size() || s.find('@', at + 1) != std::string_view::npos)
    return false;
  return std::none_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' || c == ',' || c == ';';
  });
}

store::TeamMember memberField(const json::value& v, const std::string& param) {
  const char* shape = "{\"email\": \"ada@example.com\"} or {\"subject\": \"the OIDC sub claim\"}";
  if (!v.is_object() || v.as_object().size() != 1)
    throw FieldError(param, fmt::format("{} must be {}; got {}", param, shape, describeJson(v)));
  const auto& [k, val] = *v.as_object().begin();
  if (k == "email") {
    std::string e = textField(val, param + ".email", 3, kMaxEmail);
    if (!plausibleEmail(e))
      throw FieldError(param + ".email",
                       fmt::format("{}.email must be an e-mail address such as \"ada@example.com\"; got {}", param,
                                   describeJson(val)));
    return {"email", lower(e)};
  }
  if (k == "subject") {
    std::string sub = textField(val, param + ".subject", 1, kMaxSubject);
    if (std::any_of(sub.begin(), sub.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }))
      throw FieldError(param + ".subject", param + ".subject must be ASCII, as OIDC subjects are");
    return {"subject", std::move(sub)};
  }
  throw FieldError(param, fmt::format("{} must be {}; got a member named \"{}\"", param, shape,
                                      k.size() > 32 ? "(a long name)" : lower(std::string_view(k.data(), k.size()))));
}

std::vector<store::TeamMember> memberList(const json::value& v, std::string_view param) {
  if (!v.is_array()) throw FieldError(std::string(param), fmt::format("{} must be an array of members", param));
  const auto& a = v.as_array();
  if (a.size() > kMaxTeamMembers)
    throw FieldError(std::string(param), fmt::format("{} has {} members; a team has at most {}", param, a.size(),
                                                     kMaxTeamMembers));
  std::vector<store::TeamMember> out;
  for (std::size_t i = 0; i < a.size(); ++i) out.push_back(memberField(a[i], fmt::format("{}[{}]", param, i)));
  return out;
}

void addUnique(std::vector<store::TeamMember>& to, const store::TeamMember& m) {
  if (std::find(to.begin(), to.end(), m) == to.end()) to.push_back(m);
}

std::optional<std::int64_t> teamLimit(const json::value& v, std::string_view param) {
  return limitField(v, param);
}

}  // namespace

bool validTeamName(std::string_view name) {
  if (name.empty() || name.size() > kMaxTeamName) return false;
  if (!std::all_of(name.begin(), name.end(), nameChar)) return false;
  if (name.front() == '.' || name.front() == '_' || name.front() == '-') return false;
  return !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void applyTeamFields(store::Team& team, const json::object& body, bool creating) {
  rejectUnknownFields(body,
                      {"name", "rpm", "tpm", "budget_daily_usd", "budget_monthly_usd", "budget_total_usd", "members",
                       "add_members", "remove_members"},
                      {"id", "keys", "spend", "created_at_ms", "updated_at_ms"});
  if (const auto* v = body.if_contains("name")) {
    if (!v->is_string())
      throw FieldError("name", "name must be a string such as \"search-team\"; got " + describeJson(*v));
    const auto& s = v->get_string();
    if (!validTeamName(std::string_view(s.data(), s.size())))
      throw FieldError("name", fmt::format("name must be 1 to {} letters, digits, '.', '_' or '-', start with a letter "
                                           "or digit and not be all digits, such as \"search-team\"; got {}",
                                           kMaxTeamName, s.size() > 80 ? "a longer one" : describeJson(*v)));
    team.name = std::string(s.data(), s.size());
  } else if (creating) {
    throw FieldError("name", "name is required: the team's name, such as \"search-team\"");
  }
  if (const auto* v = body.if_contains("rpm")) team.rpm = teamLimit(*v, "rpm");
  if (const auto* v = body.if_contains("tpm")) team.tpm = teamLimit(*v, "tpm");
  if (const auto* v = body.if_contains("budget_daily_usd")) team.budget_daily_usd = budgetField(*v, "budget_daily_usd");
  if (const auto* v = body.if_contains("budget_monthly_usd"))
    team.budget_monthly_usd = budgetField(*v, "budget_monthly_usd");
  if (const auto* v = body.if_contains("budget_total_usd")) team.budget_total_usd = budgetField(*v, "budget_total_usd");
  const auto* members = body.if_contains("members");
  const auto* add = body.if_contains("add_members");
  const auto* remove = body.if_contains("remove_members");
  if (members && (add || remove))
    throw FieldError(add ? "add_members" : "remove_members",
                     "give members (the whole list) or add_members / remove_members (changes to it), not both");
  if (members) {
    team.members.clear();
    for (const auto& m : memberList(*members, "members")) addUnique(team.members, m);
  }
  if (remove)
    for (const auto& m : memberList(*remove, "remove_members"))
      team.members.erase(std::remove(team.members.begin(), team.members.end(), m), team.members.end());
  if (add)
    for (const auto& m : memberList(*add, "add_members")) addUnique(team.members, m);
  if (team.members.size() > kMaxTeamMembers)
    throw FieldError("add_members", fmt::format("a team has at most {} members", kMaxTeamMembers));
  std::sort(team.members.begin(), team.members.end(), [](const store::TeamMember& a, const store::TeamMember& b) {
    return std::tie(a.kind, a.value) < std::tie(b.kind, b.value);
  });
}

bool isTeamMember(const store::Team& team, std::string_view subject, std::string_view email) {
  for (const auto& m : team.members) {
    if (m.kind == "subject" && !subject.empty() && m.value == subject) return true;
    if (m.kind == "email" && !email.empty() && sluice::iequals(m.value, email)) return true;
  }
  return false;
}

json::object teamJson(const store::Team& t, std::int64_t keys, const store::KeySpend& spend) {
  auto opt = [](const auto& o) { return o ? json::value(*o) : json::value(nullptr); };
  json::array members;
  for (const auto& m : t.members) members.push_back(json::object{{m.kind, m.value}});
  return json::object{
      {"id", t.id},
      {"name", t.name},
      {"rpm", opt(t.rpm)},
      {"tpm", opt(t.tpm)},
      {"budget_daily_usd", opt(t.budget_daily_usd)},
      {"budget_monthly_usd", opt(t.budget_monthly_usd)},
      {"budget_total_usd", opt(t.budget_total_usd)},
      {"members", std::move(members)},
      {"keys", keys},
      {"spend",
       json::object{{"day_usd", spend.day_usd}, {"month_usd", spend.month_usd}, {"total_usd", spend.total_usd}}},
      {"created_at_ms", t.created_at_ms},
      {"updated_at_ms", t.updated_at_ms},
  };
}

}  // namespace sluice::admin
