#include "gateway/ModelList.hpp"

#include <gtest/gtest.h>

#include "routing/ModelName.hpp"

namespace sluice::gateway {
namespace {
namespace model_list_test {

bool gpt(std::string_view n) {
  return routing::isModelName(n) && n.starts_with("gpt-4");
}

TEST(ModelList, KeepsTheModelNamesTheGlobsMatchSortedOnce) {
  std::string why;
  auto m = parseModelList(false,
                          R"({"data":[{"id":"gpt-4o-mini"},{"id":"gpt-4o"},{"id":"dall-e-3"},{"id":"gpt-4o"},)"
                          R"({"id":"gpt-4x/../../admin"},{"id":"gpt-4 x"},{"id":"gpt-4\"x"},{"id":5},"gpt-4s",)"
                          R"({"name":"gpt-4n"},{"id":"gpt-4?key=1"}]})",
                          gpt, why);
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, (std::vector<std::string>{"gpt-4o", "gpt-4o-mini"}));
}

TEST(ModelList, GeminiNamesLoseTheirModelsPrefix) {
  std::string why;
  auto m = parseModelList(
      true, R"({"models":[{"name":"models/gemini-2.5-pro"},{"name":"gemini-2.0-flash"}]})",
      [](std::string_view n) { return n.starts_with("gemini-2.5"); }, why);
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, (std::vector<std::string>{"gemini-2.5-pro"}));
}

TEST(ModelList, ABodyOfAnotherShapeSaysWhy) {
  std::string why;
  EXPECT_FALSE(parseModelList(false, R"({"models":[]})", gpt, why));
  EXPECT_NE(why.find("\"data\""), std::string::npos);
  EXPECT_FALSE(parseModelList(true, "not json", gpt, why));
  EXPECT_NE(why.find("\"models\""), std::string::npos);
}

TEST(ModelList, NextPageTokenOnlyWhenTheProviderSaysThereIsMore) {
  EXPECT_EQ(nextPageToken(true, R"({"models":[],"nextPageToken":"abc"})"), "abc");
  EXPECT_FALSE(nextPageToken(true, R"({"models":[]})"));
  EXPECT_FALSE(nextPageToken(true, R"({"models":[],"nextPageToken":""})"));
  EXPECT_FALSE(nextPageToken(true, R"({"models":[],"nextPageToken":7})"));
  EXPECT_FALSE(nextPageToken(true, std::string(R"({"nextPageToken":")") + std::string(1025, 'x') + "\"}"));
  EXPECT_EQ(nextPageToken(false, R"({"data":[],"has_more":true,"last_id":"claude-x"})"), "claude-x");
  EXPECT_FALSE(nextPageToken(false, R"({"data":[],"has_more":false,"last_id":"claude-x"})"));
  EXPECT_FALSE(nextPageToken(false, R"({"data":[],"last_id":"claude-x"})"));
  EXPECT_FALSE(nextPageToken(false, "not json"));
}

}  // namespace model_list_test
}  // namespace
}  // namespace sluice::gateway
