#include "cache/RedisCache.hpp"

#include <spdlog/spdlog.h>

#include "cache/MemoryCache.hpp"

namespace sluice::cache {

RedisCache::RedisCache(RedisCacheOptions opts)
    : opts_(std::move(opts)), client_(std::make_unique<cluster::RedisAsyncClient>(opts_.endpoint, opts_.timeout)) {}

RedisCache::~RedisCache() = default;

boost::asio::awaitable<std::shared_ptr<const Entry>> RedisCache::get(const CacheKey& key) {
  std::vector<std::string> args{"GET", opts_.prefix + key.hex};
  cluster::RedisResult res = co_await client_->command(args);
  if (!res.ok() || res.reply.isError()) {
    StatCounters::bump(counters_.errors);
    StatCounters::bump(counters_.misses);
    spdlog::debug("cache: redis GET failed: {}", res.ok() ? res.reply.str : res.error);
    co_return nullptr;
  }
  if (res.reply.type != cluster::RedisReply::Type::String) {
    StatCounters::bump(counters_.misses);
    co_return nullptr;
  }
  auto parsed = parseEntry(res.reply.str);
  if (!parsed) {  // another version's or a damaged value: a miss; the next write replaces it
    StatCounters::bump(counters_.errors);
    StatCounters::bump(counters_.misses);
    co_return nullptr;
  }
  StatCounters::bump(counters_.hits);
  co_return std::make_shared<const Entry>(std::move(*parsed));
}

boost::asio::awaitable<void> RedisCache::put(const CacheKey& key, const std::shared_ptr<const Entry>& entry,
                                             std::chrono::milliseconds ttl) {
  if (!entry || ttl.count() <= 0) co_return;
  if (entry->byteSize() > opts_.max_entry_bytes) {
    StatCounters::bump(counters_.rejected);
    co_return;
  }
  std::vector<std::string> args{"SET", opts_.prefix + key.hex, serializeEntry(*entry), "PX",
                                std::to_string(ttl.count())};
  cluster::RedisResult res = co_await client_->command(args);
  if (!res.ok() || res.reply.isError()) {
    StatCounters::bump(counters_.errors);
    spdlog::debug("cache: redis SET failed: {}", res.ok() ? res.reply.str : res.error);
    co_return;
  }
  StatCounters::bump(counters_.writes);
}

CacheStats RedisCache::stats() const {
  CacheStats s;
  counters_.fill(s);
  return s;
}

std::unique_ptr<ResponseCache> makeResponseCache(const CacheBackendOptions& opts) {
  if (!opts.redis_url.empty()) {
    RedisCacheOptions ro;
    ro.endpoint = cluster::parseRedisUrl(opts.redis_url);
    ro.timeout = opts.redis_timeout;
    ro.max_entry_bytes = opts.max_entry_bytes;
    return std::make_unique<RedisCache>(std::move(ro));
  }
  MemoryCacheOptions mo;
  mo.max_bytes = opts.memory_max_bytes;
  mo.max_entry_bytes = opts.max_entry_bytes;
  return std::make_unique<MemoryCache>(std::move(mo));
}

}  // namespace sluice::cache
