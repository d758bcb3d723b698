// The chain runner (gateway/Chain.cpp) with fake stages: the order, the stop on an answer, the
// completions in reverse, a stage that starts for nothing, and a hook that throws.
#include "gateway/Chain.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "StageTestSupport.hpp"

namespace sluice::gateway {
namespace {

using testing::makeSnapshot;
using testing::StageHarness;

constexpr const char* kYaml = R"(auth:
  master_key: "mk"
channels:
  - {name: a, type: openai, base_url: "http://127.0.0.1:9/v1", keys: ["k"], models: ["gpt-4o-mini"]}
)";

struct Log {
  std::vector<std::string> events;
};

class FakeStage final : public Stage {
 public:
  FakeStage(Log& log, std::string name, Step step, bool throws)
      : log_(log), name_(std::move(name)), step_(step), throws_(throws) {}
  boost::asio::awaitable<Step> onRequest(Exchange&) override {
    log_.events.push_back("request " + name_);
    if (throws_) throw std::runtime_error("boom in " + name_);
    co_return step_;
  }
  boost::asio::awaitable<void> onComplete(Exchange&) override {
    log_.events.push_back("complete " + name_);
    co_return;
  }

 private:
  Log& log_;
  std::string name_;
  Step step_;
  bool throws_;
};

class FakeConfig final : public StageConfig {
 public:
  FakeConfig(Log& log, std::string name, Step step = Step::Continue, bool starts = true, bool throws = false)
      : log_(log), name_(std::move(name)), step_(step), starts_(starts), throws_(throws) {}
  std::string_view name() const override { return name_; }
  Stage* start(const Exchange&, StageArena& arena) const override {
    return starts_ ? arena.make<FakeStage>(log_, name_, step_, throws_) : nullptr;
  }

 private:
  Log& log_;
  std::string name_;
  Step step_;
  bool starts_;
  bool throws_;
};

TEST(Chain, RunsStagesInOrderAndCompletesThemInReverse) {
  Log log;
  auto snap = makeSnapshot(kYaml);
  snap->stages.clear();
  snap->stages.push_back(std::make_unique<FakeConfig>(log, "one"));
  snap->stages.push_back(std::make_unique<FakeConfig>(log, "skipped", Step::Continue, /*starts=*/false));
  snap->stages.push_back(std::make_unique<FakeConfig>(log, "two", Step::Answered));
  snap->stages.push_back(std::make_unique<FakeConfig>(log, "never"));
  StageHarness h(snap);
  h.request("/v1/chat/completions", "{}");
  h.runChain();
  EXPECT_EQ(log.events, (std::vector<std::string>{"request one", "request two", "complete two", "complete one"}));
}

TEST(Chain, AThrowingHookStillCompletesTheStartedStagesThenRethrows) {
  Log log;
  auto snap = makeSnapshot(kYaml);
  snap->stages.clear();
  snap->stages.push_back(std::make_unique<FakeConfig>(log, "one"));
  snap->stages.push_back(std::make_unique<FakeConfig>(log, "bad", Step::Continue, true, /*throws=*/true));
  snap->stages.push_back(std::make_unique<FakeConfig>(log, "never"));
  StageHarness h(snap);
  h.request("/v1/chat/completions", "{}");
  EXPECT_THROW(h.runChain(), std::runtime_error);
  EXPECT_EQ(log.events, (std::vector<std::string>{"request one", "request bad", "complete bad", "complete one"}));
}

TEST(Chain, TheOrderIsWrittenOnce) {
  auto snap = makeSnapshot(kYaml);
  std::vector<std::string> names;
  for (const auto& s : snap->stages) names.emplace_back(s->name());
  EXPECT_EQ(names, (std::vector<std::string>{"auth", "route", "limits", "scan", "screening", "redaction", "guardrail",
                                             "cache", "relay"}));
}

}  // namespace
}  // namespace sluice::gateway
