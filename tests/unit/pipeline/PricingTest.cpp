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
  EXPECT_EQ(t.cost("unknown-model", {.input = 1000, .output = 1000}), 0);
}

// Each token at one rate and never twice: the cache reads and writes are inside input, the
// reasoning inside output (the gateway's usage rule, whatever the provider's).
TEST(PricingTest, CostPricesCacheWritesAndReasoningApart) {
  config::Price p{3.0, 15.0, 0.3};
  p.cache_write = 3.75;
  p.reasoning = 20.0;
  // 1000 prompt tokens: 600 cache reads, 200 cache writes, 200 plain; 300 output, 120 reasoning.
  const PriceTable::Tokens t{.input = 1000, .output = 300, .cached = 600, .cache_write = 200, .reasoning = 120};
  EXPECT_NEAR(PriceTable::cost(p, t), (200 * 3.0 + 600 * 0.3 + 200 * 3.75 + 180 * 15.0 + 120 * 20.0) / 1e6, 1e-12);
  // Unset rates: writes at input, reasoning at output (the cost before either was priced).
  config::Price plain{3.0, 15.0, 0.3};
  EXPECT_NEAR(PriceTable::cost(plain, t), PriceTable::cost(plain, 1000, 300, 600), 1e-12);
  EXPECT_NEAR(PriceTable::cost(plain, t), (400 * 3.0 + 600 * 0.3 + 300 * 15.0) / 1e6, 1e-12);
  // Counts beyond their totals are clamped: reads first, then writes, of the input.
  EXPECT_NEAR(PriceTable::cost(p, {.input = 100, .output = 10, .cached = 80, .cache_write = 50, .reasoning = 50}),
              (80 * 0.3 + 20 * 3.75 + 10 * 20.0) / 1e6, 1e-12);
  EXPECT_EQ(PriceTable::cost(p, {.input = -1, .output = -1, .cached = -5, .cache_write = -5, .reasoning = -5}), 0);
}

TEST(PricingTest, ShippedClaudePricesWriteTheCacheAtAQuarterMoreThanInput) {
  PriceTable t;
  auto claude = t.find("claude-sonnet-4-5-20250929");
  ASSERT_TRUE(claude);
  EXPECT_DOUBLE_EQ(claude->cache_write, 3.75);
  EXPECT_LT(claude->reasoning, 0);              // as output
  EXPECT_LT(t.find("gpt-4o")->cache_write, 0);  // as input
}

TEST(PricingTest, ConfigPricingTakesCacheWriteAndReasoningRates) {
  auto cfg = config::parseConfig("pricing:\n  m: {input: 1, output: 2, cache_write: 1.25, reasoning: 3}\n", "t.yaml");
  EXPECT_DOUBLE_EQ(cfg->pricing.at("m").cache_write, 1.25);
  EXPECT_DOUBLE_EQ(cfg->pricing.at("m").reasoning, 3);
  EXPECT_LT(cfg->pricing.at("m").cached_input, 0);
  auto message = [](const std::string& yaml) {
    try {
      config::parseConfig(yaml, "t.yaml");
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string negative =
      message("server:\n  listen: \"127.0.0.1:0\"\npricing:\n  m: {input: 1, output: 2, cache_write: -1}\n");
  EXPECT_NE(negative.find("t.yaml:4"), std::string::npos) << negative;
  EXPECT_NE(negative.find("pricing.m.cache_write"), std::string::npos) << negative;
  const std::string unknown = message("pricing:\n  m: {input: 1, output: 2, reasoning_output: 1}\n");
  EXPECT_NE(unknown.find("t.yaml:2"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("reasoning_output"), std::string::npos) << unknown;
  EXPECT_NE(message("pricing:\n  m: {input: 1, output: 2, reasoning: -0.5}\n").find("pricing.m.reasoning"),
            std::string::npos);
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
  EXPECT_TRUE(e->allowsTool("github__create_issue"));  // no allowed_tools: every tool
}

TEST(KeyTableTest, AllowedToolsFromTheSettings) {
  store::VirtualKey k;
  k.key_hash = "h";
  k.settings = R"({"allowed_tools":["github__get_*","files__read_file"],"cache":true})";
  KeyTable t({k});
  const auto* e = t.find("h");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->allowsTool("github__get_issue"));
  EXPECT_TRUE(e->allowsTool("files__read_file"));
  EXPECT_FALSE(e->allowsTool("github__create_issue"));
  EXPECT_FALSE(e->allowsTool("files__read_file2"));
  EXPECT_TRUE(readAllowedTools(R"({"allowed_tools":"x"})").empty());
  EXPECT_TRUE(readAllowedTools("not json").empty());
}

}  // namespace pricing_test
}  // namespace
}  // namespace sluice::pipeline
