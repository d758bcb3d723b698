#include "pipeline/VirtualKeySecret.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>

namespace sluice::pipeline {
namespace {
namespace virtual_key_secret_test {

TEST(VirtualKeySecret, HasTheSchemeAnd40Base62Characters) {
  const auto s = generateVirtualKeySecret();
  ASSERT_EQ(s.size(), 7u + 40u);
  EXPECT_TRUE(s.starts_with("sk-slc-"));
  for (char c : s.substr(7)) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << c;
  EXPECT_TRUE(looksLikeVirtualKey(s));
}

TEST(VirtualKeySecret, SecretsDifferAndUseTheWholeAlphabetEvenly) {
  std::set<std::string> seen;
  std::map<char, int> counts;
  for (int i = 0; i < 2000; ++i) {
    const auto s = generateVirtualKeySecret();
    seen.insert(s);
    for (char c : s.substr(7)) ++counts[c];
  }
  EXPECT_EQ(seen.size(), 2000u);
  ASSERT_EQ(counts.size(), 62u);
  // 80000 draws over 62 symbols: ~1290 each. A modulo bias (256 % 62) would put the first eight
  // symbols ~25% above the rest; allow generous noise, far below that.
  for (const auto& [c, n] : counts) {
    EXPECT_GT(n, 1100) << c;
    EXPECT_LT(n, 1500) << c;
  }
}

TEST(VirtualKeySecret, HashIsLowercaseHexSha256) {
  EXPECT_EQ(hashVirtualKeySecret("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hashVirtualKeySecret(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(VirtualKeySecret, HashWorksFromManyThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (hashVirtualKeySecret("abc") != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") ++bad;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(VirtualKeySecret, PrefixAndRecognition) {
  EXPECT_EQ(virtualKeyPrefix("sk-slc-AbCdEfGhIj"), "sk-slc-AbCdE");
  EXPECT_EQ(virtualKeyPrefix("short"), "short");
  EXPECT_FALSE(looksLikeVirtualKey("sk-proj-123"));
  EXPECT_FALSE(looksLikeVirtualKey("sk-slc"));
  EXPECT_TRUE(looksLikeVirtualKey("sk-slc-x"));
}

}  // namespace virtual_key_secret_test
}  // namespace
}  // namespace sluice::pipeline
