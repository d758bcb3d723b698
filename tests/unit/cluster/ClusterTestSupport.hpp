// Test support for the cluster state: the Redis server of tests/scripts/with-redis.sh, and
// private redis-server processes a test can kill and bring back.
#pragma once
#include <gtest/gtest.h>
#include <sys/types.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <string>

namespace sluice::cluster::testing {

// SLUICE_TEST_REDIS_URL, or "" when the suite runs without tests/scripts/with-redis.sh.
std::string sharedRedisUrl();
// Without SLUICE_TEST_REDIS_URL: fails the test (never skips: tests/run.sh starts Redis).
// Call from SetUp() or the test body and return if the test failed.
void requireRedis();
// A key prefix no other test (or earlier run against the same server) uses.
std::string uniquePrefix();
// A 127.0.0.1 port nothing listens on (bound, read, released).
int freePort();

// A redis-server of the test's own on 127.0.0.1:port, without persistence.
class RedisProcess {
 public:
  RedisProcess();  // picks a free port; does not start
  ~RedisProcess();
  RedisProcess(const RedisProcess&) = delete;
  RedisProcess& operator=(const RedisProcess&) = delete;
  // Starts the server and waits until it answers; false (with a test failure) if it does not.
  bool start();
  void kill();  // SIGKILL: the clients see the server vanish
  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_;
  pid_t pid_ = -1;
};

template <class T>
T runOn(boost::asio::io_context& ioc, boost::asio::awaitable<T> a) {
  auto f = boost::asio::co_spawn(ioc, std::move(a), boost::asio::use_future);
  ioc.restart();
  ioc.run();
  return f.get();
}

}  // namespace sluice::cluster::testing
