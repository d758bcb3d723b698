#include "pipeline/SecretScrubber.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "config/Config.hpp"

namespace sluice::pipeline {
namespace {
namespace secret_scrubber_test {

const std::string kKey = "sk-proj-Abc123Secret456xyz";

using Secrets = std::vector<std::pair<std::string, std::string>>;
SecretScrubber of(const Secrets& secrets) { return SecretScrubber(secrets); }
SecretScrubber one(const std::string& secret) { return of(Secrets{{secret, config::maskSecret(secret)}}); }

TEST(SecretScrubberTest, EmptyReplacesNothing) {
  SecretScrubber s;
  EXPECT_TRUE(s.empty());
  std::string text = "Incorrect API key provided: " + kKey;
  EXPECT_FALSE(s.scrub(text));
  EXPECT_EQ(text, "Incorrect API key provided: " + kKey);
  EXPECT_FALSE(s.contains(text));
}

TEST(SecretScrubberTest, ReplacesEveryOccurrenceWithTheAdminMaskedForm) {
  auto s = one(kKey);
  const std::string masked = config::maskSecret(kKey);
  std::string text = "Incorrect API key provided: " + kKey + ". You passed " + kKey + kKey;
  EXPECT_TRUE(s.contains(text));
  EXPECT_TRUE(s.scrub(text));
  EXPECT_EQ(text, "Incorrect API key provided: " + masked + ". You passed " + masked + masked);
  EXPECT_FALSE(s.contains(text));
  // At the very start and the very end, and as the whole text.
  EXPECT_EQ(s.scrubbed(kKey), masked);
  EXPECT_EQ(s.scrubbed(kKey + "!"), masked + "!");
  EXPECT_EQ(s.scrubbed("!" + kKey), "!" + masked);
}

TEST(SecretScrubberTest, LeavesOtherTextAndPartialKeysAlone) {
  auto s = one(kKey);
  for (std::string text : {std::string("sk-proj-Abc123Secret456xy"), std::string("sk-proj-other-key-0000"),
                           std::string("no secrets here"), std::string(""), std::string("sk-")}) {
    std::string copy = text;
    EXPECT_FALSE(s.scrub(copy)) << text;
    EXPECT_EQ(copy, text);
  }
}

TEST(SecretScrubberTest, JsonEscapedAndPercentEncodedForms) {
  const std::string key = "AKIA/Secret+Key=\"quoted\"";
  auto s = one(key);
  const std::string masked = config::maskSecret(key);
  EXPECT_EQ(s.scrubbed(R"({"message":"bad key AKIA\/Secret+Key=\"quoted\""})"),
            R"({"message":"bad key )" + masked + R"("})");
  EXPECT_EQ(s.scrubbed(R"({"message":"bad key AKIA/Secret+Key=\"quoted\""})"),
            R"({"message":"bad key )" + masked + R"("})");
  EXPECT_EQ(s.scrubbed("?key=AKIA%2FSecret%2BKey%3D%22quoted%22&x=1"), "?key=" + masked + "&x=1");
  EXPECT_EQ(s.scrubbed("?key=AKIA%2fSecret%2bKey%3d%22quoted%22"), "?key=" + masked);
}

TEST(SecretScrubberTest, ShortSecretsAreNotMasked) {
  // Too short to tell from ordinary text: masking "abc" would garble every message.
  auto s = of(Secrets{{"abc", "***"}, {"1234567", "***"}});
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.scrubbed("abc 1234567"), "abc 1234567");
  auto eight = one("12345678");
  EXPECT_EQ(eight.scrubbed("x12345678y"), "x" + config::maskSecret("12345678") + "y");
}

TEST(SecretScrubberTest, LongestSecretWinsWhereOneIsAPrefixOfAnother) {
  auto s = of(Secrets{{"sk-abcdefgh", "[short]"}, {"sk-abcdefgh-longer", "[long]"}});
  EXPECT_EQ(s.scrubbed("a sk-abcdefgh-longer b sk-abcdefgh c"), "a [long] b [short] c");
}

TEST(SecretScrubberTest, FromConfigTakesEveryChannelsKeysAndCredentialHeaders) {
  config::Config cfg;
  config::ChannelConfig a;
  a.name = "a";
  a.keys = {"sk-first-channel-key-01", "tiny"};
  a.headers = {{"Authorization", "Bearer header-token-123456"}, {"x-note", "not-a-secret-value"}};
  config::ChannelConfig b;
  b.name = "b";
  b.keys = {"AIzaSecondChannelKey0002"};
  b.store_id = 7;  // an admin-API channel, merged into the snapshot's config
  cfg.channels = {a, b};
  auto s = SecretScrubber::fromConfig(cfg);
  EXPECT_EQ(s.scrubbed("sk-first-channel-key-01"), config::maskSecret("sk-first-channel-key-01"));
  EXPECT_EQ(s.scrubbed("AIzaSecondChannelKey0002"), config::maskSecret("AIzaSecondChannelKey0002"));
  EXPECT_EQ(s.scrubbed("got header-token-123456"), "got " + config::maskSecret("header-token-123456"));
  EXPECT_EQ(s.scrubbed("tiny not-a-secret-value"), "tiny not-a-secret-value");
}

// Hundreds of keys sharing a prefix ("sk-proj-" for all of them) still find the right one, and
// a text full of near misses is scanned without a comparison per key.
TEST(SecretScrubberTest, ManyKeysWithACommonPrefix) {
  std::mt19937 rng(7);
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::vector<std::pair<std::string, std::string>> secrets;
  for (int i = 0; i < 500; ++i) {
    std::string k = "sk-proj-";
    for (int j = 0; j < 40 + (i % 3); ++j) k.push_back(alphabet[rng() % alphabet.size()]);
    secrets.emplace_back(k, "[k" + std::to_string(i) + "]");
  }
  SecretScrubber s(secrets);
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "sk-proj-nearly-a-key-but-not " + std::to_string(i) + "; ";
  const std::string before = text;
  EXPECT_FALSE(s.scrub(text));
  EXPECT_EQ(text, before);
  text += secrets[123].first + " and " + secrets[499].first;
  EXPECT_TRUE(s.scrub(text));
  EXPECT_EQ(text, before + "[k123] and [k499]");
}

}  // namespace secret_scrubber_test
}  // namespace
}  // namespace sluice::pipeline
