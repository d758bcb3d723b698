// The same tests against SQLite and PostgreSQL (see StoreTestSupport.hpp for the databases).
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <set>
#include <thread>

#include "StoreTestSupport.hpp"
#include "store/Migrations.hpp"
#include "store/SqlConnection.hpp"
#include "store/SqlStore.hpp"
#include "store/postgres/PostgresConnection.hpp"

namespace sluice::store {
namespace {
namespace store_test {

using testing::Backend;
using testing::sampleLog;
using testing::TestDatabase;

constexpr std::int64_t kDay = 86'400'000;
constexpr std::int64_t kT0 = 1'700'006'400'000;  // 2023-11-15T00:00:00Z, a day boundary
constexpr std::int64_t kAll = std::numeric_limits<std::int64_t>::max();

class StoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    testing::requireBackend(GetParam());
    if (IsSkipped() || HasFatalFailure()) return;
    db_ = std::make_unique<TestDatabase>(GetParam());
    store_ = Store::open(db_->url());
    store_->migrate();
  }

  std::int64_t countRows(const std::string& table) {
    auto c = openSqlConnection(db_->url());
    auto rows = c->query("SELECT COUNT(*) FROM " + table, {});
    rows->next();
    return rows->getInt(0);
  }

  std::unique_ptr<TestDatabase> db_;
  std::unique_ptr<Store> store_;
};

// ---- migrations ----

TEST_P(StoreTest, MigrateIsVersionedAndIdempotent) {
  EXPECT_EQ(store_->schemaVersion(), Store::latestSchemaVersion());
  EXPECT_GE(Store::latestSchemaVersion(), 2);
  store_->migrate();
  Store::open(db_->url())->migrate();
  EXPECT_EQ(store_->schemaVersion(), Store::latestSchemaVersion());
  // One row per migration; versions may leave gaps (numbers taken by parallel branches).
  EXPECT_EQ(countRows("schema_migrations"),
            static_cast<std::int64_t>(
                (db_->backend() == Backend::Sqlite ? sqliteMigrations() : postgresMigrations()).size()));
  // The data survives a re-run.
  VirtualKey k;
  k.name = "a";
  k.key_hash = "h";
  k.key_prefix = "sk-a";
  store_->createVirtualKey(k);
  store_->migrate();
  EXPECT_EQ(store_->listVirtualKeys().size(), 1u);
}

TEST_P(StoreTest, FreshDatabaseStartsAtVersionZeroAndMigratesConcurrently) {
  TestDatabase fresh(GetParam());
  EXPECT_EQ(Store::open(fresh.url())->schemaVersion(), 0);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&] {
      try {
        Store::open(fresh.url())->migrate();
        ++ok;
      } catch (const StoreError& e) {
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 3);
  EXPECT_EQ(Store::open(fresh.url())->schemaVersion(), Store::latestSchemaVersion());
  auto c = openSqlConnection(fresh.url());
  auto rows = c->query("SELECT COUNT(*) FROM schema_migrations", {});
  rows->next();
  // Each migration once, even with three instances racing (versions may leave gaps).
  EXPECT_EQ(rows->getInt(0), static_cast<std::int64_t>(
                                 (fresh.backend() == Backend::Sqlite ? sqliteMigrations() : postgresMigrations()).size()));
}

TEST_P(StoreTest, RefusesASchemaNewerThanItKnows) {
  auto c = openSqlConnection(db_->url());
  SqlParam p[] = {SqlParam::integer(Store::latestSchemaVersion() + 1), SqlParam::text("from the future"),
                  SqlParam::integer(0)};
  c->execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", p);
  try {
    store_->migrate();
    FAIL() << "migrate() accepted a newer schema";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Schema);
    EXPECT_NE(std::string(e.what()).find("newer Sluice"), std::string::npos) << e.what();
  }
}

// Brings a fresh database to `version` exactly, as an older Sluice would have left it.
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

TEST_P(StoreTest, MigratesAVersion2DatabaseKeepingItsRows) {
  TestDatabase old(GetParam());
  migrateTo(old, 2);
  {
    auto c = openSqlConnection(old.url());
    c->execScript(
        "INSERT INTO virtual_keys (id, name, key_hash, key_prefix, created_at, updated_at) "
        "VALUES (5, 'old', 'hash5', 'sk-old', 10, 11)");
    c->execScript(
        "INSERT INTO channels (id, name, type, models, created_at, updated_at) "
        "VALUES (3, 'ch', 'openai', '[\"m\"]', 20, 21)");
    c->execScript(
        "INSERT INTO upstream_keys (channel_id, secret_encrypted, label, created_at) VALUES (3, 'secret', 'l', 30)");
  }
  std::vector<LogRecord> logs{sampleLog(kT0, "a"), sampleLog(kT0 + 1, "b"), sampleLog(kT0 + 2, "other-key")};
  logs[0].virtual_key_id = 5;
  logs[0].cost_usd = 0.25;
  logs[1].virtual_key_id = 5;
  logs[1].cost_usd = 0.5;
  {
    // Written as version 2 wrote them: no spend total yet.
    auto c = openSqlConnection(old.url());
    for (const LogRecord& r : logs) {
      SqlParam p[] = {SqlParam::integer(r.time_ms), SqlParam::text(r.request_id), SqlParam::optInt(r.virtual_key_id),
                      SqlParam::real(r.cost_usd)};
      c->execute(
          "INSERT INTO request_logs (time_ms, request_id, virtual_key_id, status, cost_usd) "
          "VALUES (?, ?, ?, 200, ?)",
          p);
    }
  }

  auto s = Store::open(old.url());
  EXPECT_EQ(s->schemaVersion(), 2);
  s->migrate();
  EXPECT_EQ(s->schemaVersion(), Store::latestSchemaVersion());
  auto key = s->getVirtualKey(5);
  ASSERT_TRUE(key);
  EXPECT_EQ(key->name, "old");
  EXPECT_EQ(key->updated_at_ms, 11);
  auto ch = s->getChannel(3);
  ASSERT_TRUE(ch);
  EXPECT_EQ(ch->models, R"(["m"])");
  EXPECT_EQ(ch->settings, "{}");
  auto uks = s->listUpstreamKeys(3);
  ASSERT_EQ(uks.size(), 1u);
  EXPECT_EQ(uks[0].secret_encrypted, "secret");
  EXPECT_EQ(uks[0].updated_at_ms, 30);  // backfilled from created_at
  EXPECT_EQ(s->listLogs(LogQuery{}).entries.size(), 3u);
  // The total starts from the logs already there, then grows with new ones.
  EXPECT_DOUBLE_EQ(s->spendByKey(kT0, kT0)[5].total_usd, 0.75);
  LogRecord more = sampleLog(kT0 + 3, "c");
  more.virtual_key_id = 5;
  more.cost_usd = 1;
  s->insertLogs(std::span(&more, 1));
  EXPECT_DOUBLE_EQ(s->spendByKey(kT0, kT0)[5].total_usd, 1.75);
  EXPECT_FALSE(s->controlPlaneStamp().empty());
}

TEST_P(StoreTest, MigratesAVersion1Database) {
  TestDatabase old(GetParam());
  migrateTo(old, 1);
  openSqlConnection(old.url())->execScript(
      "INSERT INTO channels (name, type, created_at, updated_at) VALUES ('ch', 'mock', 1, 2)");
  auto s = Store::open(old.url());
  EXPECT_EQ(s->schemaVersion(), 1);
  s->migrate();
  EXPECT_EQ(s->schemaVersion(), Store::latestSchemaVersion());
  ASSERT_EQ(s->listChannels().size(), 1u);
  EXPECT_EQ(s->listChannels()[0].settings, "{}");
  EXPECT_TRUE(s->listLogs(LogQuery{}).entries.empty());
}

// ---- request logs ----

