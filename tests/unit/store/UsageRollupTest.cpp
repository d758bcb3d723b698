// The hourly and daily usage rollups (SqlStore): usage() read from them must answer exactly what summing
// the rows answers, on random data, across an upgrade's backfill and across retention.
// Both backends (see StoreTestSupport.hpp).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <thread>

#include "StoreTestSupport.hpp"
#include "store/LogWriter.hpp"
#include "store/Migrations.hpp"
#include "store/SqlConnection.hpp"
#include "store/SqlStore.hpp"

namespace sluice::store {
namespace {
namespace usage_rollup_test {

using testing::Backend;
using testing::TestDatabase;

constexpr std::int64_t kHour = 3'600'000;
constexpr std::int64_t kDay = 24 * kHour;
constexpr std::int64_t kT0 = 1'700'006'400'000;  // 2023-11-15T00:00:00Z

// The answer as usage() gave it before the rollups: one SQL sum over the rows.
std::vector<UsageRow> rawUsage(SqlConnection& c, const UsageQuery& q) {
  std::string select, group;
  auto dim = [&](bool on, const char* expr, const char* absent) {
    select += on ? expr : absent;
    select += ", ";
    if (on) group += std::string(group.empty() ? "" : ", ") + expr;
  };
  dim(q.by_day, "(time_ms / 86400000) * 86400000", "0");
  dim(q.by_virtual_key, "virtual_key_id", "NULL");
  dim(q.by_model, "model", "''");
  dim(q.by_channel, "channel", "''");
  std::string sql = "SELECT " + select +
                    "COUNT(*), COALESCE(SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END), 0), "
                    "COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
                    "COALESCE(SUM(cached_tokens), 0), COALESCE(SUM(cost_usd), 0), "
                    "COALESCE(SUM(cache_write_tokens), 0), COALESCE(SUM(reasoning_tokens), 0) "
                    "FROM request_logs WHERE time_ms >= ? AND time_ms < ?";
  std::vector<SqlParam> params{SqlParam::integer(q.from_ms), SqlParam::integer(q.to_ms)};
  if (q.virtual_key_id) {
    sql += " AND virtual_key_id = ?";
    params.push_back(SqlParam::integer(*q.virtual_key_id));
  }
  if (q.model) {
    sql += " AND model = ?";
    params.push_back(SqlParam::text(*q.model));
  }
  if (q.channel) {
    sql += " AND channel = ?";
    params.push_back(SqlParam::text(*q.channel));
  }
  if (!group.empty()) sql += " GROUP BY " + group + " ORDER BY " + group;
  std::vector<UsageRow> out;
  auto rows = c.query(sql, params);
  while (rows->next()) {
    UsageRow u;
    u.day_ms = rows->getInt(0);
    u.virtual_key_id = rows->optInt(1);
    u.model = rows->getText(2);
    u.channel = rows->getText(3);
    u.requests = rows->getInt(4);
    u.errors = rows->getInt(5);
    u.input_tokens = rows->getInt(6);
    u.output_tokens = rows->getInt(7);
    u.cached_tokens = rows->getInt(8);
    u.cost_usd = rows->getReal(9);
    u.cache_write_tokens = rows->getInt(10);
    u.reasoning_tokens = rows->getInt(11);
    out.push_back(std::move(u));
  }
  return out;
}

std::string describe(const UsageQuery& q) {
  std::string s = "[" + std::to_string(q.from_ms - kT0) + ", " + std::to_string(q.to_ms - kT0) + ") by";
  if (q.by_day) s += " day";
  if (q.by_virtual_key) s += " key";
  if (q.by_model) s += " model";
  if (q.by_channel) s += " channel";
  if (q.virtual_key_id) s += " key=" + std::to_string(*q.virtual_key_id);
  if (q.model) s += " model=" + *q.model;
  if (q.channel) s += " channel=" + *q.channel;
  return s;
}

void expectSameUsage(Store& store, SqlConnection& raw, const UsageQuery& q) {
  const auto got = store.usage(q);
  const auto want = rawUsage(raw, q);
  ASSERT_EQ(got.size(), want.size()) << describe(q);
  for (std::size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(describe(q) + " row " + std::to_string(i));
    EXPECT_EQ(got[i].day_ms, want[i].day_ms);
    EXPECT_EQ(got[i].virtual_key_id, want[i].virtual_key_id);
    EXPECT_EQ(got[i].model, want[i].model);
    EXPECT_EQ(got[i].channel, want[i].channel);
    EXPECT_EQ(got[i].requests, want[i].requests);
    EXPECT_EQ(got[i].errors, want[i].errors);
    EXPECT_EQ(got[i].input_tokens, want[i].input_tokens);
    EXPECT_EQ(got[i].output_tokens, want[i].output_tokens);
    EXPECT_EQ(got[i].cached_tokens, want[i].cached_tokens);
    EXPECT_EQ(got[i].cache_write_tokens, want[i].cache_write_tokens);
    EXPECT_EQ(got[i].reasoning_tokens, want[i].reasoning_tokens);
    // Sums of doubles added in another order: equal up to rounding.
    EXPECT_NEAR(got[i].cost_usd, want[i].cost_usd, 1e-9 * (1 + std::abs(want[i].cost_usd)));
  }
}

// Rows over three days at random times, with random keys (some none), models, channels and
// statuses.
std::vector<LogRecord> randomRows(std::mt19937_64& rng, std::size_t n, std::int64_t from, std::int64_t span) {
  const char* models[] = {"gpt-4o-mini", "claude-sonnet", "gemini-flash", "Zeta", "m_1"};
  const char* channels[] = {"openai", "anthropic", "backup"};
  const int statuses[] = {200, 200, 200, 200, 400, 429, 500, 502};
  std::vector<LogRecord> out;
  for (std::size_t i = 0; i < n; ++i) {
    LogRecord r = testing::sampleLog(from + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(span)),
                                     "r" + std::to_string(i));
    const auto k = rng() % 4;
    r.virtual_key_id = k == 0 ? std::nullopt : std::optional<std::int64_t>(static_cast<std::int64_t>(k));
    r.model = models[rng() % 5];
    r.channel = channels[rng() % 3];
    r.status = statuses[rng() % 8];
    r.input_tokens = static_cast<std::int64_t>(rng() % 5000);
    r.output_tokens = static_cast<std::int64_t>(rng() % 2000);
    r.cached_tokens = static_cast<std::int64_t>(rng() % 100);
    r.cache_write_tokens = static_cast<std::int64_t>(rng() % 100);
    r.reasoning_tokens = static_cast<std::int64_t>(rng() % 100);
    r.cost_usd = static_cast<double>(rng() % 100'000) / 1e6;
    out.push_back(std::move(r));
  }
  return out;
}

// Random windows: hour-aligned or not, inside, across and outside the data, with random
// groupings and filters.
UsageQuery randomQuery(std::mt19937_64& rng) {
  UsageQuery q;
  auto t = [&]() -> std::int64_t {
    const std::int64_t base = kT0 - kDay + static_cast<std::int64_t>(rng() % 5) * kDay;
    switch (rng() % 3) {
      case 0:
        return base + static_cast<std::int64_t>(rng() % 24) * kHour;  // on an hour
      case 1:
        return base;  // on a day
      default:
        return base + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(kDay));
    }
  };
  q.from_ms = t();
  q.to_ms = t();
  if (q.to_ms < q.from_ms) std::swap(q.from_ms, q.to_ms);
  if (rng() % 10 == 0) {  // everything
    q.from_ms = 0;
    q.to_ms = std::numeric_limits<std::int64_t>::max();
  }
  q.by_day = rng() % 2;
  q.by_virtual_key = rng() % 2;
  q.by_model = rng() % 2;
  q.by_channel = rng() % 2;
  if (rng() % 4 == 0) q.virtual_key_id = static_cast<std::int64_t>(rng() % 4);  // 0: matches no row
  if (rng() % 4 == 0) q.model = rng() % 2 ? "Zeta" : "absent";
  if (rng() % 4 == 0) q.channel = "openai";
  return q;
}

std::int64_t count(SqlConnection& c, const std::string& sql) {
  auto rows = c.query(sql, {});
  rows->next();
  return rows->getInt(0);
}

void migrateTo(const TestDatabase& db, int version) {
  auto c = openSqlConnection(db.url());
  auto migrations = db.backend() == Backend::Sqlite ? sqliteMigrations() : postgresMigrations();
  c->execScript(
      "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)");
  for (const Migration& m : migrations) {
    if (m.version > version) break;
    c->execScript(m.sql);
    SqlParam p[] = {SqlParam::integer(m.version), SqlParam::text(m.name), SqlParam::integer(0)};
    c->execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", p);
  }
}

// Rows written the way version 5 wrote them: into request_logs alone.
void insertWithoutRollups(SqlConnection& c, const std::vector<LogRecord>& rows) {
  c.execScript("BEGIN");
  for (const LogRecord& r : rows) {
    SqlParam p[] = {SqlParam::integer(r.time_ms),
                    SqlParam::text(r.request_id),
                    SqlParam::optInt(r.virtual_key_id),
                    SqlParam::text(r.channel),
                    SqlParam::text(r.model),
                    SqlParam::integer(r.status),
                    SqlParam::integer(r.input_tokens),
                    SqlParam::integer(r.output_tokens),
                    SqlParam::integer(r.cached_tokens),
                    SqlParam::real(r.cost_usd)};
    c.execute(
        "INSERT INTO request_logs (time_ms, request_id, virtual_key_id, channel, model, status, input_tokens, "
        "output_tokens, cached_tokens, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        p);
  }
  c.execScript("COMMIT");
}

class UsageRollupTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    testing::requireBackend(GetParam());
    if (IsSkipped() || HasFatalFailure()) return;
    db_ = std::make_unique<TestDatabase>(GetParam());
  }
  // The database as version 5 left it (before the rollups and the search indexes), holding n
  // random rows from kT0 over span; a raw connection to it.
  std::unique_ptr<SqlConnection> version5With(std::mt19937_64& rng, std::size_t n, std::int64_t span) {
    migrateTo(*db_, 5);
    auto raw = openSqlConnection(db_->url());
    insertWithoutRollups(*raw, randomRows(rng, n, kT0, span));
    return raw;
  }
  std::unique_ptr<TestDatabase> db_;
};

// Polls `done` every 20 ms for up to a minute; false when it never held.
template <class Pred>
bool waitUntil(Pred done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

TEST_P(UsageRollupTest, RollupAnswersEqualRawRowAnswersOnRandomData) {
  auto store = Store::open(db_->url());
  store->migrate();
  auto raw = openSqlConnection(db_->url());
  std::mt19937_64 rng(19);
  auto rows = randomRows(rng, 3000, kT0, 3 * kDay);
  // In batches of random sizes, so hours are added to more than once.
  for (std::size_t off = 0; off < rows.size();) {
    const std::size_t n = std::min<std::size_t>(1 + rng() % 700, rows.size() - off);
    store->insertLogs(std::span(rows).subspan(off, n));
    off += n;
  }
  EXPECT_GT(count(*raw, "SELECT COUNT(*) FROM usage_hourly"), 0);
  EXPECT_GT(count(*raw, "SELECT COUNT(*) FROM usage_daily"), 0);
  for (int i = 0; i < 300; ++i) {
    expectSameUsage(*store, *raw, randomQuery(rng));
    if (HasFailure()) break;
  }
}

// Regression: a window whose edges are read from the rows and whose middle from the rollups,
// with the same group (key, model, channel, day) in every part, is one row per group with the
// parts' sums, whatever the grouping.
TEST_P(UsageRollupTest, AGroupInBothTheEdgeRowsAndTheRollupsIsOneRow) {
  auto store = Store::open(db_->url());
  store->migrate();
  auto raw = openSqlConnection(db_->url());
  // A row in each part: rows [from, h0), hours [h0, d0), the day [d0, d1), hours [d1, h1) and
  // rows [h1, to); the window starts and ends inside an hour. Two keys: 7 and none.
  const std::int64_t from = kT0 - 2 * kHour + 10 * 60'000;
  const std::int64_t to = kT0 + kDay + 3 * kHour + 30 * 60'000;
  std::vector<LogRecord> rows;
  for (const std::int64_t t :
       {from + 10 * 60'000, kT0 - kHour + 5, kT0 + 5 * kHour, kT0 + kDay + kHour + 7, to - 20 * 60'000}) {
    for (const bool keyed : {true, false}) {
      LogRecord r = testing::sampleLog(t, "r" + std::to_string(rows.size()));
      if (!keyed) r.virtual_key_id.reset();
      r.input_tokens = 100 + static_cast<std::int64_t>(rows.size());
      rows.push_back(std::move(r));
    }
  }
  store->insertLogs(rows);
  for (int by = 0; by < 16; ++by) {
    UsageQuery q;
    q.from_ms = from;
    q.to_ms = to;
    q.by_day = (by & 1) != 0;
    q.by_virtual_key = (by & 2) != 0;
    q.by_model = (by & 4) != 0;
    q.by_channel = (by & 8) != 0;
    SCOPED_TRACE(describe(q));
    const auto got = store->usage(q);
    // One row per day (three) and key (two), as the grouping asks.
    const std::size_t groups = (q.by_day ? 3U : 1U) * (q.by_virtual_key ? 2U : 1U);
    EXPECT_EQ(got.size(), groups);
    std::int64_t requests = 0;
    for (const UsageRow& u : got) requests += u.requests;
    EXPECT_EQ(requests, 10);
    expectSameUsage(*store, *raw, q);
  }
}

TEST_P(UsageRollupTest, AnUpgradedDatabaseAnswersFromItsRowsWhileTheBackfillRuns) {
  std::mt19937_64 rng(7);
  auto raw = version5With(rng, 2000, 3 * kDay);

  auto store = Store::open(db_->url());
  store->migrate();
  EXPECT_EQ(count(*raw, "SELECT COUNT(*) FROM usage_hourly"), 0);
  // Rows written after the upgrade, some in the hours the backfill has yet to fold in.
  auto live = randomRows(rng, 500, kT0 + kDay, 3 * kDay);
  store->insertLogs(live);
  for (int i = 0; i < 50; ++i) expectSameUsage(*store, *raw, randomQuery(rng));

  int steps = 0;
  for (;;) {
    const RollupBackfill step = store->backfillRollups();
    if (step.done) break;
    ASSERT_LT(++steps, 1000) << "the backfill does not end";
    EXPECT_EQ(step.before_ms % kHour, 0);
    EXPECT_LT(step.oldest_ms, step.before_ms + kHour);  // the oldest row is at most in this hour
    if (steps % 10 == 0) {
      for (int i = 0; i < 10; ++i) expectSameUsage(*store, *raw, randomQuery(rng));
      store->insertLogs(randomRows(rng, 20, kT0, 4 * kDay));  // the writer keeps writing
    }
    if (HasFailure()) return;
  }
  EXPECT_GE(steps, 24);  // an hour per step, over three days of rows
  EXPECT_TRUE(store->backfillRollups().done);
  EXPECT_EQ(count(*raw, "SELECT COUNT(*) FROM rollup_state WHERE backfill_before_ms IS NULL"), 1);
  // Every row is in the rollups exactly once.
  EXPECT_EQ(count(*raw, "SELECT SUM(requests) FROM usage_hourly"), count(*raw, "SELECT COUNT(*) FROM request_logs"));
  EXPECT_EQ(count(*raw, "SELECT SUM(requests) FROM usage_daily"), count(*raw, "SELECT COUNT(*) FROM request_logs"));
  for (int i = 0; i < 100; ++i) expectSameUsage(*store, *raw, randomQuery(rng));
}

// Migration 7 on a database with rows and rollups: the old rows count no cache writes and no
// reasoning (their usage did not tell them apart), the new ones their own, rows and rollups agree.
TEST_P(UsageRollupTest, CacheWriteAndReasoningColumnsComeToAnExistingDatabase) {
  migrateTo(*db_, 6);
  std::mt19937_64 rng(11);
  auto raw = openSqlConnection(db_->url());
  {
    SqlParam p[] = {SqlParam::integer(kT0 + 5), SqlParam::text("old-row")};
    raw->execute(
        "INSERT INTO request_logs (time_ms, request_id, model, channel, status, input_tokens, output_tokens, "
        "cached_tokens, cost_usd) VALUES (?, ?, 'm', 'c', 200, 1000, 300, 600, 0.5)",
        p);
    raw->execScript(
        "INSERT INTO usage_hourly (hour_ms, virtual_key_id, model, channel, requests, errors, input_tokens, "
        "output_tokens, cached_tokens, cost_usd) VALUES (1700006400000, 0, 'm', 'c', 1, 0, 1000, 300, 600, 0.5);"
        "INSERT INTO usage_daily (day_ms, virtual_key_id, model, channel, requests, errors, input_tokens, "
        "output_tokens, cached_tokens, cost_usd) VALUES (1700006400000, 0, 'm', 'c', 1, 0, 1000, 300, 600, 0.5);"
        "UPDATE rollup_state SET backfill_before_ms = NULL");
  }
  auto store = Store::open(db_->url());
  store->migrate();
  EXPECT_EQ(count(*raw, "SELECT MAX(version) FROM schema_migrations"), Store::latestSchemaVersion());
  LogRecord fresh = testing::sampleLog(kT0 + 10, "new-row");
  fresh.model = "m";
  fresh.channel = "c";
  fresh.input_tokens = 1000;
  fresh.output_tokens = 300;
  fresh.cached_tokens = 600;
  fresh.cache_write_tokens = 200;
  fresh.reasoning_tokens = 120;
  std::vector<LogRecord> batch{fresh};
  store->insertLogs(batch);
  LogQuery lq;
  const auto page = store->listLogs(lq);
  ASSERT_EQ(page.entries.size(), 2u);
  EXPECT_EQ(page.entries[0].record.request_id, "new-row");
  EXPECT_EQ(page.entries[0].record.cache_write_tokens, 200);
  EXPECT_EQ(page.entries[0].record.reasoning_tokens, 120);
  EXPECT_EQ(page.entries[1].record.request_id, "old-row");
  EXPECT_EQ(page.entries[1].record.cache_write_tokens, 0);
  EXPECT_EQ(page.entries[1].record.reasoning_tokens, 0);
  UsageQuery q;
  q.from_ms = kT0;
  q.to_ms = kT0 + 2 * kDay;  // whole days: read from the rollups
  const auto got = store->usage(q);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].requests, 2);
  EXPECT_EQ(got[0].cache_write_tokens, 200);
  EXPECT_EQ(got[0].reasoning_tokens, 120);
  expectSameUsage(*store, *raw, q);
  for (int i = 0; i < 20; ++i) expectSameUsage(*store, *raw, randomQuery(rng));
}

