// StoreProbe: whether the store's database answers right now, for the sluice_store_up gauge.
// A thread of its own runs a trivial query on a connection of its own every `interval`, so the
// gauge is true whatever the traffic (no request has to fail first) and neither a worker nor
// the log writer ever waits on a probe. A probe that hangs (a server that stopped answering)
// counts as down once the last success is older than `stale`.
// Thread-safety: up() and renderMetrics() from any thread; the probe runs on its own thread.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "store/SqlConnection.hpp"

namespace sluice::store {

class StoreProbe {
 public:
  // Called on the probe thread whenever it needs a connection; may throw (that is "down").
  using Connect = std::function<std::unique_ptr<SqlConnection>()>;
  struct Options {
    std::chrono::milliseconds interval{1000};
    std::chrono::milliseconds stale{2000};  // no success for this long: down
  };

  StoreProbe(Connect connect, Options options);
  StoreProbe(const std::string& url, Options options);  // openSqlConnection(url)
  explicit StoreProbe(const std::string& url) : StoreProbe(url, Options{}) {}
  ~StoreProbe();
  StoreProbe(const StoreProbe&) = delete;
  StoreProbe& operator=(const StoreProbe&) = delete;

  bool up() const;
  // Prometheus text: sluice_store_up.
  void renderMetrics(std::string& out) const;

 private:
  void run();

  Connect connect_;
  Options options_;
  std::atomic<bool> ok_{false};               // the last probe succeeded
  std::atomic<std::int64_t> last_ok_ms_{0};   // steady clock, when it last did
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // under mu_
  std::thread thread_;     // last: started once everything above exists
};

}  // namespace sluice::store
