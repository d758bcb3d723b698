// scan + redaction (gateway/stages/ScanStage.cpp, RedactionStage.cpp): the body that goes on is
// redacted, tokens are restored in the answer on its way back (a whole body; an OpenAI Chat
// stream on its bytes, a token split across reads held back; any other stream as events in the
// relay's encoder, logged as it came), a block rule is a 400 in the caller's format, and a
// non-chat request is not scanned at all.
#include <gtest/gtest.h>

#include "../StageTestSupport.hpp"
#include "redact/TokenCipher.hpp"

namespace sluice::gateway {
namespace {
namespace redaction_stage_test {

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

// The token the redaction stage sealed TCK-123456 into, as it went upstream.
std::string sealedToken(StageHarness& h) {
  const std::string& sent = h.ex().req.body();
  const auto at = sent.find(redact::kTokenPrefix);
  if (at == std::string::npos) return {};
  const auto end = sent.find(redact::kTokenSuffix, at);
  return sent.substr(at, end + redact::kTokenSuffix.size() - at);
}

ResponseHead headOf(const routing::Pick& pick, bool stream, providers::Format client, bool translated) {
  return ResponseHead(pick, 200, stream, translated ? providers::Format::AnthropicMessages : client, client,
                      translated);
}

// The stages before redaction, then redaction's request hook: the stage, ready for the way back.
Stage* redactionOnItsWayBack(StageHarness& h) {
  EXPECT_EQ(h.runThrough({"auth", "route", "limits", "scan"}), Step::Continue);
  Stage* r = h.start("redaction");
  if (r) {
    EXPECT_EQ(h.onRequest(*r), Step::Continue);
  }
  return r;
}

constexpr const char* kAsk =
    R"({"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"about TCK-123456"}]})";

TEST(RedactionStage, AWholeAnswerIsRestoredOnItsWayBack) {
  StageHarness h(makeSnapshot(kYaml));
  h.request("/v1/chat/completions", kAsk, {{"Authorization", "Bearer mk"}});
  Stage* r = redactionOnItsWayBack(h);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->hooks(), Stage::kResponseHeaders | Stage::kResponseData);
  const std::string token = sealedToken(h);
  ASSERT_FALSE(token.empty()) << h.ex().req.body();

  const routing::Pick pick = h.firstPick();
  ResponseHead head = headOf(pick, false, providers::Format::OpenAIChat, false);
  r->onResponseHeaders(h.ex(), head);
  EXPECT_FALSE(head.wrap_encoder);
  const std::string upstream = R"({"choices":[{"index":0,"message":{"role":"assistant","content":"ticket )" + token +
                               R"( is open"},"finish_reason":"stop"}]})";
  std::string out = upstream;
  ResponseData piece{.upstream = upstream, .out = out, .end_of_stream = true};
  EXPECT_EQ(r->onResponseData(h.ex(), piece), DataStep::Continue);
  EXPECT_NE(out.find("ticket TCK-123456 is open"), std::string::npos) << out;
  EXPECT_EQ(out.find(redact::kTokenPrefix), std::string::npos) << out;
}

TEST(RedactionStage, AChatStreamIsRestoredOnTheBytesWithATokenSplitAcrossReads) {
  StageHarness h(makeSnapshot(kYaml));
  h.request("/v1/chat/completions", kAsk, {{"Authorization", "Bearer mk"}});
  Stage* r = redactionOnItsWayBack(h);
  ASSERT_NE(r, nullptr);
  const std::string token = sealedToken(h);
  ASSERT_FALSE(token.empty());

  const routing::Pick pick = h.firstPick();
  ResponseHead head = headOf(pick, true, providers::Format::OpenAIChat, false);
  r->onResponseHeaders(h.ex(), head);
  EXPECT_FALSE(head.wrap_encoder);        // restored on the bytes, no decoding
  EXPECT_FALSE(head.log_upstream_bytes);  // the log keeps the client's bytes before the restore
  auto event = [](const std::string& text, const char* finish) {
    return R"(data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":")" +
           text + R"("},"finish_reason":)" + finish + "}]}\n\n";
  };
  const std::size_t half = token.size() / 2;
  // Two reads, each of whole events (what the relay's tap gives): the token is cut in two events.
  const std::string first = event("ticket " + token.substr(0, half), "null");
  const std::string second = event(token.substr(half) + " is open", "\"stop\"") + "data: [DONE]\n\n";
  std::string client;
  for (int i = 0; i < 2; ++i) {
    std::string out = i == 0 ? first : second;
    ResponseData piece{.upstream = out, .out = out, .end_of_stream = i == 1};
    EXPECT_EQ(r->onResponseData(h.ex(), piece), DataStep::Continue);
    if (i == 0) {
      EXPECT_EQ(out.find("TCK"), std::string::npos) << "the token's first half is held back: " << out;
    }
    client += out;
  }
  std::string text;  // the content deltas, joined
  for (std::size_t at = client.find("\"content\":\""); at != std::string::npos;
       at = client.find("\"content\":\"", at + 1)) {
    const auto b = at + 11;
    text += client.substr(b, client.find('"', b) - b);
  }
  EXPECT_EQ(text, "ticket TCK-123456 is open") << client;
}

TEST(RedactionStage, AnyOtherStreamIsRestoredAsEventsInTheRelaysEncoder) {
  StageHarness h(makeSnapshot(kYaml));
  h.request(
      "/anthropic/v1/messages",
      R"({"model":"gpt-4o-mini","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"about TCK-123456"}]})",
      {{"x-api-key", "mk"}});
  Stage* r = redactionOnItsWayBack(h);
  ASSERT_NE(r, nullptr);
  const routing::Pick pick = h.firstPick();
  for (const bool translated : {false, true}) {
    ResponseHead head = headOf(pick, true, providers::Format::AnthropicMessages, translated);
    r->onResponseHeaders(h.ex(), head);
    EXPECT_TRUE(head.wrap_encoder);
    EXPECT_TRUE(head.log_upstream_bytes);  // what the client reads is restored: never logged
  }
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

}  // namespace redaction_stage_test
}  // namespace
}  // namespace sluice::gateway
