// scan + redaction (gateway/stages/ScanStage.cpp, RedactionStage.cpp): the body that goes on is
// redacted, tokens put a restore in the answer plan, a block rule is a 400 in the caller's
// format, and a non-chat request is not scanned at all.
#include <gtest/gtest.h>

#include "../StageTestSupport.hpp"

namespace sluice::gateway {
namespace {

using testing::makeSnapshot;
using testing::StageHarness;

constexpr const char* kYaml = R"(auth:
  master_key: "mk"
redaction:
  enabled: true
  key: "0123456789abcdef0123456789abcdef"
  actions: {EMAIL: mask}
  rules:
    - {name: TICKET, pattern: 'TCK-[0-9]{6}', action: encrypt}
    - {name: NOPE, pattern: 'TOP-SECRET', action: block}
channels:
  - {name: oa, type: openai, base_url: "http://127.0.0.1:9/v1", keys: ["k"], models: ["gpt-4o-mini", "text-embedding-3-small"]}
)";

Step throughRedaction(StageHarness& h) {
  for (const char* name : {"auth", "route", "limits", "scan"}) {
    Stage* s = h.start(name);
    if (!s) continue;
    if (Step st = h.onRequest(*s); st == Step::Answered) return st;
  }
  Stage* r = h.start("redaction");
  EXPECT_NE(r, nullptr);
  return r ? h.onRequest(*r) : Step::Continue;
}

TEST(RedactionStage, TheBodyGoesOnRedactedAndTokensAreRestoredOnTheWayBack) {
  StageHarness h(makeSnapshot(kYaml));
  h.request("/v1/chat/completions",
            R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"mail ann@example.com about TCK-123456"}]})",
            {{"Authorization", "Bearer mk"}});
  EXPECT_EQ(throughRedaction(h), Step::Continue);
  const std::string& sent = h.ex().req.body();
  EXPECT_EQ(sent.find("ann@example.com"), std::string::npos) << sent;
  EXPECT_EQ(sent.find("TCK-123456"), std::string::npos) << sent;
  EXPECT_NE(h.ex().answer.restore_cipher, nullptr);  // a token was issued: restore the answer
  EXPECT_TRUE(h.ex().answer.force_translate);
}

TEST(RedactionStage, ABlockRuleRefusesTheRequestInTheCallersFormat) {
  StageHarness h(makeSnapshot(kYaml));
  h.request("/anthropic/v1/messages",
            R"({"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"the TOP-SECRET plan"}]})",
            {{"x-api-key", "mk"}});
  EXPECT_EQ(throughRedaction(h), Step::Answered);
  auto a = h.answer();
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("\"type\":\"error\""), std::string::npos) << a.body;
  EXPECT_NE(a.body.find("NOPE"), std::string::npos) << a.body;
}

TEST(RedactionStage, OnlyChatStyleRequestsAreScanned) {
  StageHarness h(makeSnapshot(kYaml));
  h.request("/v1/embeddings", R"({"model":"text-embedding-3-small","input":"ann@example.com"})",
            {{"Authorization", "Bearer mk"}});
  EXPECT_EQ(h.onRequest(*h.start("auth")), Step::Continue);
  EXPECT_EQ(h.onRequest(*h.start("route")), Step::Continue);
  EXPECT_EQ(h.start("scan"), nullptr);
  EXPECT_EQ(h.start("redaction"), nullptr);
}

}  // namespace
}  // namespace sluice::gateway
