// limits (gateway/stages/LimitsStage.cpp) on its own: a virtual key's concurrency is held from
// the request to its completion, the next request is refused meanwhile in the caller's format,
// and completion gives the slot back; the master key holds nothing.
#include <gtest/gtest.h>

#include "../StageTestSupport.hpp"

namespace sluice::gateway {
namespace {
namespace limits_stage_test {

using testing::makeSnapshot;
using testing::StageHarness;
using testing::virtualKey;

constexpr const char* kYaml = R"(auth:
  master_key: "mk"
channels:
  - {name: oa, type: openai, base_url: "http://127.0.0.1:9/v1", keys: ["k"], models: ["gpt-4o-mini"]}
)";
const std::string kSecret = "sk-slc-0123456789abcdefghij0123456789ABCDEFGHIJ";
const std::string kBody = R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]})";

std::shared_ptr<Snapshot> snapshot() {
  auto k = virtualKey(3, "one-at-a-time", kSecret);
  k.max_concurrent = 1;
  return makeSnapshot(kYaml, {k});
}

// auth and route, as the chain runs them before limits.
Stage* admitted(StageHarness& h) {
  EXPECT_EQ(h.onRequest(*h.start("auth")), Step::Continue);
  EXPECT_EQ(h.onRequest(*h.start("route")), Step::Continue);
  return h.start("limits");
}

TEST(LimitsStage, AKeysSlotIsHeldUntilCompletionAndTheNextWaitsMeanwhile) {
  auto snap = snapshot();
  cluster::Limiter limiter{cluster::Limiter::Options{}};
  StageHarness first(snap, &limiter);
  first.request("/v1/chat/completions", kBody, {{"Authorization", "Bearer " + kSecret}});
  Stage* l1 = admitted(first);
  ASSERT_NE(l1, nullptr);
  EXPECT_EQ(first.onRequest(*l1), Step::Continue);
  EXPECT_EQ(first.ex().settle.heldCount(), 1u);

  StageHarness second(snap, &limiter);
  second.request("/anthropic/v1/messages", R"({"model":"gpt-4o-mini","max_tokens":10,"messages":[]})",
                 {{"x-api-key", kSecret}});
  Stage* l2 = admitted(second);
  EXPECT_EQ(second.onRequest(*l2), Step::Answered);
  auto a = second.answer();
  EXPECT_EQ(a.status, 429);
  EXPECT_NE(a.body.find("\"type\":\"error\""), std::string::npos) << a.body;  // Anthropic's shape
  EXPECT_NE(a.body.find("as many requests in flight"), std::string::npos) << a.body;

  first.onComplete(*l1);  // settles: the slot comes back
  EXPECT_TRUE(first.ex().settle.settled());
  EXPECT_EQ(first.ex().settle.heldCount(), 0u);
  StageHarness third(snap, &limiter);
  third.request("/v1/chat/completions", kBody, {{"Authorization", "Bearer " + kSecret}});
  EXPECT_EQ(third.onRequest(*admitted(third)), Step::Continue);
}

TEST(LimitsStage, TheMasterKeyHoldsNothingButIsStillPriced) {
  StageHarness h(makeSnapshot(std::string(kYaml) + "pricing:\n  gpt-4o-mini: {input: 1.0, output: 2.0}\n"));
  h.request("/v1/chat/completions", kBody, {{"Authorization", "Bearer mk"}});
  Stage* l = admitted(h);
  EXPECT_EQ(h.onRequest(*l), Step::Continue);
  EXPECT_EQ(h.ex().settle.heldCount(), 0u);
  h.rec().input_tokens = 1'000'000;
  h.rec().output_tokens = 1'000'000;
  h.onComplete(*l);
  EXPECT_DOUBLE_EQ(h.rec().cost_usd, 3.0);
}

// A channel at its own quota is passed over per attempt (not tried), saying why; a key's charge
// goes back when its attempt fails; a served attempt is charged the real usage at commit.
TEST(LimitsStage, AChannelAtItsQuotaIsPassedOverPerAttempt) {
  auto snap = makeSnapshot(R"(auth:
  master_key: "mk"
channels:
  - {name: oa, type: openai, base_url: "http://127.0.0.1:9/v1", keys: ["k"], models: ["gpt-4o-mini"], rpm: 1, key_rpm: 5}
)");
  cluster::Limiter limiter{cluster::Limiter::Options{}};
  StageHarness first(snap, &limiter);
  first.request("/v1/chat/completions", kBody, {{"Authorization", "Bearer mk"}});
  Stage* l1 = admitted(first);
  ASSERT_NE(l1, nullptr);
  EXPECT_EQ(first.onRequest(*l1), Step::Continue);
  EXPECT_EQ(l1->hooks(), Stage::kAttempt | Stage::kResponseCommit | Stage::kComplete);  // quotas, no caller limits
  const routing::Pick pick = first.firstPick();
  UpstreamAttempt a1(pick, 10);
  first.onAttempt(*l1, a1);
  EXPECT_EQ(a1.skip, UpstreamAttempt::Skip::None);
  EXPECT_EQ(first.ex().settle.heldCount(), 2u);  // the channel's and the key's
  first.onAttemptFailed(*l1, pick);
  EXPECT_EQ(first.ex().settle.heldCount(), 1u);  // the key's request went back; the channel's stays
  UpstreamAttempt again(pick, 10);
  first.onAttempt(*l1, again);  // the channel is charged once per request
  EXPECT_EQ(again.skip, UpstreamAttempt::Skip::None);

  StageHarness second(snap, &limiter);
  second.request("/v1/chat/completions", kBody, {{"Authorization", "Bearer mk"}});
  Stage* l2 = admitted(second);
  EXPECT_EQ(second.onRequest(*l2), Step::Continue);
  const routing::Pick other = second.firstPick();
  UpstreamAttempt a2(other, 10);
  second.onAttempt(*l2, a2);
  EXPECT_EQ(a2.skip, UpstreamAttempt::Skip::Channel);
  EXPECT_NE(a2.why.find("channel oa"), std::string::npos) << a2.why;
  EXPECT_GT(a2.retry_after_ms, 0);

  first.rec().input_tokens = 3;
  first.rec().output_tokens = 4;
  first.onResponseCommit(*l1, ResponseEnd{.pick = pick, .status = 200, .stream = false, .upstream_body = {}});
  EXPECT_TRUE(first.ex().settle.settled());
  EXPECT_EQ(first.ex().settle.heldCount(), 0u);
}

TEST(LimitsStage, WithoutQuotasOrCallerLimitsItTakesNoHookOnTheWayBack) {
  StageHarness h(makeSnapshot(kYaml));
  h.request("/v1/chat/completions", kBody, {{"Authorization", "Bearer mk"}});
  Stage* l = admitted(h);
  EXPECT_EQ(h.onRequest(*l), Step::Continue);
  EXPECT_EQ(l->hooks(), Stage::kComplete);  // no coroutine on the way back: completion prices it
}

}  // namespace limits_stage_test
}  // namespace
}  // namespace sluice::gateway
