// Store::stats (buckets, sums, percentiles, top groups, sampling), Store::getLog and
// Store::requestsByKey, the same on SQLite and PostgreSQL (see StoreTestSupport.hpp).
#include <gtest/gtest.h>

#include <memory>

#include "StoreTestSupport.hpp"
#include "store/Migrations.hpp"
#include "store/SqlConnection.hpp"
#include "store/Stats.hpp"

namespace sluice::store {
namespace {
namespace stats_store_test {

using testing::Backend;
using testing::sampleLog;
using testing::TestDatabase;

constexpr std::int64_t kMin = 60'000;
constexpr std::int64_t kDay = 86'400'000;
constexpr std::int64_t kT0 = 1'700'006'400'000;  // 2023-11-15T00:00:00Z: a day (and minute) boundary

class StatsStoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    testing::requireBackend(GetParam());
    if (IsSkipped() || HasFatalFailure()) return;
    db_ = std::make_unique<TestDatabase>(GetParam());
    store_ = Store::open(db_->url());
    store_->migrate();
  }

  std::int64_t createKey(const std::string& name) {
    VirtualKey k;
    k.name = name;
    k.key_hash = "hash-" + name;
    k.key_prefix = "sk-" + name;
    return store_->createVirtualKey(k);
  }

  static LogRecord row(std::int64_t t, int status, std::int64_t ttfb, std::int64_t duration, std::string channel,
                       std::string model, std::optional<std::int64_t> key) {
    LogRecord r = sampleLog(t, "r" + std::to_string(t));
    r.status = status;
    r.ttfb_ms = ttfb;
    r.duration_ms = duration;
    r.channel = std::move(channel);
    r.model = std::move(model);
    r.virtual_key_id = key;
    return r;
  }

  StatsQuery window(std::int64_t from, std::int64_t to, std::int64_t step) {
    StatsQuery q;
    q.from_ms = from;
    q.to_ms = to;
    q.step_ms = step;
    return q;
  }

