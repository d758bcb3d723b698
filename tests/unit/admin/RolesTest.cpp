// The role table: every admin endpoint has a role, the paths match segment by segment, and the
// order of the roles is what the rest of the code compares.
#include <gtest/gtest.h>

#include <boost/beast/http/verb.hpp>

#include "admin/AdminApi.hpp"
#include "admin/Roles.hpp"

namespace sluice::admin {
namespace {

namespace bhttp = boost::beast::http;

TEST(Roles, EveryStoredEndpointHasARole) {
  for (const auto& [method, path] : AdminApi::routes()) {
    const auto verb = bhttp::string_to_verb(method);
    // "{id}" in the route is any segment: try it with a value.
    std::string concrete;
    for (std::size_t i = 0; i < path.size(); ++i) {
      if (path[i] == '{') {
        concrete += "7";
        i = path.find('}', i);
      } else {
        concrete += path[i];
      }
    }
    EXPECT_TRUE(requiredRole(verb, concrete).has_value()) << method << " " << path << " has no role";
  }
}

TEST(Roles, ReadsAreForViewersChangesForOperatorsTheAdminPlaneForAdmins) {
  EXPECT_EQ(requiredRole(bhttp::verb::get, "/logs"), Role::Viewer);
  EXPECT_EQ(requiredRole(bhttp::verb::get, "/logs/42"), Role::Viewer);
  EXPECT_EQ(requiredRole(bhttp::verb::patch, "/keys/3"), Role::Operator);
  EXPECT_EQ(requiredRole(bhttp::verb::post, "/keys/3/revoke"), Role::Operator);
  EXPECT_EQ(requiredRole(bhttp::verb::post, "/upstream-keys/ch%2F1/disable"), Role::Operator);
  EXPECT_EQ(requiredRole(bhttp::verb::patch, "/settings"), Role::Operator);
  EXPECT_EQ(requiredRole(bhttp::verb::post, "/reload"), Role::Operator);
  EXPECT_EQ(requiredRole(bhttp::verb::post, "/tokens"), Role::Admin);
  EXPECT_EQ(requiredRole(bhttp::verb::get, "/audit"), Role::Admin);
  EXPECT_EQ(requiredRole(bhttp::verb::get, "/me"), Role::Member);
}

TEST(Roles, MembersReachTheirTeamsKeysUsageAndTeamsOnly) {
  for (const auto& [m, p] : {std::pair{bhttp::verb::get, "/keys"}, {bhttp::verb::post, "/keys"}, {bhttp::verb::get, "/keys/3"},
                             {bhttp::verb::patch, "/keys/3"}, {bhttp::verb::delete_, "/keys/3"},
                             {bhttp::verb::post, "/keys/3/revoke"}, {bhttp::verb::get, "/usage"},
                             {bhttp::verb::get, "/teams"}, {bhttp::verb::get, "/teams/search"}})
    EXPECT_TRUE(teamScoped(m, p)) << p;
  for (const auto& [m, p] : {std::pair{bhttp::verb::post, "/teams"}, {bhttp::verb::patch, "/teams/search"},
                             {bhttp::verb::delete_, "/teams/search"}, {bhttp::verb::get, "/logs"},
                             {bhttp::verb::get, "/stats"}, {bhttp::verb::post, "/tokens"}, {bhttp::verb::get, "/nope"}})
    EXPECT_FALSE(teamScoped(m, p)) << p;
  EXPECT_EQ(requiredRole(bhttp::verb::post, "/teams"), Role::Operator);
  EXPECT_EQ(requiredRole(bhttp::verb::get, "/teams/3"), Role::Viewer);
}

TEST(Roles, PathsMatchWholeSegmentsOnly) {
  EXPECT_FALSE(requiredRole(bhttp::verb::get, "/keys/3/extra"));
  EXPECT_FALSE(requiredRole(bhttp::verb::get, "/keysx"));
  EXPECT_FALSE(requiredRole(bhttp::verb::get, "/keys/"));
  EXPECT_FALSE(requiredRole(bhttp::verb::get, "//keys"));
  EXPECT_FALSE(requiredRole(bhttp::verb::get, ""));
  EXPECT_FALSE(requiredRole(bhttp::verb::put, "/keys/3"));
  EXPECT_FALSE(requiredRole(bhttp::verb::post, "/upstream-keys/x/explode"));
}

TEST(Roles, NamesRoundTripAndTheOrderHolds) {
  for (Role r : {Role::Member, Role::Viewer, Role::Operator, Role::Admin}) EXPECT_EQ(parseRole(roleName(r)), r);
  EXPECT_FALSE(parseRole("root"));
  EXPECT_FALSE(parseRole("Admin"));
  EXPECT_LT(Role::Member, Role::Viewer);
  EXPECT_LT(Role::Viewer, Role::Operator);
  EXPECT_LT(Role::Operator, Role::Admin);
}

}  // namespace
}  // namespace sluice::admin
