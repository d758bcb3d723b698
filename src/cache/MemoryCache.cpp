#include "cache/MemoryCache.hpp"

#include <algorithm>
#include <boost/asio/this_coro.hpp>

namespace sluice::cache {

namespace {
constexpr std::size_t kNodeOverhead = 96;  // list node, index slot, control block
}

MemoryCache::MemoryCache(MemoryCacheOptions opts) : opts_(std::move(opts)) {
  opts_.shards = std::max<std::size_t>(1, opts_.shards);
  shard_cap_ = std::max<std::size_t>(1, opts_.max_bytes / opts_.shards);
  shards_.reserve(opts_.shards);
  for (std::size_t i = 0; i < opts_.shards; ++i) shards_.push_back(std::make_unique<Shard>());
}

MemoryCache::~MemoryCache() = default;

std::int64_t MemoryCache::now() const {
  if (opts_.now_ms) return opts_.now_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

MemoryCache::Shard& MemoryCache::shardFor(const CacheKey& key) {
  // The key is a hash already: its leading hex digits are uniform.
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < key.hex.size() && i < 12; ++i) {
    char c = key.hex[i];
    h = h * 16 + static_cast<std::uint64_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return *shards_[h % shards_.size()];
}

void MemoryCache::removeLocked(Shard& s, std::list<Node>::iterator it) {
  s.bytes -= it->bytes;
  bytes_.fetch_sub(it->bytes, std::memory_order_relaxed);
  entries_.fetch_sub(1, std::memory_order_relaxed);
  s.index.erase(std::string_view(it->key));
  s.lru.erase(it);
}

std::shared_ptr<const Entry> MemoryCache::find(const CacheKey& key) {
  auto& s = shardFor(key);
  std::shared_ptr<const Entry> out;
  {
    std::lock_guard lock(s.mu);
    auto it = s.index.find(std::string_view(key.hex));
    if (it != s.index.end()) {
      if (it->second->expires_ms <= now()) {
        removeLocked(s, it->second);
        StatCounters::bump(counters_.expired);
      } else {
        s.lru.splice(s.lru.begin(), s.lru, it->second);
        out = it->second->entry;
      }
    }
  }
  StatCounters::bump(out ? counters_.hits : counters_.misses);
  return out;
}

bool MemoryCache::insert(const CacheKey& key, std::shared_ptr<const Entry> entry, std::chrono::milliseconds ttl) {
  if (!entry || ttl.count() <= 0) return false;
  std::size_t size = entry->byteSize();
  std::size_t charged = size + key.hex.size() + kNodeOverhead;
  if (size > opts_.max_entry_bytes || charged > shard_cap_) {
    StatCounters::bump(counters_.rejected);
    return false;
  }
  auto& s = shardFor(key);
  const std::int64_t t = now();
  {
    std::lock_guard lock(s.mu);
    if (auto it = s.index.find(std::string_view(key.hex)); it != s.index.end()) removeLocked(s, it->second);
    s.lru.push_front(Node{key.hex, std::move(entry), charged, t + ttl.count()});
    s.index.emplace(std::string_view(s.lru.front().key), s.lru.begin());
    s.bytes += charged;
    bytes_.fetch_add(charged, std::memory_order_relaxed);
    entries_.fetch_add(1, std::memory_order_relaxed);
    while (s.bytes > shard_cap_) {
      auto victim = std::prev(s.lru.end());
      bool wasExpired = victim->expires_ms <= t;
      removeLocked(s, victim);
      StatCounters::bump(wasExpired ? counters_.expired : counters_.evictions);
    }
  }
  StatCounters::bump(counters_.writes);
  return true;
}

bool MemoryCache::erase(const CacheKey& key) {
  auto& s = shardFor(key);
  std::lock_guard lock(s.mu);
  auto it = s.index.find(std::string_view(key.hex));
  if (it == s.index.end()) return false;
  removeLocked(s, it->second);
  return true;
}

void MemoryCache::clear() {
  for (auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    while (!sp->lru.empty()) removeLocked(*sp, sp->lru.begin());
  }
}

boost::asio::awaitable<std::shared_ptr<const Entry>> MemoryCache::get(const CacheKey& key) {
  co_return find(key);
}

boost::asio::awaitable<void> MemoryCache::put(const CacheKey& key, const std::shared_ptr<const Entry>& entry,
                                              std::chrono::milliseconds ttl) {
  insert(key, entry, ttl);
  co_return;
}

CacheStats MemoryCache::stats() const {
  CacheStats s;
  counters_.fill(s);
  s.bytes = bytes_.load(std::memory_order_relaxed);
  s.entries = entries_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace sluice::cache
