// auth (gateway/stages/AuthStage.cpp) on its own: who is calling, or a 401 in the caller's format.
#include <gtest/gtest.h>

#include "../StageTestSupport.hpp"
#include "core/Clock.hpp"

namespace sluice::gateway {
namespace {
namespace auth_stage_test {

using testing::makeSnapshot;
using testing::StageHarness;
using testing::virtualKey;

constexpr const char* kYaml = R"(auth:
  master_key: "mk-master"
channels:
  - {name: a, type: openai, base_url: "http://127.0.0.1:9/v1", keys: ["k"], models: ["gpt-4o-mini"]}
)";

const std::string kSecret = "sk-slc-0123456789abcdefghij0123456789ABCDEFGHIJ";
const std::string kRevoked = "sk-slc-ZYXWVUTSRQzyxwvutsrq9876543210zyxwvutsrq";

std::shared_ptr<Snapshot> snapshot() {
  auto live = virtualKey(7, "team-a", kSecret);
  auto revoked = virtualKey(8, "old", kRevoked);
  revoked.revoked_at_ms = unixNowMs() - 1000;
  return makeSnapshot(kYaml, {live, revoked});
}

TEST(AuthStage, TheMasterKeyPassesAsTheMaster) {
  StageHarness h(snapshot());
  h.request("/v1/chat/completions", "{}", {{"Authorization", "Bearer mk-master"}});
  Stage* s = h.start("auth");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(h.onRequest(*s), Step::Continue);
  EXPECT_EQ(h.ex().caller.vk, nullptr);
  EXPECT_EQ(h.answer().status, 0);  // nothing sent
}

TEST(AuthStage, AVirtualKeyBecomesTheCallerAndIsLogged) {
  StageHarness h(snapshot());
  h.request("/anthropic/v1/messages", "{}", {{"x-api-key", kSecret}});
  Stage* s = h.start("auth");
  EXPECT_EQ(h.onRequest(*s), Step::Continue);
  ASSERT_NE(h.ex().caller.vk, nullptr);
  EXPECT_EQ(h.ex().caller.vk->name, "team-a");
  EXPECT_EQ(h.rec().virtual_key_id, 7);
}

TEST(AuthStage, NoKeyIsA401InTheCallersFormat) {
  StageHarness h(snapshot());
  h.request("/anthropic/v1/messages", "{}");
  EXPECT_EQ(h.onRequest(*h.start("auth")), Step::Answered);
  auto a = h.answer();
  EXPECT_EQ(a.status, 401);
  EXPECT_EQ(a.header("www-authenticate"), "Bearer");
  EXPECT_EQ(a.header("x-request-id"), "req-test");
  EXPECT_NE(a.body.find("\"type\":\"error\""), std::string::npos) << a.body;  // Anthropic's shape
  EXPECT_NE(a.body.find("no API key"), std::string::npos);
  EXPECT_EQ(h.rec().status, 401);
}

TEST(AuthStage, RevokedAndUnknownKeysAreRefusedSayingWhich) {
  {
    StageHarness h(snapshot());
    h.request("/v1/chat/completions", "{}", {{"Authorization", "Bearer " + kRevoked}});
    EXPECT_EQ(h.onRequest(*h.start("auth")), Step::Answered);
    auto a = h.answer();
    EXPECT_EQ(a.status, 401);
    EXPECT_NE(a.body.find("(old) was revoked"), std::string::npos) << a.body;
  }
  {
    StageHarness h(snapshot());
    h.request("/v1/chat/completions", "{}", {{"Authorization", "Bearer mk-masterX"}});
    EXPECT_EQ(h.onRequest(*h.start("auth")), Step::Answered);
    auto a = h.answer();
    EXPECT_EQ(a.status, 401);
    EXPECT_NE(a.body.find("not valid for this gateway"), std::string::npos) << a.body;
    EXPECT_NE(a.body.find("\"code\":\"invalid_api_key\""), std::string::npos);
  }
}

}  // namespace auth_stage_test
}  // namespace
}  // namespace sluice::gateway
