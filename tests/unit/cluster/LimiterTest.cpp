#include "cluster/Limiter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "ClusterTestSupport.hpp"
#include "cluster/Redis.hpp"

namespace sluice::cluster {
namespace {
namespace limiter_test {

namespace net = boost::asio;
using namespace std::chrono_literals;
using testing::runOn;

enum class Backend { Local, Redis };

void PrintTo(Backend b, std::ostream* os) {
  *os << (b == Backend::Local ? "Local" : "Redis");
}

std::string backendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::Local ? "Local" : "Redis";
}

Charge charge(const std::string& id, std::int64_t tokens = 0, double cost = 0) {
  return Charge{id, tokens, cost};
}

std::int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The same behaviour, checked against the local counters and against Redis.
class LimiterTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::Redis) testing::requireRedis();
    if (HasFatalFailure()) return;
    prefix_ = testing::uniquePrefix();
  }

  Limiter::Options options(std::chrono::milliseconds window = 60s) const {
    Limiter::Options o;
    o.redis_url = GetParam() == Backend::Redis ? testing::sharedRedisUrl() : "";
    o.key_prefix = prefix_;
    o.window = window;
    o.redis_timeout = 2s;  // a loaded test machine must not turn into a fallback
    return o;
  }

  Decision acquire(Limiter& l, const Subject& s, const Charge& c) {
    auto d = runOn(ioc_, l.acquire(s, c));
    // A silent fallback would make the Redis runs test the local counters.
    EXPECT_EQ(l.redisUp(), GetParam() == Backend::Redis);
    return d;
  }
  void settle(Limiter& l, const Subject& s, const Charge& c, std::int64_t tokens, double cost) {
    runOn(ioc_, l.settle(s, c, tokens, cost));
  }

  net::io_context ioc_;
  std::string prefix_;
};

TEST_P(LimiterTest, RequestsPerMinuteIsExactAndFreesWhenTheWindowMoves) {
  Limiter l(options(2s));
  Subject s{"vk:rpm", {}};
  s.spec.rpm = 10;
  for (int i = 0; i < 10; ++i) {
    auto d = acquire(l, s, charge("r" + std::to_string(i)));
    ASSERT_TRUE(d.allowed) << i;
    EXPECT_EQ(d.limit_requests, 10);
    EXPECT_EQ(d.remaining_requests, 9 - i);
    EXPECT_EQ(d.limit_tokens, -1);
    if (i < 9) {
      EXPECT_EQ(d.reset_requests_ms, 0) << "room for one more now";
    } else {
      EXPECT_GT(d.reset_requests_ms, 0);
      EXPECT_LE(d.reset_requests_ms, 2000);
    }
  }
  auto refused = acquire(l, s, charge("r10"));
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.hit, LimitKind::Requests);
  EXPECT_GT(refused.retry_after_ms, 0);
  EXPECT_LE(refused.retry_after_ms, 2000);
  EXPECT_EQ(refused.remaining_requests, 0);
  EXPECT_EQ(refused.reset_requests_ms, refused.retry_after_ms);

  std::this_thread::sleep_for(std::chrono::milliseconds(refused.retry_after_ms + 20));
  EXPECT_TRUE(acquire(l, s, charge("r11")).allowed);
}

TEST_P(LimiterTest, TokensAreEstimatedThenReconciledBySettle) {
  Limiter l(options());
  Subject s{"vk:tpm", {}};
  s.spec.tpm = 1000;
  auto a = charge("a", 600);
  auto d = acquire(l, s, a);
  ASSERT_TRUE(d.allowed);
  EXPECT_EQ(d.limit_tokens, 1000);
  EXPECT_EQ(d.remaining_tokens, 400);
  EXPECT_EQ(d.reset_tokens_ms, 60000);
  EXPECT_FALSE(acquire(l, s, charge("too-many", 500)).allowed);

  settle(l, s, a, 200, 0);  // an over-estimate gives 400 tokens back
  auto b = charge("b", 700);
  d = acquire(l, s, b);
  ASSERT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining_tokens, 100);

  settle(l, s, b, 900, 0);  // an under-estimate charges 200 more: 1100 in the window
  d = acquire(l, s, charge("c", 1));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.hit, LimitKind::Tokens);
  EXPECT_EQ(d.remaining_tokens, 0);
  EXPECT_GT(d.retry_after_ms, 0);
  EXPECT_LE(d.retry_after_ms, 60000);
}

