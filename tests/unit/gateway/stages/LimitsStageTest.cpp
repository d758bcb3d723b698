// limits (gateway/stages/LimitsStage.cpp) on its own: a virtual key's concurrency is held from
// the request to its completion, the next request is refused meanwhile in the caller's format,
// and completion gives the slot back; the master key holds nothing.
#include <gtest/gtest.h>

#include "../StageTestSupport.hpp"

namespace sluice::gateway {
namespace {

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

}  // namespace
}  // namespace sluice::gateway
