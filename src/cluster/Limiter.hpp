// Limiter: rate limits (RPM, TPM), concurrency caps and USD budgets for one "subject" (a
// virtual key, a channel, an upstream key). Local counters by default; with a Redis URL the
// counters live in Redis so every instance sees the same numbers, and when Redis cannot be
// reached the limiter falls back to its local counters (and says so in metrics and the log)
// until Redis answers again.
//
// Semantics (the same locally and in Redis):
//  - RPM and TPM are sliding 60-second windows: a request is admitted when the requests (or
//    tokens) charged in the last 60 s plus this one stay within the limit. Exact, not a
//    fixed-window approximation: with rpm = 10, no 60-s span ever admits 11.
//  - max_concurrent counts requests between acquire() and settle(); a slot whose settle never
//    comes (a crashed instance) expires after Limiter::Options::lease.
//  - Budgets: spend is counted per UTC day, per UTC month and in total. A request is admitted
//    when committed spend + the estimated cost of requests in flight + its own estimate stays
//    within every budget, or, past that, when nothing else is in flight for the subject and
//    committed spend is still below the budget: so concurrent requests overshoot a budget by at
//    most one request (given estimates that do not undershoot).
//  - acquire() is all-or-nothing: a refused request charges nothing.
// Thread-safety: every method may be called from any thread; acquire/settle are coroutines that
// resume on the caller's executor (Redis I/O uses a connection pool per calling thread: an
// io_context that calls them is run by one thread, as the gateway's workers are).
#pragma once
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace sluice::cluster {

struct LimitSpec {  // 0 / nullopt: no such limit
  std::int64_t rpm = 0;
  std::int64_t tpm = 0;
  std::int64_t max_concurrent = 0;
  std::optional<double> budget_daily_usd;
  std::optional<double> budget_monthly_usd;
  std::optional<double> budget_total_usd;
  bool any() const {
    return rpm > 0 || tpm > 0 || max_concurrent > 0 || budget_daily_usd || budget_monthly_usd || budget_total_usd;
  }
};

struct Subject {
  std::string id;  // stable, unique, safe to log: "vk:12", "ch:openai", "uk:openai:k1a2b3c4d"
  LimitSpec spec;
};

// What one request charges up front.
struct Charge {
  std::string request_id;    // unique per request (the concurrency slot and reservation name)
  std::int64_t tokens = 0;   // estimated tokens, charged to TPM now
  double cost_usd = 0;       // estimated cost, reserved against budgets until settle()
};

enum class LimitKind { None, Requests, Tokens, Concurrency, BudgetDaily, BudgetMonthly, BudgetTotal };
const char* limitKindName(LimitKind k);  // "none", "requests", "tokens", "concurrency", "budget_daily", ...

struct Decision {
  bool allowed = true;
  LimitKind hit = LimitKind::None;  // the limit that refused (allowed == false)
  // When trying again can succeed; 0 for a total budget (it never resets).
  std::int64_t retry_after_ms = 0;
  // For the x-ratelimit-* response headers; -1 when that limit is not set. remaining_* is after
  // this request's own charge; reset_* is when the window frees enough for one more request
  // (requests) or for the tokens to be back at the limit (tokens).
  std::int64_t limit_requests = -1, remaining_requests = -1, reset_requests_ms = 0;
  std::int64_t limit_tokens = -1, remaining_tokens = -1, reset_tokens_ms = 0;
};

// Spend already known from the store (the request log), for a subject's budget counters.
// Counters never go down: a seed lower than what is counted is ignored.
struct SpendSeed {
  std::int64_t day_index = 0;    // days since 1970-01-01 (UTC) the day figure belongs to
  std::int64_t month_index = 0;  // (year - 1970) * 12 + month - 1, the month figure's month
  double day_usd = 0;
  double month_usd = 0;
  double total_usd = 0;
};

struct Spend {
  double day_usd = 0, month_usd = 0, total_usd = 0;
  double reserved_usd = 0;  // estimates of requests in flight
};

class Limiter {
 public:
  struct Options {
    std::string redis_url;  // "" = local only; "redis://[:password@]host:port[/db]"
    std::chrono::milliseconds lease{std::chrono::minutes(11)};  // concurrency slot / reservation expiry
    std::chrono::milliseconds redis_timeout{200};  // per Redis command before falling back
    std::chrono::milliseconds redis_retry{1000};   // after a failure, how long to stay local before trying again
    // A background PING (on a connection of its own, so a slow answer holds no other caller;
    // within redis_timeout, as any command) so sluice_redis_up follows Redis whatever the
    // traffic, and limits go back to Redis as soon as it answers; 0 turns it off.
    std::chrono::milliseconds probe_interval{1000};
    std::string key_prefix = "sluice:";
    // The RPM / TPM window. Always 60 s in service; tests shorten it to watch entries leave.
    std::chrono::milliseconds window{std::chrono::seconds(60)};
  };
  explicit Limiter(Options options);
  ~Limiter();
  Limiter(const Limiter&) = delete;
  Limiter& operator=(const Limiter&) = delete;

  // Charges the request to the subject if every limit of subject.spec admits it. A subject
  // whose spec has no limit is admitted without any I/O.
  boost::asio::awaitable<Decision> acquire(const Subject& subject, const Charge& charge);
  // Ends what acquire() admitted (exactly once per admitted acquire): frees the concurrency
  // slot and the budget reservation, corrects the TPM window by actual_tokens - charge.tokens,
  // and commits actual_cost_usd to the spend counters.
  boost::asio::awaitable<void> settle(const Subject& subject, const Charge& charge, std::int64_t actual_tokens,
                                      double actual_cost_usd);

  void seedSpend(const std::string& subject_id, const SpendSeed& seed);  // blocking; control thread
  Spend spend(const std::string& subject_id);                             // blocking; control thread / admin

  bool redisConfigured() const;
  bool redisUp() const;  // false while falling back to local counters
  // Prometheus text: sluice_redis_up, sluice_limiter_fallback_total, sluice_limiter_refused_total{limit}.
  void renderMetrics(std::string& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// UTC day and month indexes of a Unix time in ms (for SpendSeed and the spend counters).
std::int64_t dayIndex(std::int64_t unix_ms);
std::int64_t monthIndex(std::int64_t unix_ms);
std::int64_t dayStartMs(std::int64_t day_index);
std::int64_t monthStartMs(std::int64_t month_index);

}  // namespace sluice::cluster