TEST_P(UsageRollupTest, TwoStoresBackfillingAtOnceFoldEachHourOnce) {
  std::mt19937_64 rng(3);
  auto raw = version5With(rng, 1500, 2 * kDay);
  Store::open(db_->url())->migrate();
  auto run = [&] {
    auto s = Store::open(db_->url());
    for (int i = 0; i < 1000; ++i) {
      try {
        if (s->backfillRollups().done) return;
      } catch (const StoreError& e) {  // the other one holds the write lock: try again
        if (!e.transient()) throw;
      }
    }
  };
  std::thread a(run), b(run);
  a.join();
  b.join();
  EXPECT_EQ(count(*raw, "SELECT SUM(requests) FROM usage_hourly"), 1500);
  EXPECT_EQ(count(*raw, "SELECT SUM(requests) FROM usage_daily"), 1500);
}

TEST_P(UsageRollupTest, RetentionInSmallBatchesKeepsUsageEqualToTheRemainingRows) {
  auto store = Store::open(db_->url());
  store->migrate();
  auto raw = openSqlConnection(db_->url());
  std::mt19937_64 rng(11);
  store->insertLogs(randomRows(rng, 2000, kT0, 3 * kDay));
  const std::int64_t cutoff = kT0 + kDay + 30 * 60'000 + 17;  // inside an hour
  std::int64_t deleted = 0;
  for (int round = 0;; ++round) {
    ASSERT_LT(round, 100);
    const std::int64_t n = store->deleteLogsBefore(cutoff, 50);
    EXPECT_LE(n, 50);
    deleted += n;
    for (int i = 0; i < 5; ++i) expectSameUsage(*store, *raw, randomQuery(rng));
    if (HasFailure()) return;
    if (n < 50) break;
  }
  EXPECT_GT(deleted, 500);
  EXPECT_EQ(count(*raw, "SELECT COUNT(*) FROM request_logs WHERE time_ms < " + std::to_string(cutoff)), 0);
  // Whole hours before the cutoff lose their rollups; the hour holding it keeps its own (read
  // from its remaining rows), and later hours are untouched.
  EXPECT_EQ(count(*raw, "SELECT COUNT(*) FROM usage_hourly WHERE hour_ms + 3600000 <= " + std::to_string(cutoff)), 0);
  EXPECT_GT(count(*raw, "SELECT COUNT(*) FROM usage_hourly WHERE hour_ms = " + std::to_string(kT0 + kDay)), 0);
  EXPECT_EQ(count(*raw, "SELECT COUNT(*) FROM usage_daily WHERE day_ms + 86400000 <= " + std::to_string(cutoff)), 0);
  EXPECT_GT(count(*raw, "SELECT COUNT(*) FROM usage_daily WHERE day_ms = " + std::to_string(kT0 + kDay)), 0);
  // New rows, also in the cut hour, still add up.
  store->insertLogs(randomRows(rng, 300, kT0 + kDay, 2 * kHour));
  for (int i = 0; i < 100; ++i) expectSameUsage(*store, *raw, randomQuery(rng));
}

