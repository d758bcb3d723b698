// The chain runner (gateway/Chain.cpp) with fake stages: the order, the stop on an answer, the
// completions in reverse, a stage that starts for nothing, a hook that throws; and the way back
// (attempts in order up to a pass-over, the response hooks in reverse, only the hooks a stage
// takes, a data Abort and an end that answers stopping the rest).
#include "gateway/Chain.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "StageTestSupport.hpp"

namespace sluice::gateway {
namespace {
namespace chain_test {

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
  unsigned hooks() const override { return kComplete; }
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

// A stage on the way back: logs each hook it takes; `skips` passes every pick over, `answers`
// replaces a whole answer, `rewrites` appends its name to each piece.
class WayBackStage final : public Stage {
 public:
  WayBackStage(Log& log, std::string name, unsigned hooks, bool last)
      : log_(log), name_(std::move(name)), hooks_(hooks), last_(last) {}
  unsigned hooks() const override { return hooks_; }
  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    if (!last_) co_return Step::Continue;
    // The relay's part: one attempt, the answer's head, two pieces, its end and its commit.
    const routing::Pick pick{ex.route.candidates.empty() ? nullptr : ex.route.candidates[0], nullptr, false};
    UpstreamAttempt a(pick, 0);
    co_await wayback::attempt(ex, a);
    log_.events.push_back(a.skip == UpstreamAttempt::Skip::None ? "tried" : "passed over: " + a.why);
    co_await wayback::attemptFailed(ex, pick);
    ResponseHead head(pick, 200, true, providers::Format::OpenAIChat, providers::Format::OpenAIChat, false);
    wayback::headers(ex, head);
    for (const bool eos : {false, true}) {
      std::string out = eos ? "B" : "A";
      ResponseData d{.upstream = "u", .out = out, .end_of_stream = eos};
      const DataStep step = wayback::data(ex, d);
      log_.events.push_back("client gets " + out + (step == DataStep::Abort ? " (aborted)" : ""));
    }
    const ResponseEnd end{.pick = pick, .status = 200, .stream = false, .upstream_body = "u"};
    const Step ended = co_await wayback::end(ex, end);
    if (ended == Step::Continue) co_await wayback::commit(ex, end);
    co_return Step::Answered;
  }
  boost::asio::awaitable<void> onAttempt(Exchange&, UpstreamAttempt& a) override {
    log_.events.push_back("attempt " + name_);
    if (name_ == "skips") {
      a.skip = UpstreamAttempt::Skip::Channel;
      a.why = "at quota";
    }
    co_return;
  }
  boost::asio::awaitable<void> onAttemptFailed(Exchange&, const routing::Pick&) override {
    log_.events.push_back("attempt failed " + name_);
    co_return;
  }
  void onResponseHeaders(Exchange&, ResponseHead&) override { log_.events.push_back("headers " + name_); }
  DataStep onResponseData(Exchange&, ResponseData& d) override {
    d.out += name_;
    return name_ == "aborts" && d.end_of_stream ? DataStep::Abort : DataStep::Continue;
  }
  boost::asio::awaitable<Step> onResponseEnd(Exchange&, const ResponseEnd&) override {
    log_.events.push_back("end " + name_);
    co_return name_ == "answers" ? Step::Answered : Step::Continue;
  }
  boost::asio::awaitable<void> onResponseCommit(Exchange&, const ResponseEnd&) override {
    log_.events.push_back("commit " + name_);
    co_return;
  }

 private:
  Log& log_;
  std::string name_;
  unsigned hooks_;
  bool last_;
};

class WayBackConfig final : public StageConfig {
 public:
  WayBackConfig(Log& log, std::string name, unsigned hooks, bool last = false)
      : log_(log), name_(std::move(name)), hooks_(hooks), last_(last) {}
  std::string_view name() const override { return name_; }
  Stage* start(const Exchange&, StageArena& arena) const override {
    return arena.make<WayBackStage>(log_, name_, hooks_, last_);
  }