TEST_P(LimiterTest, TokensFreeWhenTheWindowMovesAndAnOversizedEstimateNeverFits) {
  Limiter l(options(1s));
  Subject s{"vk:tpm2", {}};
  s.spec.tpm = 100;
  ASSERT_TRUE(acquire(l, s, charge("a", 60)).allowed);
  auto d = acquire(l, s, charge("b", 60));
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(d.hit, LimitKind::Tokens);
  EXPECT_EQ(d.remaining_tokens, 40);
  ASSERT_GT(d.retry_after_ms, 0);

  auto huge = acquire(l, s, charge("huge", 101));
  EXPECT_FALSE(huge.allowed);
  EXPECT_EQ(huge.retry_after_ms, 0) << "no wait makes 101 tokens fit in 100";

  std::this_thread::sleep_for(std::chrono::milliseconds(d.retry_after_ms + 20));
  EXPECT_TRUE(acquire(l, s, charge("b2", 60)).allowed);
}

TEST_P(LimiterTest, ConcurrencySlotIsFreedBySettle) {
  Limiter l(options());
  Subject s{"ch:conc", {}};
  s.spec.max_concurrent = 2;
  auto a = charge("a"), b = charge("b"), c = charge("c");
  ASSERT_TRUE(acquire(l, s, a).allowed);
  ASSERT_TRUE(acquire(l, s, b).allowed);
  auto d = acquire(l, s, c);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.hit, LimitKind::Concurrency);
  EXPECT_GT(d.retry_after_ms, 0);
  settle(l, s, a, 0, 0);
  EXPECT_TRUE(acquire(l, s, c).allowed);
  EXPECT_FALSE(acquire(l, s, charge("d")).allowed);
}

TEST_P(LimiterTest, LeaseExpiryFreesASlotWhoseSettleNeverCame) {
  auto o = options();
  o.lease = 300ms;
  Limiter l(o);
  Subject s{"ch:lease", {}};
  s.spec.max_concurrent = 1;
  ASSERT_TRUE(acquire(l, s, charge("lost")).allowed);
  EXPECT_FALSE(acquire(l, s, charge("b")).allowed);
  std::this_thread::sleep_for(400ms);
  EXPECT_TRUE(acquire(l, s, charge("b")).allowed);
}

struct BudgetCase {
  const char* name;
  LimitKind kind;
  std::int64_t max_retry_ms;  // 0: never resets
};

TEST_P(LimiterTest, BudgetsAdmitWithinAndOvershootByAtMostOneRequest) {
  for (auto bc : {BudgetCase{"daily", LimitKind::BudgetDaily, 86'400'000},
                  BudgetCase{"monthly", LimitKind::BudgetMonthly, 31LL * 86'400'000},
                  BudgetCase{"total", LimitKind::BudgetTotal, 0}}) {
    SCOPED_TRACE(bc.name);
    Limiter l(options());
    Subject s{std::string("vk:budget-") + bc.name, {}};
    (bc.kind == LimitKind::BudgetDaily     ? s.spec.budget_daily_usd
     : bc.kind == LimitKind::BudgetMonthly ? s.spec.budget_monthly_usd
                                           : s.spec.budget_total_usd) = 1.0;
    auto a = charge("a", 0, 0.5), b = charge("b", 0, 0.4);
    ASSERT_TRUE(acquire(l, s, a).allowed);
    ASSERT_TRUE(acquire(l, s, b).allowed);  // 0.5 + 0.4 reserved <= 1
    auto c = acquire(l, s, charge("c", 0, 0.2));
    EXPECT_FALSE(c.allowed) << "0.9 reserved + 0.2 > 1 with others in flight";
    EXPECT_EQ(c.hit, bc.kind);
    if (bc.max_retry_ms == 0) {
      EXPECT_EQ(c.retry_after_ms, 0);
    } else {
      EXPECT_GT(c.retry_after_ms, 0);
      EXPECT_LE(c.retry_after_ms, bc.max_retry_ms);
    }
    settle(l, s, a, 0, 0.45);
    settle(l, s, b, 0, 0.45);
    auto sp = l.spend(s.id);
    EXPECT_NEAR(sp.total_usd, 0.9, 1e-9);
    EXPECT_NEAR(sp.reserved_usd, 0, 1e-9);
    // Nothing in flight and spend below the budget: admitted although the estimate overshoots.
    auto last = charge("last", 0, 0.5);
    ASSERT_TRUE(acquire(l, s, last).allowed);
    EXPECT_NEAR(l.spend(s.id).reserved_usd, 0.5, 1e-9);
    EXPECT_FALSE(acquire(l, s, charge("e", 0, 0.01)).allowed) << "no second overshooting request";
    settle(l, s, last, 0, 0.5);
    EXPECT_NEAR(l.spend(s.id).total_usd, 1.4, 1e-9);
    EXPECT_FALSE(acquire(l, s, charge("f", 0, 0)).allowed) << "spent past the budget";
  }
}

