#include "gateway/TokenEstimate.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::gateway {
namespace {
namespace token_estimate_test {

TEST(TokenEstimate, TextOverFourPlusThreeATurnNeverZero) {
  // "Hello there" (11 bytes) and "sys" (3): 14 bytes -> 4, one turn -> 3.
  EXPECT_EQ(estimateCountTokens(
                R"({"model":"claude-sonnet-4-5","system":"sys","messages":[{"role":"user","content":"Hello there"}]})"),
            7);
  EXPECT_EQ(estimateCountTokens(R"({"model":"m","messages":[]})"), 1);
  // Gemini: turns are contents entries with a role; an inline image counts 1,600.
  EXPECT_EQ(estimateCountTokens(R"({"contents":[{"role":"user","parts":[{"text":"abcd"},)"
                                R"({"inline_data":{"mime_type":"image/png","data":"AAAAAAAAAAAAAAAA"}}]}]})"),
            1 + 3 + 1600);
}

TEST(TokenEstimate, NotAJsonObjectIsNoEstimate) {
  EXPECT_FALSE(estimateCountTokens("[1,2]"));
  EXPECT_FALSE(estimateCountTokens("{"));
}

TEST(TokenEstimate, DeepNestingIsWalkedWithoutRecursion) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += R"({"a":[)";
  deep += R"("xxxxxxxx")";
  for (int i = 0; i < 100; ++i) deep += "]}";
  EXPECT_EQ(estimateCountTokens(deep), 2);
}

}  // namespace token_estimate_test
}  // namespace
}  // namespace sluice::gateway
