#include "pipeline/Pricing.hpp"

#include <gtest/gtest.h>

#include "config/Config.hpp"
#include "pipeline/KeyTable.hpp"

namespace sluice::pipeline {
namespace {
namespace pricing_test {

TEST(PricingTest, ShippedModelsAndTheirDatedNames) {
  PriceTable t;
  auto p = t.find("gpt-4o-mini");
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->input, 0.15);
  EXPECT_DOUBLE_EQ(p->output, 0.60);
  auto dated = t.find("gpt-4o-2024-08-06");
  ASSERT_TRUE(dated);
  EXPECT_DOUBLE_EQ(dated->input, 2.5);
  auto claude = t.find("claude-sonnet-4-5-20250929");
  ASSERT_TRUE(claude);
  EXPECT_DOUBLE_EQ(claude->output, 15);
  // A version number is part of the name: opus 4.5 is not priced as opus 4.
  EXPECT_DOUBLE_EQ(t.find("claude-opus-4-5")->input, 5);
  EXPECT_DOUBLE_EQ(t.find("claude-opus-4-20250514")->input, 15);
  EXPECT_TRUE(t.find("gemini-2.0-flash-001"));
  EXPECT_TRUE(t.find("claude-3-5-sonnet-latest"));
  EXPECT_TRUE(t.find("openai/gpt-4.1"));  // CHANNEL/MODEL
  EXPECT_FALSE(t.find("mock-1"));
  EXPECT_FALSE(t.find(""));
}

TEST(PricingTest, OverridesWinAndGlobsMatchTheLongestPattern) {
  std::map<std::string, config::Price> o;
  o["gpt-4o"] = config::Price{1, 2, -1};
  o["mock-*"] = config::Price{10, 20, -1};
  o["mock-big-*"] = config::Price{100, 200, 50};
  PriceTable t(o);
  EXPECT_DOUBLE_EQ(t.find("gpt-4o")->input, 1);
  EXPECT_DOUBLE_EQ(t.find("mock-1")->input, 10);
  EXPECT_DOUBLE_EQ(t.find("mock-big-2")->input, 100);
  EXPECT_DOUBLE_EQ(t.find("gpt-4o-mini")->input, 0.15);  // untouched shipped entry
}

TEST(PricingTest, CostCountsCachedTokensAtTheirRate) {
  config::Price p{2.0, 8.0, 0.5};
  // 1M prompt tokens of which 400k cached, 100k output.
  EXPECT_NEAR(PriceTable::cost(p, 1'000'000, 100'000, 400'000), 600'000 * 2e-6 + 400'000 * 0.5e-6 + 100'000 * 8e-6, 1e-9);
  config::Price noCache{2.0, 8.0, -1};
  EXPECT_NEAR(PriceTable::cost(noCache, 1000, 0, 500), 1000 * 2e-6, 1e-12);
  // Nonsense usage never makes a negative cost.
  EXPECT_EQ(PriceTable::cost(p, -5, -5, 10), 0);
  PriceTable t;
  EXPECT_EQ(t.cost("unknown-model", 1000, 1000, 0), 0);
}

TEST(PricingTest, ConfigPricingParsesAndRejectsBadEntries) {
  auto cfg = config::parseConfig("pricing:\n  mock-*: {input: 1.5, output: 3, cached_input: 0.5}\n", "t.yaml");
  ASSERT_EQ(cfg->pricing.size(), 1u);
  EXPECT_DOUBLE_EQ(cfg->pricing.at("mock-*").cached_input, 0.5);
  EXPECT_THROW(config::parseConfig("pricing:\n  m: {input: 1}\n", "t.yaml"), config::ConfigError);
  EXPECT_THROW(config::parseConfig("pricing:\n  m: {input: -1, output: 1}\n", "t.yaml"), config::ConfigError);
  EXPECT_THROW(config::parseConfig("pricing:\n  m: {input: x, output: 1}\n", "t.yaml"), config::ConfigError);
  EXPECT_THROW(config::parseConfig("pricing:\n  m: {input: 1, output: 1, extra: 2}\n", "t.yaml"), config::ConfigError);
}

TEST(KeyTableTest, FindsByHashWithLimitsAndScopes) {
  store::VirtualKey k;
  k.id = 7;
  k.name = "team-a";
  k.key_hash = "abc";
  k.key_prefix = "sk-slc-AbCdE";
  k.allowed_models = R"(["gpt-4o*"])";
  k.allowed_channels = R"(["openai"])";
  k.rpm = 10;
  k.budget_daily_usd = 2.5;
  k.expires_at_ms = 1000;
  KeyTable t({k});
  const auto* e = t.find("abc");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->subject.id, "vk:7");
  EXPECT_EQ(e->subject.spec.rpm, 10);
  EXPECT_EQ(e->subject.spec.tpm, 0);
  EXPECT_TRUE(e->subject.spec.any());
  EXPECT_TRUE(e->allowsModel("gpt-4o-mini"));
  EXPECT_FALSE(e->allowsModel("claude-sonnet-4-5"));
  EXPECT_TRUE(e->allowsChannel("openai"));
  EXPECT_FALSE(e->allowsChannel("anthropic"));
  EXPECT_TRUE(e->expired(1000));
  EXPECT_FALSE(e->expired(999));
  EXPECT_FALSE(e->revoked);
  EXPECT_EQ(t.find("abd"), nullptr);
}

}  // namespace pricing_test
}  // namespace
}  // namespace sluice::pipeline