TEST_P(StoreTest, InsertedLogsRoundTripEveryField) {
  LogRecord a = sampleLog(kT0 + 5, "req-a");
  a.request_body = R"({"model":"gpt-4o-mini","messages":[]})";
  a.response_body = std::string("data: {\"x\":1}\n\n");
  a.screening = R"([{"part":"user","score":0.0123,"flagged":false},{"part":"tool","path":"messages[2]","score":0.9871,"flagged":true}])";
  LogRecord b = sampleLog(kT0 + 6, "req-b");
  b.virtual_key_id.reset();
  b.status = 502;
  b.stream = false;
  b.cost_usd = 1.0 / 3.0;
  b.input_tokens = 1'000'000'000'000;
  b.user_agent = "naïve 😀 agent";
  std::vector<LogRecord> batch{a, b};
  store_->insertLogs(batch);

  LogQuery q;
  q.include_bodies = true;
  LogPage page = store_->listLogs(q);
  ASSERT_EQ(page.entries.size(), 2u);
  EXPECT_TRUE(page.next_cursor.empty());
  const LogRecord& gb = page.entries[0].record;  // newest first
  const LogRecord& ga = page.entries[1].record;
  EXPECT_GT(page.entries[0].id, 0);
  EXPECT_EQ(ga.time_ms, a.time_ms);
  EXPECT_EQ(ga.request_id, "req-a");
  EXPECT_EQ(ga.virtual_key_id, 7);
  EXPECT_EQ(ga.channel, a.channel);
  EXPECT_EQ(ga.upstream_key, a.upstream_key);
  EXPECT_EQ(ga.model, a.model);
  EXPECT_EQ(ga.status, 200);
  EXPECT_EQ(ga.attempts, a.attempts);
  EXPECT_EQ(ga.ttfb_ms, a.ttfb_ms);
  EXPECT_EQ(ga.duration_ms, a.duration_ms);
  EXPECT_EQ(ga.input_tokens, a.input_tokens);
  EXPECT_EQ(ga.output_tokens, a.output_tokens);
  EXPECT_EQ(ga.cached_tokens, a.cached_tokens);
  EXPECT_DOUBLE_EQ(ga.cost_usd, a.cost_usd);
  EXPECT_EQ(ga.client_addr, a.client_addr);
  EXPECT_EQ(ga.user_agent, a.user_agent);
  EXPECT_TRUE(ga.stream);
  EXPECT_EQ(ga.request_body, a.request_body);
  EXPECT_EQ(ga.response_body, a.response_body);
  EXPECT_EQ(ga.screening, a.screening);

  EXPECT_FALSE(gb.virtual_key_id.has_value());
  EXPECT_EQ(gb.screening, "");  // not screened
  EXPECT_EQ(gb.status, 502);
  EXPECT_FALSE(gb.stream);
  EXPECT_DOUBLE_EQ(gb.cost_usd, 1.0 / 3.0);
  EXPECT_EQ(gb.input_tokens, 1'000'000'000'000);
  EXPECT_EQ(gb.user_agent, "naïve 😀 agent");
  EXPECT_FALSE(gb.request_body.has_value());
  EXPECT_FALSE(gb.response_body.has_value());

  // Bodies only when asked for.
  page = store_->listLogs(LogQuery{});
  ASSERT_EQ(page.entries.size(), 2u);
  EXPECT_FALSE(page.entries[1].record.request_body.has_value());
}

TEST_P(StoreTest, LogTextThatIsNotValidUtf8IsStillStored) {
  LogRecord r = sampleLog(kT0, "req-bytes");
  r.request_body = std::string("cut mid-character: \xE2\x82", 21);  // a size cap split a UTF-8 sequence
  r.user_agent = std::string("nul\0byte", 8);
  r.attempts = "not json at all";
  store_->insertLogs(std::span(&r, 1));
  LogQuery q;
  q.include_bodies = true;
  auto page = store_->listLogs(q);
  ASSERT_EQ(page.entries.size(), 1u);
  EXPECT_EQ(page.entries[0].record.request_id, "req-bytes");
  EXPECT_EQ(page.entries[0].record.attempts, "not json at all");
  EXPECT_EQ(page.entries[0].record.request_body->rfind("cut mid-character: ", 0), 0u);
}

TEST_P(StoreTest, EmptyBatchIsANoOp) {
  store_->insertLogs({});
  EXPECT_TRUE(store_->listLogs(LogQuery{}).entries.empty());
}

class LogFixture : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // 40 rows over 4 days; keys 1/2, models m1/m2, channels c1/c2, every 5th a 500.
    std::vector<LogRecord> rows;
    for (int i = 0; i < 40; ++i) {
      LogRecord r = sampleLog(kT0 + (i / 10) * kDay + i * 1000, "req-" + std::to_string(i));
      r.virtual_key_id = 1 + i % 2;
      r.model = i % 4 < 2 ? "m1" : "m2";
      r.channel = i % 3 == 0 ? "c1" : "c2";
      r.status = i % 5 == 4 ? 500 : 200;
      r.input_tokens = i;
      r.output_tokens = 2 * i;
      r.cached_tokens = 1;
      r.cost_usd = 0.5;
      rows.push_back(std::move(r));
    }
    store_->insertLogs(rows);
    all_ = rows;
  }
  std::vector<std::string> ids(const LogQuery& q) {
    std::vector<std::string> out;
    for (auto& e : store_->listLogs(q).entries) out.push_back(e.record.request_id);
    return out;
  }
  template <class Pred>
  std::vector<std::string> expected(Pred pred) {
    std::vector<std::string> out;
    for (auto it = all_.rbegin(); it != all_.rend(); ++it)
      if (pred(*it)) out.push_back(it->request_id);
    return out;
  }
  std::vector<LogRecord> all_;
};

TEST_P(LogFixture, ListFiltersByEveryField) {
  LogQuery q;
  q.limit = 1000;
  EXPECT_EQ(ids(q), expected([](auto&) { return true; }));

  LogQuery t = q;
  t.from_ms = kT0 + kDay;
  t.to_ms = kT0 + 3 * kDay;
  EXPECT_EQ(ids(t), expected([](auto& r) { return r.time_ms >= kT0 + kDay && r.time_ms < kT0 + 3 * kDay; }));
  EXPECT_EQ(ids(t).size(), 20u);

  LogQuery k = q;
  k.virtual_key_id = 2;
  EXPECT_EQ(ids(k), expected([](auto& r) { return r.virtual_key_id == 2; }));

  LogQuery m = q;
  m.model = "m2";
  EXPECT_EQ(ids(m), expected([](auto& r) { return r.model == "m2"; }));

  LogQuery c = q;
  c.channel = "c1";
  EXPECT_EQ(ids(c), expected([](auto& r) { return r.channel == "c1"; }));

  LogQuery s = q;
  s.status = 500;
  EXPECT_EQ(ids(s), expected([](auto& r) { return r.status == 500; }));
  EXPECT_EQ(ids(s).size(), 8u);

  LogQuery combo = q;
  combo.virtual_key_id = 1;
  combo.model = "m1";
  combo.channel = "c2";
  combo.from_ms = kT0 + kDay;
  EXPECT_EQ(ids(combo), expected([](auto& r) {
              return r.virtual_key_id == 1 && r.model == "m1" && r.channel == "c2" && r.time_ms >= kT0 + kDay;
            }));

  LogQuery none = q;
  none.model = "no-such-model' OR '1'='1";  // parameters, not SQL
  EXPECT_TRUE(ids(none).empty());
}

TEST_P(LogFixture, CursorPaginationVisitsEveryRowOnceNewestFirst) {
  // Rows sharing a timestamp must not be skipped or repeated across pages.
  std::vector<LogRecord> same;
  for (int i = 0; i < 5; ++i) same.push_back(sampleLog(kT0 + 2 * kDay + 20'500, "same-" + std::to_string(i)));
  store_->insertLogs(same);

  for (std::size_t limit : {1u, 3u, 7u, 45u, 100u}) {
    LogQuery q;
    q.limit = limit;
    std::vector<LogEntry> seen;
    int pages = 0;
    do {
      LogPage page = store_->listLogs(q);
      ASSERT_LE(page.entries.size(), limit);
      seen.insert(seen.end(), page.entries.begin(), page.entries.end());
      q.cursor = page.next_cursor;
      ASSERT_LT(++pages, 100);
    } while (!q.cursor.empty());
    ASSERT_EQ(seen.size(), 45u) << "limit " << limit;
    std::set<std::int64_t> unique_ids;
    for (std::size_t i = 0; i < seen.size(); ++i) {
      unique_ids.insert(seen[i].id);
      if (i) {
        auto prev = std::make_pair(seen[i - 1].record.time_ms, seen[i - 1].id);
        auto cur = std::make_pair(seen[i].record.time_ms, seen[i].id);
        EXPECT_GT(prev, cur);
      }
    }
    EXPECT_EQ(unique_ids.size(), 45u);
  }

  // With a filter, the cursor keeps the filter's rows only.
  LogQuery f;
  f.model = "m1";
  f.limit = 4;
  std::size_t n = 0;
  do {
    LogPage page = store_->listLogs(f);
    for (auto& e : page.entries) EXPECT_EQ(e.record.model, "m1");
    n += page.entries.size();
    f.cursor = page.next_cursor;
  } while (!f.cursor.empty());
  EXPECT_EQ(n, 20u);
}

TEST_P(LogFixture, BadCursorIsInvalidData) {
  for (std::string bad : {"garbage", "c1.", "c1.12", "c1.x.1", "c1.1.2.3", "c2.1.2"}) {
    LogQuery q;
    q.cursor = bad;
    try {
      store_->listLogs(q);
      ADD_FAILURE() << "accepted cursor " << bad;
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), StoreErrc::InvalidData) << bad;
    }
  }
}

