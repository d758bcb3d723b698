// Subscription: the CLIs' credential files (Claude Code's, Codex's) read and refused with a
// reason that never quotes a token; the stored form round-trips; when a token is refreshed; the
// refresh request each token endpoint takes and its answers (new pair, rotation, invalid_grant,
// Codex's refresh_token_reused); usage windows from each provider's rate-limit headers.
#include "cloud/Subscription.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "redact/Base64Url.hpp"

namespace subscription_test {
using namespace sluice::cloud;
namespace json = boost::json;

constexpr std::int64_t kNow = 1'750'000'000'000;

std::string jwtWithExp(std::int64_t exp_s) {
  std::string out = "eyJhbGciOiJSUzI1NiJ9.";
  const std::string claims = json::serialize(json::object{{"exp", exp_s}});
  sluice::redact::detail::appendB64Url(out, reinterpret_cast<const unsigned char*>(claims.data()), claims.size());
  return out + ".c2ln";
}

TEST(Subscription, ReadsClaudeCodesCredentialFile) {
  std::string why;
  auto c = parseCredential(
      SubscriptionKind::Claude,
      R"({"claudeAiOauth":{"accessToken":"sk-ant-oat01-AAA","refreshToken":"sk-ant-ort01-BBB",)"
      R"("expiresAt":1750000600000,"scopes":["user:inference","user:profile"],"subscriptionType":"max"}})",
      &why);
  ASSERT_TRUE(c) << why;
  EXPECT_EQ(c->access_token, "sk-ant-oat01-AAA");
  EXPECT_EQ(c->refresh_token, "sk-ant-ort01-BBB");
  EXPECT_EQ(c->expires_at_ms, 1750000600000);
  EXPECT_EQ(c->account_id, "");
}

TEST(Subscription, ReadsCodexsAuthFileWithTheExpiryFromItsAccessToken) {
  std::string why;
  const std::string access = jwtWithExp(1750003600);
  auto c =
      parseCredential(SubscriptionKind::ChatGPT,
                      R"({"OPENAI_API_KEY":null,"tokens":{"id_token":"eyJ.a.b","access_token":")" + access +
                          R"(","refresh_token":"rt-1","account_id":"acct-42"},"last_refresh":"2025-06-15T00:00:00Z"})",
                      &why);
  ASSERT_TRUE(c) << why;
  EXPECT_EQ(c->access_token, access);
  EXPECT_EQ(c->refresh_token, "rt-1");
  EXPECT_EQ(c->account_id, "acct-42");
  EXPECT_EQ(c->expires_at_ms, 1750003600000);
}

TEST(Subscription, RefusesWhatCannotWorkWithoutQuotingATokenAttackTable) {
  struct Case {
    SubscriptionKind kind;
    std::string text;
    std::string says;
  };
  const std::vector<Case> cases = {
      {SubscriptionKind::Claude, "", "JSON object"},
      {SubscriptionKind::Claude, "[1,2]", "JSON object"},
      {SubscriptionKind::Claude, R"({"claudeAiOauth":{"accessToken":"SECRET\r\nX-Evil: 1","refreshToken":"r"}})",
       "header cannot carry"},
      {SubscriptionKind::Claude, R"({"claudeAiOauth":{"accessToken":"SECRET has space","refreshToken":"r"}})",
       "header cannot carry"},
      {SubscriptionKind::Claude, R"({"claudeAiOauth":{"accessToken":"a","refreshToken":"SECRET\u0000"}})",
       "refresh token"},
      {SubscriptionKind::Claude, R"({"claudeAiOauth":{"accessToken":"a","refreshToken":"SECRET\u00e9"}})",
       "refresh token"},
      {SubscriptionKind::Claude, R"({"claudeAiOauth":{"accessToken":1,"refreshToken":[]}})", "Claude Code"},
      {SubscriptionKind::Claude, R"({"claudeAiOauth":{"accessToken":"SECRET"}})", "no refresh token and no expiry"},
      {SubscriptionKind::Claude, R"({"tokens":{"access_token":"SECRET","refresh_token":"r","account_id":"a"}})",
       "Claude Code"},
      {SubscriptionKind::ChatGPT, R"({"claudeAiOauth":{"accessToken":"SECRET","refreshToken":"r"}})", "Codex"},
      {SubscriptionKind::ChatGPT, R"({"tokens":{"access_token":"SECRET","refresh_token":"r"}})", "account id"},
      {SubscriptionKind::ChatGPT, R"({"tokens":{"access_token":"a","refresh_token":"r","account_id":"x\ny"}})",
       "account id"},
      {SubscriptionKind::ChatGPT, R"({"tokens":"SECRET"})", "Codex"},
      {SubscriptionKind::Claude, std::string(300, '['), "JSON object"},
  };
  for (const auto& c : cases) {
    std::string why;
    EXPECT_FALSE(parseCredential(c.kind, c.text, &why)) << c.text;
    EXPECT_NE(why.find(c.says), std::string::npos) << c.text << " -> " << why;
    EXPECT_EQ(why.find("SECRET"), std::string::npos) << why;
  }
}

