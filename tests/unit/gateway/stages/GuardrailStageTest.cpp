// guardrail (gateway/stages/GuardrailStage.cpp) on its own, against a webhook on loopback: the
// request is reviewed as it goes upstream and a block is a 400 in the caller's format; with
// review_response a whole answer is reviewed at its end (the text as the upstream wrote it) and a
// block answers the client instead; a warn on the answer becomes a header; a stream takes no
// answer review.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "../../core/LoopbackHttp.hpp"
#include "../StageTestSupport.hpp"

namespace sluice::gateway {
namespace {
namespace guardrail_stage_test {

using testing::makeSnapshot;
using testing::StageHarness;

// A webhook on loopback: each review is answered with the next verdict set (allow when none
// is), and its payload is kept.
class Webhook {
 public:
  unsigned short port() const { return http_.port(); }
  void answerNext(std::string verdict) {
    std::lock_guard lk(mu_);
    next_ = std::move(verdict);
  }
  std::vector<std::string> payloads() {
    std::vector<std::string> out;
    for (const auto& r : http_.received()) out.push_back(r.body);
    return out;
  }

 private:
  std::mutex mu_;
  std::string next_;
  loopback::Server http_{[this](const loopback::Received&) {
    std::lock_guard lk(mu_);
    return loopback::Reply{200,
                           next_.empty() ? std::string(R"({"action":"allow"})") : std::exchange(next_, std::string())};
  }};
};

std::string yamlFor(unsigned short port) {
  return R"(auth:
  master_key: "mk"
guardrail:
  url: "http://127.0.0.1:)" +
         std::to_string(port) + R"(/review"
  timeout: 2s
  on_failure: fail_closed
  review_response: true
channels:
  - {name: oa, type: openai, base_url: "http://127.0.0.1:9/v1", keys: ["k"], models: ["gpt-4o-mini"]}
)";
}

constexpr const char* kAsk = R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello there"}]})";
constexpr const char* kAnswer =
    R"({"id":"x","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"the secret plan"},"finish_reason":"stop"}]})";

struct Fixture {
  Webhook hook;
  std::unique_ptr<StageHarness> h;
  Stage* stage = nullptr;

  // Through the guardrail's request hook, the webhook answering `verdict` for the request.
  Step start(const char* path, const std::string& body, std::string verdict) {
    h = std::make_unique<StageHarness>(makeSnapshot(yamlFor(hook.port())));
    h->request(path, body, {{"Authorization", "Bearer mk"}});
    EXPECT_EQ(h->runThrough({"auth", "route", "limits", "scan", "screening", "redaction"}), Step::Continue);
    stage = h->start("guardrail");
    EXPECT_NE(stage, nullptr);
    hook.answerNext(std::move(verdict));
    return stage ? h->onRequest(*stage) : Step::Continue;
  }

  // The relay's calls for a whole answer (kAnswer, from an OpenAI Chat upstream), the webhook
  // answering `verdict` for its review: what the end hook decided.
  Step reviewAnswer(std::string verdict) {
    const routing::Pick pick = h->firstPick();
    ResponseHead head(pick, 200, false, providers::Format::OpenAIChat, providers::Format::OpenAIChat, false);
    stage->onResponseHeaders(h->ex(), head);
    hook.answerNext(std::move(verdict));
    return h->onResponseEnd(*stage,
                            ResponseEnd{.pick = pick, .status = 200, .stream = false, .upstream_body = kAnswer});
  }
};

TEST(GuardrailStage, TheRequestIsReviewedAndABlockIsRefusedInTheCallersFormat) {
  Fixture f;
  EXPECT_EQ(f.start("/v1/chat/completions", kAsk, R"({"action":"block","reason":"off topic"})"), Step::Answered);
  ASSERT_EQ(f.hook.payloads().size(), 1u);
  EXPECT_NE(f.hook.payloads()[0].find("\"phase\":\"request\""), std::string::npos) << f.hook.payloads()[0];
  EXPECT_NE(f.hook.payloads()[0].find("hello there"), std::string::npos);
  auto a = f.h->answer();
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("guardrail_blocked"), std::string::npos) << a.body;
  EXPECT_NE(a.body.find("off topic"), std::string::npos) << a.body;
}

TEST(GuardrailStage, AWholeAnswerIsReviewedAtItsEndAndABlockAnswersInstead) {
  Fixture f;
  ASSERT_EQ(f.start("/v1/chat/completions", kAsk, R"({"action":"allow"})"), Step::Continue);
  ASSERT_EQ(f.stage->hooks(), Stage::kResponseHeaders | Stage::kResponseEnd);
  EXPECT_EQ(f.reviewAnswer(R"({"action":"block","reason":"leaks the plan"})"), Step::Answered);
  ASSERT_EQ(f.hook.payloads().size(), 2u);
  EXPECT_NE(f.hook.payloads()[1].find("\"phase\":\"response\""), std::string::npos) << f.hook.payloads()[1];
  EXPECT_NE(f.hook.payloads()[1].find("\"response\":\"the secret plan\""), std::string::npos) << f.hook.payloads()[1];
  auto a = f.h->answer();
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("withheld"), std::string::npos) << a.body;
  EXPECT_EQ(a.body.find("the secret plan"), std::string::npos) << a.body;
}

TEST(GuardrailStage, AWarnOnTheAnswerIsAHeaderAndTheAnswerGoesOn) {
  Fixture f;
  ASSERT_EQ(f.start("/v1/chat/completions", kAsk, R"({"action":"allow"})"), Step::Continue);
  EXPECT_EQ(f.reviewAnswer(R"({"action":"warn"})"), Step::Continue);
  const auto& headers = f.h->ex().answer.headers;
  ASSERT_FALSE(headers.empty());
  EXPECT_EQ(headers.back(), (std::pair<std::string, std::string>{"x-sluice-guardrail", "warn"}));
}

TEST(GuardrailStage, AStreamTakesNoAnswerReview) {
  Fixture f;
  ASSERT_EQ(f.start("/v1/chat/completions",
                    R"({"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]})",
                    R"({"action":"allow"})"),
            Step::Continue);
  EXPECT_EQ(f.stage->hooks(), 0u);
}

}  // namespace guardrail_stage_test
}  // namespace
}  // namespace sluice::gateway
