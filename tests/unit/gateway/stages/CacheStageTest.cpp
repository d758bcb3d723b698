// cache (gateway/stages/CacheStage.cpp) on its own: a miss records the answer on its way back
// (whole, or a stream across reads) and stores it only when it stands (commit) as a success; a
// stored entry answers the same request from the cache (x-sluice-cache: hit, channel "cache", no
// attempt), and the request's own no-store control is honoured.
#include <gtest/gtest.h>

#include "../StageTestSupport.hpp"
#include "cache/MemoryCache.hpp"
#include "core/Clock.hpp"

namespace sluice::gateway {
namespace {
namespace cache_stage_test {

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

// The stages before the cache, then the cache's request hook (a miss): the stage, ready for the
// way back.
Stage* cacheOnItsWayBack(StageHarness& h) {
  EXPECT_EQ(h.runThrough({"auth", "route", "limits", "scan"}), Step::Continue);
  Stage* c = h.start("cache");
  if (c) {
    EXPECT_EQ(h.onRequest(*c), Step::Continue);
  }
  return c;
}

constexpr const char* kAnswer =
    R"({"id":"x","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hello from the cache"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}})";

// The relay's calls on the way back for a whole answer of `status`; commit only when it stands.
void wayBackWhole(StageHarness& h, Stage& s, int status, std::string body, bool commit) {
  const routing::Pick pick = h.firstPick();
  ResponseHead head(pick, status, false, providers::Format::OpenAIChat, providers::Format::OpenAIChat, false);
  s.onResponseHeaders(h.ex(), head);
  std::string out = body;
  ResponseData piece{.upstream = body, .out = out, .end_of_stream = true};
  EXPECT_EQ(s.onResponseData(h.ex(), piece), DataStep::Continue);
  EXPECT_EQ(out, body);  // the cache reads the answer, never rewrites it
  if (commit)
    h.onResponseCommit(s, ResponseEnd{.pick = pick, .status = status, .stream = false, .upstream_body = body});
}

TEST(CacheStage, AMissRecordsOnTheWayBackAndTheStoredAnswerIsAHitNextTime) {
  auto snap = makeSnapshot(kYaml);
  cache::MemoryCache memory;
  StageHarness miss(snap, nullptr, &memory);
  miss.request("/v1/chat/completions", kBody, {{"Authorization", "Bearer mk"}});
  Stage* c = cacheOnItsWayBack(miss);
  ASSERT_NE(c, nullptr);
  const auto& plan = miss.ex().answer;
  ASSERT_EQ(plan.headers.size(), 1u);
  EXPECT_EQ(plan.headers[0].second, "miss");
  EXPECT_EQ(c->hooks(), Stage::kResponseHeaders | Stage::kResponseData | Stage::kResponseCommit);

  wayBackWhole(miss, *c, 200, kAnswer, /*commit=*/true);
  EXPECT_EQ(memory.stats().entries, 1u);

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

TEST(CacheStage, AnAnswerThatDoesNotStandOrFailedIsNotStored) {
  auto snap = makeSnapshot(kYaml);
  cache::MemoryCache memory;
  StageHarness h(snap, nullptr, &memory);
  h.request("/v1/chat/completions", kBody, {{"Authorization", "Bearer mk"}});
  Stage* c = cacheOnItsWayBack(h);
  ASSERT_NE(c, nullptr);
  // Recorded, but a later stage answered instead (no commit): nothing is stored.
  wayBackWhole(h, *c, 200, kAnswer, /*commit=*/false);
  EXPECT_EQ(memory.stats().entries, 0u);
  wayBackWhole(h, *c, 500, R"({"error":{"message":"down"}})", /*commit=*/true);
  EXPECT_EQ(memory.stats().entries, 0u);
}

TEST(CacheStage, AStreamIsRecordedFromTheUpstreamsBytesAcrossReads) {
  auto snap = makeSnapshot(kYaml);
  cache::MemoryCache memory;
  StageHarness h(snap, nullptr, &memory);
  h.request("/v1/chat/completions",
            R"({"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]})",
            {{"Authorization", "Bearer mk"}});
  Stage* c = cacheOnItsWayBack(h);
  ASSERT_NE(c, nullptr);
  const routing::Pick pick = h.firstPick();
  ResponseHead head(pick, 200, true, providers::Format::OpenAIChat, providers::Format::OpenAIChat, false);
  c->onResponseHeaders(h.ex(), head);
  const std::string events =
      "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,"
      "\"delta\":{\"role\":\"assistant\",\"content\":\"streamed \"},\"finish_reason\":null}]}\n\n"
      "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,"
      "\"delta\":{\"content\":\"answer\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
  const std::size_t cut = events.size() / 2;  // mid-event
  for (int i = 0; i < 2; ++i) {
    const std::string part = i == 0 ? events.substr(0, cut) : events.substr(cut);
    std::string out = part;
    ResponseData piece{.upstream = part, .out = out, .end_of_stream = i == 1};
    EXPECT_EQ(c->onResponseData(h.ex(), piece), DataStep::Continue);
  }
  h.onResponseCommit(*c, ResponseEnd{.pick = pick, .status = 200, .stream = true, .upstream_body = {}});
  ASSERT_EQ(memory.stats().entries, 1u);

  StageHarness hit(snap, nullptr, &memory);
  hit.request("/v1/chat/completions", kBody, {{"Authorization", "Bearer mk"}});
  EXPECT_EQ(throughCache(hit), Step::Answered);
  EXPECT_NE(hit.answer().body.find("streamed answer"), std::string::npos);
}

TEST(CacheStage, NoStoreFromTheClientNeitherReadsNorWrites) {
  cache::MemoryCache memory;
  StageHarness h(makeSnapshot(kYaml), nullptr, &memory);
  h.request("/v1/chat/completions", kBody, {{"Authorization", "Bearer mk"}, {"Cache-Control", "no-store"}});
  Stage* c = cacheOnItsWayBack(h);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->hooks(), 0u);  // nothing to record on the way back
}

}  // namespace cache_stage_test
}  // namespace
}  // namespace sluice::gateway