  std::unique_ptr<TestDatabase> db_;
  std::unique_ptr<Store> store_;
};

// Four requests in a five-minute window (and two just outside it), one a 500.
TEST_P(StatsStoreTest, BucketsSumsAndPercentilesOfAWindow) {
  const std::int64_t key = createKey("team-a");
  std::vector<LogRecord> rows{
      row(kT0 - 1, 200, 1, 1, "a", "m1", key),  // before the window
      row(kT0 + 1'000, 200, 100, 1'000, "a", "m1", key),
      row(kT0 + 2'000, 200, 300, 3'000, "a", "m1", key),
      row(kT0 + 61'000, 500, 0, 5, "b", "m2", std::nullopt),
      row(kT0 + 200'000, 200, 50, 500, "b", "m2", std::nullopt),
      row(kT0 + 5 * kMin, 200, 1, 1, "a", "m1", key),  // the window's end is exclusive
  };
  store_->insertLogs(rows);

  const StatsResult s = store_->stats(window(kT0, kT0 + 5 * kMin, kMin));
  ASSERT_EQ(s.series.size(), 5u);
  const std::int64_t requests[] = {2, 1, 0, 1, 0};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(s.series[i].t_ms, kT0 + static_cast<std::int64_t>(i) * kMin);
    EXPECT_EQ(s.series[i].counts.requests, requests[i]) << i;
  }
  // sampleLog: 10 input, 20 output tokens, $0.000125 each.
  EXPECT_EQ(s.series[0].counts.input_tokens, 20);
  EXPECT_EQ(s.series[0].counts.output_tokens, 40);
  EXPECT_DOUBLE_EQ(s.series[0].counts.cost_usd, 0.00025);
  EXPECT_EQ(s.series[0].latency_ms.p50, 1'000);
  EXPECT_EQ(s.series[0].latency_ms.p95, 3'000);
  EXPECT_EQ(s.series[0].latency_ms.p99, 3'000);
  EXPECT_EQ(s.series[0].ttfb_ms.p50, 100);
  EXPECT_EQ(s.series[0].ttfb_ms.p95, 300);
  // A bucket of only failures has counts but no percentiles; an empty one has neither.
  EXPECT_EQ(s.series[1].counts.errors, 1);
  EXPECT_FALSE(s.series[1].latency_ms.p50);
  EXPECT_FALSE(s.series[1].ttfb_ms.p99);
  EXPECT_EQ(s.series[2].counts.requests, 0);
  EXPECT_DOUBLE_EQ(s.series[2].counts.cost_usd, 0);
  EXPECT_FALSE(s.series[2].latency_ms.p95);
  EXPECT_EQ(s.series[3].latency_ms.p50, 500);

  EXPECT_EQ(s.totals.requests, 4);
  EXPECT_EQ(s.totals.errors, 1);
  EXPECT_EQ(s.totals.input_tokens, 40);
  EXPECT_EQ(s.totals.output_tokens, 80);
  EXPECT_DOUBLE_EQ(s.totals.cost_usd, 0.0005);
  EXPECT_EQ(s.latency_ms.p50, 1'000);  // of 500, 1000, 3000
  EXPECT_EQ(s.latency_ms.p95, 3'000);
  EXPECT_EQ(s.ttfb_ms.p50, 100);  // of 50, 100, 300
  EXPECT_FALSE(s.sampled);
  EXPECT_EQ(s.sample_stride, 1);

  ASSERT_EQ(s.by_channel.size(), 2u);  // 2 each: ties in name order
  EXPECT_EQ(s.by_channel[0].name, "a");
  EXPECT_EQ(s.by_channel[0].counts.requests, 2);
  EXPECT_EQ(s.by_channel[0].latency_ms.p50, 1'000);
  EXPECT_EQ(s.by_channel[1].name, "b");
  EXPECT_EQ(s.by_channel[1].counts.errors, 1);
  EXPECT_EQ(s.by_channel[1].latency_ms.p50, 500);
  ASSERT_EQ(s.by_model.size(), 2u);
  EXPECT_EQ(s.by_model[0].name, "m1");
  EXPECT_EQ(s.by_model[1].name, "m2");
  ASSERT_EQ(s.by_key.size(), 2u);  // ties in key id order, no key first
  EXPECT_FALSE(s.by_key[0].virtual_key_id);
  EXPECT_EQ(s.by_key[0].name, "");
  EXPECT_EQ(s.by_key[0].counts.requests, 2);
  EXPECT_EQ(s.by_key[1].virtual_key_id, key);
  EXPECT_EQ(s.by_key[1].name, "team-a");
  EXPECT_EQ(s.by_key[1].latency_ms.p95, 3'000);
}

TEST_P(StatsStoreTest, BucketsAreAlignedToTheStepAndOnlyRowsInTheWindowCount) {
  store_->insertLogs(std::vector<LogRecord>{row(kT0 + 1'000, 200, 1, 10, "a", "m", std::nullopt),
                                            row(kT0 + 61'000, 200, 1, 20, "a", "m", std::nullopt),
                                            row(kT0 + 95'000, 200, 1, 30, "a", "m", std::nullopt)});
  // [T0+30s, T0+90s) in minutes: the buckets starting at T0 and T0+1min, each partly outside.
  const StatsResult s = store_->stats(window(kT0 + 30'000, kT0 + 90'000, kMin));
  ASSERT_EQ(s.series.size(), 2u);
  EXPECT_EQ(s.series[0].t_ms, kT0);
  EXPECT_EQ(s.series[0].counts.requests, 0);  // its row is before the window
  EXPECT_EQ(s.series[1].t_ms, kT0 + kMin);
  EXPECT_EQ(s.series[1].counts.requests, 1);
  EXPECT_EQ(s.series[1].latency_ms.p50, 20);
  EXPECT_EQ(s.totals.requests, 1);
  // Odd steps align to the epoch too.
  const StatsResult odd = store_->stats(window(kT0, kT0 + 100'000, 7'000));
  EXPECT_EQ(odd.series.front().t_ms, (kT0 / 7'000) * 7'000);
  EXPECT_EQ(static_cast<std::int64_t>(odd.series.size()), statsBucketCount(kT0, kT0 + 100'000, 7'000));
  std::int64_t sum = 0;
  for (const auto& b : odd.series) sum += b.counts.requests;
  EXPECT_EQ(sum, 3);
  EXPECT_EQ(odd.totals.requests, 3);
}

TEST_P(StatsStoreTest, AnEmptyWindowHasEveryBucketAndNoPercentiles) {
  const StatsResult s = store_->stats(window(kT0, kT0 + kDay, 3'600'000));
  ASSERT_EQ(s.series.size(), 24u);
  for (const auto& b : s.series) {
    EXPECT_EQ(b.counts.requests, 0);
    EXPECT_FALSE(b.latency_ms.p50);
    EXPECT_FALSE(b.ttfb_ms.p50);
  }
  EXPECT_EQ(s.totals.requests, 0);
  EXPECT_FALSE(s.latency_ms.p99);
  EXPECT_TRUE(s.by_channel.empty());
  EXPECT_TRUE(s.by_model.empty());
  EXPECT_TRUE(s.by_key.empty());
}

TEST_P(StatsStoreTest, TopGroupsAreTheLargestOnes) {
  std::vector<LogRecord> rows;
  for (int i = 0; i < 3; ++i) rows.push_back(row(kT0 + i, 200, 1, 1, "big", "m-big", std::nullopt));
  for (int i = 0; i < 2; ++i) rows.push_back(row(kT0 + 10 + i, 200, 1, 1, "mid", "m-mid", std::nullopt));
  rows.push_back(row(kT0 + 20, 200, 1, 1, "small", "m-small", std::nullopt));
  store_->insertLogs(rows);
  StatsQuery q = window(kT0, kT0 + kMin, kMin);
  q.top = 2;
  const StatsResult s = store_->stats(q);
  ASSERT_EQ(s.by_channel.size(), 2u);
  EXPECT_EQ(s.by_channel[0].name, "big");
  EXPECT_EQ(s.by_channel[1].name, "mid");
  ASSERT_EQ(s.by_model.size(), 2u);
  EXPECT_EQ(s.by_model[0].name, "m-big");
  EXPECT_EQ(s.totals.requests, 6);  // totals are never cut
}

TEST_P(StatsStoreTest, ManyRowsAreSampledTheSameWayEachTimeWhileCountsStayExact) {
  std::vector<LogRecord> rows;
  for (int i = 1; i <= 100; ++i) rows.push_back(row(kT0 + i, 200, i, i * 10, "a", "m", std::nullopt));
  store_->insertLogs(rows);
  StatsQuery q = window(kT0, kT0 + kMin, kMin);
  q.max_samples = 10;
  const StatsResult s = store_->stats(q);
  EXPECT_TRUE(s.sampled);
  EXPECT_EQ(s.sample_stride, 10);
  EXPECT_EQ(s.totals.requests, 100);
  EXPECT_EQ(s.series[0].counts.requests, 100);
  ASSERT_TRUE(s.latency_ms.p50);
  EXPECT_GE(*s.latency_ms.p50, 10);
  EXPECT_LE(*s.latency_ms.p50, 1'000);
  const StatsResult again = store_->stats(q);
  EXPECT_EQ(again.latency_ms.p50, s.latency_ms.p50);
  EXPECT_EQ(again.latency_ms.p99, s.latency_ms.p99);
  EXPECT_EQ(again.ttfb_ms.p95, s.ttfb_ms.p95);
  q.max_samples = 100;
  EXPECT_FALSE(store_->stats(q).sampled);
}

TEST_P(StatsStoreTest, RefusesAnEmptyWindowAZeroStepAndTooManyBuckets) {
  for (const StatsQuery& q : {window(kT0, kT0, kMin), window(kT0, kT0 - 1, kMin), window(kT0, kT0 + kMin, 0),
                              window(-kMin, kT0, kMin), window(kT0, kT0 + (kMaxStatsBuckets + 1) * 1'000, 1'000)}) {
    try {
      store_->stats(q);
      ADD_FAILURE() << "accepted [" << q.from_ms << ", " << q.to_ms << ") step " << q.step_ms;
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), StoreErrc::InvalidData) << e.what();
    }
  }
  // The store stays usable.
  EXPECT_EQ(store_->stats(window(kT0, kT0 + kMin, kMin)).series.size(), 1u);
}

TEST_P(StatsStoreTest, GetLogReturnsOneRowWithItsBodies) {
  LogRecord r = sampleLog(kT0, "with-bodies");
  r.request_body = R"({"model":"m","messages":[]})";
  r.response_body = "data: {}\n\n";
  r.attempts =
      R"([{"channel":"a","key":"k1","status":503,"error":"upstream 503"},{"channel":"b","key":"k2","status":200,"error":null}])";
  store_->insertLogs(std::vector<LogRecord>{r, sampleLog(kT0 + 1, "without")});
  const auto page = store_->listLogs(LogQuery{});
  ASSERT_EQ(page.entries.size(), 2u);
  const std::int64_t id = page.entries[1].id;  // newest first: the first one written is last
  const auto got = store_->getLog(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, id);
  EXPECT_EQ(got->record.request_id, "with-bodies");
  EXPECT_EQ(got->record.request_body, r.request_body);
  EXPECT_EQ(got->record.response_body, r.response_body);
  EXPECT_EQ(got->record.attempts, r.attempts);
  EXPECT_EQ(got->record.ttfb_ms, r.ttfb_ms);
  EXPECT_EQ(got->record.duration_ms, r.duration_ms);
  EXPECT_DOUBLE_EQ(got->record.cost_usd, r.cost_usd);
  const auto other = store_->getLog(page.entries[0].id);
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->record.request_body);
  EXPECT_FALSE(store_->getLog(id + 1000));
}

TEST_P(StatsStoreTest, RequestsByKeyCountsTheDayTheMonthAndEverKeepingTheTotalAfterRetention) {
  const std::int64_t a = createKey("a");
  const std::int64_t b = createKey("b");
  const std::int64_t month = kT0 - 14 * kDay;                                // 2023-11-01
  std::vector<LogRecord> rows{row(kT0 - 40 * kDay, 200, 1, 1, "c", "m", a),  // last month
                              row(kT0 - 2 * kDay, 200, 1, 1, "c", "m", a),   // this month
                              row(kT0 + 5, 500, 1, 1, "c", "m", a),          // today
                              row(kT0 + 6, 200, 1, 1, "c", "m", a), row(kT0 + 7, 200, 1, 1, "c", "m", std::nullopt)};
  store_->insertLogs(rows);
  auto counts = store_->requestsByKey(kT0, month);
  EXPECT_EQ(counts[a].day, 2);
  EXPECT_EQ(counts[a].month, 3);
  EXPECT_EQ(counts[a].total, 4);
  EXPECT_EQ(counts[b].total, 0);
  // Retention deletes old rows: the day and month stay, the total does not drop.
  EXPECT_EQ(store_->deleteLogsBefore(kT0 - 30 * kDay, 100), 1);
  counts = store_->requestsByKey(kT0, month);
  EXPECT_EQ(counts[a].month, 3);
  EXPECT_EQ(counts[a].total, 4);
  // Request counts are not control-plane changes.
  const std::string stamp = store_->controlPlaneStamp();
  store_->insertLogs(std::vector<LogRecord>{row(kT0 + 8, 200, 1, 1, "c", "m", b)});
  EXPECT_EQ(store_->controlPlaneStamp(), stamp);
  EXPECT_EQ(store_->requestsByKey(kT0, month)[b].total, 1);
}

// Migration 4 starts each key's total from the rows already logged.
TEST_P(StatsStoreTest, MigratingAVersion3DatabaseCountsTheRequestsAlreadyLogged) {
  TestDatabase old(GetParam());
  {
    auto c = openSqlConnection(old.url());
    auto migrations = old.backend() == Backend::Sqlite ? sqliteMigrations() : postgresMigrations();
    c->execScript(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT "
        "NULL)");
    for (const Migration& m : migrations) {
      if (m.version > 3) break;
      c->execScript(m.sql);
      SqlParam p[] = {SqlParam::integer(m.version), SqlParam::text(m.name), SqlParam::integer(0)};
      c->execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", p);
    }
    c->execScript(
        "INSERT INTO virtual_keys (id, name, key_hash, key_prefix, created_at, updated_at) "
        "VALUES (9, 'old', 'hash9', 'sk-old', 1, 1)");
    for (int i = 0; i < 3; ++i) {
      const std::string requestId = "r" + std::to_string(i);  // outlives the params that view it
      SqlParam p[] = {SqlParam::integer(kT0 + i), SqlParam::text(requestId)};
      c->execute("INSERT INTO request_logs (time_ms, request_id, virtual_key_id, status) VALUES (?, ?, 9, 200)", p);
    }
  }
  auto s = Store::open(old.url());
  EXPECT_EQ(s->schemaVersion(), 3);
  s->migrate();
  EXPECT_EQ(s->schemaVersion(), Store::latestSchemaVersion());
  EXPECT_EQ(s->requestsByKey(kT0, kT0)[9].total, 3);
  s->insertLogs(std::vector<LogRecord>{row(kT0 + 10, 200, 1, 1, "c", "m", 9)});
  EXPECT_EQ(s->requestsByKey(kT0, kT0)[9].total, 4);
}

INSTANTIATE_TEST_SUITE_P(Backends, StatsStoreTest, ::testing::Values(Backend::Sqlite, Backend::Postgres),
                         testing::backendName);

TEST(StatsMath, NearestRankPercentiles) {
  std::vector<std::int64_t> none;
  EXPECT_FALSE(percentilesOf(none).p50);
  std::vector<std::int64_t> one{7};
  const auto p1 = percentilesOf(one);
  EXPECT_EQ(p1.p50, 7);
  EXPECT_EQ(p1.p99, 7);
  std::vector<std::int64_t> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);  // any order
  const auto p = percentilesOf(hundred);
  EXPECT_EQ(p.p50, 50);
  EXPECT_EQ(p.p95, 95);
  EXPECT_EQ(p.p99, 99);
  std::vector<std::int64_t> four{40, 10, 30, 20};
  const auto p4 = percentilesOf(four);
  EXPECT_EQ(p4.p50, 20);
  EXPECT_EQ(p4.p95, 40);
}

TEST(StatsMath, BucketCountCoversTheWindowWithAlignedBuckets) {
  EXPECT_EQ(statsBucketCount(0, 60'000, 60'000), 1);
  EXPECT_EQ(statsBucketCount(0, 60'001, 60'000), 2);
  EXPECT_EQ(statsBucketCount(30'000, 90'000, 60'000), 2);
  EXPECT_EQ(statsBucketCount(kT0, kT0 + 3'600'000, 30'000), 120);
  EXPECT_EQ(statsBucketCount(kT0 + 1, kT0 + 3'600'001, 30'000), 121);
  EXPECT_EQ(statsBucketCount(10, 10, 1'000), 0);
  EXPECT_EQ(statsBucketCount(10, 5, 1'000), 0);
  EXPECT_EQ(statsBucketCount(0, 10, 0), 0);
}

TEST(StatsMath, SampleStrideBringsTheRowsUnderTheCap) {
  EXPECT_EQ(statsSampleStride(0, 200'000), 1);
  EXPECT_EQ(statsSampleStride(200'000, 200'000), 1);
  EXPECT_EQ(statsSampleStride(200'001, 200'000), 2);
  EXPECT_EQ(statsSampleStride(1'000'000, 200'000), 5);
  EXPECT_EQ(statsSampleStride(1'000'001, 200'000), 6);
  EXPECT_EQ(statsSampleStride(5, 0), 5);
}

}  // namespace stats_store_test
}  // namespace
}  // namespace sluice::store
