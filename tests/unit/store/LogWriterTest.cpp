// LogWriter against real databases: drains at shutdown, flushes on its timer, and rides out
// an outage (PostgreSQL cut off by a TCP gate; SQLite held by another writer's exclusive lock).
#include "store/LogWriter.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "StoreTestSupport.hpp"
#include "store/SqlConnection.hpp"

namespace sluice::store {
namespace {

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
    return reader_->usage(UsageQuery{0, kT0 * 2, false, false, false, false, {}, {}, {}}).at(0).requests;
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

INSTANTIATE_TEST_SUITE_P(Backends, LogWriterTest, ::testing::Values(Backend::Sqlite, Backend::Postgres),
                         testing::backendName);

// A store that refuses one particular record as bad data: the rest of its batch still lands.
class PickyStore final : public Store {
 public:
  explicit PickyStore(std::atomic<int>& written) : written_(written) {}
  void migrate() override {}
  int schemaVersion() override { return 0; }
  void insertLogs(std::span<const LogRecord> records) override {
    for (auto& r : records)
      if (r.request_id == "poison") throw StoreError(StoreErrc::InvalidData, "refused");
    written_ += static_cast<int>(records.size());
  }
  LogPage listLogs(const LogQuery&) override { return {}; }
  std::vector<UsageRow> usage(const UsageQuery&) override { return {}; }
  std::int64_t deleteLogsBefore(std::int64_t) override { return 0; }
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
};

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

}  // namespace
}  // namespace sluice::store
