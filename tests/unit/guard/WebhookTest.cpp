#include "guard/Webhook.hpp"

#include <gtest/gtest.h>

namespace sluice::guard {
namespace {
namespace webhook_test {

TEST(WebhookVerdict, ReadsTheAction) {
  auto v = parseVerdict(200, R"({"action":"allow"})");
  EXPECT_EQ(v.action, Verdict::Action::Allow);
  v = parseVerdict(200, R"({"action":"warn","reason":"mentions a competitor"})");
  EXPECT_EQ(v.action, Verdict::Action::Warn);
  EXPECT_EQ(v.reason, "mentions a competitor");
  v = parseVerdict(201, R"({"reason":"pii","action":"block"})");
  EXPECT_EQ(v.action, Verdict::Action::Block);
  EXPECT_EQ(v.reason, "pii");
}

TEST(WebhookVerdict, AnythingElseIsAFailure) {
  EXPECT_EQ(parseVerdict(500, R"({"action":"allow"})").action, Verdict::Action::Failed);
  EXPECT_NE(parseVerdict(500, "").reason.find("500"), std::string::npos);
  EXPECT_EQ(parseVerdict(200, "not json").action, Verdict::Action::Failed);
  EXPECT_EQ(parseVerdict(200, "[]").action, Verdict::Action::Failed);
  EXPECT_EQ(parseVerdict(200, R"({"action":1})").action, Verdict::Action::Failed);
  auto v = parseVerdict(200, R"({"action":"maybe"})");
  EXPECT_EQ(v.action, Verdict::Action::Failed);
  EXPECT_NE(v.reason.find("maybe"), std::string::npos);
}

TEST(WebhookTarget, SplitsTheUrl) {
  auto t = makeWebhookTarget("http://127.0.0.1:9090/hooks/review?team=a", {{"Authorization", "Bearer x"}},
                             std::chrono::milliseconds(250));
  EXPECT_EQ(t.endpoint.host, "127.0.0.1");
  EXPECT_EQ(t.endpoint.port, 9090);
  EXPECT_EQ(t.path, "/hooks/review?team=a");
  EXPECT_EQ(t.extra_headers, "Authorization: Bearer x\r\n");
  EXPECT_EQ(makeWebhookTarget("https://guard.example.com", {}, std::chrono::milliseconds(1)).path, "/");
  EXPECT_THROW(makeWebhookTarget("ftp://x", {}, std::chrono::milliseconds(1)), std::invalid_argument);
}

}  // namespace webhook_test
}  // namespace
}  // namespace sluice::guard
