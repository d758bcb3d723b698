// ResponseCache: where cache entries live: in this process (MemoryCache, the default) or in
// Redis (RedisCache, when `redis.url` is set, so every instance shares one cache). Thread-safe;
// one instance per gateway, shared by the workers.
//
// Both operations are coroutines so the relay treats the backends alike. A backend never fails a
// request: an unreachable Redis, a corrupt or an oversized entry is a miss (counted in `errors`
// or `rejected`), and put() gives up silently. Arguments are read before the first suspension
// (and by reference, so a co_await holds no temporaries: GCC 12; pass named locals). To write
// after the answer went out without waiting, co_spawn a lambda that owns copies.
#pragma once
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "cache/CacheKey.hpp"
#include "cache/Entry.hpp"

namespace sluice::cache {

struct CacheStats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;     // includes expired entries and backend errors
  std::uint64_t writes = 0;
  std::uint64_t evictions = 0;  // pushed out by the byte bound (memory)
  std::uint64_t expired = 0;    // found past their TTL (memory; Redis expires them itself)
  std::uint64_t rejected = 0;   // not stored: over the entry bound
  std::uint64_t errors = 0;     // backend failures (Redis down, timeouts, corrupt values)
  std::uint64_t bytes = 0;      // held now (memory)
  std::uint64_t entries = 0;    // held now (memory)
};

class ResponseCache {
 public:
  virtual ~ResponseCache() = default;
  // The entry, or null on a miss.
  virtual boost::asio::awaitable<std::shared_ptr<const Entry>> get(const CacheKey& key) = 0;
  // Stores (replaces) the entry for `ttl`.
  virtual boost::asio::awaitable<void> put(const CacheKey& key, const std::shared_ptr<const Entry>& entry,
                                           std::chrono::milliseconds ttl) = 0;
  virtual CacheStats stats() const = 0;
  virtual const char* backendName() const = 0;  // "memory" | "redis"
};

// Counters every backend keeps.
struct StatCounters {
  std::atomic<std::uint64_t> hits{0}, misses{0}, writes{0}, evictions{0}, expired{0}, rejected{0}, errors{0};
  void fill(CacheStats& s) const {
    s.hits = hits.load(std::memory_order_relaxed);
    s.misses = misses.load(std::memory_order_relaxed);
    s.writes = writes.load(std::memory_order_relaxed);
    s.evictions = evictions.load(std::memory_order_relaxed);
    s.expired = expired.load(std::memory_order_relaxed);
    s.rejected = rejected.load(std::memory_order_relaxed);
    s.errors = errors.load(std::memory_order_relaxed);
  }
  static void bump(std::atomic<std::uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }
};

struct CacheBackendOptions {
  std::string redis_url;                      // empty: in memory
  std::size_t memory_max_bytes = 256u << 20;  // memory: the whole cache's bound
  std::size_t max_entry_bytes = 1u << 20;     // either: bigger entries are not stored
  std::chrono::milliseconds redis_timeout{250};
};
// The backend `opts` asks for. Throws std::invalid_argument for a bad redis_url (config time).
std::unique_ptr<ResponseCache> makeResponseCache(const CacheBackendOptions& opts);

}  // namespace sluice::cache
