#include "routing/Router.hpp"

#include <gtest/gtest.h>

#include <map>

namespace sluice::routing {
namespace {
namespace router_test {

std::shared_ptr<const config::Config> makeConfig(std::vector<config::ChannelConfig> channels) {
  auto c = std::make_shared<config::Config>();
  c->channels = std::move(channels);
  c->routing.breaker_failures = 2;
  c->routing.breaker_cooldown = std::chrono::milliseconds(60'000);
  return c;
}

config::ChannelConfig channel(std::string name, int priority, int weight, std::vector<std::string> keys,
                              std::vector<std::string> models = {"*"}) {
  config::ChannelConfig c;
  c.name = std::move(name);
  c.base_url = "http://127.0.0.1:9/v1";
  c.priority = priority;
  c.weight = weight;
  c.keys = std::move(keys);
  c.models = std::move(models);
  return c;
}

TEST(Glob, MatchesStarsAndQuestionMarks) {
  EXPECT_TRUE(globMatch("gpt-4o*", "gpt-4o-mini"));
  EXPECT_TRUE(globMatch("gpt-4o*", "gpt-4o"));
  EXPECT_TRUE(globMatch("*", ""));
  EXPECT_TRUE(globMatch("a?c", "abc"));
  EXPECT_TRUE(globMatch("*-mini", "gpt-4o-mini"));
  EXPECT_TRUE(globMatch("g*4*i", "gpt-4o-mini"));
  EXPECT_FALSE(globMatch("gpt-4.1*", "gpt-4o"));
  EXPECT_FALSE(globMatch("a?c", "ac"));
  EXPECT_FALSE(globMatch("exact", "exactly"));
}

TEST(MaskSecret, NeverShowsTheMiddle) {
  EXPECT_EQ(maskSecret("sk-1234567890abcdef"), "sk-...cdef");
  EXPECT_EQ(maskSecret("short"), "***");
  EXPECT_EQ(maskSecret(""), "(none)");
}

TEST(Router, PriorityFirstThenWeight) {
  HealthRegistry h;
  Router r(makeConfig({channel("low", 2, 1, {"k"}), channel("a", 1, 3, {"k"}), channel("b", 1, 1, {"k"})}), h);
  std::map<std::string, int> firsts;
  for (int i = 0; i < 4000; ++i) {
    std::string up;
    auto c = r.candidates("m", up);
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[2]->cfg.name, "low");
    ++firsts[c[0]->cfg.name];
  }
  EXPECT_EQ(firsts["low"], 0);
  // weight 3 vs 1: about 75% / 25%
  EXPECT_GT(firsts["a"], 2700);
  EXPECT_LT(firsts["a"], 3300);
}

TEST(Router, PinnedChannelAndModelName) {
  HealthRegistry h;
  Router r(makeConfig({channel("one", 1, 1, {"k"}, {"gpt-*"}), channel("two", 1, 1, {"k"}, {"gpt-*"})}), h);
  std::string up;
  auto c = r.candidates("two/gpt-4o", up);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]->cfg.name, "two");
  EXPECT_EQ(up, "gpt-4o");
  EXPECT_TRUE(r.candidates("two/claude", up).empty());
  // A slash that is not a channel name is part of the model name.
  Router r2(makeConfig({channel("hf", 1, 1, {"k"}, {"meta-llama/*"})}), h);
  auto c2 = r2.candidates("meta-llama/Llama-3", up);
  ASSERT_EQ(c2.size(), 1u);
  EXPECT_EQ(up, "meta-llama/Llama-3");
}

TEST(Router, ChannelWithoutRequiredKeyIsSkipped) {
  HealthRegistry h;
  auto openai = channel("openai", 1, 1, {});
  auto local = channel("local", 1, 1, {});
  local.type = config::ChannelType::OpenAICompatible;
  Router r(makeConfig({openai, local}), h);
  std::string up;
  auto c = r.candidates("m", up);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]->cfg.name, "local");
}