TEST_P(LogFixture, LimitIsClamped) {
  LogQuery q;
  q.limit = 0;
  EXPECT_EQ(store_->listLogs(q).entries.size(), 1u);
  q.limit = 1'000'000;
  EXPECT_EQ(store_->listLogs(q).entries.size(), 40u);
}

TEST_P(LogFixture, UsageAggregatesByEachDimension) {
  UsageQuery total;
  total.from_ms = kT0;
  total.to_ms = kT0 + 10 * kDay;
  auto rows = store_->usage(total);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].requests, 40);
  EXPECT_EQ(rows[0].errors, 8);
  EXPECT_EQ(rows[0].input_tokens, 780);  // 0 + 1 + ... + 39
  EXPECT_EQ(rows[0].output_tokens, 1560);
  EXPECT_EQ(rows[0].cached_tokens, 40);
  EXPECT_DOUBLE_EQ(rows[0].cost_usd, 20.0);
  EXPECT_FALSE(rows[0].virtual_key_id.has_value());
  EXPECT_EQ(rows[0].day_ms, 0);

  UsageQuery by_day = total;
  by_day.by_day = true;
  rows = store_->usage(by_day);
  ASSERT_EQ(rows.size(), 4u);
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(rows[d].day_ms, kT0 + d * kDay);
    EXPECT_EQ(rows[d].requests, 10);
    EXPECT_EQ(rows[d].input_tokens, 45 + 100 * d);
  }

  UsageQuery by_key = total;
  by_key.by_virtual_key = true;
  rows = store_->usage(by_key);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].virtual_key_id, 1);
  EXPECT_EQ(rows[0].input_tokens, 380);  // even i
  EXPECT_EQ(rows[1].virtual_key_id, 2);
  EXPECT_EQ(rows[1].input_tokens, 400);

  UsageQuery by_model_channel = total;
  by_model_channel.by_model = true;
  by_model_channel.by_channel = true;
  rows = store_->usage(by_model_channel);
  ASSERT_EQ(rows.size(), 4u);
  std::int64_t sum = 0;
  for (auto& r : rows) {
    std::int64_t expect = 0;
    for (auto& l : all_)
      if (l.model == r.model && l.channel == r.channel) ++expect;
    EXPECT_EQ(r.requests, expect) << r.model << "/" << r.channel;
    sum += r.requests;
  }
  EXPECT_EQ(sum, 40);
  EXPECT_EQ(rows[0].model, "m1");
  EXPECT_EQ(rows[0].channel, "c1");

  UsageQuery filtered = by_day;
  filtered.from_ms = kT0 + kDay;
  filtered.to_ms = kT0 + 2 * kDay;
  filtered.virtual_key_id = 1;
  filtered.model = "m1";
  filtered.channel = "c2";
  rows = store_->usage(filtered);
  std::int64_t expect = 0;
  for (auto& l : all_)
    if (l.time_ms >= kT0 + kDay && l.time_ms < kT0 + 2 * kDay && l.virtual_key_id == 1 && l.model == "m1" &&
        l.channel == "c2")
      ++expect;
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].requests, expect);

  UsageQuery empty = total;
  empty.from_ms = kT0 + 100 * kDay;
  empty.to_ms = kT0 + 101 * kDay;
  rows = store_->usage(empty);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].requests, 0);
  EXPECT_DOUBLE_EQ(rows[0].cost_usd, 0);
  empty.by_day = true;
  EXPECT_TRUE(store_->usage(empty).empty());
}

TEST_P(StoreTest, DeleteLogsBeforeRemovesOnlyOlderRowsInChunks) {
  const std::int64_t n = SqlStore::kDeleteChunk + 1234;  // more than one chunk
  std::vector<LogRecord> rows;
  for (std::int64_t i = 0; i < n; ++i) rows.push_back(sampleLog(kT0 + i, "old"));
  for (int i = 0; i < 10; ++i) rows.push_back(sampleLog(kT0 + kDay + i, "new"));
  store_->insertLogs(rows);
  EXPECT_EQ(store_->deleteLogsBefore(kT0 + kDay, kAll), n);
  EXPECT_EQ(countRows("request_logs"), 10);
  EXPECT_EQ(store_->deleteLogsBefore(kT0 + kDay, kAll), 0);
  EXPECT_EQ(store_->deleteLogsBefore(kT0 + kDay + 5, kAll), 5);
}

TEST_P(StoreTest, DeleteLogsBeforeStopsAfterMaxRows) {
  std::vector<LogRecord> rows;
  for (int i = 0; i < 25; ++i) rows.push_back(sampleLog(kT0 + i, "old"));
  rows.push_back(sampleLog(kT0 + kDay, "new"));
  store_->insertLogs(rows);
  EXPECT_EQ(store_->deleteLogsBefore(kT0 + kDay, 10), 10);
  EXPECT_EQ(store_->deleteLogsBefore(kT0 + kDay, 10), 10);
  EXPECT_EQ(store_->deleteLogsBefore(kT0 + kDay, 10), 5);
  EXPECT_EQ(store_->deleteLogsBefore(kT0 + kDay, 10), 0);
  EXPECT_EQ(countRows("request_logs"), 1);
}

// ---- stored responses ----

StoredResponse storedResponse(std::string id, std::int64_t owner, std::int64_t expires) {
  StoredResponse r;
  r.id = std::move(id);
  r.owner_key_id = owner;
  r.created_at_ms = kT0;
  r.expires_at_ms = expires;
  r.response = R"({"id":")" + r.id + R"(","object":"response","output":[]})";
  r.input_items = R"([{"type":"message","role":"user","content":"hi \u00e9 'quoted'"}])";
  return r;
}

TEST_P(StoreTest, StoredResponsesAreReadAndDeletedOnlyByTheirOwner) {
  store_->putResponse(storedResponse("resp_a", 7, kT0 + kDay));
  store_->putResponse(storedResponse("resp_a", 8, kT0 + kDay));  // another key, the same id
  auto mine = store_->getResponse(7, "resp_a", kT0);
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->owner_key_id, 7);
  EXPECT_EQ(mine->input_items, storedResponse("resp_a", 7, 0).input_items);
  EXPECT_FALSE(store_->getResponse(9, "resp_a", kT0));
  EXPECT_FALSE(store_->getResponse(0, "resp_a", kT0));  // the master key is an owner of its own
  EXPECT_FALSE(store_->deleteResponse(9, "resp_a", kT0));
  EXPECT_TRUE(store_->deleteResponse(7, "resp_a", kT0));
  EXPECT_FALSE(store_->getResponse(7, "resp_a", kT0));
  EXPECT_TRUE(store_->getResponse(8, "resp_a", kT0));
  EXPECT_FALSE(store_->deleteResponse(7, "resp_a", kT0));
  // Parameters only: an id with quotes is just an id.
  store_->putResponse(storedResponse("x'; DELETE FROM stored_responses; --", 7, kT0 + kDay));
  EXPECT_TRUE(store_->getResponse(7, "x'; DELETE FROM stored_responses; --", kT0));
  EXPECT_EQ(countRows("stored_responses"), 2);
}

