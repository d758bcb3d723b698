#include "cache/Controls.hpp"

#include <gtest/gtest.h>

namespace sluice::cache {
namespace {
namespace controls_test {

using namespace std::chrono_literals;

TEST(CacheControls, ParsesRequestHeaders) {
  auto none = parseRequestControls("", "");
  EXPECT_FALSE(none.no_read);
  EXPECT_FALSE(none.no_write);
  auto noCache = parseRequestControls("no-cache", "");
  EXPECT_TRUE(noCache.no_read);
  EXPECT_FALSE(noCache.no_write);
  auto noStore = parseRequestControls("max-age=0, No-Store", "");
  EXPECT_TRUE(noStore.no_read);
  EXPECT_TRUE(noStore.no_write);
  EXPECT_TRUE(parseRequestControls(" no-cache=\"x\" ,private", "").no_read);
  EXPECT_FALSE(parseRequestControls("max-age=60, no-transform", "").no_read);
  auto refresh = parseRequestControls("", " Refresh ");
  EXPECT_TRUE(refresh.no_read);
  EXPECT_FALSE(refresh.no_write);
  auto bypass = parseRequestControls("", "bypass");
  EXPECT_TRUE(bypass.no_read && bypass.no_write);
  EXPECT_FALSE(parseRequestControls("no-cachex", "refreshing").no_read);
}

TEST(CacheControls, DecidesFromRequestKeyAndChannel) {
  CacheSettings on{true, 10min}, off{false, {}}, unset{};
  auto d = decide({}, on, unset, unset);
  EXPECT_TRUE(d.read && d.write);
  EXPECT_EQ(10min, d.ttl);
  EXPECT_FALSE(decide({}, unset, unset, unset).read);  // off by default
  EXPECT_EQ("disabled", decide({}, on, off, unset).why);
  EXPECT_FALSE(decide({}, on, unset, off).write);
  EXPECT_FALSE(decide({}, off, CacheSettings{true, {}}, off).read);  // an explicit off wins
  auto keyOn = decide({}, off, CacheSettings{true, 30s}, unset);
  EXPECT_TRUE(keyOn.read);
  EXPECT_EQ(30s, keyOn.ttl);
  EXPECT_EQ(kDefaultTtl, decide({}, CacheSettings{true, {}}, unset, unset).ttl);
  EXPECT_EQ(5s, decide({}, on, CacheSettings{{}, 1h}, CacheSettings{{}, 5s}).ttl);  // the shortest
  auto refresh = decide(parseRequestControls("", "refresh"), on, unset, unset);
  EXPECT_FALSE(refresh.read);
  EXPECT_TRUE(refresh.write);
  auto noStore = decide(parseRequestControls("no-store", ""), on, unset, unset);
  EXPECT_FALSE(noStore.read || noStore.write);
  EXPECT_EQ("no-store", noStore.why);
}

}  // namespace controls_test
}  // namespace
}  // namespace sluice::cache
