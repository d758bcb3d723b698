// ResponseStoreService: the stored responses (store.responses) for the request path. The
// database work runs on a thread of its own with its own Store connection (opened, and the
// schema migrated, on first use; reopened after a failure), so no worker ever waits on the
// database; the awaiting coroutine resumes on its own worker. The same thread sweeps expired
// rows in chunks (the request-log writer's retention runs only with request logs on; this
// sweep runs whenever responses are stored).
// Thread-safety: the awaitables may be started from any worker.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "store/Store.hpp"

namespace sluice::gateway {

class ResponseStoreService {
 public:
  struct Options {
    std::chrono::milliseconds sweep_interval{std::chrono::minutes(10)};
    std::int64_t sweep_rows = 5'000;  // per step; a full step is followed by another soon after
  };
  ResponseStoreService(std::string url, Options o);
  explicit ResponseStoreService(std::string url) : ResponseStoreService(std::move(url), Options{}) {}
  ~ResponseStoreService();
  ResponseStoreService(const ResponseStoreService&) = delete;
  ResponseStoreService& operator=(const ResponseStoreService&) = delete;

  // What a read or delete found. `available` false: the database could not be asked.
  struct Lookup {
    bool available = true;
    std::optional<store::StoredResponse> row;
  };
  boost::asio::awaitable<Lookup> get(std::int64_t owner, const std::string& id);
  // available false: could not be asked; row set (with only its id): deleted.
  boost::asio::awaitable<Lookup> remove(std::int64_t owner, const std::string& id);
  // False: not written (the reason is logged); the answer it belongs to goes out regardless.
  boost::asio::awaitable<bool> put(const store::StoredResponse& row);

  // Starts the periodic sweep of expired rows (once).
  void startSweeping();

  // For /metrics and tests.
  std::uint64_t stored() const { return stored_.load(std::memory_order_relaxed); }
  std::uint64_t expired() const { return expired_.load(std::memory_order_relaxed); }

 private:
  store::Store& db();  // the pool thread only
  void sweepStep();
  void armSweep(std::chrono::milliseconds after);

  std::string url_;
  Options o_;
  std::unique_ptr<store::Store> store_;  // the pool thread only
  boost::asio::thread_pool pool_{1};
  std::unique_ptr<boost::asio::steady_timer> sweep_timer_;
  std::atomic<bool> sweeping_{false};
  std::atomic<std::uint64_t> stored_{0}, expired_{0};
};

}  // namespace sluice::gateway