// The log writer runs the backfill by itself, between its batches.
TEST_P(UsageRollupTest, TheLogWriterBackfillsAnUpgradedDatabase) {
  std::mt19937_64 rng(5);
  auto raw = version5With(rng, 1000, 2 * kDay);
  const std::string url = db_->url();
  Store::open(url)->migrate();  // as the gateway does before it starts the writer
  LogWriter w([url] { return Store::open(url); });
  ASSERT_TRUE(w.enqueue(testing::sampleLog(kT0 + kHour, "live")));
  ASSERT_TRUE(waitUntil([&] {
    return count(*raw, "SELECT COUNT(*) FROM rollup_state WHERE backfill_before_ms IS NULL") == 1;
  })) << "the backfill did not finish";
  EXPECT_TRUE(w.drain(std::chrono::seconds(30)));
  EXPECT_EQ(count(*raw, "SELECT SUM(requests) FROM usage_hourly"), 1001);
  EXPECT_EQ(count(*raw, "SELECT SUM(requests) FROM usage_daily"), 1001);
  auto store = Store::open(url);
  for (int i = 0; i < 50; ++i) expectSameUsage(*store, *raw, randomQuery(rng));
}

// The search indexes are not built inside the migration (over a large log that held the
// start-up for minutes): the log writer builds them after start-up, while it writes.
TEST_P(UsageRollupTest, TheLogWriterBuildsTheSearchIndexesAfterTheMigration) {
  std::mt19937_64 rng(13);
  auto raw = version5With(rng, 3000, 2 * kDay);
  const std::string url = db_->url();
  auto store = Store::open(url);
  store->migrate();
  const std::vector<std::string> all = {"request_logs_model_time", "request_logs_channel_time",
                                        "request_logs_status_time"};
  EXPECT_EQ(store->missingDeferredIndexes(), all) << "the migration built them";
  {
    LogWriter w([url] { return Store::open(url); });
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(w.enqueue(testing::sampleLog(kT0 + i, "live")));
    ASSERT_TRUE(waitUntil([&] { return store->missingDeferredIndexes().empty(); })) << "the indexes were not built";
    EXPECT_TRUE(w.drain(std::chrono::seconds(30)));
    EXPECT_EQ(w.stats().written, 100u);
  }
  EXPECT_EQ(count(*raw, "SELECT COUNT(*) FROM request_logs"), 3100);
  // Idempotent: building one that exists changes nothing.
  EXPECT_TRUE(store->buildDeferredIndex("request_logs_model_time"));
  EXPECT_TRUE(store->missingDeferredIndexes().empty());
  EXPECT_THROW(store->buildDeferredIndex("request_logs_model_time; DROP TABLE request_logs"), StoreError);
}

