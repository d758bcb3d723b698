// route (gateway/stages/RouteStage.cpp) on its own: the model listing, the method, the body's
// facts, the model-name rule and the candidates, each refusal in the caller's format.
#include <gtest/gtest.h>

#include "../StageTestSupport.hpp"

namespace sluice::gateway {
namespace {
namespace route_stage_test {

using testing::makeSnapshot;
using testing::StageHarness;

constexpr const char* kYaml = R"(auth:
  master_key: "mk"
channels:
  - {name: oa, type: openai, base_url: "http://127.0.0.1:9/v1", keys: ["k"], models: ["gpt-4o-mini"]}
  - {name: gm, type: gemini, base_url: "http://127.0.0.1:9", keys: ["k"], models: ["gemini-*"]}
)";

TEST(RouteStage, ARoutedRequestCarriesItsFactsForTheLaterStages) {
  StageHarness h(makeSnapshot(kYaml));
  const std::string body =
      R"({"model":"gpt-4o-mini","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"hi"}]})";
  h.request("/v1/chat/completions", body);
  EXPECT_EQ(h.onRequest(*h.start("route")), Step::Continue);
  const auto& route = h.ex().route;
  EXPECT_EQ(route.facts.model, "gpt-4o-mini");
  EXPECT_TRUE(route.facts.stream);
  ASSERT_EQ(route.candidates.size(), 1u);
  EXPECT_EQ(route.candidates.front()->cfg.name, "oa");
  EXPECT_TRUE(route.inject_usage);  // the gateway asks for usage itself
  EXPECT_EQ(route.est_tokens, static_cast<std::int64_t>(body.size() / 4) + 100);
  EXPECT_EQ(h.rec().model, "gpt-4o-mini");
  EXPECT_EQ(h.answer().status, 0);
}

TEST(RouteStage, UnknownModelsAre404ListingWhatExists) {
  StageHarness h(makeSnapshot(kYaml));
  h.request("/v1/chat/completions", R"({"model":"nope","messages":[]})");
  EXPECT_EQ(h.onRequest(*h.start("route")), Step::Answered);
  auto a = h.answer();
  EXPECT_EQ(a.status, 404);
  EXPECT_NE(a.body.find("model_not_found"), std::string::npos);
  EXPECT_NE(a.body.find("gpt-4o-mini"), std::string::npos) << a.body;
}

TEST(RouteStage, ANameThatBreaksTheModelRuleIs400BeforeAnyRouting) {
  StageHarness h(makeSnapshot(kYaml));
  h.request("/v1/chat/completions", R"({"model":"gemini-../../admin","messages":[]})");
  EXPECT_EQ(h.onRequest(*h.start("route")), Step::Answered);
  auto a = h.answer();
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("invalid_model"), std::string::npos) << a.body;
  EXPECT_TRUE(h.ex().route.candidates.empty());
}

TEST(RouteStage, BadJsonAndWrongMethodsAreTheClientsToFix) {
  {
    StageHarness h(makeSnapshot(kYaml));
    h.request("/v1/chat/completions", "{\"model\": ");
    EXPECT_EQ(h.onRequest(*h.start("route")), Step::Answered);
    auto a = h.answer();
    EXPECT_EQ(a.status, 400);
    EXPECT_NE(a.body.find("not valid JSON"), std::string::npos) << a.body;
  }
  {
    StageHarness h(makeSnapshot(kYaml));
    h.request("/v1/chat/completions", "{}");
    h.ex().req.method(boost::beast::http::verb::get);
    EXPECT_EQ(h.onRequest(*h.start("route")), Step::Answered);
    EXPECT_EQ(h.answer().status, 405);
  }
}

TEST(RouteStage, TheModelListIsAnsweredHere) {
  StageHarness h(makeSnapshot(kYaml));
  h.request("/v1/models", "");
  h.ex().req.method(boost::beast::http::verb::get);
  h.call().models_list = true;
  EXPECT_EQ(h.onRequest(*h.start("route")), Step::Answered);
  auto a = h.answer();
  EXPECT_EQ(a.status, 200);
  EXPECT_NE(a.body.find("\"id\":\"gpt-4o-mini\""), std::string::npos) << a.body;
  EXPECT_EQ(h.rec().status, 200);
}

TEST(RouteStage, TheClientsKeyNeverTravelsInTheQuery) {
  StageHarness h(makeSnapshot(kYaml));
  h.request("/v1/chat/completions?key=secret&x=1", R"({"model":"gpt-4o-mini","messages":[]})");
  EXPECT_EQ(h.onRequest(*h.start("route")), Step::Continue);
  EXPECT_EQ(h.call().query, "x=1");
}

}  // namespace route_stage_test
}  // namespace
}  // namespace sluice::gateway