TEST_P(StoreTest, AStoredResponseIsReplacedWhole) {
  store_->putResponse(storedResponse("resp_r", 1, kT0 + kDay));
  auto again = storedResponse("resp_r", 1, kT0 + 2 * kDay);
  again.response = R"({"id":"resp_r","v":2})";
  store_->putResponse(again);
  auto got = store_->getResponse(1, "resp_r", kT0);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->response, again.response);
  EXPECT_EQ(got->expires_at_ms, kT0 + 2 * kDay);
  EXPECT_EQ(countRows("stored_responses"), 1);
}

TEST_P(StoreTest, ExpiredResponsesAreNeverReadAndAreSweptInChunks) {
  for (int i = 0; i < 1234; ++i) store_->putResponse(storedResponse("resp_old" + std::to_string(i), 1, kT0 + i));
  store_->putResponse(storedResponse("resp_new", 1, kT0 + kDay));
  EXPECT_FALSE(store_->getResponse(1, "resp_old5", kT0 + 5));  // expired at its expiry
  EXPECT_TRUE(store_->getResponse(1, "resp_old5", kT0 + 4));
  EXPECT_FALSE(store_->deleteResponse(1, "resp_old5", kT0 + 5));
  EXPECT_EQ(store_->deleteExpiredResponses(kT0 + 1000, 600), 600);   // stops after max_rows
  EXPECT_EQ(store_->deleteExpiredResponses(kT0 + 1000, kAll), 401);  // expires_at <= now: 0..1000
  EXPECT_EQ(store_->deleteExpiredResponses(kT0 + kDay - 1, kAll), 233);
  EXPECT_EQ(store_->deleteExpiredResponses(kT0 + kDay - 1, kAll), 0);
  EXPECT_EQ(countRows("stored_responses"), 1);
  EXPECT_TRUE(store_->getResponse(1, "resp_new", kT0 + kDay - 1));
}

// ---- spend ----

TEST_P(StoreTest, SpendByKeySumsTheDayAndMonthAndKeepsTheTotalOnTheKey) {
  auto makeKey = [&](const std::string& name) {
    VirtualKey k;
    k.name = name;
    k.key_hash = "hash-" + name;
    k.key_prefix = "sk-" + name;
    return store_->createVirtualKey(k);
  };
  std::int64_t a = makeKey("a"), b = makeKey("b"), idle = makeKey("idle");
  const std::int64_t month = kT0 - 14 * kDay;  // 2023-11-01
  auto row = [](std::int64_t t, std::optional<std::int64_t> key, double usd) {
    LogRecord r = sampleLog(t, "r");
    r.virtual_key_id = key;
    r.cost_usd = usd;
    return r;
  };
  std::vector<LogRecord> batch{
      row(month - kDay, a, 100),         // last month: only in the total
      row(month + kDay, a, 10),          // this month
      row(kT0 + 1000, a, 1),             // today
      row(kT0 + 2000, a, 2),             // today, same key in the same batch
      row(kT0 + 3000, b, 0.5),           // today
      row(kT0 + 4000, std::nullopt, 7),  // master key: nobody's spend
      row(kT0 + 5000, 999, 3),           // a deleted key's row: no key row to add to
  };
  store_->insertLogs(batch);

  auto spend = store_->spendByKey(kT0, month);
  EXPECT_DOUBLE_EQ(spend[a].day_usd, 3);
  EXPECT_DOUBLE_EQ(spend[a].month_usd, 13);
  EXPECT_DOUBLE_EQ(spend[a].total_usd, 113);
  EXPECT_DOUBLE_EQ(spend[b].day_usd, 0.5);
  EXPECT_DOUBLE_EQ(spend[b].month_usd, 0.5);
  EXPECT_DOUBLE_EQ(spend[b].total_usd, 0.5);
  if (spend.count(idle)) {
    EXPECT_EQ(spend[idle].day_usd, 0);
    EXPECT_EQ(spend[idle].total_usd, 0);
  }
  EXPECT_FALSE(spend.count(999));

  // A later batch adds to the total; retention does not lower it.
  std::vector<LogRecord> later{row(kT0 + 6000, b, 0.25)};
  store_->insertLogs(later);
  EXPECT_EQ(store_->deleteLogsBefore(kT0 + kDay, kAll), 8);
  spend = store_->spendByKey(kT0 + kDay, month);
  EXPECT_DOUBLE_EQ(spend[a].day_usd, 0);
  EXPECT_DOUBLE_EQ(spend[a].month_usd, 0);
  EXPECT_DOUBLE_EQ(spend[a].total_usd, 113);
  EXPECT_DOUBLE_EQ(spend[b].total_usd, 0.75);
}

TEST_P(StoreTest, AFailedBatchAddsNoSpend) {
  VirtualKey k;
  k.name = "k";
  k.key_hash = "h";
  k.key_prefix = "sk-k";
  std::int64_t id = store_->createVirtualKey(k);
  std::vector<LogRecord> batch;
  for (std::size_t i = 0; i < SqlStore::kInsertChunk + 1; ++i) {  // the bad row is in the second chunk
    batch.push_back(sampleLog(kT0 + static_cast<std::int64_t>(i), i == SqlStore::kInsertChunk ? "poison" : "ok"));
    batch.back().virtual_key_id = id;
    batch.back().cost_usd = 1;
  }
  testing::refuseLogsWithRequestId(*db_, "poison");
  EXPECT_THROW(store_->insertLogs(batch), StoreError);
  EXPECT_EQ(countRows("request_logs"), 0);
  EXPECT_DOUBLE_EQ(store_->spendByKey(kT0, kT0)[id].total_usd, 0);
  batch.pop_back();
  store_->insertLogs(batch);
  EXPECT_DOUBLE_EQ(store_->spendByKey(kT0, kT0)[id].total_usd, static_cast<double>(SqlStore::kInsertChunk));
}

// SQLite inserts log rows with OR ROLLBACK: a refused row ends the whole transaction inside
// the database. The store must stay usable (its own ROLLBACK then finds no transaction).
class SqliteStoreTest : public StoreTest {};  // instantiated for SQLite only

TEST_P(SqliteStoreTest, AStoreStaysUsableAfterTheDatabaseRolledBackABatch) {
  openSqlConnection(db_->url())
      ->execScript(
          "CREATE TRIGGER roll_back BEFORE INSERT ON request_logs WHEN NEW.request_id = 'poison' "
          "BEGIN SELECT RAISE(ROLLBACK, 'refused'); END");
  std::vector<LogRecord> batch{sampleLog(kT0, "ok"), sampleLog(kT0 + 1, "poison")};
  EXPECT_THROW(store_->insertLogs(batch), StoreError);
  batch.pop_back();
  store_->insertLogs(batch);
  EXPECT_EQ(countRows("request_logs"), 1);
}

// ---- control plane stamp ----

TEST_P(StoreTest, ControlPlaneStampChangesOnEveryControlPlaneWriteByAnyInstance) {
  auto other = Store::open(db_->url());  // another instance sharing the database
  std::string last = store_->controlPlaneStamp();
  auto changed = [&](const char* what) {
    std::string now = other->controlPlaneStamp();
    EXPECT_NE(now, last) << what;
    EXPECT_EQ(store_->controlPlaneStamp(), now) << what;
    last = now;
  };
  auto unchanged = [&](const char* what) { EXPECT_EQ(other->controlPlaneStamp(), last) << what; };

  VirtualKey k;
  k.name = "k";
  k.key_hash = "h";
  k.key_prefix = "sk-k";
  k.id = store_->createVirtualKey(k);
  changed("create virtual key");
  k.rpm = 5;
  store_->updateVirtualKey(k);
  changed("update virtual key");
  store_->revokeVirtualKey(k.id, kT0);
  changed("revoke virtual key");

  LogRecord r = sampleLog(kT0, "r");
  r.virtual_key_id = k.id;
  store_->insertLogs(std::span(&r, 1));
  unchanged("logging spend against a key");
  store_->listVirtualKeys();
  store_->spendByKey(kT0, kT0);
  unchanged("reads");

  Channel c;
  c.name = "c";
  c.type = "mock";
  c.id = store_->createChannel(c);
  changed("create channel");
  c.settings = R"({"rpm":5})";
  store_->updateChannel(c);
  changed("update channel");

  UpstreamKey u;
  u.channel_id = c.id;
  u.secret_encrypted = "s";
  u.id = store_->createUpstreamKey(u);
  changed("create upstream key");
  u.label = "x";
  store_->updateUpstreamKey(u);
  changed("update upstream key");
  store_->setUpstreamKeyState(u.id, UpstreamKeyState::Disabled, "401", std::nullopt);
  changed("disable upstream key");
  store_->deleteUpstreamKey(u.id);
  changed("delete upstream key");
  store_->createUpstreamKey(u);
  changed("create upstream key again");

  // Create then delete between two polls still moves it (a count would come back level).
  Channel c2 = c;
  c2.name = "c2";
  std::int64_t c2id = other->createChannel(c2);
  other->deleteChannel(c2id);
  changed("create + delete channel");
  store_->deleteChannel(c.id);  // cascades to its upstream key
  changed("delete channel");
  store_->deleteVirtualKey(k.id);
  changed("delete virtual key");
  store_->deleteVirtualKey(k.id);
  unchanged("deleting a missing key");
}

