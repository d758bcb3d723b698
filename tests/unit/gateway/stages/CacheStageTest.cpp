// cache (gateway/stages/CacheStage.cpp) on its own: a miss puts the recording in the answer
// plan, a stored entry answers the same request from the cache (x-sluice-cache: hit, channel
// "cache", no attempt), and the request's own no-store control is honoured.
#include <gtest/gtest.h>

#include "../StageTestSupport.hpp"
#include "cache/MemoryCache.hpp"
#include "core/Clock.hpp"

namespace sluice::gateway {
namespace {

using testing::makeSnapshot;
using testing::StageHarness;

constexpr const char* kYaml = R"(auth:
  master_key: "mk"
cache:
  enabled: true
  ttl: 1h
channels:
  - {name: oa, type: openai, base_url: "http://127.0.0.1:9/v1", keys: ["k"], models: ["gpt-4o-mini"]}
)";
const std::string kBody = R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]})";

Step throughCache(StageHarness& h) {
  for (const char* name : {"auth", "route", "limits", "scan", "cache"}) {
    Stage* s = h.start(name);
    if (!s) continue;
    if (Step st = h.onRequest(*s); st == Step::Answered) return st;
  }
  return Step::Continue;
}

TEST(CacheStage, AMissRecordsAndTheStoredAnswerIsAHitNextTime) {
  auto snap = makeSnapshot(kYaml);
  cache::MemoryCache memory;
  StageHarness miss(snap, nullptr, &memory);
  miss.request("/v1/chat/completions", kBody, {{"Authorization", "Bearer mk"}});
  EXPECT_EQ(throughCache(miss), Step::Continue);
  const auto& plan = miss.ex().answer;
  ASSERT_TRUE(plan.cache_key.has_value());
  EXPECT_EQ(plan.cache, &memory);
  ASSERT_EQ(plan.headers.size(), 1u);
  EXPECT_EQ(plan.headers[0].second, "miss");

  // What the relay would record from the upstream's answer.
  auto entry = cache::Recorder::fromWhole(
      providers::Format::OpenAIChat, 200,
      R"({"id":"x","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hello from the cache"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}})",
      plan.cache_max_entry);
  ASSERT_TRUE(entry.has_value());
  entry->stored_at_ms = unixNowMs();
  ASSERT_TRUE(memory.insert(*plan.cache_key, std::make_shared<const cache::Entry>(*entry), std::chrono::hours(1)));

  StageHarness hit(snap, nullptr, &memory);
  hit.request("/v1/chat/completions", kBody, {{"Authorization", "Bearer mk"}});
  EXPECT_EQ(throughCache(hit), Step::Answered);
  auto a = hit.answer();
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.header("x-sluice-cache"), "hit");
  EXPECT_EQ(a.header("x-sluice-channel"), "cache");
  EXPECT_NE(a.body.find("hello from the cache"), std::string::npos) << a.body;
  EXPECT_EQ(hit.rec().channel, "cache");
  EXPECT_EQ(hit.rec().output_tokens, 4);
}

TEST(CacheStage, NoStoreFromTheClientNeitherReadsNorWrites) {
  cache::MemoryCache memory;
  StageHarness h(makeSnapshot(kYaml), nullptr, &memory);
  h.request("/v1/chat/completions", kBody, {{"Authorization", "Bearer mk"}, {"Cache-Control", "no-store"}});
  EXPECT_EQ(throughCache(h), Step::Continue);
  EXPECT_FALSE(h.ex().answer.cache_key.has_value());
}

}  // namespace
}  // namespace sluice::gateway
