// Tracer: the process's OpenTelemetry exporter. Requests hand their finished spans over
// (submit: a lock and a move, never a wait on the network) into a bounded queue; one background
// thread sends them in batches over OTLP/HTTP (JSON) to `telemetry.otlp_endpoint` + /v1/traces,
// with its own event loop and connection pool. A full queue drops the request's spans and a
// failed export drops its batch (after one retry when the collector says it is busy); both are
// counted in /metrics. At shutdown what is queued is sent, within the drain time given to stop().
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/Config.hpp"
#include "telemetry/Span.hpp"

namespace sluice::telemetry {

class Tracer {
 public:
  struct Options {
    std::size_t max_queue = 4096;               // spans waiting for the exporter
    std::size_t batch = 512;                    // spans per export
    std::chrono::milliseconds delay{1000};      // a batch leaves at most this long after its first span
    std::chrono::milliseconds timeout{10'000};  // one export's deadline
  };
  struct Stats {
    std::uint64_t exported = 0;        // spans the collector accepted
    std::uint64_t dropped_full = 0;    // spans dropped because the queue was full
    std::uint64_t dropped_failed = 0;  // spans of batches the collector did not take
    std::uint64_t exports_failed = 0;  // batches
    std::size_t queued = 0;
  };

  Tracer();
  explicit Tracer(Options o);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Control thread, at start and on every reload: where spans go and as what service. An empty
  // endpoint turns tracing off (nothing new is traced; what is queued is still sent). Throws
  // std::invalid_argument for an endpoint that is not an http(s) URL.
  void configure(const config::TelemetryConfig& t);
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // A finished request's spans (worker threads).
  void submit(std::vector<SpanRecord>&& spans);
  // Sends what is queued (at most `drain` long), then stops the thread. Idempotent.
  void stop(std::chrono::milliseconds drain);

  Stats stats() const;
  void renderMetrics(std::string& out) const;

 private:
  struct Target;
  struct Loop;
  void run();
  bool exportBatch(Loop& loop, const Target& target, const std::string& payload);

  Options opt_;
  std::atomic<bool> enabled_{false};
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<SpanRecord> queue_;
  std::shared_ptr<const Target> target_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point drain_until_{};
  std::thread thread_;
  std::atomic<std::uint64_t> exported_{0}, dropped_full_{0}, dropped_failed_{0}, exports_failed_{0};
  std::atomic<std::int64_t> last_warn_ms_{0};
};

}  // namespace sluice::telemetry