// ---- virtual keys ----

TEST_P(StoreTest, VirtualKeyCrud) {
  VirtualKey k;
  k.name = "team-a";
  k.key_hash = std::string(64, 'a');
  k.key_prefix = "sk-sluic";
  k.allowed_models = R"(["gpt-4o-mini","claude-*"])";
  k.allowed_channels = R"(["openai"])";
  k.rpm = 60;
  k.tpm = 100000;
  k.max_concurrent = 4;
  k.budget_daily_usd = 1.5;
  k.budget_monthly_usd = 30;
  k.expires_at_ms = kT0 + kDay;
  k.metadata = R"({"owner":"ana"})";
  std::int64_t id = store_->createVirtualKey(k);
  EXPECT_GT(id, 0);

  auto got = store_->getVirtualKey(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, id);
  EXPECT_EQ(got->name, "team-a");
  EXPECT_EQ(got->key_hash, k.key_hash);
  EXPECT_EQ(got->key_prefix, "sk-sluic");
  EXPECT_EQ(got->allowed_models, k.allowed_models);
  EXPECT_EQ(got->allowed_channels, k.allowed_channels);
  EXPECT_EQ(got->rpm, 60);
  EXPECT_EQ(got->tpm, 100000);
  EXPECT_EQ(got->max_concurrent, 4);
  EXPECT_EQ(got->budget_daily_usd, 1.5);
  EXPECT_EQ(got->budget_monthly_usd, 30.0);
  EXPECT_FALSE(got->budget_total_usd);
  EXPECT_EQ(got->expires_at_ms, kT0 + kDay);
  EXPECT_FALSE(got->revoked_at_ms);
  EXPECT_EQ(got->metadata, k.metadata);
  EXPECT_GT(got->created_at_ms, 0);
  EXPECT_EQ(got->created_at_ms, got->updated_at_ms);

  auto by_hash = store_->findVirtualKeyByHash(k.key_hash);
  ASSERT_TRUE(by_hash);
  EXPECT_EQ(by_hash->id, id);
  EXPECT_FALSE(store_->findVirtualKeyByHash(std::string(64, 'b')));
  EXPECT_FALSE(store_->getVirtualKey(id + 1000));

  // Same hash again: a conflict the admin API can answer with 409.
  try {
    store_->createVirtualKey(k);
    FAIL() << "duplicate key_hash accepted";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Conflict) << e.what();
  }
  // Malformed JSON is refused.
  VirtualKey bad = k;
  bad.key_hash = std::string(64, 'c');
  bad.allowed_models = "[not json";
  try {
    store_->createVirtualKey(bad);
    FAIL() << "malformed JSON accepted";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::InvalidData) << e.what();
  }

  VirtualKey k2 = k;
  k2.key_hash = std::string(64, 'd');
  k2.name = "team-b";
  std::int64_t id2 = store_->createVirtualKey(k2);
  auto list = store_->listVirtualKeys();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].id, id);
  EXPECT_EQ(list[1].id, id2);

  VirtualKey upd = *got;
  upd.name = "team-a2";
  upd.rpm.reset();
  upd.budget_total_usd = 100;
  upd.allowed_models = "[]";
  upd.key_hash = "ignored";  // the hash never changes
  EXPECT_TRUE(store_->updateVirtualKey(upd));
  got = store_->getVirtualKey(id);
  EXPECT_EQ(got->name, "team-a2");
  EXPECT_FALSE(got->rpm);
  EXPECT_EQ(got->budget_total_usd, 100.0);
  EXPECT_EQ(got->allowed_models, "[]");
  EXPECT_EQ(got->key_hash, k.key_hash);
  EXPECT_GE(got->updated_at_ms, got->created_at_ms);
  upd.id = id + 1000;
  EXPECT_FALSE(store_->updateVirtualKey(upd));

  EXPECT_TRUE(store_->revokeVirtualKey(id, kT0 + 42));
  EXPECT_EQ(store_->getVirtualKey(id)->revoked_at_ms, kT0 + 42);
  EXPECT_FALSE(store_->revokeVirtualKey(id + 1000, kT0));

  EXPECT_TRUE(store_->deleteVirtualKey(id));
  EXPECT_FALSE(store_->deleteVirtualKey(id));
  EXPECT_FALSE(store_->getVirtualKey(id));
  // Ids are not reused: old log rows never point at a new key.
  VirtualKey k3 = k;
  k3.key_hash = std::string(64, 'e');
  EXPECT_GT(store_->createVirtualKey(k3), id2);
}

// ---- channels and upstream keys ----

TEST_P(StoreTest, ChannelCrud) {
  Channel c;
  c.name = "openai";
  c.type = "openai";
  c.base_url = "https://api.openai.com/v1";
  c.models = R"(["gpt-4o-mini","gpt-4.1*"])";
  c.priority = 2;
  c.weight = 3;
  c.headers = R"({"OpenAI-Organization":"org-1"})";
  std::int64_t id = store_->createChannel(c);
  auto got = store_->getChannel(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->name, "openai");
  EXPECT_EQ(got->type, "openai");
  EXPECT_EQ(got->base_url, c.base_url);
  EXPECT_EQ(got->models, c.models);
  EXPECT_EQ(got->priority, 2);
  EXPECT_EQ(got->weight, 3);
  EXPECT_EQ(got->headers, c.headers);
  EXPECT_EQ(got->settings, "{}");
  EXPECT_TRUE(got->enabled);
  EXPECT_GT(got->created_at_ms, 0);
  EXPECT_EQ(store_->findChannelByName("openai")->id, id);
  EXPECT_FALSE(store_->findChannelByName("nope"));

  try {
    store_->createChannel(c);
    FAIL() << "duplicate channel name accepted";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Conflict) << e.what();
  }

  Channel c2 = c;
  c2.name = "anthropic";
  c2.type = "anthropic";
  c2.priority = 1;
  std::int64_t id2 = store_->createChannel(c2);
  auto list = store_->listChannels();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].id, id2);  // lower priority value first
  EXPECT_EQ(list[1].id, id);

  got->enabled = false;
  got->weight = 0;
  got->models = "[]";
  EXPECT_TRUE(store_->updateChannel(*got));
  got = store_->getChannel(id);
  EXPECT_FALSE(got->enabled);
  EXPECT_EQ(got->weight, 0);
  EXPECT_EQ(got->models, "[]");
  got->name = "anthropic";  // renaming onto another channel's name
  try {
    store_->updateChannel(*got);
    FAIL() << "rename onto an existing name accepted";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Conflict) << e.what();
  }
  got->weight = -1;
  got->name = "openai";
  try {
    store_->updateChannel(*got);
    FAIL() << "negative weight accepted";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::InvalidData) << e.what();
  }

  EXPECT_TRUE(store_->deleteChannel(id2));
  EXPECT_FALSE(store_->deleteChannel(id2));
  EXPECT_EQ(store_->listChannels().size(), 1u);
}

