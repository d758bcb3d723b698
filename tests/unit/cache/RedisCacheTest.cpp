// RedisCache against a real redis-server (tests/scripts/with-redis.sh sets SLUICE_TEST_REDIS_URL),
// and against one that is not there.
#include "cache/RedisCache.hpp"

#include <gtest/gtest.h>

#include "../cluster/ClusterTestSupport.hpp"
#include "cache/CacheKey.hpp"
#include "cache/MemoryCache.hpp"

namespace sluice::cache {
namespace {
namespace redis_cache_test {

using namespace std::chrono_literals;
using cluster::testing::runOn;

std::shared_ptr<const Entry> entryOf(std::string text) {
  Entry e;
  e.response.id = "chatcmpl-1";
  e.response.model = "m";
  e.response.finish = providers::FinishReason::Stop;
  e.response.usage.input = 12;
  e.response.usage.output = 3;
  e.response.content.push_back(providers::Part::makeText(std::move(text)));
  e.pieces.push_back({2, 3});
  return std::make_shared<const Entry>(std::move(e));
}

CacheKey keyFor(std::string_view ns, std::string_view q) {
  std::string body = R"({"model":"m","messages":[{"role":"user","content":")" + std::string(q) + R"("}]})";
  return *makeCacheKey(providers::Format::OpenAIChat, body, ns).key;
}

RedisCacheOptions optionsFor(const std::string& url) {
  RedisCacheOptions o;
  o.endpoint = cluster::parseRedisUrl(url);
  o.prefix = "sluice:cache:" + cluster::testing::uniquePrefix() + ":";
  return o;
}

TEST(RedisCache, StoresSharesAndIsolates) {
  auto url = cluster::testing::sharedRedisUrl();
  cluster::testing::requireRedis();
  if (HasFatalFailure()) return;
  boost::asio::io_context ioc;
  auto opts = optionsFor(url);
  RedisCache a(opts), b(opts);  // two gateway instances
  auto k1 = keyFor(namespaceFor(1), "hi");
  EXPECT_FALSE(runOn(ioc, a.get(k1)));
  runOn(ioc, a.put(k1, entryOf("hello"), 60s));
  auto got = runOn(ioc, b.get(k1));
  ASSERT_TRUE(got);
  EXPECT_EQ(serializeEntry(*entryOf("hello")), serializeEntry(*got));
  EXPECT_FALSE(runOn(ioc, b.get(keyFor(namespaceFor(2), "hi"))));  // another key's namespace
  auto s = b.stats();
  EXPECT_EQ(1u, s.hits);
  EXPECT_EQ(1u, s.misses);
  EXPECT_EQ(0u, s.errors);
  EXPECT_EQ(1u, a.stats().writes);
}

TEST(RedisCache, EntriesExpireInRedis) {
  auto url = cluster::testing::sharedRedisUrl();
  cluster::testing::requireRedis();
  if (HasFatalFailure()) return;
  boost::asio::io_context ioc;
  RedisCache c(optionsFor(url));
  auto k = keyFor("n", "ttl");
  runOn(ioc, c.put(k, entryOf("brief"), 50ms));
  EXPECT_TRUE(runOn(ioc, c.get(k)));
  std::this_thread::sleep_for(120ms);
  EXPECT_FALSE(runOn(ioc, c.get(k)));
}

TEST(RedisCache, DamagedValuesAreMisses) {
  auto url = cluster::testing::sharedRedisUrl();
  cluster::testing::requireRedis();
  if (HasFatalFailure()) return;
  boost::asio::io_context ioc;
  auto opts = optionsFor(url);
  RedisCache c(opts);
  auto k = keyFor("n", "damaged");
  cluster::RedisAsyncClient raw(opts.endpoint, 1s);
  std::vector<std::string> set{"SET", opts.prefix + k.hex, "not an entry"};
  ASSERT_TRUE(runOn(ioc, raw.command(set)).ok());
  EXPECT_FALSE(runOn(ioc, c.get(k)));
  EXPECT_EQ(1u, c.stats().errors);
}

TEST(RedisCache, RedisDownIsAMissNotAFailure) {
  boost::asio::io_context ioc;
  RedisCacheOptions o;
  o.endpoint = cluster::parseRedisUrl("redis://127.0.0.1:" + std::to_string(cluster::testing::freePort()));
  o.timeout = 200ms;
  RedisCache c(o);
  auto k = keyFor("n", "down");
  runOn(ioc, c.put(k, entryOf("lost"), 60s));
  EXPECT_FALSE(runOn(ioc, c.get(k)));
  auto s = c.stats();
  EXPECT_EQ(2u, s.errors);
  EXPECT_EQ(1u, s.misses);
  EXPECT_EQ(0u, s.writes);
}

}  // namespace redis_cache_test
}  // namespace
}  // namespace sluice::cache
