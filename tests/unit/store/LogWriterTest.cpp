// LogWriter against real databases: drains at shutdown, flushes on its timer, and rides out
// an outage (PostgreSQL cut off by a TCP gate; SQLite held by another writer's exclusive lock).
#include "store/LogWriter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "StoreTestSupport.hpp"
#include "store/SqlConnection.hpp"

namespace sluice::store {
namespace {
namespace log_writer_test {

using namespace std::chrono_literals;
using testing::Backend;
using testing::sampleLog;
using testing::TestDatabase;

constexpr std::int64_t kT0 = 1'700'006'400'000;

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds within = 20s) {
  auto end = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

// Makes the database unreachable for the writer and brings it back.
class Outage {
 public:
  explicit Outage(const TestDatabase& db) : db_(db) {
    if (db.backend() == Backend::Postgres) {
      gate_ = std::make_unique<testing::TcpGate>(db.serverHost(), db.serverPort());
      url_ = db.urlVia(gate_->port());
    } else {
      url_ = db.url() + "?busy_timeout_ms=20";
    }
  }
  const std::string& url() const { return url_; }
  void begin() {
    if (gate_) {
      gate_->close();
    } else {
      holder_ = openSqlConnection(db_.url());
      holder_->execScript("BEGIN EXCLUSIVE");
    }
  }
  void end() {
    if (gate_) {
      gate_->open();
    } else {
      holder_->execScript("COMMIT");
      holder_.reset();
    }
  }

 private:
  const TestDatabase& db_;
  std::unique_ptr<testing::TcpGate> gate_;
  std::unique_ptr<SqlConnection> holder_;
  std::string url_;
};

class LogWriterTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    testing::requireBackend(GetParam());
    if (IsSkipped() || HasFatalFailure()) return;
    db_ = std::make_unique<TestDatabase>(GetParam());
    reader_ = Store::open(db_->url());
    reader_->migrate();
  }
  LogWriter::StoreFactory factoryFor(const std::string& url) {
    return [url] { return Store::open(url); };
  }
  std::int64_t rows() {
    UsageQuery q;
    q.to_ms = kT0 * 2;
    return reader_->usage(q).at(0).requests;
  }
  std::unique_ptr<TestDatabase> db_;
  std::unique_ptr<Store> reader_;
};

TEST_P(LogWriterTest, DrainWritesEverythingEnqueuedFromManyThreads) {
  LogWriter::Options opt;
  opt.batch_size = 100;
  opt.max_queue = 100'000;
  LogWriter w(factoryFor(db_->url()), opt);
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t)
    producers.emplace_back([&w, t] {
      for (int i = 0; i < 1500; ++i) EXPECT_TRUE(w.enqueue(sampleLog(kT0 + i, "t" + std::to_string(t))));
    });
  for (auto& p : producers) p.join();
  EXPECT_TRUE(w.drain(30s));
  auto s = w.stats();
  EXPECT_EQ(s.enqueued, 6000u);
  EXPECT_EQ(s.written, 6000u);
  EXPECT_EQ(s.dropped, 0u);
  EXPECT_EQ(s.rejected, 0u);
  EXPECT_EQ(s.abandoned, 0u);
  EXPECT_EQ(s.queue_depth, 0u);
  EXPECT_EQ(rows(), 6000);
  // After drain, enqueue refuses (and counts) instead of losing silently.
  EXPECT_FALSE(w.enqueue(sampleLog(kT0, "late")));
  EXPECT_EQ(w.stats().dropped, 1u);
}

TEST_P(LogWriterTest, FlushesOnItsTimerWithoutAFullBatch) {
  LogWriter::Options opt;
  opt.batch_size = 1000;
  opt.flush_interval = 100ms;
  LogWriter w(factoryFor(db_->url()), opt);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(w.enqueue(sampleLog(kT0, "one")));
  ASSERT_TRUE(eventually([&] { return w.stats().written == 1; }, 5s));
  // Generous bound (shared machine): the point is "a timer, not a full batch or shutdown".
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(rows(), 1);
  EXPECT_TRUE(w.stats().connected);
}

