// MemoryCache: the in-process response cache: an LRU split into shards (one mutex each, the
// shard picked by the key's hash) so workers rarely contend; bounded by bytes (each entry
// charged its Entry::byteSize() plus the key), entries expire after their TTL (checked on
// lookup; expired ones also leave first under pressure). Thread-safe.
#pragma once
#include <functional>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cache/ResponseCache.hpp"

namespace sluice::cache {

struct MemoryCacheOptions {
  std::size_t max_bytes = 256u << 20;
  std::size_t shards = 16;
  std::size_t max_entry_bytes = 1u << 20;
  std::function<std::int64_t()> now_ms;  // monotonic ms; empty: steady_clock (tests inject one)
};

class MemoryCache final : public ResponseCache {
 public:
  explicit MemoryCache(MemoryCacheOptions opts = {});
  ~MemoryCache() override;

  // The synchronous core (the coroutines call these).
  std::shared_ptr<const Entry> find(const CacheKey& key);
  // False when the entry is over the entry bound or alone larger than a shard (not stored).
  bool insert(const CacheKey& key, std::shared_ptr<const Entry> entry, std::chrono::milliseconds ttl);
  bool erase(const CacheKey& key);
  void clear();

  boost::asio::awaitable<std::shared_ptr<const Entry>> get(const CacheKey& key) override;
  boost::asio::awaitable<void> put(const CacheKey& key, const std::shared_ptr<const Entry>& entry,
                                   std::chrono::milliseconds ttl) override;
  CacheStats stats() const override;
  const char* backendName() const override { return "memory"; }

 private:
  struct Node {
    std::string key;
    std::shared_ptr<const Entry> entry;
    std::size_t bytes;
    std::int64_t expires_ms;
  };
  struct Shard {
    std::mutex mu;
    std::list<Node> lru;  // front: most recently used
    std::unordered_map<std::string_view, std::list<Node>::iterator> index;  // views into Node::key
    std::size_t bytes = 0;
  };
  Shard& shardFor(const CacheKey& key);
  void removeLocked(Shard& s, std::list<Node>::iterator it);
  std::int64_t now() const;

  MemoryCacheOptions opts_;
  std::size_t shard_cap_;
  std::vector<std::unique_ptr<Shard>> shards_;
  StatCounters counters_;
  std::atomic<std::uint64_t> bytes_{0}, entries_{0};
};

}  // namespace sluice::cache
