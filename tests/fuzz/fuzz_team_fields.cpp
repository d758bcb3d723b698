// The admin API's team fields (admin/TeamOps.hpp) on untrusted bodies: what a POST or PATCH
// /admin/api/teams may carry. Input: [mode] [JSON body]; mode bit 0 applies the body as a PATCH
// to a stored team with two members, else as a create.
// Checks: no crash; a refusal is a FieldError naming a field; an accepted team has a valid
// name (never one that reads as an id), positive limits, finite non-negative budgets, at most
// kMaxTeamMembers members, each a subject (ASCII, no control byte, 1-255 bytes) or a lower-case
// e-mail with one '@', no duplicates, in order; every member is found by isTeamMember; its JSON
// round-trips.
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "FuzzUtil.hpp"
#include "admin/Fields.hpp"
#include "admin/TeamOps.hpp"

using namespace sluice;

namespace {

bool controlOrSpace(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u <= 0x20 || u == 0x7f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool patch = data[0] & 1;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return 0;

  store::Team t;
  if (patch) {
    t.id = 7;
    t.name = "stored";
    t.members = {{"email", "ada@example.com"}, {"subject", "auth0|42"}};
  }
  try {
    admin::applyTeamFields(t, v.as_object(), !patch);
  } catch (const admin::FieldError& e) {
    // An unknown member named "" is refused under its own (empty) name.
    if (e.param().empty() && !v.as_object().contains("")) fuzz::fail("a refusal that names no field", body);
    if (std::string_view(e.what()).empty()) fuzz::fail("a refusal without a reason", body);
    return 0;
  }
  if (!admin::validTeamName(t.name)) fuzz::fail("an accepted invalid name", t.name);
  if (std::all_of(t.name.begin(), t.name.end(), [](char c) { return c >= '0' && c <= '9'; }))
    fuzz::fail("a name that reads as an id", t.name);
  for (const auto& l : {t.rpm, t.tpm})
    if (l && *l <= 0) fuzz::fail("a limit that is not positive", body);
  for (const auto& b : {t.budget_daily_usd, t.budget_monthly_usd, t.budget_total_usd})
    if (b && (!std::isfinite(*b) || *b < 0)) fuzz::fail("a budget out of bounds", body);
  if (t.members.size() > admin::kMaxTeamMembers) fuzz::fail("too many members accepted", body);
  for (std::size_t i = 0; i < t.members.size(); ++i) {
    const auto& m = t.members[i];
    if (i > 0 && !(std::tie(t.members[i - 1].kind, t.members[i - 1].value) < std::tie(m.kind, m.value)))
      fuzz::fail("members out of order or repeated", body);
    if (m.kind == "subject") {
      if (m.value.empty() || m.value.size() > admin::kMaxSubject ||
          std::any_of(m.value.begin(), m.value.end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f; }))
        fuzz::fail("a subject past the checks", m.value);
      if (!admin::isTeamMember(t, m.value, "")) fuzz::fail("a subject member not found", m.value);
    } else if (m.kind == "email") {
      if (m.value.size() < 3 || m.value.size() > admin::kMaxEmail || std::count(m.value.begin(), m.value.end(), '@') != 1 ||
          std::any_of(m.value.begin(), m.value.end(), controlOrSpace) ||
          std::any_of(m.value.begin(), m.value.end(), [](char c) { return c >= 'A' && c <= 'Z'; }))
        fuzz::fail("an e-mail past the checks", m.value);
      std::string upper = m.value;
      for (auto& c : upper)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      if (!admin::isTeamMember(t, "", upper)) fuzz::fail("an e-mail member not found without case", m.value);
    } else {
      fuzz::fail("a member of another kind", m.kind);
    }
  }
  const std::string shown = boost::json::serialize(admin::teamJson(t, 0, {}));
  boost::json::value back = boost::json::parse(shown, ec);
  if (ec || back.at("name") != t.name.c_str() || back.at("members").as_array().size() != t.members.size())
    fuzz::fail("a team whose JSON does not round-trip", shown);
  return 0;
}