TEST_P(LogWriterTest, KeepsAcceptingWhileTheDatabaseIsDownCountsDropsAndCatchesUp) {
  Outage outage(*db_);
  LogWriter::Options opt;
  opt.max_queue = 50;
  opt.batch_size = 10;
  opt.flush_interval = 20ms;
  opt.retry_initial = 10ms;
  opt.retry_max = 100ms;
  LogWriter w(factoryFor(outage.url()), opt);

  // Connected and writing first.
  ASSERT_TRUE(w.enqueue(sampleLog(kT0, "before")));
  ASSERT_TRUE(eventually([&] { return w.stats().written == 1; }));

  outage.begin();
  // The writer notices on its next batch and keeps retrying that batch.
  ASSERT_TRUE(w.enqueue(sampleLog(kT0 + 1, "during-0")));
  ASSERT_TRUE(eventually([&] { return w.stats().failed_batches >= 2; }));
  EXPECT_FALSE(w.stats().connected);

  // Enqueue never waits on the database: 200 records go in at once, the bound drops the rest.
  auto start = std::chrono::steady_clock::now();
  std::uint64_t accepted = 1;
  for (int i = 1; i <= 200; ++i) accepted += w.enqueue(sampleLog(kT0 + 1 + i, "during-" + std::to_string(i)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  auto s = w.stats();
  EXPECT_EQ(s.enqueued, 1 + accepted);
  EXPECT_EQ(s.queue_depth + s.in_flight, accepted);
  EXPECT_EQ(s.dropped, 201 - accepted);
  EXPECT_GE(s.dropped, 100u);
  EXPECT_LE(s.queue_depth, opt.max_queue);
  EXPECT_EQ(s.written, 1u);

  outage.end();
  ASSERT_TRUE(eventually([&] { return w.stats().written == 1 + accepted; }))
      << "written " << w.stats().written << " of " << 1 + accepted;
  EXPECT_TRUE(w.stats().connected);
  EXPECT_TRUE(w.drain(10s));
  s = w.stats();
  EXPECT_EQ(s.written, s.enqueued);
  EXPECT_EQ(s.abandoned, 0u);
  EXPECT_EQ(rows(), static_cast<std::int64_t>(1 + accepted));
}

TEST_P(LogWriterTest, StartsWhileTheDatabaseIsDownAndConnectsWhenItComesBack) {
  Outage outage(*db_);
  outage.begin();
  LogWriter::Options opt;
  opt.flush_interval = 20ms;
  opt.retry_initial = 10ms;
  opt.retry_max = 50ms;
  LogWriter w(factoryFor(outage.url()), opt);
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(w.enqueue(sampleLog(kT0 + i, "r")));
  ASSERT_TRUE(eventually([&] { return w.stats().failed_batches >= 2; }));
  EXPECT_EQ(w.stats().written, 0u);
  outage.end();
  EXPECT_TRUE(w.drain(20s));
  EXPECT_EQ(w.stats().written, 30u);
  EXPECT_EQ(rows(), 30);
}

TEST_P(LogWriterTest, DrainGivesUpAtItsDeadlineAndCountsWhatWasLost) {
  Outage outage(*db_);
  LogWriter::Options opt;
  opt.flush_interval = 20ms;
  opt.retry_initial = 10ms;
  LogWriter w(factoryFor(outage.url()), opt);
  outage.begin();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(w.enqueue(sampleLog(kT0 + i, "lost")));
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(w.drain(300ms));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  auto s = w.stats();
  EXPECT_EQ(s.abandoned, 10u);
  EXPECT_EQ(s.written, 0u);
  EXPECT_EQ(s.queue_depth, 0u);
  EXPECT_EQ(s.in_flight, 0u);
  outage.end();
}

std::int64_t unixNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST_P(LogWriterTest, RetentionDeletesOldRowsAtStartAndThenEveryInterval) {
  constexpr std::int64_t kDayMs = 86'400'000;
  const std::int64_t now = unixNowMs();
  auto insertAged = [&](int n, std::int64_t age_ms, const std::string& id) {
    std::vector<LogRecord> rows;
    for (int i = 0; i < n; ++i) rows.push_back(sampleLog(now - age_ms + i, id));
    reader_->insertLogs(rows);
  };
  insertAged(12'000, 10 * kDayMs, "old");  // more than one retention chunk
  insertAged(5, 2 * kDayMs, "recent");
  LogWriter::Options opt;
  opt.retention_days = 3;
  opt.retention_interval = 300ms;
  opt.flush_interval = 20ms;
  LogWriter w(factoryFor(db_->url()), opt);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(w.enqueue(sampleLog(now + i, "new")));  // written during the sweep
  ASSERT_TRUE(eventually([&] { return w.stats().expired == 12'000; })) << w.stats().expired;
  ASSERT_TRUE(eventually([&] { return w.stats().written == 100; }));
  EXPECT_EQ(rows(), 105);

  insertAged(7, 4 * kDayMs, "aged-since");
  ASSERT_TRUE(eventually([&] { return w.stats().expired == 12'007; }, 10s)) << w.stats().expired;
  EXPECT_EQ(rows(), 105);
  EXPECT_TRUE(w.drain(10s));
}

TEST_P(LogWriterTest, RetentionZeroKeepsEverything) {
  std::vector<LogRecord> old{sampleLog(1'000, "ancient")};
  reader_->insertLogs(old);
  LogWriter::Options opt;
  opt.retention_interval = 10ms;
  opt.flush_interval = 10ms;
  LogWriter w(factoryFor(db_->url()), opt);
  ASSERT_TRUE(w.enqueue(sampleLog(kT0, "x")));
  ASSERT_TRUE(eventually([&] { return w.stats().written == 1; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(w.stats().expired, 0u);
  EXPECT_EQ(rows(), 2);
}

// The batch with a refused row fails as a whole and is then written row by row: each good
// row's cost reaches its key's total exactly once.
TEST_P(LogWriterTest, ARetriedBatchAddsEachRowsCostToTheKeyOnce) {
  VirtualKey k;
  k.name = "k";
  k.key_hash = "h";
  k.key_prefix = "sk-k";
  std::int64_t id = reader_->createVirtualKey(k);
  testing::refuseLogsWithRequestId(*db_, "poison");
  LogWriter::Options opt;
  opt.batch_size = 10;
  LogWriter w(factoryFor(db_->url()), opt);
  for (int i = 0; i < 25; ++i) {
    LogRecord r = sampleLog(kT0 + i, i == 13 ? "poison" : "ok");
    r.virtual_key_id = id;
    r.cost_usd = 0.125;
    ASSERT_TRUE(w.enqueue(std::move(r)));
  }
  EXPECT_TRUE(w.drain(10s));
  EXPECT_EQ(w.stats().written, 24u);
  EXPECT_EQ(w.stats().rejected, 1u);
  EXPECT_GE(w.stats().failed_batches, 1u);
  EXPECT_EQ(rows(), 24);
  EXPECT_DOUBLE_EQ(reader_->spendByKey(kT0, kT0)[id].total_usd, 24 * 0.125);
}

// A transient failure in the middle of a batch (after some rows were inserted) rolls the
// whole batch back, spend included; the retry then counts it once.
// Needs a trigger that fails transiently: PostgreSQL only.
class PostgresLogWriterTest : public LogWriterTest {};

TEST_P(PostgresLogWriterTest, ABatchRetriedAfterATransientFailureAddsSpendOnce) {
  VirtualKey k;
  k.name = "k";
  k.key_hash = "h";
  k.key_prefix = "sk-k";
  std::int64_t id = reader_->createVirtualKey(k);
  // A sequence is not rolled back with the transaction, so exactly the first attempt fails.
  openSqlConnection(db_->url())
      ->execScript(
          "CREATE SEQUENCE fail_once; CREATE FUNCTION fail_once() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
          "IF NEW.request_id = 'late' AND nextval('fail_once') = 1 THEN "
          "RAISE EXCEPTION 'try again' USING ERRCODE = 'serialization_failure'; END IF; RETURN NEW; END $$; "
          "CREATE TRIGGER fail_once BEFORE INSERT ON request_logs FOR EACH ROW EXECUTE FUNCTION fail_once()");
  LogWriter::Options opt;
  opt.batch_size = 200;
  opt.flush_interval = 10s;  // one batch of everything, at drain
  opt.retry_initial = 10ms;
  LogWriter w(factoryFor(db_->url()), opt);
  for (int i = 0; i < 150; ++i) {  // 150 rows: INSERTs of 128, 16, 4 and 2; the failing row is in the second
    LogRecord r = sampleLog(kT0 + i, i == 140 ? "late" : "ok");
    r.virtual_key_id = id;
    r.cost_usd = 0.5;
    ASSERT_TRUE(w.enqueue(std::move(r)));
  }
  EXPECT_TRUE(w.drain(10s));
  EXPECT_EQ(w.stats().written, 150u);
  EXPECT_EQ(w.stats().failed_batches, 1u);
  EXPECT_EQ(rows(), 150);
  EXPECT_DOUBLE_EQ(reader_->spendByKey(kT0, kT0)[id].total_usd, 75);
}

INSTANTIATE_TEST_SUITE_P(Postgres, PostgresLogWriterTest, ::testing::Values(Backend::Postgres), testing::backendName);
INSTANTIATE_TEST_SUITE_P(Backends, LogWriterTest, ::testing::Values(Backend::Sqlite, Backend::Postgres),
                         testing::backendName);

// A store that refuses one particular record as bad data: the rest of its batch still lands.
class PickyStore final : public Store {
 public:
  explicit PickyStore(std::atomic<int>& written) : written_(written) {}
  // A deferred index to build: refused outright, or built (holding the writers, as SQLite's
  // does) until cancelled.
  struct Index {
    bool refuse = false;
    std::atomic<int> attempts{0};
    std::atomic<bool> building{false};
    std::atomic<bool> cancelled{false};
  };
  PickyStore(std::atomic<int>& written, Index& index) : written_(written), index_(&index) {}
  std::vector<std::string> missingDeferredIndexes() override {
    return index_ ? std::vector<std::string>{"request_logs_model_time"} : std::vector<std::string>{};
  }
  bool buildDeferredIndex(const std::string&) override {
    ++index_->attempts;
    if (index_->refuse) throw StoreError(StoreErrc::Internal, "permission denied for table request_logs");
    index_->building = true;
    while (!index_->cancelled) std::this_thread::sleep_for(1ms);
    index_->building = false;
    throw StoreError(StoreErrc::Unavailable, "canceling statement due to user request");
  }
  bool indexBuildsBlockWriters() const override { return true; }
  std::function<void()> canceller() override {
    return [i = index_] { i->cancelled = true; };
  }
  void migrate() override {}
  int schemaVersion() override { return 0; }
  void insertLogs(std::span<const LogRecord> records) override {
    for (auto& r : records)
      if (r.request_id == "poison") throw StoreError(StoreErrc::InvalidData, "refused");
    written_ += static_cast<int>(records.size());
  }
  LogPage listLogs(const LogQuery&) override { return {}; }
  std::vector<UsageRow> usage(const UsageQuery&) override { return {}; }
  std::int64_t deleteLogsBefore(std::int64_t, std::int64_t) override { return 0; }
  std::map<std::int64_t, KeySpend> spendByKey(std::int64_t, std::int64_t) override { return {}; }
  std::string controlPlaneStamp() override { return {}; }
  std::int64_t createVirtualKey(const VirtualKey&) override { return 0; }
  std::optional<VirtualKey> getVirtualKey(std::int64_t) override { return {}; }
  std::optional<VirtualKey> findVirtualKeyByHash(const std::string&) override { return {}; }
  std::vector<VirtualKey> listVirtualKeys() override { return {}; }
  bool updateVirtualKey(const VirtualKey&) override { return false; }
  bool revokeVirtualKey(std::int64_t, std::int64_t) override { return false; }
  bool deleteVirtualKey(std::int64_t) override { return false; }
  std::int64_t createChannel(const Channel&) override { return 0; }
  std::optional<Channel> getChannel(std::int64_t) override { return {}; }
  std::optional<Channel> findChannelByName(const std::string&) override { return {}; }
  std::vector<Channel> listChannels() override { return {}; }
  bool updateChannel(const Channel&) override { return false; }
  bool deleteChannel(std::int64_t) override { return false; }
  std::int64_t createUpstreamKey(const UpstreamKey&) override { return 0; }
  std::optional<UpstreamKey> getUpstreamKey(std::int64_t) override { return {}; }
  std::vector<UpstreamKey> listUpstreamKeys(std::optional<std::int64_t>) override { return {}; }
  bool updateUpstreamKey(const UpstreamKey&) override { return false; }
  bool setUpstreamKeyState(std::int64_t, UpstreamKeyState, const std::string&, std::optional<std::int64_t>) override {
    return false;
  }
  bool deleteUpstreamKey(std::int64_t) override { return false; }

 private:
  std::atomic<int>& written_;
  Index* index_ = nullptr;
};

// An index build that holds the writers: records wait in the queue meanwhile, and drain() cuts
// the build short, then writes them all.
TEST(LogWriter, DrainCancelsAnIndexBuildUnderWayAndWritesWhatWaited) {
  std::atomic<int> written{0};
  PickyStore::Index index;
  LogWriter::Options opt;
  opt.flush_interval = 10ms;
  LogWriter w([&] { return std::make_unique<PickyStore>(written, index); }, opt);
  ASSERT_TRUE(w.enqueue(sampleLog(kT0, "first")));  // the writer opens the store: the build starts
  ASSERT_TRUE(eventually([&] { return index.building.load(); }, 10s));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(w.enqueue(sampleLog(kT0, "during")));
  std::this_thread::sleep_for(100ms);  // ten flush intervals: the writer leaves them queued
  EXPECT_LE(written.load(), 1);
  EXPECT_TRUE(w.drain(10s));
  EXPECT_TRUE(index.cancelled.load());
  EXPECT_EQ(written.load(), 6);
  EXPECT_EQ(w.stats().written, 6u);
}

// A build the database refuses (no privilege) is said once and not tried again every few
// seconds; drain() does not wait for the next try.
TEST(LogWriter, AnIndexBuildTheDatabaseRefusesIsNotRetriedAtOnce) {
  std::atomic<int> written{0};
  PickyStore::Index index;
  index.refuse = true;
  LogWriter::Options opt;
  opt.flush_interval = 10ms;
  opt.retry_initial = 1ms;
  opt.retry_max = 10ms;
  LogWriter w([&] { return std::make_unique<PickyStore>(written, index); }, opt);
  ASSERT_TRUE(w.enqueue(sampleLog(kT0, "one")));
  ASSERT_TRUE(eventually([&] { return index.attempts.load() >= 1; }, 10s));
  std::this_thread::sleep_for(300ms);  // thirty times retry_max
  EXPECT_EQ(index.attempts.load(), 1);
  EXPECT_TRUE(w.drain(10s));
  EXPECT_EQ(written.load(), 1);
}

TEST(LogWriter, ARecordTheDatabaseRefusesIsSetAsideNotTheWholeBatch) {
  std::atomic<int> written{0};
  LogWriter::Options opt;
  opt.batch_size = 10;
  LogWriter w([&] { return std::make_unique<PickyStore>(written); }, opt);
  for (int i = 0; i < 25; ++i) w.enqueue(sampleLog(kT0, i == 13 ? "poison" : "ok"));
  EXPECT_TRUE(w.drain(10s));
  auto s = w.stats();
  EXPECT_EQ(s.written, 24u);
  EXPECT_EQ(s.rejected, 1u);
  EXPECT_EQ(written.load(), 24);
}

TEST(LogWriter, BoundsQueuedBytesToo) {
  LogWriter::Options opt;
  opt.max_queue_bytes = 64 * 1024;
  opt.flush_interval = 10s;  // nothing leaves the queue during the test
  opt.batch_size = 1000;
  LogWriter w([]() -> std::unique_ptr<Store> { throw StoreError(StoreErrc::Unavailable, "down"); }, opt);
  LogRecord big = sampleLog(kT0, "big");
  big.request_body = std::string(20 * 1024, 'x');
  int accepted = 0;
  for (int i = 0; i < 10; ++i) accepted += w.enqueue(LogRecord(big));
  EXPECT_EQ(accepted, 3);
  EXPECT_EQ(w.stats().dropped, 7u);
  EXPECT_FALSE(w.drain(0ms));
  EXPECT_EQ(w.stats().abandoned, 3u);
}

}  // namespace log_writer_test
}  // namespace
}  // namespace sluice::store