TEST_P(StoreTest, McpServerCrudKeepsHeadersAsOpaqueBytesAndBumpsTheStamp) {
  McpServer m;
  m.name = "files";
  m.url = "https://mcp.example/mcp";
  m.headers_encrypted = std::string("\x00sealed\xff\x01", 9);  // any byte, as a sealed blob is
  m.timeout_ms = 15000;
  const std::string before = store_->controlPlaneStamp();
  const std::int64_t id = store_->createMcpServer(m);
  EXPECT_NE(store_->controlPlaneStamp(), before) << "every instance must see an added server";
  auto got = store_->getMcpServer(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->name, "files");
  EXPECT_EQ(got->url, m.url);
  EXPECT_EQ(got->command, "[]");
  EXPECT_EQ(got->headers_encrypted, m.headers_encrypted);
  EXPECT_EQ(got->timeout_ms, 15000);
  EXPECT_GT(got->created_at_ms, 0);
  EXPECT_EQ(store_->findMcpServerByName("files")->id, id);
  EXPECT_FALSE(store_->findMcpServerByName("nope"));
  try {
    store_->createMcpServer(m);
    FAIL() << "duplicate MCP server name accepted";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Conflict) << e.what();
  }

  McpServer s;
  s.name = "local";
  s.command = R"(["node","server.js"])";
  const std::int64_t sid = store_->createMcpServer(s);
  ASSERT_EQ(store_->listMcpServers().size(), 2u);
  EXPECT_EQ(store_->listMcpServers().at(1).command, s.command);

  got->url = "https://other.example/mcp";
  got->headers_encrypted.clear();
  const std::string stamp = store_->controlPlaneStamp();
  EXPECT_TRUE(store_->updateMcpServer(*got));
  EXPECT_NE(store_->controlPlaneStamp(), stamp);
  EXPECT_EQ(store_->getMcpServer(id)->url, "https://other.example/mcp");
  EXPECT_TRUE(store_->getMcpServer(id)->headers_encrypted.empty());

  EXPECT_TRUE(store_->deleteMcpServer(sid));
  EXPECT_FALSE(store_->deleteMcpServer(sid));
  EXPECT_FALSE(store_->getMcpServer(sid));
  EXPECT_EQ(store_->listMcpServers().size(), 1u);
}

TEST_P(StoreTest, ChannelSettingsRoundTripAndAreJsonChecked) {
  Channel c;
  c.name = "azure";
  c.type = "azure";
  c.settings = R"({"api_version":"2024-06-01","model_map":{"gpt-4o":"my-deploy"},"rpm":60,"key_tpm":1000})";
  std::int64_t id = store_->createChannel(c);
  EXPECT_EQ(store_->getChannel(id)->settings, c.settings);
  EXPECT_EQ(store_->findChannelByName("azure")->settings, c.settings);
  EXPECT_EQ(store_->listChannels().at(0).settings, c.settings);

  Channel upd = *store_->getChannel(id);
  upd.settings = R"({"rpm":5})";
  EXPECT_TRUE(store_->updateChannel(upd));
  EXPECT_EQ(store_->getChannel(id)->settings, upd.settings);

  for (const char* bad : {"{not json", ""}) {
    upd.settings = bad;
    try {
      store_->updateChannel(upd);
      FAIL() << "malformed settings accepted: '" << bad << "'";
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), StoreErrc::InvalidData) << e.what();
    }
    Channel fresh = c;
    fresh.name = "fresh";
    fresh.settings = bad;
    EXPECT_THROW(store_->createChannel(fresh), StoreError);
  }
  EXPECT_EQ(store_->getChannel(id)->settings, R"({"rpm":5})");
}

TEST_P(StoreTest, UpstreamKeyCrudKeepsSecretBytesAndCascadesWithTheChannel) {
  Channel c;
  c.name = "openai";
  c.type = "openai";
  std::int64_t ch = store_->createChannel(c);
  c.name = "other";
  std::int64_t ch2 = store_->createChannel(c);

  UpstreamKey k;
  k.channel_id = ch;
  k.secret_encrypted = std::string("\x00\x01\xff\xfe nonce\x00tag", 14);
  k.label = "primary";
  std::int64_t id = store_->createUpstreamKey(k);
  auto got = store_->getUpstreamKey(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->channel_id, ch);
  EXPECT_EQ(got->secret_encrypted, k.secret_encrypted);
  EXPECT_EQ(got->label, "primary");
  EXPECT_EQ(got->state, UpstreamKeyState::Active);
  EXPECT_EQ(got->disabled_reason, "");
  EXPECT_FALSE(got->cooldown_until_ms);
  EXPECT_GT(got->created_at_ms, 0);
  EXPECT_EQ(got->updated_at_ms, got->created_at_ms);

  UpstreamKey k2 = k;
  k2.channel_id = ch2;
  k2.label = "other";
  std::int64_t id2 = store_->createUpstreamKey(k2);
  UpstreamKey k3 = k;
  k3.label = "secondary";
  std::int64_t id3 = store_->createUpstreamKey(k3);
  EXPECT_EQ(store_->listUpstreamKeys(std::nullopt).size(), 3u);
  auto on_ch = store_->listUpstreamKeys(ch);
  ASSERT_EQ(on_ch.size(), 2u);
  EXPECT_EQ(on_ch[0].id, id);
  EXPECT_EQ(on_ch[1].id, id3);

  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // updated_at has millisecond resolution
  EXPECT_TRUE(store_->setUpstreamKeyState(id, UpstreamKeyState::Disabled, "401 invalid key", kT0 + 60'000));
  std::int64_t created = got->created_at_ms;
  got = store_->getUpstreamKey(id);
  EXPECT_GT(got->updated_at_ms, created);
  EXPECT_EQ(got->state, UpstreamKeyState::Disabled);
  EXPECT_EQ(got->disabled_reason, "401 invalid key");
  EXPECT_EQ(got->cooldown_until_ms, kT0 + 60'000);
  EXPECT_TRUE(store_->setUpstreamKeyState(id, UpstreamKeyState::Active, "", std::nullopt));
  got = store_->getUpstreamKey(id);
  EXPECT_EQ(got->state, UpstreamKeyState::Active);
  EXPECT_FALSE(got->cooldown_until_ms);
  EXPECT_FALSE(store_->setUpstreamKeyState(id + 1000, UpstreamKeyState::Active, "", std::nullopt));

  got->label = "renamed";
  got->secret_encrypted = "rotated";
  std::int64_t before = got->updated_at_ms;
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_TRUE(store_->updateUpstreamKey(*got));
  EXPECT_GT(store_->getUpstreamKey(id)->updated_at_ms, before);
  EXPECT_EQ(store_->getUpstreamKey(id)->label, "renamed");
  EXPECT_EQ(store_->getUpstreamKey(id)->secret_encrypted, "rotated");

  // A key for a channel that does not exist.
  UpstreamKey orphan = k;
  orphan.channel_id = ch2 + 1000;
  try {
    store_->createUpstreamKey(orphan);
    FAIL() << "upstream key for a missing channel accepted";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Conflict) << e.what();
  }

  EXPECT_TRUE(store_->deleteUpstreamKey(id3));
  EXPECT_FALSE(store_->deleteUpstreamKey(id3));
  EXPECT_TRUE(store_->deleteChannel(ch));
  EXPECT_FALSE(store_->getUpstreamKey(id));  // cascaded
  EXPECT_TRUE(store_->getUpstreamKey(id2));
}

TEST_P(StoreTest, OidcSessionsAreFoundByHashTouchedAndExpired) {
  OidcSession o;
  o.id_hash = std::string(64, 'a');
  o.kind = "session";
  o.subject = "user-1";
  o.email = "ada@example.com";
  o.name = "Ada";
  o.role = "viewer";
  o.csrf_token = "csrf";
  o.created_at_ms = 1000;
  o.seen_at_ms = 1000;
  o.expires_at_ms = 100000;
  store_->putOidcSession(o);
  OidcSession login = o;
  login.id_hash = std::string(64, 'b');
  login.kind = "login";
  login.data = R"({"state":"s"})";
  login.expires_at_ms = 5000;
  store_->putOidcSession(login);
  auto found = store_->findOidcSession(o.id_hash);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->subject, "user-1");
  EXPECT_EQ(found->email, "ada@example.com");
  EXPECT_EQ(found->role, "viewer");
  EXPECT_EQ(found->csrf_token, "csrf");
  EXPECT_EQ(found->expires_at_ms, 100000);
  EXPECT_EQ(store_->findOidcSession(login.id_hash)->data, R"({"state":"s"})");
  EXPECT_FALSE(store_->findOidcSession(std::string(64, 'c')));
  EXPECT_TRUE(store_->touchOidcSession(o.id_hash, 9000));
  EXPECT_EQ(store_->findOidcSession(o.id_hash)->seen_at_ms, 9000);
  EXPECT_FALSE(store_->touchOidcSession(std::string(64, 'c'), 9000));
  // At 6000 with a 10 s idle limit: the login row's end passed; the session was seen at 9000.
  EXPECT_EQ(store_->deleteExpiredOidcSessions(6000, 10000), 1);
  EXPECT_FALSE(store_->findOidcSession(login.id_hash));
  // Idle since 9000 for more than 10 s.
  EXPECT_EQ(store_->deleteExpiredOidcSessions(19001, 10000), 1);
  store_->putOidcSession(o);
  EXPECT_TRUE(store_->deleteOidcSession(o.id_hash));
  EXPECT_FALSE(store_->deleteOidcSession(o.id_hash));
}

TEST_P(StoreTest, AdminTokensAreFoundByHashRevokedOnceAndNamedUniquely) {
  AdminToken t;
  t.name = "ci-deploy";
  t.role = "operator";
  t.token_hash = std::string(64, 'a');
  t.token_prefix = "sk-sla-AbCdE";
  t.expires_at_ms = kT0 + kDay;
  t.created_by = "master key";
  const auto id = store_->createAdminToken(t);
  auto found = store_->findAdminTokenByHash(t.token_hash);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, id);
  EXPECT_EQ(found->name, "ci-deploy");
  EXPECT_EQ(found->role, "operator");
  EXPECT_EQ(found->token_prefix, "sk-sla-AbCdE");
  EXPECT_EQ(found->expires_at_ms, kT0 + kDay);
  EXPECT_FALSE(found->revoked_at_ms);
  EXPECT_EQ(found->created_by, "master key");
  EXPECT_GT(found->created_at_ms, 0);
  EXPECT_FALSE(store_->findAdminTokenByHash(std::string(64, 'b')));

  // A second token with the same name or hash is refused.
  AdminToken same = t;
  same.token_hash = std::string(64, 'c');
  EXPECT_THROW(store_->createAdminToken(same), StoreError);
  same = t;
  same.name = "other";
  EXPECT_THROW(store_->createAdminToken(same), StoreError);

  // Revoking keeps the first time.
  EXPECT_TRUE(store_->revokeAdminToken(id, kT0));
  EXPECT_TRUE(store_->revokeAdminToken(id, kT0 + 5));
  EXPECT_EQ(store_->getAdminToken(id)->revoked_at_ms, kT0);
  EXPECT_FALSE(store_->revokeAdminToken(id + 100, kT0));
  ASSERT_EQ(store_->listAdminTokens().size(), 1u);
  EXPECT_TRUE(store_->deleteAdminToken(id));
  EXPECT_FALSE(store_->deleteAdminToken(id));
  EXPECT_TRUE(store_->listAdminTokens().empty());
}