// A statement under way is cut short from another thread (how drain() stops an index build).
TEST_P(UsageRollupTest, TheCancellerStopsAStatementUnderWay) {
  auto c = openSqlConnection(db_->url());
  auto cancel = c->canceller();
  cancel();  // nothing under way: nothing happens
  std::atomic<bool> done{false};
  std::string error;
  std::thread t([&] {
    try {
      // PostgreSQL: a long sleep; SQLite: a long loop of its own.
      const std::string sql = GetParam() == Backend::Postgres
                                  ? "SELECT pg_sleep(600)"
                                  : "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < "
                                    "10000000000) SELECT COUNT(*) FROM n";
      c->query(sql, {})->next();
    } catch (const StoreError& e) {
      error = e.what();
    }
    done = true;
  });
  while (!done) {  // sent until it lands: one sent before the statement starts does nothing
    cancel();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  t.join();
  EXPECT_FALSE(error.empty()) << "the statement ran to its end";
  EXPECT_EQ(c->query("SELECT 1", {})->next(), true) << "the connection is usable after a cancel";
}

// PostgreSQL: only one instance builds at a time, and an index a cut-off CONCURRENTLY build
// left invalid is dropped and built again.
TEST(DeferredIndexes, PostgresBuildsOneAtATimeAndReplacesAnInvalidIndex) {
  testing::requireBackend(Backend::Postgres);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  TestDatabase db(Backend::Postgres);
  auto store = Store::open(db.url());
  store->migrate();
  auto raw = openSqlConnection(db.url());
  store->insertLogs(std::vector<LogRecord>{testing::sampleLog(kT0, "a"), testing::sampleLog(kT0 + 1, "b")});
  // Another instance's build under way: it holds the lock.
  auto other = openSqlConnection(db.url());
  SqlParam lock[] = {SqlParam::integer(0x51C3'0002)};
  other->query("SELECT pg_advisory_lock(?)", lock)->next();
  EXPECT_FALSE(store->buildDeferredIndex("request_logs_model_time"));
  other->query("SELECT pg_advisory_unlock(?)", lock)->next();
  // A build that failed half-way leaves its name behind, invalid (here: a unique index over
  // duplicates, which fails after the catalog entry is made).
  try {
    raw->execScript("CREATE UNIQUE INDEX CONCURRENTLY request_logs_model_time ON request_logs (channel)");
  } catch (const StoreError&) {
  }
  EXPECT_EQ(count(*raw, "SELECT COUNT(*) FROM pg_class WHERE relname = 'request_logs_model_time'"), 1);
  auto missing = store->missingDeferredIndexes();
  ASSERT_EQ(missing.size(), 3u);
  EXPECT_EQ(missing[0], "request_logs_model_time") << "an invalid index counts as missing";
  for (const auto& name : missing) EXPECT_TRUE(store->buildDeferredIndex(name));
  EXPECT_TRUE(store->missingDeferredIndexes().empty());
  EXPECT_EQ(count(*raw,
                  "SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'request_logs_model_time' AND indexdef LIKE "
                  "'%(model, time_ms, id)%' AND indexdef NOT LIKE '%UNIQUE%'"),
            1);
}

INSTANTIATE_TEST_SUITE_P(Backends, UsageRollupTest, ::testing::Values(Backend::Sqlite, Backend::Postgres),
                         testing::backendName);

// A log search for a model (or channel, or status) that no row has is an index lookup, not a
// walk of the whole time index (once the deferred indexes are built).
TEST(LogSearchIndexes, FiltersOnModelChannelAndStatusHaveAnIndex) {
  TestDatabase db(Backend::Sqlite);
  auto store = Store::open(db.url());
  store->migrate();
  for (const auto& name : store->missingDeferredIndexes()) EXPECT_TRUE(store->buildDeferredIndex(name));
  auto c = openSqlConnection(db.url());
  auto plan = [&](const std::string& where) {
    auto rows = c->query(
        "EXPLAIN QUERY PLAN SELECT id FROM request_logs WHERE " + where + " ORDER BY time_ms DESC, id DESC LIMIT 101",
        {});
    std::string out;
    while (rows->next()) out += rows->getText(3) + "\n";
    return out;
  };
  EXPECT_NE(plan("model = 'absent'").find("request_logs_model_time"), std::string::npos) << plan("model = 'absent'");
  EXPECT_NE(plan("channel = 'absent'").find("request_logs_channel_time"), std::string::npos);
  EXPECT_NE(plan("status = 599").find("request_logs_status_time"), std::string::npos);
}

}  // namespace usage_rollup_test
}  // namespace
}  // namespace sluice::store
