#include "store/Stats.hpp"

#include <algorithm>

namespace sluice::store {

Percentiles percentilesOf(std::vector<std::int64_t>& values) {
  Percentiles out;
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  const auto n = static_cast<std::int64_t>(values.size());
  auto rank = [&](std::int64_t p) {
    const std::int64_t r = std::max<std::int64_t>(1, (p * n + 99) / 100);  // ceil(p/100 * n)
    return values[static_cast<std::size_t>(r - 1)];
  };
  out.p50 = rank(50);
  out.p95 = rank(95);
  out.p99 = rank(99);
  return out;
}

std::int64_t statsBucketCount(std::int64_t from_ms, std::int64_t to_ms, std::int64_t step_ms) {
  if (to_ms <= from_ms || step_ms <= 0 || from_ms < 0) return 0;
  return (to_ms - 1) / step_ms - from_ms / step_ms + 1;
}

std::int64_t statsSampleStride(std::int64_t requests, std::size_t max_samples) {
  const auto cap = static_cast<std::int64_t>(std::max<std::size_t>(max_samples, 1));
  if (requests <= cap) return 1;
  return (requests + cap - 1) / cap;
}

}  // namespace sluice::store
