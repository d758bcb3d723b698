// Team fields as POST/PATCH /admin/api/teams takes them: names that never read as ids, members
// by e-mail (kept in lower case) or OIDC subject, and who belongs.
#include "admin/TeamOps.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>

#include "admin/Fields.hpp"

namespace sluice::admin {
namespace {
namespace team_ops_test {

namespace json = boost::json;

store::Team apply(store::Team t, std::string_view body, bool creating) {
  applyTeamFields(t, json::parse(body).as_object(), creating);
  return t;
}

std::string refusedParam(std::string_view body, bool creating = true) {
  try {
    apply({}, body, creating);
  } catch (const FieldError& e) {
    return e.param();
  }
  return "(accepted)";
}

TEST(TeamOps, NamesAreSafeAndNeverLookLikeIds) {
  for (const char* ok : {"search", "a", "Team_2", "x.y-z", "1st"}) EXPECT_TRUE(validTeamName(ok)) << ok;
  for (const char* bad : {"", "123", "-x", ".x", "_x", "a b", "a/b", "a\nb", "caf\xc3\xa9", "<b>"})
    EXPECT_FALSE(validTeamName(bad)) << bad;
  EXPECT_TRUE(validTeamName(std::string(64, 'a')));
  EXPECT_FALSE(validTeamName(std::string(65, 'a')));
}

TEST(TeamOps, CreateTakesLimitsBudgetsAndMembersNormalized) {
  const auto t = apply({}, R"({"name":"search","rpm":60,"tpm":1000,"budget_daily_usd":1.5,"budget_total_usd":0,
    "members":[{"subject":"auth0|42"},{"email":"Ada@Example.COM"},{"email":"ada@example.com"}]})", true);
  EXPECT_EQ(t.name, "search");
  EXPECT_EQ(t.rpm, 60);
  EXPECT_EQ(t.tpm, 1000);
  EXPECT_DOUBLE_EQ(*t.budget_daily_usd, 1.5);
  EXPECT_FALSE(t.budget_monthly_usd);
  EXPECT_DOUBLE_EQ(*t.budget_total_usd, 0);
  ASSERT_EQ(t.members.size(), 2u);  // the same address twice is one member
  EXPECT_EQ(t.members[0], (store::TeamMember{"email", "ada@example.com"}));
  EXPECT_EQ(t.members[1], (store::TeamMember{"subject", "auth0|42"}));
}

TEST(TeamOps, PatchAddsAndRemovesMembersAndClearsLimits) {
  store::Team t;
  t.name = "search";
  t.rpm = 5;
  t.members = {{"email", "ada@example.com"}, {"subject", "s1"}};
  t = apply(t, R"({"add_members":[{"email":"bob@example.com"}],"remove_members":[{"subject":"s1"}],"rpm":null})", false);
  EXPECT_EQ(t.name, "search");
  EXPECT_FALSE(t.rpm);
  ASSERT_EQ(t.members.size(), 2u);
  EXPECT_EQ(t.members[1].value, "bob@example.com");
  t = apply(t, R"({"members":[]})", false);
  EXPECT_TRUE(t.members.empty());
}

TEST(TeamOps, EachBadFieldIsNamed) {
  EXPECT_EQ(refusedParam("{}"), "name");
  EXPECT_EQ(refusedParam(R"({"name":"42"})"), "name");
  EXPECT_EQ(refusedParam(R"({"name":"ok","id":1})"), "id");
  EXPECT_EQ(refusedParam(R"({"name":"ok","rpm":0})"), "rpm");
  EXPECT_EQ(refusedParam(R"({"name":"ok","budget_monthly_usd":-1})"), "budget_monthly_usd");
  EXPECT_EQ(refusedParam(R"({"name":"ok","members":{}})"), "members");
  EXPECT_EQ(refusedParam(R"({"name":"ok","members":["a@b"]})"), "members[0]");
  EXPECT_EQ(refusedParam(R"({"name":"ok","members":[{"email":"a@b@c"}]})"), "members[0].email");
  EXPECT_EQ(refusedParam(R"({"name":"ok","members":[{"email":"a@b\r\nBcc: c@d"}]})"), "members[0].email");
  EXPECT_EQ(refusedParam(R"({"name":"ok","members":[{"subject":"\u00fc"}]})"), "members[0].subject");
  EXPECT_EQ(refusedParam(R"({"name":"ok","members":[{"email":"a@b","subject":"s"}]})"), "members[0]");
  EXPECT_EQ(refusedParam(R"({"members":[],"add_members":[]})", false), "add_members");
}

TEST(TeamOps, MembershipBySubjectExactlyAndEmailWithoutCase) {
  store::Team t;
  t.members = {{"email", "ada@example.com"}, {"subject", "auth0|42"}};
  EXPECT_TRUE(isTeamMember(t, "", "ADA@example.com"));
  EXPECT_TRUE(isTeamMember(t, "auth0|42", ""));
  EXPECT_FALSE(isTeamMember(t, "AUTH0|42", ""));
  EXPECT_FALSE(isTeamMember(t, "", ""));
  EXPECT_FALSE(isTeamMember(t, "ada@example.com", "auth0|42"));  // a subject is not an e-mail
}

}  // namespace team_ops_test
}  // namespace
}  // namespace sluice::admin
