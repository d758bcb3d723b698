// Arithmetic behind Store::stats, apart from any database so it can be tested alone.
// Pure functions; thread-safe.
#pragma once
#include <cstdint>
#include <vector>

#include "store/Store.hpp"

namespace sluice::store {

// Nearest-rank p50, p95 and p99 of `values` (sorted in place): the smallest value with at least
// p% of the values at or below it. No values: every percentile empty.
Percentiles percentilesOf(std::vector<std::int64_t>& values);

// How many buckets of step_ms, aligned to multiples of step_ms since the epoch, overlap
// [from_ms, to_ms). 0 when the window is empty; requires from_ms >= 0 and step_ms > 0.
std::int64_t statsBucketCount(std::int64_t from_ms, std::int64_t to_ms, std::int64_t step_ms);

// 1 when `requests` fit in `max_samples`, else the N of "read 1 row in N" that brings them
// under it.
std::int64_t statsSampleStride(std::int64_t requests, std::size_t max_samples);

}  // namespace sluice::store