// ---- teams ----

TEST_P(StoreTest, TeamCrudKeepsMembersAndLeavesKeysAndTokensWithoutATeamWhenDeleted) {
  const auto stamp0 = store_->controlPlaneStamp();
  Team t;
  t.name = "search";
  t.rpm = 60;
  t.budget_total_usd = 2.5;
  t.members = {{"email", "ada@example.com"}, {"subject", "auth0|42"}};
  const std::int64_t id = store_->createTeam(t);
  EXPECT_NE(store_->controlPlaneStamp(), stamp0);
  auto got = store_->getTeam(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->name, "search");
  EXPECT_EQ(got->rpm, 60);
  EXPECT_FALSE(got->tpm);
  EXPECT_DOUBLE_EQ(*got->budget_total_usd, 2.5);
  ASSERT_EQ(got->members.size(), 2u);
  EXPECT_EQ(got->members[0], (TeamMember{"email", "ada@example.com"}));
  EXPECT_EQ(got->members[1], (TeamMember{"subject", "auth0|42"}));
  EXPECT_GT(got->created_at_ms, 0);
  EXPECT_EQ(store_->findTeamByName("search")->id, id);
  EXPECT_FALSE(store_->findTeamByName("nope"));
  EXPECT_FALSE(store_->getTeam(id + 100));
  try {
    store_->createTeam(t);
    ADD_FAILURE() << "a second team named search was stored";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Conflict);
  }

  // Update replaces the members.
  got->tpm = 1000;
  got->rpm.reset();
  got->members = {{"email", "bob@example.com"}};
  ASSERT_TRUE(store_->updateTeam(*got));
  got = store_->getTeam(id);
  EXPECT_FALSE(got->rpm);
  EXPECT_EQ(got->tpm, 1000);
  ASSERT_EQ(got->members.size(), 1u);
  EXPECT_EQ(got->members[0].value, "bob@example.com");
  Team ghost = *got;
  ghost.id = id + 100;
  EXPECT_FALSE(store_->updateTeam(ghost));

  VirtualKey k;
  k.name = "in-team";
  k.key_hash = "hash-team";
  k.key_prefix = "sk-team";
  k.team_id = id;
  const std::int64_t kid = store_->createVirtualKey(k);
  EXPECT_EQ(store_->getVirtualKey(kid)->team_id, id);
  AdminToken tok;
  tok.name = "member";
  tok.role = "member";
  tok.token_hash = "th";
  tok.token_prefix = "sk-sla-x";
  tok.created_by = "master key";
  tok.team_id = id;
  const std::int64_t tid = store_->createAdminToken(tok);
  EXPECT_EQ(store_->getAdminToken(tid)->team_id, id);
  // A key may not name a team that does not exist.
  VirtualKey stray = *store_->getVirtualKey(kid);
  stray.team_id = id + 100;
  EXPECT_THROW(store_->updateVirtualKey(stray), StoreError);

  const auto stamp1 = store_->controlPlaneStamp();
  ASSERT_TRUE(store_->deleteTeam(id));
  EXPECT_NE(store_->controlPlaneStamp(), stamp1);
  EXPECT_FALSE(store_->deleteTeam(id));
  EXPECT_FALSE(store_->getTeam(id));
  EXPECT_FALSE(store_->getVirtualKey(kid)->team_id);
  EXPECT_FALSE(store_->getAdminToken(tid)->team_id);
  EXPECT_EQ(countRows("team_members"), 0);
  EXPECT_TRUE(store_->listTeams().empty());
}

TEST_P(StoreTest, UsageGroupsAndFiltersByTheKeysTeamInRowsAndRollups) {
  Team t;
  t.name = "a-team";
  const std::int64_t ta = store_->createTeam(t);
  t.name = "b-team";
  const std::int64_t tb = store_->createTeam(t);
  auto makeKey = [&](const std::string& name, std::optional<std::int64_t> team) {
    VirtualKey k;
    k.name = name;
    k.key_hash = "hash-" + name;
    k.key_prefix = "sk-" + name;
    k.team_id = team;
    return store_->createVirtualKey(k);
  };
  const std::int64_t a1 = makeKey("a1", ta), a2 = makeKey("a2", ta), b1 = makeKey("b1", tb), none = makeKey("x", {});
  auto row = [](std::int64_t t, std::optional<std::int64_t> key, double usd) {
    LogRecord r = sampleLog(t, "r");
    r.virtual_key_id = key;
    r.cost_usd = usd;
    return r;
  };
  // Whole days (read from the rollups) and a ragged edge (read from the rows).
  std::vector<LogRecord> batch{row(kT0 - 2 * kDay + 10, a1, 1),   row(kT0 - kDay + 10, a2, 2),
                               row(kT0 - kDay + 20, b1, 4),       row(kT0 - kDay + 30, none, 8),
                               row(kT0 - kDay + 40, std::nullopt, 16), row(kT0 + 1000, a1, 32)};
  store_->insertLogs(batch);
  for (const std::int64_t to : {kT0 + 5000, kT0}) {
    SCOPED_TRACE(to);
    UsageQuery q;
    q.from_ms = kT0 - 2 * kDay;
    q.to_ms = to;
    q.by_team = true;
    std::map<std::optional<std::int64_t>, double> cost;
    std::map<std::optional<std::int64_t>, std::int64_t> n;
    for (const auto& u : store_->usage(q)) {
      cost[u.team_id] += u.cost_usd;
      n[u.team_id] += u.requests;
      EXPECT_FALSE(u.virtual_key_id);
    }
    const double late = to > kT0 ? 32 : 0;
    EXPECT_DOUBLE_EQ(cost[ta], 3 + late);
    EXPECT_EQ(n[ta], late > 0 ? 3 : 2);
    EXPECT_DOUBLE_EQ(cost[tb], 4);
    EXPECT_DOUBLE_EQ(cost[std::nullopt], 24);  // a key without a team and the master key

    // A member's filter: only their teams' keys, whatever else the query asks.
    q.by_team = false;
    q.by_virtual_key = true;
    q.team_ids = {tb};
    auto rows = store_->usage(q);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].virtual_key_id, b1);
    q.team_ids.clear();
    q.team_filter = true;  // a member of no team sees nothing
    EXPECT_TRUE(store_->usage(q).empty());
  }
}