 private:
  Log& log_;
  std::string name_;
  unsigned hooks_;
  bool last_;
};

constexpr unsigned kAll =
    Stage::kAttempt | Stage::kResponseHeaders | Stage::kResponseData | Stage::kResponseEnd | Stage::kResponseCommit;

TEST(Chain, TheWayBackRunsTheStagesHooksInReverseAndOnlyTheHooksTheyTake) {
  Log log;
  auto snap = makeSnapshot(kYaml);
  snap->stages.clear();
  snap->stages.push_back(std::make_unique<WayBackConfig>(log, "one", kAll));
  snap->stages.push_back(std::make_unique<WayBackConfig>(log, "quiet", 0u));
  snap->stages.push_back(std::make_unique<WayBackConfig>(log, "two", Stage::kResponseData | Stage::kResponseCommit));
  snap->stages.push_back(std::make_unique<WayBackConfig>(log, "relay", 0u, /*last=*/true));
  StageHarness h(snap);
  h.request("/v1/chat/completions", "{}");
  h.runChain();
  EXPECT_EQ(log.events, (std::vector<std::string>{"attempt one", "tried", "attempt failed one", "headers one",
                                                  "client gets Atwoone", "client gets Btwoone", "end one", "commit two",
                                                  "commit one"}));
}

TEST(Chain, AStageStopsTheWayBackWhereItSays) {
  Log log;
  auto snap = makeSnapshot(kYaml);
  snap->stages.clear();
  snap->stages.push_back(std::make_unique<WayBackConfig>(log, "one", kAll));
  snap->stages.push_back(std::make_unique<WayBackConfig>(log, "answers", Stage::kResponseEnd));
  snap->stages.push_back(std::make_unique<WayBackConfig>(log, "aborts", Stage::kResponseData));
  snap->stages.push_back(std::make_unique<WayBackConfig>(log, "skips", Stage::kAttempt));
  snap->stages.push_back(std::make_unique<WayBackConfig>(log, "never", Stage::kAttempt));
  snap->stages.push_back(std::make_unique<WayBackConfig>(log, "relay", 0u, /*last=*/true));
  StageHarness h(snap);
  h.request("/v1/chat/completions", "{}");
  h.runChain();
  EXPECT_EQ(log.events,
            (std::vector<std::string>{"attempt one", "attempt skips", "passed over: at quota", "attempt failed never",
                                      "attempt failed skips", "attempt failed one", "headers one",
                                      "client gets Aabortsone", "client gets Baborts (aborted)", "end answers"}));
}

// Stages rewrite what one attempt sends: the body (the last rewrite wins) and head lines (added
// up in chain order); the relay sends ua.sendBody() with ua.header_lines.
class RewritingStage final : public Stage {
 public:
  explicit RewritingStage(std::string name) : name_(std::move(name)) {}
  unsigned hooks() const override { return kAttempt; }
  boost::asio::awaitable<Step> onRequest(Exchange&) override { co_return Step::Continue; }
  boost::asio::awaitable<void> onAttempt(Exchange&, UpstreamAttempt& a) override {
    a.rewritten = std::string(a.sendBody()) + "+" + name_;
    a.header_lines += "X-Stage: " + name_ + "\r\n";
    co_return;
  }

 private:
  std::string name_;
};

class RewritingConfig final : public StageConfig {
 public:
  explicit RewritingConfig(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  Stage* start(const Exchange&, StageArena& arena) const override { return arena.make<RewritingStage>(name_); }

 private:
  std::string name_;
};

// The relay's part for the rewrite test: one attempt on a body made for the channel.
class SendingStage final : public Stage {
 public:
  explicit SendingStage(Log& log) : log_(log) {}
  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    const routing::Pick pick{};
    UpstreamAttempt ua(pick, 0, "made");
    log_.events.push_back("made: " + std::string(ua.sendBody()));
    co_await wayback::attempt(ex, ua);
    log_.events.push_back("sends: " + std::string(ua.sendBody()) + " | " + ua.header_lines);
    co_return Step::Answered;
  }

 private:
  Log& log_;
};

class SendingConfig final : public StageConfig {
 public:
  explicit SendingConfig(Log& log) : log_(log) {}
  std::string_view name() const override { return "relay"; }
  Stage* start(const Exchange&, StageArena& arena) const override { return arena.make<SendingStage>(log_); }

 private:
  Log& log_;
};

TEST(Chain, StagesRewriteWhatAnAttemptSends) {
  Log log;
  auto snap = makeSnapshot(kYaml);
  snap->stages.clear();
  snap->stages.push_back(std::make_unique<RewritingConfig>("a"));
  snap->stages.push_back(std::make_unique<RewritingConfig>("b"));
  snap->stages.push_back(std::make_unique<SendingConfig>(log));
  StageHarness h(snap);
  h.request("/v1/chat/completions", "{}");
  h.runChain();
  EXPECT_EQ(log.events, (std::vector<std::string>{"made: made", "sends: made+a+b | X-Stage: a\r\nX-Stage: b\r\n"}));
}

TEST(Chain, TheOrderIsWrittenOnce) {
  auto snap = makeSnapshot(kYaml);
  std::vector<std::string> names;
  for (const auto& s : snap->stages) names.emplace_back(s->name());
  EXPECT_EQ(names, (std::vector<std::string>{"trace", "auth", "responses", "route", "limits", "scan", "screening",
                                             "redaction", "guardrail", "cache", "subscription", "signing",
                                             "relay"}));
}

}  // namespace chain_test
}  // namespace
}  // namespace sluice::gateway
