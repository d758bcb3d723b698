// RedisCache: the response cache in Redis, shared by every gateway instance: one string per
// entry at "sluice:cache:<key hex>" holding serializeEntry() bytes, written with SET ... PX ttl
// (Redis expires it), read with GET. Uses cluster::RedisAsyncClient (per-io_context
// connections, a deadline on every command). When Redis is down or slow a lookup is a miss and a
// write is dropped, both counted in `errors`; the request goes on. Thread-safe.
#pragma once
#include <memory>
#include <string>

#include "cache/ResponseCache.hpp"
#include "cluster/Redis.hpp"

namespace sluice::cache {

inline constexpr std::string_view kRedisKeyPrefix = "sluice:cache:";

struct RedisCacheOptions {
  cluster::RedisEndpoint endpoint;
  std::chrono::milliseconds timeout{250};
  std::string prefix = std::string(kRedisKeyPrefix);
  std::size_t max_entry_bytes = 1u << 20;
};

class RedisCache final : public ResponseCache {
 public:
  explicit RedisCache(RedisCacheOptions opts);
  ~RedisCache() override;

  boost::asio::awaitable<std::shared_ptr<const Entry>> get(const CacheKey& key) override;
  boost::asio::awaitable<void> put(const CacheKey& key, const std::shared_ptr<const Entry>& entry,
                                   std::chrono::milliseconds ttl) override;
  CacheStats stats() const override;
  const char* backendName() const override { return "redis"; }

 private:
  RedisCacheOptions opts_;
  std::unique_ptr<cluster::RedisAsyncClient> client_;
  StatCounters counters_;
};

}  // namespace sluice::cache
