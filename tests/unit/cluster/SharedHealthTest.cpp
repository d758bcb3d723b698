#include "cluster/SharedHealth.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "ClusterTestSupport.hpp"
#include "cluster/Redis.hpp"

namespace sluice::cluster {
namespace {
namespace shared_health_test {

using namespace std::chrono_literals;

std::int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class SharedHealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::requireRedis();
    if (HasFatalFailure()) return;
    // Key refs of this run only: the server is shared with other tests and earlier runs.
    ref_ = testing::uniquePrefix() + "openai:k1";
  }
  std::string ref_;
};

TEST_F(SharedHealthTest, PublishedStateIsSeenByAnotherInstanceAndCleared) {
  SharedHealth a(testing::sharedRedisUrl()), b(testing::sharedRedisUrl());
  ASSERT_TRUE(a.enabled());
  SharedKeyState s{nowMs() + 60'000, false, false, "429 from upstream"};
  ASSERT_TRUE(a.put(ref_, s));
  auto other = ref_ + "-other";
  auto got = b.get({ref_, other});
  ASSERT_TRUE(got);
  ASSERT_EQ(got->size(), 1u) << "a key with nothing published is healthy and absent";
  const auto& g = got->at(ref_);
  EXPECT_EQ(g.cooldown_until_unix_ms, s.cooldown_until_unix_ms);
  EXPECT_FALSE(g.disabled);
  EXPECT_FALSE(g.manual);
  EXPECT_EQ(g.reason, "429 from upstream");

  ASSERT_TRUE(b.clear(ref_));
  got = a.get({ref_});
  ASSERT_TRUE(got);
  EXPECT_TRUE(got->empty());
}

TEST_F(SharedHealthTest, CooldownExpiresAndDisabledDoesNot) {
  SharedHealth h(testing::sharedRedisUrl());
  ASSERT_TRUE(h.put(ref_, SharedKeyState{nowMs() + 200, false, false, "cooling"}));
  auto disabled = ref_ + "-disabled";
  ASSERT_TRUE(h.put(disabled, SharedKeyState{0, true, true, "401: revoked"}));
  RedisSyncClient redis(parseRedisUrl(testing::sharedRedisUrl()), 1s);
  auto ttl = redis.command({"PTTL", "sluice:kh:" + disabled});
  ASSERT_TRUE(ttl.ok());
  EXPECT_EQ(ttl.reply.integer, -1) << "a disabled key stays disabled until cleared";

  std::this_thread::sleep_for(300ms);
  auto got = h.get({ref_, disabled});
  ASSERT_TRUE(got);
  EXPECT_EQ(got->count(ref_), 0u) << "the cool-down has ended";
  ASSERT_EQ(got->count(disabled), 1u);
  EXPECT_TRUE(got->at(disabled).disabled);
  EXPECT_TRUE(got->at(disabled).manual);
  EXPECT_EQ(got->at(disabled).reason, "401: revoked");

  // A new state replaces the old one whole: a cool-down after a disable expires again.
  ASSERT_TRUE(h.put(disabled, SharedKeyState{nowMs() + 60'000, false, false, ""}));
  ttl = redis.command({"PTTL", "sluice:kh:" + disabled});
  EXPECT_GT(ttl.reply.integer, 0);
  EXPECT_TRUE(h.clear(disabled));
}

TEST(SharedHealthOfflineTest, WithoutRedisNothingIsShared) {
  SharedHealth h("");
  EXPECT_FALSE(h.enabled());
  EXPECT_FALSE(h.put("k", SharedKeyState{}));
  EXPECT_FALSE(h.get({"k"}));
}

TEST(SharedHealthOfflineTest, UnreachableRedisSaysSo) {
  SharedHealth h("redis://127.0.0.1:" + std::to_string(testing::freePort()));
  EXPECT_TRUE(h.enabled());
  EXPECT_FALSE(h.put("k", SharedKeyState{nowMs() + 1000, false, false, "x"}));
  EXPECT_FALSE(h.clear("k"));
  EXPECT_FALSE(h.get({"k"}));
}

TEST(SharedHealthOfflineTest, BadUrlThrows) {
  EXPECT_THROW(SharedHealth("redis//nope"), std::invalid_argument);
}

}  // namespace shared_health_test
}  // namespace
}  // namespace sluice::cluster