TEST(Attempts, KeyFailureTriesOtherKeysThenChannelFailureMovesOn) {
  HealthRegistry h;
  Router r(makeConfig({channel("a", 1, 1, {"k1-aaaaaaaaaaaa", "k2-bbbbbbbbbbbb"}), channel("b", 2, 1, {"k3-cccccccccccc"})}), h);
  std::string up;
  Attempts at(r, r.candidates("m", up));
  std::int64_t ra = 0;
  auto p1 = at.next(ra);
  ASSERT_EQ(p1.channel->cfg.name, "a");
  r.report(p1, Outcome::KeyCooldown, 429, 30'000, "rate limited");
  at.failed(p1, Outcome::KeyCooldown);
  auto p2 = at.next(ra);
  ASSERT_EQ(p2.channel->cfg.name, "a");
  EXPECT_NE(p2.key, p1.key);
  r.report(p2, Outcome::ChannelFailure, 503, 0, "down");
  at.failed(p2, Outcome::ChannelFailure);
  auto p3 = at.next(ra);
  ASSERT_NE(p3.channel, nullptr);
  EXPECT_EQ(p3.channel->cfg.name, "b");
  at.failed(p3, Outcome::ChannelFailure);
  EXPECT_EQ(at.next(ra).channel, nullptr);
  // The 429 cooled key 1 down for later requests too.
  EXPECT_FALSE(p1.key->health->available(nowMs()));
  EXPECT_TRUE(p2.key->health->available(nowMs()));
}

TEST(Attempts, AllKeysCoolingReportsRetryAfter) {
  HealthRegistry h;
  Router r(makeConfig({channel("a", 1, 1, {"k1-aaaaaaaaaaaa"})}), h);
  std::string up;
  {
    Attempts at(r, r.candidates("m", up));
    std::int64_t ra = 0;
    auto p = at.next(ra);
    r.report(p, Outcome::KeyCooldown, 429, 5'000, "slow down");
  }
  Attempts at(r, r.candidates("m", up));
  std::int64_t ra = 0;
  EXPECT_EQ(at.next(ra).channel, nullptr);
  EXPECT_GT(ra, 4'000);
  EXPECT_LE(ra, 5'000);
}

TEST(Attempts, UnauthorizedDisablesTheKeyWithItsReason) {
  HealthRegistry h;
  Router r(makeConfig({channel("a", 1, 1, {"k1-aaaaaaaaaaaa"})}), h);
  std::string up;
  Attempts at(r, r.candidates("m", up));
  std::int64_t ra = 0;
  auto p = at.next(ra);
  r.report(p, Outcome::KeyDisable, 401, 0, "invalid api key");
  EXPECT_TRUE(p.key->health->disabled.load());
  EXPECT_NE(p.key->health->why().find("401"), std::string::npos);
}

TEST(Attempts, BreakerOpensAndAllowsOneProbeAfterCooldown) {
  HealthRegistry h;
  auto cfg = std::const_pointer_cast<config::Config>(makeConfig({channel("a", 1, 1, {"k"}), channel("b", 2, 1, {"k"})}));
  cfg->routing.breaker_cooldown = std::chrono::milliseconds(0);
  Router r(cfg, h);
  std::string up;
  for (int i = 0; i < 2; ++i) {
    Attempts at(r, r.candidates("m", up));
    std::int64_t ra = 0;
    auto p = at.next(ra);
    ASSERT_EQ(p.channel->cfg.name, "a");
    r.report(p, Outcome::ChannelFailure, 500, 0, "boom");
  }
  ASSERT_NE(r.channelByName("a")->health->open_until_ms.load(), 0);
  // Cool-down 0: the next request is a half-open probe; a concurrent one skips "a".
  Attempts probe(r, r.candidates("m", up));
  std::int64_t ra = 0;
  auto p = probe.next(ra);
  EXPECT_EQ(p.channel->cfg.name, "a");
  EXPECT_TRUE(p.probe);
  Attempts other(r, r.candidates("m", up));
  EXPECT_EQ(other.next(ra).channel->cfg.name, "b");
  r.report(p, Outcome::Success, 200, 0, "");
  EXPECT_EQ(r.channelByName("a")->health->open_until_ms.load(), 0);
}

TEST(Health, SurvivesAReloadBySameChannelAndKey) {
  HealthRegistry h;
  auto k1 = h.key("a", "secret");
  auto k2 = h.key("a", "secret");
  auto k3 = h.key("b", "secret");
  EXPECT_EQ(k1.get(), k2.get());
  EXPECT_NE(k1.get(), k3.get());
}

config::ErrorRule rule(std::vector<int> status, std::string body, config::ErrorAction action,
                       std::chrono::milliseconds cooldown = std::chrono::milliseconds(0)) {
  config::ErrorRule r;
  r.status = std::move(status);
  r.body = std::move(body);
  r.action = action;
  r.cooldown = cooldown;
  return r;
}

TEST(ErrorRules, BuiltInRulesAreTodaysBehaviour) {
  const ErrorRules none({});
  EXPECT_EQ(none.classify(429, "{}").outcome, Outcome::KeyCooldown);
  EXPECT_EQ(none.classify(401, "").outcome, Outcome::KeyDisable);
  EXPECT_EQ(none.classify(403, "").outcome, Outcome::KeyDisable);
  EXPECT_EQ(none.classify(408, "").outcome, Outcome::ChannelFailure);
  for (int s : {500, 502, 503, 504, 529}) EXPECT_EQ(none.classify(s, "").outcome, Outcome::ChannelFailure) << s;
  for (int s : {400, 404, 409, 413, 422}) EXPECT_EQ(none.classify(s, "").outcome, Outcome::ClientError) << s;
  EXPECT_EQ(none.classify(400, "").rule, -1);
}

TEST(ErrorRules, FirstMatchWinsOnStatusAndBody) {
  using A = config::ErrorAction;
  const ErrorRules rules({
      rule({400}, "context_length_exceeded|prompt is too long", A::Fallback),
      rule({503, 529}, "overloaded", A::Failover),
      rule({429}, "", A::Cooldown, std::chrono::milliseconds(60'000)),
      rule({503}, "", A::Return),
      rule({}, "(?i)QUOTA", A::Retry),
  });
  auto v = rules.classify(400, R"({"error":{"code":"context_length_exceeded"}})");
  EXPECT_EQ(v.outcome, Outcome::Fallback);
  EXPECT_EQ(v.rule, 0);
  EXPECT_EQ(rules.classify(400, R"({"error":{"message":"prompt is too long: 210000 tokens"}})").outcome, Outcome::Fallback);
  // 400 with another body: no rule of the list; the built-in return.
  v = rules.classify(400, R"({"error":{"code":"invalid_value"}})");
  EXPECT_EQ(v.outcome, Outcome::ClientError);
  EXPECT_EQ(v.rule, -1);
  EXPECT_EQ(rules.classify(529, R"({"type":"error","error":{"type":"overloaded_error"}})").outcome, Outcome::ChannelFailure);
  v = rules.classify(429, "{}");
  EXPECT_EQ(v.outcome, Outcome::KeyCooldown);
  EXPECT_EQ(v.cooldown_ms, 60'000);
  // 503 without "overloaded": the fourth rule, before the built-in failover.
  v = rules.classify(503, "maintenance");
  EXPECT_EQ(v.outcome, Outcome::ClientError);
  EXPECT_EQ(v.rule, 3);
  // Any status, a case-blind pattern.
  v = rules.classify(500, "insufficient_quota");
  EXPECT_EQ(v.outcome, Outcome::KeyRetry);
  EXPECT_EQ(v.rule, 4);
  EXPECT_EQ(rules.classify(500, "boom").outcome, Outcome::ChannelFailure);
}

TEST(ErrorRules, BodiesAreSearchedWholeWhateverTheirBytes) {
  const ErrorRules rules({rule({}, "needle", config::ErrorAction::Return)});
  std::string body(64 * 1024, 'x');
  body.replace(body.size() - 6, 6, "needle");
  EXPECT_EQ(rules.classify(500, body).outcome, Outcome::ClientError);
  std::string binary("\0\xff\xfe needle", 10);
  EXPECT_EQ(rules.classify(500, binary).outcome, Outcome::ClientError);
  EXPECT_EQ(rules.classify(500, "").outcome, Outcome::ChannelFailure);
}

TEST(ErrorRules, ResetDurations) {
  EXPECT_EQ(resetDurationMs("1s"), 1000);
  EXPECT_EQ(resetDurationMs("6m0s"), 360'000);
  EXPECT_EQ(resetDurationMs("1h2m3.5s"), 3'723'500);
  EXPECT_EQ(resetDurationMs("20ms"), 20);
  EXPECT_EQ(resetDurationMs("0.5s"), 500);
  for (std::string_view bad : {"", "s", "5", "5x", "-1s", "1s ", "99999h", "1e3s", "1.2.3s", "12345678901234567890s"})
    EXPECT_EQ(resetDurationMs(bad), 0) << bad;
}

TEST(Router, FallbacksByTheRequestedNameThenTheRoutedOne) {
  HealthRegistry h;
  auto cfg = std::make_shared<config::Config>(*makeConfig({channel("a", 1, 1, {"k"})}));
  cfg->routing.fallbacks["fast"] = {"m2"};
  cfg->routing.fallbacks["gpt-4o"] = {"m3", "m4"};
  Router r(cfg, h);
  EXPECT_EQ(r.fallbacks("fast", "gpt-4o"), std::vector<std::string>{"m2"});
  EXPECT_EQ(r.fallbacks("other", "gpt-4o"), (std::vector<std::string>{"m3", "m4"}));
  EXPECT_TRUE(r.fallbacks("other", "other").empty());
}

TEST(Router, RetryLeavesTheKeyAloneAndFallbackLeavesTheChannelClosed) {
  HealthRegistry h;
  Router r(makeConfig({channel("a", 1, 1, {"k1", "k2"})}), h);
  std::string up;
  Attempts at(r, r.candidates("m", up));
  std::int64_t ra = 0;
  auto p1 = at.next(ra);
  r.report(p1, Outcome::KeyRetry, 500, 0, "quota");
  at.failed(p1, Outcome::KeyRetry);
  EXPECT_TRUE(p1.key->health->available(nowMs()));
  EXPECT_EQ(p1.key->health->failures.load(), 1u);
  auto p2 = at.next(ra);
  ASSERT_NE(p2.channel, nullptr);
  EXPECT_EQ(p2.channel, p1.channel);
  EXPECT_NE(p2.key, p1.key);
  r.report(p2, Outcome::Fallback, 400, 0, "too long");
  EXPECT_EQ(p2.channel->health->open_until_ms.load(), 0);
  EXPECT_EQ(p2.channel->health->consecutive_failures.load(), 0);
}

TEST(Ewma, FirstSampleSetsThenMovesByAlpha) {
  Ewma e;
  EXPECT_EQ(e.cost(), 0.0);  // never measured: tried first
  e.add(100, false);
  EXPECT_DOUBLE_EQ(e.ttfb_ms.load(), 100.0);
  EXPECT_DOUBLE_EQ(e.errors.load(), 0.0);
  e.add(200, false);
  EXPECT_DOUBLE_EQ(e.ttfb_ms.load(), 100.0 + Ewma::kAlpha * 100.0);
  e.add(-1, true);  // a failure without a first byte moves the errors only
  EXPECT_DOUBLE_EQ(e.ttfb_ms.load(), 100.0 + Ewma::kAlpha * 100.0);
  EXPECT_DOUBLE_EQ(e.errors.load(), Ewma::kAlpha);
  Ewma failing;
  failing.add(-1, true);
  EXPECT_GT(failing.cost(), 0.0);  // failed without ever answering: not "never measured"
}

TEST(TtfbWindow, P95OfTheLastSamplesOnceThereAreEnough) {
  TtfbWindow w;
  for (int i = 0; i < 19; ++i) w.add(10);
  EXPECT_LT(w.p95(), 0);  // too few to say
  w.add(10);
  EXPECT_DOUBLE_EQ(w.p95(), 10);
  TtfbWindow v;
  for (int i = 1; i <= 100; ++i) v.add(i);  // the window keeps the last 64: 37..100
  EXPECT_DOUBLE_EQ(v.p95(), 97);  // nearest rank: the 61st of 64
}

TEST(Router, ReportFeedsTheWindowWithAnswersOnly) {
  HealthRegistry h;
  Router r(makeConfig({channel("a", 1, 1, {"k"})}), h);
  const auto* ch = r.channels()[0].get();
  const Pick p{ch, &ch->keys[0], false};
  for (int i = 0; i < 20; ++i) r.report(p, Outcome::Success, 200, 0, "", 5);
  for (int i = 0; i < 20; ++i) r.report(p, Outcome::ChannelFailure, 503, 0, "down", 5000);
  EXPECT_DOUBLE_EQ(ch->health->recent.p95(), 5);
}

TEST(Router, LatencyBalancePutsTheFasterOfTwoFirst) {
  HealthRegistry h;
  auto cfg = std::make_shared<config::Config>(
      *makeConfig({channel("fast", 1, 1, {"k"}), channel("slow", 1, 1, {"k"}), channel("backup", 2, 1, {"k"})}));
  cfg->routing.balance = config::Balance::Latency;
  Router r(cfg, h);
  auto pickOf = [&](std::string_view name) {
    for (const auto& c : r.channels())
      if (c->cfg.name == name) return Pick{c.get(), &c->keys[0], false};
    return Pick{};
  };
  for (int i = 0; i < 5; ++i) {
    r.report(pickOf("fast"), Outcome::Success, 200, 0, "", 10);
    r.report(pickOf("slow"), Outcome::Success, 200, 0, "", 150);
  }
  for (int i = 0; i < 500; ++i) {
    std::string up;
    auto c = r.candidates("m", up);
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[0]->cfg.name, "fast");
    EXPECT_EQ(c[1]->cfg.name, "slow");  // still the failover after it
    EXPECT_EQ(c[2]->cfg.name, "backup");  // priority before latency
  }
  // Errors outweigh speed: the fast one failing half its attempts goes second.
  for (int i = 0; i < 5; ++i) r.report(pickOf("fast"), Outcome::ChannelFailure, 503, 0, "overloaded");
  std::string up;
  EXPECT_EQ(r.candidates("m", up)[0]->cfg.name, "slow");
}

TEST(Router, WeightedBalanceIgnoresLatency) {
  HealthRegistry h;
  Router r(makeConfig({channel("fast", 1, 1, {"k"}), channel("slow", 1, 1, {"k"})}), h);
  for (const auto& c : r.channels()) r.report(Pick{c.get(), &c->keys[0], false}, Outcome::Success, 200, 0, "",
                                              c->cfg.name == "fast" ? 10 : 150);
  std::map<std::string, int> firsts;
  for (int i = 0; i < 2000; ++i) {
    std::string up;
    ++firsts[r.candidates("m", up)[0]->cfg.name];
  }
  EXPECT_GT(firsts["slow"], 800);
  EXPECT_GT(firsts["fast"], 800);
}

TEST(Router, LatencyBalancePicksTheBetterKey) {
  HealthRegistry h;
  auto cfg = std::make_shared<config::Config>(*makeConfig({channel("a", 1, 1, {"k1", "k2"})}));
  cfg->routing.balance = config::Balance::Latency;
  Router r(cfg, h);
  const auto* ch = r.channels()[0].get();
  r.report(Pick{ch, &ch->keys[0], false}, Outcome::Success, 200, 0, "", 300);
  r.report(Pick{ch, &ch->keys[1], false}, Outcome::Success, 200, 0, "", 20);
  for (int i = 0; i < 10; ++i) {
    std::string up;
    Attempts at(r, r.candidates("m", up));
    std::int64_t ra = 0;
    auto p = at.next(ra);
    EXPECT_EQ(p.key, &ch->keys[1]);
    auto second = at.next(ra);  // the other key is still there to fail over to
    EXPECT_EQ(second.key, &ch->keys[0]);
  }
}

}  // namespace router_test
}  // namespace
}  // namespace sluice::routing
