// Test support for the store: a fresh database per test for each backend, and a TCP gate
// that can cut a client off from PostgreSQL and let it back in.
//   SQLite: a file in a new temp dir, removed afterwards.
//   PostgreSQL: a new schema in the database at SLUICE_TEST_POSTGRES_URL (set by
//   tests/scripts/with-postgres.sh), dropped afterwards. Unset: the test fails, unless
//   SLUICE_TEST_NO_POSTGRES=1 says to skip PostgreSQL on purpose.
#pragma once
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "store/Store.hpp"

namespace sluice::store::testing {

enum class Backend { Sqlite, Postgres };
std::string backendName(const ::testing::TestParamInfo<Backend>& info);
inline void PrintTo(Backend b, std::ostream* os) {
  *os << (b == Backend::Sqlite ? "Sqlite" : "Postgres");
}
// For PostgreSQL without SLUICE_TEST_POSTGRES_URL: fails the test, or skips it loudly when
// SLUICE_TEST_NO_POSTGRES=1. Call from SetUp() and return if the test failed or skipped.
void requireBackend(Backend backend);

class TestDatabase {
 public:
  // Creates an empty database. For PostgreSQL, call requireBackend() first.
  explicit TestDatabase(Backend backend);
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  const std::string& url() const { return url_; }
  Backend backend() const { return backend_; }
  // The same database reached through `host:port` instead (PostgreSQL only).
  std::string urlVia(int port) const;
  // Where the PostgreSQL server listens (from SLUICE_TEST_POSTGRES_URL).
  std::string serverHost() const;
  int serverPort() const;

 private:
  Backend backend_;
  std::string url_;
  std::string dir_;     // SQLite
  std::string schema_;  // PostgreSQL
};

// Forwards 127.0.0.1:port() to a target. close() refuses new connections and cuts the open
// ones (the client sees the server vanish); open() accepts again on the same port.
class TcpGate {
 public:
  TcpGate(std::string target_host, int target_port);
  ~TcpGate();
  int port() const { return port_; }
  void close();
  void open();

 private:
  void loop();
  void request(char op);

  std::string target_host_;
  int target_port_;
  int port_ = 0;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::mutex mu_;
  std::atomic<int> acked_{0};
  int requested_ = 0;
  std::vector<std::pair<int, int>> pairs_;  // loop thread only
  std::thread thread_;
};

LogRecord sampleLog(std::int64_t time_ms, std::string request_id);

// Makes the database refuse (as bad data, not a transient error) any log row with this
// request_id, through a trigger: the way to make one row of a real batch fail.
void refuseLogsWithRequestId(const TestDatabase& db, const std::string& request_id);

}  // namespace sluice::store::testing