TEST(Subscription, TheStoredFormReadsBackTheSame) {
  SubscriptionCredential c{"at", "rt", "acct", kNow + 60'000, 3'600'000};
  auto back = parseCredential(SubscriptionKind::ChatGPT, serializeCredential(c), nullptr);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->access_token, "at");
  EXPECT_EQ(back->refresh_token, "rt");
  EXPECT_EQ(back->account_id, "acct");
  EXPECT_EQ(back->expires_at_ms, kNow + 60'000);
  EXPECT_EQ(back->lifetime_ms, 3'600'000);
}

TEST(Subscription, RefreshesFiveMinutesBeforeExpiryOrHalfAShortLifetime) {
  SubscriptionCredential c{"at", "rt", "", kNow + 10 * 60'000, 0};
  EXPECT_FALSE(needsRefresh(c, kNow));
  EXPECT_TRUE(needsRefresh(c, kNow + 5 * 60'000));
  c.expires_at_ms = 0;  // unknown
  EXPECT_TRUE(needsRefresh(c, kNow));
  c = {"at", "rt", "", kNow + 4'000, 8'000};  // a short-lived token: refreshed at half its life
  EXPECT_FALSE(needsRefresh(c, kNow - 1));
  EXPECT_TRUE(needsRefresh(c, kNow));
  EXPECT_TRUE(stillValid(c, kNow));
  EXPECT_FALSE(stillValid(c, kNow + 2'500));
}

TEST(Subscription, RefreshRequestsAreWhatTheCLIsSend) {
  auto claude = json::parse(refreshRequestBody(SubscriptionKind::Claude, "rt\"x")).as_object();
  EXPECT_EQ(claude["grant_type"], "refresh_token");
  EXPECT_EQ(claude["refresh_token"], "rt\"x");
  EXPECT_EQ(claude["client_id"], "9d1c250a-e61b-44d9-88ed-5944d1962f5e");
  EXPECT_FALSE(claude.contains("scope"));
  auto codex = json::parse(refreshRequestBody(SubscriptionKind::ChatGPT, "rt")).as_object();
  EXPECT_EQ(codex["client_id"], "app_EMoamEEZ73f0CkXaXp7hrann");
  EXPECT_EQ(codex["scope"], "openid profile email");
  EXPECT_EQ(defaultTokenUrl(SubscriptionKind::Claude), "https://console.anthropic.com/v1/oauth/token");
  EXPECT_EQ(defaultTokenUrl(SubscriptionKind::ChatGPT), "https://auth.openai.com/oauth/token");
}

TEST(Subscription, ARefreshAnswerRotatesThePair) {
  SubscriptionCredential old{"old-at", "old-rt", "acct", kNow, 0};
  auto r = parseRefreshAnswer(
      SubscriptionKind::Claude, 200,
      R"({"token_type":"Bearer","access_token":"new-at","expires_in":28800,"refresh_token":"new-rt"})", old, kNow);
  ASSERT_TRUE(r.credential) << r.why;
  EXPECT_EQ(r.credential->access_token, "new-at");
  EXPECT_EQ(r.credential->refresh_token, "new-rt");
  EXPECT_EQ(r.credential->expires_at_ms, kNow + 28'800'000);
  EXPECT_EQ(r.credential->lifetime_ms, 28'800'000);
  // Codex: no expires_in, the JWT's exp; the account id stays.
  const std::string jwt = jwtWithExp(kNow / 1000 + 3600);
  r = parseRefreshAnswer(SubscriptionKind::ChatGPT, 200,
                         R"({"id_token":"x","access_token":")" + jwt + R"(","refresh_token":"rt2"})", old, kNow);
  ASSERT_TRUE(r.credential) << r.why;
  EXPECT_EQ(r.credential->expires_at_ms, kNow + 3'600'000);
  EXPECT_EQ(r.credential->account_id, "acct");
}

TEST(Subscription, ARefusedRefreshTokenIsAnInvalidGrantThatSaysSignInAgain) {
  SubscriptionCredential old{"old-at", "old-rt", "", kNow, 0};
  auto r = parseRefreshAnswer(SubscriptionKind::Claude, 400,
                              R"({"error":"invalid_grant","error_description":"Refresh token has already been used"})",
                              old, kNow);
  EXPECT_TRUE(r.invalid_grant);
  EXPECT_FALSE(r.credential);
  EXPECT_NE(r.why.find("already been used"), std::string::npos);
  r = parseRefreshAnswer(SubscriptionKind::ChatGPT, 401,
                         R"({"error":{"message":"used","type":"invalid_request_error","code":"refresh_token_reused"}})",
                         old, kNow);
  EXPECT_TRUE(r.invalid_grant);
  const std::string reason = signInAgainReason(SubscriptionKind::ChatGPT, r.why);
  EXPECT_NE(reason.find("sign in again"), std::string::npos);
  EXPECT_NE(reason.find("codex login"), std::string::npos);
  // Anything else is not a refusal of the token: it may be tried again.
  r = parseRefreshAnswer(SubscriptionKind::Claude, 503, "upstream down", old, kNow);
  EXPECT_FALSE(r.invalid_grant);
  EXPECT_FALSE(r.credential);
  EXPECT_NE(r.why.find("503"), std::string::npos);
  r = parseRefreshAnswer(SubscriptionKind::Claude, 200, R"({"access_token":"a b","expires_in":60})", old, kNow);
  EXPECT_FALSE(r.credential);
  r = parseRefreshAnswer(SubscriptionKind::Claude, 200, R"({"access_token":"ab"})", old, kNow);
  EXPECT_FALSE(r.credential) << "no lifetime";
}

TEST(Subscription, UsageWindowsFromAnthropicsUnifiedHeaders) {
  const std::int64_t reset_s = kNow / 1000 + 1800;
  auto w = readUsageWindows(SubscriptionKind::Claude,
                            {{"anthropic-ratelimit-unified-status", "allowed"},
                             {"anthropic-ratelimit-unified-5h-utilization", "0.42"},
                             {"anthropic-ratelimit-unified-7d-utilization", "0.1"},
                             {"anthropic-ratelimit-unified-reset", std::to_string(reset_s)}},
                            kNow);
  EXPECT_FALSE(w.exhausted);
  EXPECT_DOUBLE_EQ(w.used_fraction, 0.42);
  EXPECT_EQ(w.reset_at_ms, 0);
  w = readUsageWindows(SubscriptionKind::Claude,
                       {{"Anthropic-Ratelimit-Unified-Status", "rejected"},
                        {"anthropic-ratelimit-unified-reset", std::to_string(reset_s)}},
                       kNow);
  EXPECT_TRUE(w.exhausted);
  EXPECT_EQ(w.reset_at_ms, reset_s * 1000);
  // A reset in the past or absurdly far is not believed.
  w = readUsageWindows(SubscriptionKind::Claude,
                       {{"anthropic-ratelimit-unified-status", "rejected"}, {"anthropic-ratelimit-unified-reset", "5"}},
                       kNow);
  EXPECT_TRUE(w.exhausted);
  EXPECT_EQ(w.reset_at_ms, 0);
}

TEST(Subscription, UsageWindowsFromCodexsHeaders) {
  auto w = readUsageWindows(SubscriptionKind::ChatGPT,
                            {{"x-codex-primary-used-percent", "100.0"},
                             {"x-codex-primary-reset-after-seconds", "600"},
                             {"x-codex-secondary-used-percent", "20"}},
                            kNow);
  EXPECT_TRUE(w.exhausted);
  EXPECT_EQ(w.reset_at_ms, kNow + 600'000);
  EXPECT_DOUBLE_EQ(w.used_fraction, 1.0);
  w = readUsageWindows(SubscriptionKind::ChatGPT,
                       {{"x-codex-primary-used-percent", "nan"}, {"x-codex-secondary-used-percent", "-3"}}, kNow);
  EXPECT_FALSE(w.exhausted);
  EXPECT_LT(w.used_fraction, 0);
}

}  // namespace subscription_test