TEST_P(StoreTest, AuditRowsAreAppendedFilteredAndPagedNewestFirst) {
  for (int i = 0; i < 7; ++i) {
    AuditEntry e;
    e.time_ms = kT0 + i;
    e.actor = i % 2 ? "token:ci" : "master key";
    e.role = i % 2 ? "operator" : "admin";
    e.address = "10.0.0.7";
    e.action = i < 3 ? "create" : "update";
    e.method = i < 3 ? "POST" : "PATCH";
    e.path = "/keys/" + std::to_string(i);
    e.target = "/keys/" + std::to_string(i);
    e.status = i < 3 ? 201 : 200;
    e.before = i < 3 ? "null" : R"({"name":"old"})";
    e.after = R"({"name":"new"})";
    store_->appendAudit(e);
  }
  AuditQuery q;
  q.limit = 3;
  std::vector<std::string> seen;
  for (int page = 0; page < 5; ++page) {
    const AuditPage p = store_->listAudit(q);
    for (const auto& e : p.entries) seen.push_back(e.target);
    if (p.next_cursor.empty()) break;
    q.cursor = p.next_cursor;
  }
  EXPECT_EQ(seen,
            (std::vector<std::string>{"/keys/6", "/keys/5", "/keys/4", "/keys/3", "/keys/2", "/keys/1", "/keys/0"}));
  AuditQuery byActor;
  byActor.actor = "token:ci";
  byActor.action = "update";
  const auto rows = store_->listAudit(byActor).entries;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].target, "/keys/5");
  EXPECT_EQ(rows[0].before, R"({"name":"old"})");
  EXPECT_EQ(rows[0].address, "10.0.0.7");
  EXPECT_EQ(rows[0].status, 200);
  AuditQuery window;
  window.from_ms = kT0 + 2;
  window.to_ms = kT0 + 4;
  EXPECT_EQ(store_->listAudit(window).entries.size(), 2u);
  AuditQuery bad;
  bad.cursor = "c1.5";
  EXPECT_THROW(store_->listAudit(bad), StoreError);
  // Not JSON: refused.
  AuditEntry broken;
  broken.actor = "master key";
  broken.after = "{not json";
  EXPECT_THROW(store_->appendAudit(broken), StoreError);
}

// ---- subscription credentials ----

TEST_P(StoreTest, SubscriptionRowsAreSeededOnceAndRefreshedUnderOneLeaseAtATime) {
  EXPECT_FALSE(store_->getSubscription("kabc").has_value());
  const std::string sealed1("v1:\x00\x01" "first", 10);
  auto row = store_->seedSubscription("kabc", sealed1, 1000);
  EXPECT_EQ(row.version, 1);
  EXPECT_EQ(row.credential_encrypted, sealed1);
  EXPECT_EQ(row.lease_owner, "");
  // A second seed (another instance starting) keeps the first row.
  row = store_->seedSubscription("kabc", "v1:other", 2000);
  EXPECT_EQ(row.credential_encrypted, sealed1);
  EXPECT_EQ(row.updated_at_ms, 1000);

  // One lease at a time: the second taker loses until the lease lapses.
  EXPECT_TRUE(store_->leaseSubscription("kabc", 1, "a", 3000, 63000));
  EXPECT_FALSE(store_->leaseSubscription("kabc", 1, "b", 3001, 63001));
  EXPECT_FALSE(store_->leaseSubscription("kabc", 2, "b", 3001, 63001));  // no such version
  // Only the holder commits, once; the version moves on and the lease is cleared.
  EXPECT_FALSE(store_->commitSubscription("kabc", 1, "b", "v1:b", 4000));
  EXPECT_TRUE(store_->commitSubscription("kabc", 1, "a", "v1:second", 4000));
  EXPECT_FALSE(store_->commitSubscription("kabc", 1, "a", "v1:again", 4001));
  row = *store_->getSubscription("kabc");
  EXPECT_EQ(row.version, 2);
  EXPECT_EQ(row.credential_encrypted, "v1:second");
  EXPECT_EQ(row.lease_owner, "");
  EXPECT_EQ(row.lease_until_ms, 0);
  // A loser of the old version cannot lease the new one by mistake.
  EXPECT_FALSE(store_->leaseSubscription("kabc", 1, "b", 5000, 65000));

  // A lease that lapsed (its holder died) may be taken over.
  EXPECT_TRUE(store_->leaseSubscription("kabc", 2, "b", 5000, 6000));
  EXPECT_FALSE(store_->leaseSubscription("kabc", 2, "c", 5999, 9000));
  EXPECT_TRUE(store_->leaseSubscription("kabc", 2, "c", 6000, 9000));
  store_->releaseSubscription("kabc", "b");  // not b's any more: nothing changes
  EXPECT_EQ(store_->getSubscription("kabc")->lease_owner, "c");
  store_->releaseSubscription("kabc", "c");
  EXPECT_EQ(store_->getSubscription("kabc")->lease_owner, "");

  // A refused refresh token: the row keeps the reason and is never leased again.
  EXPECT_TRUE(store_->leaseSubscription("kabc", 2, "c", 7000, 9000));
  store_->failSubscription("kabc", "c", "sign in again", 7001);
  row = *store_->getSubscription("kabc");
  EXPECT_EQ(row.error, "sign in again");
  EXPECT_EQ(row.lease_owner, "");
  EXPECT_FALSE(store_->leaseSubscription("kabc", 2, "d", 8000, 9000));
}

INSTANTIATE_TEST_SUITE_P(Sqlite, SqliteStoreTest, ::testing::Values(Backend::Sqlite), testing::backendName);
INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values(Backend::Sqlite, Backend::Postgres),
                         testing::backendName);
INSTANTIATE_TEST_SUITE_P(Backends, LogFixture, ::testing::Values(Backend::Sqlite, Backend::Postgres),
                         testing::backendName);

// ---- opening ----

TEST(StoreOpen, BadUrlsSayWhatIsWrong) {
  for (std::string url : {"mysql://db/x", "", "sqlite://", "sqlite://x.db?journal=off",
                          "sqlite://x.db?busy_timeout_ms=x", "postgres://u:hunter2@host:notaport/db"}) {
    try {
      Store::open(url);
      ADD_FAILURE() << "opened " << url;
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), StoreErrc::BadUrl) << url << ": " << e.what();
      EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
    }
  }
}

TEST(StoreOpen, UnreachableServerIsUnavailableAndHidesThePassword) {
  testing::TcpGate gate("127.0.0.1", 9);  // a port, then closed: connection refused
  int port = gate.port();
  gate.close();
  try {
    Store::open("postgres://sluice:hunter2@127.0.0.1:" + std::to_string(port) + "/x?connect_timeout=2");
    FAIL() << "connected to a closed port";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Unavailable);
    std::string msg = e.what();
    EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cannot connect"), std::string::npos) << msg;
  }
  try {
    Store::open("sqlite:///nonexistent-dir/sub/sluice.db");
    FAIL() << "opened a file in a missing directory";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Unavailable) << e.what();
  }
}

TEST(StoreOpen, RedactsPasswordsAndSanitizesText) {
  EXPECT_EQ(redactUrlPassword("postgres://u:p%40ss@h:5432/db"), "postgres://u:***@h:5432/db");
  EXPECT_EQ(redactUrlPassword("postgres://u@h/db"), "postgres://u@h/db");
  EXPECT_EQ(redactUrlPassword("postgres://h:5432/db"), "postgres://h:5432/db");
  EXPECT_EQ(sanitizeUtf8("ok é 😀"), "ok é 😀");
  EXPECT_EQ(sanitizeUtf8(std::string("a\0b", 3)),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(sanitizeUtf8("x\xE2\x82"), "x\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(sanitizeUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
}

}  // namespace store_test
}  // namespace
}  // namespace sluice::store
