// StatsWindow: what GET /admin/api/stats was asked for (since_ms, until_ms, step_s), checked
// and with its defaults filled in, and the JSON the endpoint answers with.
// Pure functions; thread-safe.
#pragma once
#include <boost/json/object.hpp>

#include <cstdint>
#include <map>
#include <string>

#include "store/Store.hpp"

namespace sluice::admin {

inline constexpr std::int64_t kStatsDefaultWindowMs = 3'600'000;      // the last hour
inline constexpr std::int64_t kStatsMaxWindowMs = 31LL * 86'400'000;  // 31 days
inline constexpr std::int64_t kStatsAutoBuckets = 120;                // most buckets of a default step
inline constexpr std::int64_t kStatsMaxBuckets = 1500;                // most buckets of a step asked for

struct StatsWindow {
  std::int64_t since_ms = 0;
  std::int64_t until_ms = 0;
  std::int64_t step_s = 0;
};

// Reads since_ms, until_ms (Unix ms, [since, until)) and step_s (seconds) from the query.
// Defaults: until = now, since = until - 1 hour, step = the smallest of 1 s, 2 s, 5 s, ... 1 day
// that makes at most 120 buckets. Throws FieldError naming the parameter to fix.
StatsWindow parseStatsWindow(const std::map<std::string, std::string>& query, std::int64_t now_ms);

// The smallest of the round steps (seconds) giving at most `max_buckets` aligned buckets.
std::int64_t autoStatsStepSeconds(std::int64_t since_ms, std::int64_t until_ms, std::int64_t max_buckets);

// The response body of GET /admin/api/stats.
boost::json::object statsJson(const StatsWindow& window, const store::StatsResult& stats);

}  // namespace sluice::admin
