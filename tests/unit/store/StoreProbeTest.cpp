// StoreProbe: sluice_store_up follows the database with no traffic, on SQLite and on a real
// PostgreSQL reached through a TCP gate that can cut it off; a probe that hangs counts as down.
#include "store/StoreProbe.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "StoreTestSupport.hpp"

namespace sluice::store {
namespace {
namespace store_probe_test {

using namespace std::chrono_literals;
using testing::Backend;

constexpr StoreProbe::Options kFast{50ms, 300ms};

// Polls with a generous deadline: the test asserts what happens, not how fast.
bool eventually(const StoreProbe& p, bool want) {
  for (int i = 0; i < 600 && p.up() != want; ++i) std::this_thread::sleep_for(50ms);
  return p.up() == want;
}

TEST(StoreProbe, SqliteIsUp) {
  testing::TestDatabase db(Backend::Sqlite);
  StoreProbe probe(db.url(), kFast);
  ASSERT_TRUE(eventually(probe, true));
  std::string m;
  probe.renderMetrics(m);
  EXPECT_NE(m.find("# TYPE sluice_store_up gauge\nsluice_store_up 1\n"), std::string::npos) << m;
}

TEST(StoreProbe, AnUnopenableDatabaseIsDown) {
  // Down from the start proves nothing: the probe must have tried (twice) and still say down.
  std::atomic<int> tries{0};
  StoreProbe probe(
      [&] {
        ++tries;
        return openSqlConnection("sqlite:///nonexistent-dir-for-sluice/x.db");
      },
      kFast);
  for (int i = 0; i < 600 && tries < 2; ++i) std::this_thread::sleep_for(50ms);
  ASSERT_GE(tries.load(), 2);
  EXPECT_FALSE(probe.up());
  std::string m;
  probe.renderMetrics(m);
  EXPECT_NE(m.find("sluice_store_up 0\n"), std::string::npos) << m;
}

TEST(StoreProbe, PostgresGoingAwayAndComingBackWithoutTraffic) {
  testing::requireBackend(Backend::Postgres);
  if (IsSkipped() || HasFatalFailure()) return;
  testing::TestDatabase db(Backend::Postgres);
  testing::TcpGate gate(db.serverHost(), db.serverPort());
  StoreProbe probe(db.urlVia(gate.port()), kFast);
  ASSERT_TRUE(eventually(probe, true));
  gate.close();
  ASSERT_TRUE(eventually(probe, false)) << "the connection was cut and no reconnect succeeds";
  gate.open();
  ASSERT_TRUE(eventually(probe, true)) << "the probe reconnects by itself";
}

// A connection whose queries fail, or hang, on demand.
class FakeConnection final : public SqlConnection {
 public:
  struct State {
    std::atomic<bool> fail{false};
    std::atomic<bool> hang{false};
  };
  explicit FakeConnection(State& s) : s_(s) {}
  Dialect dialect() const override { return Dialect::Postgres; }
  void execScript(const std::string&) override {}
  std::unique_ptr<SqlRows> query(const std::string&, std::span<const SqlParam>) override {
    while (s_.hang) std::this_thread::sleep_for(5ms);
    if (s_.fail) throw StoreError(StoreErrc::Unavailable, "fake: gone");
    return std::make_unique<OneRow>();
  }
  std::int64_t execute(const std::string&, std::span<const SqlParam>) override { return 0; }
  void beginWrite() override {}
  std::function<void()> canceller() override {
    return [] {};
  }

 private:
  struct OneRow final : SqlRows {
    bool done = false;
    bool next() override { return !std::exchange(done, true); }
    bool isNull(int) override { return false; }
    std::int64_t getInt(int) override { return 1; }
    double getReal(int) override { return 1; }
    std::string getText(int) override { return "1"; }
    std::string getBlob(int) override { return "1"; }
    bool getBool(int) override { return true; }
  };
  State& s_;
};

TEST(StoreProbe, AFailingQueryIsDownAndReconnects) {
  FakeConnection::State state;
  std::atomic<int> connects{0};
  StoreProbe probe(
      [&] {
        ++connects;
        return std::make_unique<FakeConnection>(state);
      },
      kFast);
  ASSERT_TRUE(eventually(probe, true));
  state.fail = true;
  ASSERT_TRUE(eventually(probe, false));
  const int before = connects.load();
  state.fail = false;
  ASSERT_TRUE(eventually(probe, true));
  EXPECT_GT(connects.load(), before) << "a failed connection is dropped and opened anew";
}

TEST(StoreProbe, AHangingProbeCountsAsDown) {
  FakeConnection::State state;
  StoreProbe probe([&] { return std::make_unique<FakeConnection>(state); }, kFast);
  ASSERT_TRUE(eventually(probe, true));
  state.hang = true;
  EXPECT_TRUE(eventually(probe, false)) << "no answer for longer than `stale`";
  state.hang = false;  // lets the probe thread finish, so the destructor can join it
  EXPECT_TRUE(eventually(probe, true));
}

}  // namespace store_probe_test
}  // namespace
}  // namespace sluice::store