TEST_P(LimiterTest, RefusalChargesNothing) {
  Limiter l(options());
  Subject s{"vk:refusal", {}};
  s.spec.rpm = 3;
  s.spec.tpm = 100;
  s.spec.max_concurrent = 2;
  s.spec.budget_total_usd = 1.0;
  auto tokens = acquire(l, s, charge("tokens", 200, 0.1));
  EXPECT_EQ(tokens.hit, LimitKind::Tokens);
  auto ok = charge("ok", 100, 0.6);
  auto d = acquire(l, s, ok);
  ASSERT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining_requests, 2) << "the refused request took no request";
  EXPECT_EQ(d.remaining_tokens, 0) << "nor tokens";
  auto budget = acquire(l, s, charge("budget", 0, 0.6));
  EXPECT_EQ(budget.hit, LimitKind::BudgetTotal);
  auto c2 = charge("c2", 0, 0.1);
  ASSERT_TRUE(acquire(l, s, c2).allowed) << "0.6 + 0.1 reserved: the refused 0.6 was not";
  auto conc = acquire(l, s, charge("conc"));
  EXPECT_EQ(conc.hit, LimitKind::Concurrency);
  settle(l, s, ok, 100, 0.6);
  d = acquire(l, s, charge("x"));
  ASSERT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining_requests, 0) << "three admitted; the three refusals charged nothing";
  auto sp = l.spend(s.id);
  EXPECT_NEAR(sp.total_usd, 0.6, 1e-9);
  EXPECT_NEAR(sp.reserved_usd, 0.1, 1e-9);
}

TEST_P(LimiterTest, SeedSpendNeverLowersTheCounters) {
  Limiter l(options());
  const auto now = nowMs();
  SpendSeed seed{dayIndex(now), monthIndex(now), 2.0, 3.0, 5.0};
  l.seedSpend("vk:seed", seed);
  auto sp = l.spend("vk:seed");
  EXPECT_DOUBLE_EQ(sp.day_usd, 2.0);
  EXPECT_DOUBLE_EQ(sp.month_usd, 3.0);
  EXPECT_DOUBLE_EQ(sp.total_usd, 5.0);

  l.seedSpend("vk:seed", SpendSeed{dayIndex(now), monthIndex(now), 1.0, 1.0, 1.0});
  l.seedSpend("vk:seed", SpendSeed{dayIndex(now) - 1, monthIndex(now) - 1, 9.0, 9.0, 4.0});  // older periods
  sp = l.spend("vk:seed");
  EXPECT_DOUBLE_EQ(sp.day_usd, 2.0);
  EXPECT_DOUBLE_EQ(sp.month_usd, 3.0);
  EXPECT_DOUBLE_EQ(sp.total_usd, 5.0);

  l.seedSpend("vk:seed", SpendSeed{dayIndex(now), monthIndex(now), 2.5, 3.5, 6.0});
  sp = l.spend("vk:seed");
  EXPECT_DOUBLE_EQ(sp.day_usd, 2.5);
  EXPECT_DOUBLE_EQ(sp.month_usd, 3.5);
  EXPECT_DOUBLE_EQ(sp.total_usd, 6.0);

  Subject s{"vk:seed", {}};
  s.spec.budget_total_usd = 6.0;
  auto d = acquire(l, s, charge("r", 0, 0.01));
  EXPECT_FALSE(d.allowed) << "the seeded spend counts against the budget";
  EXPECT_EQ(d.hit, LimitKind::BudgetTotal);
}

