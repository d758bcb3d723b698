#include "cache/MemoryCache.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <thread>

#include "cache/CacheKey.hpp"

namespace sluice::cache {
namespace {
namespace memory_cache_test {

using namespace std::chrono_literals;
using providers::Format;

CacheKey keyFor(std::string_view ns, int i) {
  std::string body = R"({"model":"m","messages":[{"role":"user","content":"q)" + std::to_string(i) + R"("}]})";
  return *makeCacheKey(Format::OpenAIChat, body, ns).key;
}

std::shared_ptr<const Entry> entryOf(std::string text) {
  Entry e;
  e.response.id = "id";
  e.response.model = "m";
  e.response.finish = providers::FinishReason::Stop;
  e.response.content.push_back(providers::Part::makeText(std::move(text)));
  e.pieces.emplace_back();
  return std::make_shared<const Entry>(std::move(e));
}

std::string textOf(const std::shared_ptr<const Entry>& e) { return e ? e->response.content.at(0).text : "<miss>"; }

TEST(MemoryCache, StoresAndFinds) {
  MemoryCache c;
  auto k = keyFor("vk:1", 1);
  EXPECT_FALSE(c.find(k));
  EXPECT_TRUE(c.insert(k, entryOf("hello"), 1min));
  EXPECT_EQ("hello", textOf(c.find(k)));
  EXPECT_TRUE(c.insert(k, entryOf("again"), 1min));  // replaces
  EXPECT_EQ("again", textOf(c.find(k)));
  auto s = c.stats();
  EXPECT_EQ(2u, s.hits);
  EXPECT_EQ(1u, s.misses);
  EXPECT_EQ(2u, s.writes);
  EXPECT_EQ(1u, s.entries);
  EXPECT_GT(s.bytes, 0u);
  EXPECT_TRUE(c.erase(k));
  EXPECT_FALSE(c.find(k));
  EXPECT_EQ(0u, c.stats().bytes);
}

TEST(MemoryCache, NamespacesDoNotSeeEachOthersEntries) {
  MemoryCache c;
  ASSERT_TRUE(c.insert(keyFor(namespaceFor(1), 1), entryOf("for key 1"), 1min));
  EXPECT_FALSE(c.find(keyFor(namespaceFor(2), 1)));
  EXPECT_FALSE(c.find(keyFor(namespaceFor(std::nullopt), 1)));
  EXPECT_EQ("for key 1", textOf(c.find(keyFor(namespaceFor(1), 1))));
}

TEST(MemoryCache, EvictsLeastRecentlyUsedByBytes) {
  MemoryCacheOptions o;
  o.shards = 1;
  const std::string big(1000, 'x');
  const std::size_t each = entryOf(big)->byteSize() + 64 + 96;
  o.max_bytes = each * 3;  // room for three
  MemoryCache c(o);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c.insert(keyFor("n", i), entryOf(big), 1min));
  EXPECT_TRUE(c.find(keyFor("n", 0)));  // 0 is now the most recent; 1 the least
  ASSERT_TRUE(c.insert(keyFor("n", 3), entryOf(big), 1min));
  EXPECT_FALSE(c.find(keyFor("n", 1)));
  EXPECT_TRUE(c.find(keyFor("n", 0)));
  EXPECT_TRUE(c.find(keyFor("n", 2)));
  EXPECT_TRUE(c.find(keyFor("n", 3)));
  auto s = c.stats();
  EXPECT_EQ(1u, s.evictions);
  EXPECT_EQ(3u, s.entries);
  EXPECT_LE(s.bytes, o.max_bytes);
  // A bigger entry pushes out as many as it needs.
  ASSERT_TRUE(c.insert(keyFor("n", 4), entryOf(std::string(2000, 'y')), 1min));
  EXPECT_LE(c.stats().bytes, o.max_bytes);
  EXPECT_EQ(2u, c.stats().entries);
}

TEST(MemoryCache, RejectsEntriesOverTheBound) {
  MemoryCacheOptions o;
  o.max_entry_bytes = 500;
  MemoryCache c(o);
  EXPECT_FALSE(c.insert(keyFor("n", 1), entryOf(std::string(600, 'x')), 1min));
  EXPECT_EQ(1u, c.stats().rejected);
  EXPECT_FALSE(c.find(keyFor("n", 1)));
  EXPECT_FALSE(c.insert(keyFor("n", 2), entryOf("x"), 0ms));  // no TTL: nothing to keep
}

TEST(MemoryCache, EntriesExpireAfterTheirTtl) {
  std::int64_t now = 1'000'000;
  MemoryCacheOptions o;
  o.now_ms = [&] { return now; };
  MemoryCache c(o);
  ASSERT_TRUE(c.insert(keyFor("n", 1), entryOf("short"), 1000ms));
  ASSERT_TRUE(c.insert(keyFor("n", 2), entryOf("long"), 5000ms));
  now += 999;
  EXPECT_TRUE(c.find(keyFor("n", 1)));
  now += 1;
  EXPECT_FALSE(c.find(keyFor("n", 1)));
  EXPECT_TRUE(c.find(keyFor("n", 2)));
  EXPECT_EQ(1u, c.stats().expired);
  EXPECT_EQ(1u, c.stats().entries);
  now += 4000;
  EXPECT_FALSE(c.find(keyFor("n", 2)));
  EXPECT_EQ(0u, c.stats().bytes);
}

TEST(MemoryCache, ConcurrentUseKeepsTheBoundAndTheCounts) {
  MemoryCacheOptions o;
  o.max_bytes = 64 * 1024;
  o.shards = 4;
  MemoryCache c(o);
  constexpr int kThreads = 4, kOps = 5000;
  std::vector<CacheKey> keys;
  for (int i = 0; i < 200; ++i) keys.push_back(keyFor("n", i));
  std::atomic<int> wrong{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < kOps; ++i) {
        int k = (i * 7 + t * 13) % 200;
        if (i % 3 == 0) {
          c.insert(keys[k], entryOf(std::string(100 + k, static_cast<char>('a' + k % 26))), 1min);
        } else if (auto e = c.find(keys[k])) {
          const auto& text = e->response.content.at(0).text;
          if (text.size() != static_cast<std::size_t>(100 + k) || text[0] != static_cast<char>('a' + k % 26)) ++wrong;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(0, wrong.load());
  auto s = c.stats();
  EXPECT_LE(s.bytes, o.max_bytes);
  EXPECT_EQ(static_cast<std::uint64_t>(kThreads * kOps), s.hits + s.misses + s.writes + s.rejected);
}

TEST(MemoryCache, CoroutineInterface) {
  boost::asio::io_context ioc;
  MemoryCache c;
  auto k = keyFor("n", 1);
  auto f = boost::asio::co_spawn(
      ioc,
      [&]() -> boost::asio::awaitable<std::string> {
        auto e = entryOf("via put");
        co_await c.put(k, e, std::chrono::milliseconds(60000));
        auto got = co_await c.get(k);
        co_return textOf(got);
      },
      boost::asio::use_future);
  ioc.run();
  EXPECT_EQ("via put", f.get());
  EXPECT_STREQ("memory", c.backendName());
  CacheBackendOptions bo;
  EXPECT_STREQ("memory", makeResponseCache(bo)->backendName());
  bo.redis_url = "redis://127.0.0.1:1";
  EXPECT_STREQ("redis", makeResponseCache(bo)->backendName());
  bo.redis_url = "http://nope";
  EXPECT_THROW(makeResponseCache(bo), std::invalid_argument);
}

}  // namespace memory_cache_test
}  // namespace
}  // namespace sluice::cache
