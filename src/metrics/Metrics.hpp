// Metrics: process-wide counters and histograms, rendered as Prometheus text on /metrics.
// Thread-safe: one short mutex hold per finished request (never per chunk).
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace sluice::metrics {

class Histogram {
 public:
  static constexpr std::array<double, 15> kBoundsMs = {1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000};
  void observe(double ms);
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::array<std::uint64_t, kBoundsMs.size() + 1> counts_{};
  double sum_ms_ = 0;
  std::uint64_t count_ = 0;
};

struct RequestSample {
  std::string channel;  // "" when no channel was reached
  std::string model;
  int status = 0;
  double ttfb_ms = -1;  // -1: no body byte sent
  double duration_ms = 0;
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  int attempts = 0;
};

// Counters of the protect-and-save stages (redaction, screening, guardrail, cache).
class SafetyCounters {
 public:
  void redacted(const std::string& rule, const char* action, std::uint64_t n = 1);
  void screened(const char* outcome);  // "flagged_log" | "flagged_warn" | "blocked" | "deny_hit"
  void guardrail(const char* verdict);  // "allow" | "warn" | "block" | "failed" | "timeout"
  std::atomic<std::uint64_t> restored{0};
  std::atomic<std::uint64_t> tampered{0};
  std::atomic<std::uint64_t> screened_total{0};
  std::atomic<std::uint64_t> cache_saved_micro_usd{0};
  void render(std::string& out) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> redactions_;
  std::map<std::string, std::uint64_t> screen_;
  std::map<std::string, std::uint64_t> guardrail_;
};

class Registry {
 public:
  SafetyCounters safety;
  void record(const RequestSample& s);
  void retry(const std::string& channel, const std::string& reason);
  // A request moved on from model `from` to its fallback `to` (routing.fallbacks: bounded names).
  void fallback(const std::string& from, const std::string& to);
  // A hedged request (routing.hedge_after): the hedge on `channel` started, then won (its answer
  // was given), lost (the first attempt answered first) or failed (neither was first to answer).
  void hedge(const std::string& channel, const char* result);
  void logDropped(std::uint64_t n = 1) { log_dropped_.fetch_add(n, std::memory_order_relaxed); }

  std::atomic<std::int64_t> active_requests{0};
  std::atomic<std::int64_t> active_streams{0};
  std::atomic<std::uint64_t> reloads_ok{0};
  std::atomic<std::uint64_t> reloads_failed{0};

  // `extra` appends gauges only the caller knows (key states, connections).
  std::string render(const std::function<void(std::string&)>& extra) const;

 private:
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, std::uint64_t> requests_;
  std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> tokens_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> retries_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> fallbacks_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> hedges_;
  std::map<std::string, Histogram> ttfb_;
  std::map<std::string, Histogram> duration_;
  std::atomic<std::uint64_t> log_dropped_{0};
};

Registry& registry();

// Escapes a Prometheus label value.
std::string labelValue(const std::string& v);

}  // namespace sluice::metrics