TEST_P(LimiterTest, SubjectWithoutLimitsIsAdmittedAsIs) {
  Limiter l(options());
  Subject s{"vk:free", {}};
  auto c = charge("a", 1'000'000, 1e6);
  auto d = acquire(l, s, c);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.limit_requests, -1);
  EXPECT_EQ(d.limit_tokens, -1);
  settle(l, s, c, 1'000'000, 1e6);
}

// Many coroutines on several threads at once: a budget overshoots by at most one request, and
// a concurrency cap is never exceeded.
struct Shared {
  Limiter* limiter;
  Subject subject;
  std::atomic<int> admitted{0};
  std::atomic<int> inflight{0};
  std::atomic<int> max_inflight{0};
  std::atomic<int> budget_refusals{0};
};

net::awaitable<void> spendUntilRefused(Shared* sh, std::string name) {
  for (int i = 0;; ++i) {
    auto c = charge(name + "-" + std::to_string(i), 0, 0.1);
    auto d = co_await sh->limiter->acquire(sh->subject, c);
    if (!d.allowed) {
      if (d.hit == LimitKind::BudgetTotal) sh->budget_refusals++;
      co_return;
    }
    sh->admitted++;
    co_await sh->limiter->settle(sh->subject, c, 0, 0.1);
  }
}

net::awaitable<void> holdSlot(Shared* sh, std::string name) {
  auto ex = co_await net::this_coro::executor;
  for (int i = 0; i < 5; ++i) {
    auto c = charge(name + "-" + std::to_string(i));
    auto d = co_await sh->limiter->acquire(sh->subject, c);
    if (!d.allowed) continue;
    int now = ++sh->inflight;
    int seen = sh->max_inflight.load();
    while (now > seen && !sh->max_inflight.compare_exchange_weak(seen, now)) {
    }
    sh->admitted++;
    net::steady_timer t(ex);
    t.expires_after(5ms);
    co_await t.async_wait(net::use_awaitable);
    --sh->inflight;
    co_await sh->limiter->settle(sh->subject, c, 0, 0);
  }
}

template <class Fn>
void onThreads(int threads, int per_thread, Fn spawn) {
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      net::io_context ioc;
      for (int i = 0; i < per_thread; ++i) spawn(ioc, "t" + std::to_string(t) + "c" + std::to_string(i));
      ioc.run();
    });
  }
  for (auto& t : ts) t.join();
}

TEST_P(LimiterTest, BudgetOvershootsByAtMostOneRequestUnderConcurrency) {
  Limiter l(options());
  Shared sh{&l, Subject{"vk:race", {}}};
  sh.subject.spec.budget_total_usd = 2.0;
  onThreads(3, 20, [&](net::io_context& ioc, std::string name) {
    net::co_spawn(ioc, spendUntilRefused(&sh, std::move(name)), net::detached);
  });
  EXPECT_EQ(sh.budget_refusals.load(), 60) << "every coroutine ends on the budget";
  EXPECT_GE(sh.admitted.load(), 19);
  EXPECT_LE(sh.admitted.load(), 21) << "2.0 USD at 0.1 a request: 20, plus at most one";
  auto sp = l.spend("vk:race");
  EXPECT_LE(sp.total_usd, 2.1 + 1e-9);
  EXPECT_NEAR(sp.total_usd, sh.admitted.load() * 0.1, 1e-9);
  EXPECT_NEAR(sp.reserved_usd, 0, 1e-9);
}

TEST_P(LimiterTest, ConcurrencyCapHoldsUnderConcurrency) {
  Limiter l(options());
  Shared sh{&l, Subject{"ch:race", {}}};
  sh.subject.spec.max_concurrent = 4;
  onThreads(3, 8, [&](net::io_context& ioc, std::string name) {
    net::co_spawn(ioc, holdSlot(&sh, std::move(name)), net::detached);
  });
  EXPECT_GT(sh.admitted.load(), 4);
  EXPECT_LE(sh.max_inflight.load(), 4);
  EXPECT_TRUE(acquire(l, sh.subject, charge("after")).allowed) << "every slot was given back";
}

