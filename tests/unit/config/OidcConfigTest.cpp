// auth.oidc: the issuer's shape, the role map's roles, the session timeouts, the secret masked.
#include <gtest/gtest.h>

#include <string>

#include "config/Config.hpp"

namespace sluice::config {
namespace {
namespace oidc_config_test {

std::string refusal(const std::string& yaml) {
  try {
    parseConfig(yaml, "t.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError for:\n" << yaml;
  return {};
}

const std::string kGood =
    "auth:\n"
    "  oidc:\n"
    "    issuer: \"https://idp.example.com/realms/acme/\"\n"
    "    client_id: sluice\n"
    "    client_secret: \"oidc-secret-value-123\"\n"
    "    redirect_url: \"https://gateway.example.com/auth/callback\"\n"
    "    roles_claim: roles\n"
    "    role_map: {platform-admins: admin, finance: viewer, \"*\": member}\n"
    "    session_idle: 30m\n"
    "    session_max: 8h\n";

TEST(OidcConfig, ParsesThePinnedKeys) {
  auto cfg = parseConfig(kGood, "t.yaml");
  const auto& o = cfg->auth.oidc;
  EXPECT_TRUE(o.enabled());
  EXPECT_EQ(o.issuer, "https://idp.example.com/realms/acme/");  // kept as written: compared with iss
  EXPECT_EQ(o.client_id, "sluice");
  EXPECT_EQ(o.roles_claim, "roles");
  ASSERT_EQ(o.role_map.size(), 3u);
  EXPECT_EQ(o.role_map[0], (std::pair<std::string, std::string>{"platform-admins", "admin"}));
  EXPECT_EQ(o.role_map[2].first, "*");
  EXPECT_EQ(o.session_idle, std::chrono::minutes(30));
  EXPECT_EQ(o.session_max, std::chrono::hours(8));
  EXPECT_EQ(o.scopes, (std::vector<std::string>{"openid", "email", "profile"}));
  EXPECT_FALSE(parseConfig("auth:\n  master_key: k\n", "t.yaml")->auth.oidc.enabled());
}

TEST(OidcConfig, TheClientSecretIsMasked) {
  const std::string text = describeConfig(*parseConfig(kGood, "t.yaml"));
  EXPECT_EQ(text.find("oidc-secret-value-123"), std::string::npos) << text;
  EXPECT_NE(text.find("client_secret"), std::string::npos) << text;
  EXPECT_NE(text.find("platform-admins"), std::string::npos) << text;
}

TEST(OidcConfig, RefusalsSayWhatToFix) {
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = kGood;
    s.replace(s.find(from), from.size(), to);
    return refusal(s);
  };
  EXPECT_NE(with("https://idp.example.com", "http://idp.example.com").find("must be https"), std::string::npos);
  EXPECT_NE(with("member}", "root}").find("expected admin, operator, viewer or member"), std::string::npos);
  EXPECT_NE(with("    client_id: sluice\n", "").find("client_id is required"), std::string::npos);
  EXPECT_NE(with("    redirect_url: \"https://gateway.example.com/auth/callback\"\n", "").find("redirect_url"),
            std::string::npos);
  EXPECT_NE(with("session_idle: 30m", "session_idle: 0s").find("greater than 0"), std::string::npos);
  EXPECT_NE(with("roles_claim: roles", "scopes: [email]").find("must include openid"), std::string::npos);
  EXPECT_NE(with("roles_claim: roles", "rolesclaim: x").find("did you mean"), std::string::npos);
  // http is for a test IdP on loopback only.
  std::string local = kGood;
  local.replace(local.find("https://idp.example.com"), 23, "http://127.0.0.1:9000");
  EXPECT_EQ(parseConfig(local, "t.yaml")->auth.oidc.issuer, "http://127.0.0.1:9000/realms/acme/");
}

}  // namespace oidc_config_test
}  // namespace
}  // namespace sluice::config