INSTANTIATE_TEST_SUITE_P(Backends, LimiterTest, ::testing::Values(Backend::Local, Backend::Redis), backendName);

// ---------------------------------------------------------------- Redis only

class LimiterRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::requireRedis();
  }
  net::io_context ioc_;
};

TEST_F(LimiterRedisTest, InstancesSharingRedisSeeEachOthersCounts) {
  Limiter::Options o;
  o.redis_url = testing::sharedRedisUrl();
  o.key_prefix = testing::uniquePrefix();
  o.redis_timeout = 2s;
  Limiter a(o), b(o);
  Subject s{"vk:shared", {}};
  s.spec.rpm = 4;
  s.spec.max_concurrent = 3;
  auto c1 = charge("1"), c2 = charge("2"), c3 = charge("3");
  ASSERT_TRUE(runOn(ioc_, a.acquire(s, c1)).allowed);
  ASSERT_TRUE(runOn(ioc_, b.acquire(s, c2)).allowed);
  ASSERT_TRUE(runOn(ioc_, a.acquire(s, c3)).allowed);
  auto d = runOn(ioc_, b.acquire(s, charge("4")));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.hit, LimitKind::Concurrency) << "three slots taken across the two instances";
  runOn(ioc_, b.settle(s, c1, 0, 0));  // a request settles on whichever instance ends it
  d = runOn(ioc_, b.acquire(s, charge("5")));
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining_requests, 0);
  d = runOn(ioc_, a.acquire(s, charge("6")));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.hit, LimitKind::Requests);
  EXPECT_TRUE(a.redisUp());
  EXPECT_TRUE(b.redisUp());
}

TEST_F(LimiterRedisTest, FallsBackWhenRedisDiesAndComesBack) {
  testing::RedisProcess server;
  ASSERT_TRUE(server.start());
  Limiter::Options o;
  o.redis_url = server.url();
  o.key_prefix = testing::uniquePrefix();
  o.redis_timeout = 2s;
  o.redis_retry = 300ms;
  o.probe_interval = 0ms;  // the requests alone move it (LimiterProbeTest covers the probe)
  Limiter l(o);
  Subject s{"ch:fallback", {}};
  s.spec.max_concurrent = 1;
  auto shared = charge("shared");
  ASSERT_TRUE(runOn(ioc_, l.acquire(s, shared)).allowed);
  ASSERT_TRUE(l.redisUp());

  server.kill();
  runOn(ioc_, l.settle(s, shared, 0, 0));  // charged in Redis: tried there, lost, no harm here
  auto local = charge("local");
  EXPECT_TRUE(runOn(ioc_, l.acquire(s, local)).allowed) << "the local counters start empty";
  EXPECT_FALSE(l.redisUp());
  EXPECT_FALSE(runOn(ioc_, l.acquire(s, charge("second"))).allowed) << "the local slot is taken";
  runOn(ioc_, l.settle(s, local, 0, 0));  // charged locally: settles locally
  EXPECT_TRUE(runOn(ioc_, l.acquire(s, charge("third"))).allowed);
  std::string m;
  l.renderMetrics(m);
  EXPECT_NE(m.find("sluice_redis_up 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("sluice_limiter_fallback_total 3\n"), std::string::npos) << m;

  ASSERT_TRUE(server.start());
  std::this_thread::sleep_for(400ms);  // past redis_retry
  EXPECT_TRUE(runOn(ioc_, l.acquire(s, charge("back"))).allowed) << "a fresh server has no slots taken";
  EXPECT_TRUE(l.redisUp());
  m.clear();
  l.renderMetrics(m);
  EXPECT_NE(m.find("sluice_redis_up 1\n"), std::string::npos) << m;
}

TEST_F(LimiterRedisTest, EveryKeyItWritesExpires) {
  Limiter::Options o;
  o.redis_url = testing::sharedRedisUrl();
  o.key_prefix = testing::uniquePrefix();
  o.redis_timeout = 2s;
  Limiter l(o);
  Subject s{"vk:ttl", {}};
  s.spec = LimitSpec{5, 1000, 2, 10.0, 20.0, 30.0};
  auto c = charge("a", 100, 0.5);
  ASSERT_TRUE(runOn(ioc_, l.acquire(s, c)).allowed);
  ASSERT_TRUE(runOn(ioc_, l.acquire(s, charge("b", 100, 0.5))).allowed);  // left in flight
  runOn(ioc_, l.settle(s, c, 50, 0.25));
  l.seedSpend(s.id, SpendSeed{dayIndex(0), monthIndex(0), 1, 1, 1});

  RedisSyncClient redis(parseRedisUrl(o.redis_url), 1s);
  auto keys = redis.command({"KEYS", o.key_prefix + "*"});
  ASSERT_TRUE(keys.ok());
  EXPECT_GE(keys.reply.elements.size(), 10u);
  for (const auto& k : keys.reply.elements) {
    auto ttl = redis.command({"PTTL", k.str});
    EXPECT_GT(ttl.reply.integer, 0) << k.str;
  }
}

// The background probe: sluice_redis_up follows the server with no request at all.
TEST(LimiterProbeTest, RedisUpFollowsTheServerWithoutTraffic) {
  testing::RedisProcess server;
  ASSERT_TRUE(server.start());
  Limiter::Options o;
  o.redis_url = server.url();
  o.probe_interval = 100ms;
  Limiter l(o);
  auto waitFor = [&](bool want) {
    for (int i = 0; i < 600 && l.redisUp() != want; ++i) std::this_thread::sleep_for(50ms);  // generous
    return l.redisUp() == want;
  };
  ASSERT_TRUE(waitFor(true));
  server.kill();
  ASSERT_TRUE(waitFor(false)) << "no request came, yet the probe saw Redis go";
  std::string m;
  l.renderMetrics(m);
  EXPECT_NE(m.find("sluice_redis_up 0\n"), std::string::npos) << m;
  ASSERT_TRUE(server.start());
  ASSERT_TRUE(waitFor(true)) << "and come back";
  m.clear();
  l.renderMetrics(m);
  EXPECT_NE(m.find("sluice_redis_up 1\n"), std::string::npos) << m;
}

// Without the probe, the gauge moves only when a limited request finds Redis gone.
TEST(LimiterProbeTest, WithoutTheProbeOnlyTrafficNotices) {
  testing::RedisProcess server;
  ASSERT_TRUE(server.start());
  Limiter::Options o;
  o.redis_url = server.url();
  o.probe_interval = 0ms;
  Limiter l(o);
  server.kill();
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(l.redisUp()) << "nothing asked Redis yet";
  Subject s{"vk:probe-off", {}};
  s.spec.rpm = 5;
  net::io_context ioc;
  EXPECT_TRUE(runOn(ioc, l.acquire(s, charge("a"))).allowed);
  EXPECT_FALSE(l.redisUp());
}

// ---------------------------------------------------------------- without a server

// A server that accepts connections and never answers: each call waits redis_timeout, then
// falls back.
TEST(LimiterFallbackTest, UnansweringRedisTimesOutAndFallsBack) {
  net::io_context listener_ctx;
  net::ip::tcp::acceptor silent(listener_ctx, {net::ip::make_address("127.0.0.1"), 0});
  Limiter::Options o;
  o.redis_url = "redis://127.0.0.1:" + std::to_string(silent.local_endpoint().port());
  o.redis_timeout = 100ms;
  o.probe_interval = 0ms;  // the requests alone move it (LimiterProbeTest covers the probe)
  Limiter l(o);
  Subject s{"vk:silent", {}};
  s.spec.rpm = 1;
  net::io_context ioc;
  EXPECT_TRUE(runOn(ioc, l.acquire(s, charge("a"))).allowed);
  EXPECT_FALSE(l.redisUp());
  EXPECT_FALSE(runOn(ioc, l.acquire(s, charge("b"))).allowed) << "counted locally";
}

TEST(LimiterFallbackTest, ClosedRedisPortFallsBackToLocalCounters) {
  Limiter::Options o;
  o.redis_url = "redis://127.0.0.1:" + std::to_string(testing::freePort());
  o.probe_interval = 0ms;  // the requests alone move it (LimiterProbeTest covers the probe)
  Limiter l(o);
  EXPECT_TRUE(l.redisConfigured());
  Subject s{"vk:closed", {}};
  s.spec.rpm = 2;
  s.spec.max_concurrent = 5;
  net::io_context ioc;
  auto a = charge("a");
  EXPECT_TRUE(runOn(ioc, l.acquire(s, a)).allowed);
  EXPECT_FALSE(l.redisUp());
  EXPECT_TRUE(runOn(ioc, l.acquire(s, charge("b"))).allowed);
  auto d = runOn(ioc, l.acquire(s, charge("c")));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.hit, LimitKind::Requests);
  runOn(ioc, l.settle(s, a, 0, 0));
  std::string m;
  l.renderMetrics(m);
  EXPECT_NE(m.find("# TYPE sluice_redis_up gauge\nsluice_redis_up 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("sluice_limiter_fallback_total 3\n"), std::string::npos) << m;
  EXPECT_NE(m.find("sluice_limiter_refused_total{limit=\"requests\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("sluice_limiter_refused_total{limit=\"budget_total\"} 0\n"), std::string::npos) << m;
}

TEST(LimiterFallbackTest, LocalOnlyHasNoRedisMetric) {
  Limiter l(Limiter::Options{});
  EXPECT_FALSE(l.redisConfigured());
  EXPECT_FALSE(l.redisUp());
  std::string m;
  l.renderMetrics(m);
  EXPECT_EQ(m.find("sluice_redis_up"), std::string::npos);
  EXPECT_NE(m.find("sluice_limiter_fallback_total 0\n"), std::string::npos);
}

TEST(LimiterOptionsTest, BadRedisUrlIsRefusedClearly) {
  Limiter::Options o;
  o.redis_url = "http://127.0.0.1:6379";
  try {
    Limiter l(o);
    FAIL() << "accepted " << o.redis_url;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("redis://"), std::string::npos) << e.what();
  }
}

TEST(RedisUrlTest, Parses) {
  auto ep = parseRedisUrl("redis://127.0.0.1:6380/2");
  EXPECT_EQ(ep.host, "127.0.0.1");
  EXPECT_EQ(ep.port, 6380);
  EXPECT_EQ(ep.db, 2);
  EXPECT_TRUE(ep.password.empty());
  ep = parseRedisUrl("redis://:s%40cret@cache.internal");
  EXPECT_EQ(ep.host, "cache.internal");
  EXPECT_EQ(ep.port, 6379);
  EXPECT_EQ(ep.user, "");
  EXPECT_EQ(ep.password, "s@cret");
  ep = parseRedisUrl("redis://app:pw@h:1/0");
  EXPECT_EQ(ep.user, "app");
  EXPECT_EQ(ep.password, "pw");
  ep = parseRedisUrl("redis://pw@h");
  EXPECT_EQ(ep.user, "");
  EXPECT_EQ(ep.password, "pw");
  for (const char* bad : {"", "redis://", "http://h:1", "rediss://h", "redis://h:x", "redis://h/db", "redis://h/-1",
                          "redis://h?x=1", "127.0.0.1:6379"}) {
    EXPECT_THROW(parseRedisUrl(bad), std::invalid_argument) << bad;
  }
}

TEST(LimiterCalendarTest, DayAndMonthIndexes) {
  // 2024-02-29T23:59:59.999Z and the next millisecond.
  const std::int64_t leap = 1709251199999;
  EXPECT_EQ(dayIndex(leap), 19782);
  EXPECT_EQ(dayIndex(leap + 1), 19783);
  EXPECT_EQ(monthIndex(leap), (2024 - 1970) * 12 + 1);
  EXPECT_EQ(monthIndex(leap + 1), (2024 - 1970) * 12 + 2);
  EXPECT_EQ(dayStartMs(19783), leap + 1);
  EXPECT_EQ(monthStartMs((2024 - 1970) * 12 + 2), leap + 1);
  EXPECT_EQ(monthStartMs(0), 0);
  EXPECT_EQ(monthIndex(-1), -1) << "1969-12";
  EXPECT_EQ(limitKindName(LimitKind::BudgetMonthly), std::string("budget_monthly"));
}

}  // namespace limiter_test
}  // namespace
}  // namespace sluice::cluster
