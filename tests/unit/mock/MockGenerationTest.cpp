#include "mock/MockGeneration.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace sluice::mock {
namespace {
namespace mock_generation_test {

TEST(MockGeneration, DefaultAnswerIsOneWordPerChunk) {
  Generation g = planGeneration(8, std::nullopt, {}, 1);
  EXPECT_EQ(g.pieces, 8u);
  EXPECT_STREQ(g.finishReason(), "stop");
  EXPECT_EQ(g.piece(0), "Hello");
  EXPECT_EQ(g.piece(1), " from");
  EXPECT_EQ(g.text(), "Hello from sluice mock. This is a deterministic");
  EXPECT_EQ(g.completionTokens(), 8u);
}

TEST(MockGeneration, AContinuationIsTheRestOfTheSentenceAfterAWholePiecePrefix) {
  Generation rest = planContinuation("Hello from sluice", 8, std::nullopt, {}, 1);
  EXPECT_EQ(rest.text(), " mock. This is a deterministic");
  EXPECT_EQ(rest.pieces, 5u);
  EXPECT_EQ(planContinuation("Hello from sluice ", 8, std::nullopt, {}, 1).text(), " mock. This is a deterministic");
  EXPECT_EQ(planContinuation("Hello from sluice mock. This is a deterministic", 8, std::nullopt, {}, 1).pieces, 0u);
  // Not a start of the sentence (or not of whole pieces): the usual sentence.
  EXPECT_EQ(planContinuation("Goodbye", 8, std::nullopt, {}, 1).text(), "Hello from sluice mock. This is a deterministic");
  EXPECT_EQ(planContinuation("Hello fr", 8, std::nullopt, {}, 1).pieces, 8u);
}

TEST(MockGeneration, MaxTokensCapsAndReportsLength) {
  Generation g = planGeneration(8, 3, {}, 2);
  EXPECT_EQ(g.pieces, 3u);
  EXPECT_STREQ(g.finishReason(), "length");
  EXPECT_EQ(g.completionTokens(), 6u);  // per choice x choices
  EXPECT_STREQ(planGeneration(8, 8, {}, 1).finishReason(), "stop");
  EXPECT_STREQ(planGeneration(8, 100, {}, 1).finishReason(), "stop");
}

TEST(MockGeneration, StopSequenceCutsTheAnswerBeforeIt) {
  Generation g = planGeneration(8, std::nullopt, {" from"}, 1);
  EXPECT_EQ(g.pieces, 1u);
  EXPECT_EQ(g.text(), "Hello");
  EXPECT_STREQ(g.finishReason(), "stop");

  Generation mid = planGeneration(8, std::nullopt, {"ock"}, 1);  // inside " mock."
  EXPECT_EQ(mid.text(), "Hello from sluice m");
  EXPECT_EQ(mid.pieces, 4u);
  EXPECT_EQ(mid.piece(3), " m");

  Generation earliest = planGeneration(8, std::nullopt, {"is a", "sluice"}, 1);
  EXPECT_EQ(earliest.text(), "Hello from ");

  EXPECT_EQ(planGeneration(8, std::nullopt, {"absent", ""}, 1).pieces, 8u);
}

TEST(MockGeneration, StopWinsOverLengthWhenFoundInsideTheCap) {
  Generation g = planGeneration(8, 4, {"sluice"}, 1);
  EXPECT_EQ(g.text(), "Hello from ");
  EXPECT_STREQ(g.finishReason(), "stop");
}

TEST(MockGeneration, ZeroChunksIsAnEmptyAnswer) {
  Generation g = planGeneration(0, std::nullopt, {"x"}, 1);
  EXPECT_EQ(g.pieces, 0u);
  EXPECT_EQ(g.text(), "");
}

TEST(MockGeneration, TokenEstimateIsBytesOverFourRoundedUp) {
  EXPECT_EQ(estimateTokens(""), 0);
  EXPECT_EQ(estimateTokens("abcd"), 1);
  EXPECT_EQ(estimateTokens("abcde"), 2);
  EXPECT_EQ(estimateTokens(std::string(400, 'x')), 100);
}

TEST(MockGeneration, EmbeddingsAreDeterministicUnitVectors) {
  auto a = embeddingVector("hello", 8);
  auto b = embeddingVector("hello", 8);
  auto c = embeddingVector("world", 8);
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double norm = 0;
  for (float f : a) norm += double(f) * f;
  EXPECT_NEAR(norm, 1.0, 1e-5);
  EXPECT_EQ(embeddingVector("hello", 3072).size(), 3072u);
}

TEST(MockGeneration, Base64MatchesRfc4648) {
  EXPECT_EQ(base64Encode(""), "");
  EXPECT_EQ(base64Encode("f"), "Zg==");
  EXPECT_EQ(base64Encode("fo"), "Zm8=");
  EXPECT_EQ(base64Encode("foo"), "Zm9v");
  EXPECT_EQ(base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64Encode(std::string("\xff\x00\x80", 3)), "/wCA");
}

TEST(MockGeneration, Base64FloatsAreLittleEndianFloat32) {
  EXPECT_EQ(base64Floats({1.0f}), "AACAPw==");          // 00 00 80 3f
  EXPECT_EQ(base64Floats({1.0f, -2.0f}), "AACAPwAAAMA=");  // ... 00 00 00 c0
}

TEST(MockGeneration, JsonStringsAreEscaped) {
  std::string out;
  appendJsonString(out, "a\"b\\c\n\x01é");
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\u0001é\"");
}

TEST(MockGeneration, RandomIdsHavePrefixAndLength) {
  auto id = randomId("chatcmpl-", 29);
  EXPECT_EQ(id.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(id.size(), 9u + 29u);
  EXPECT_NE(id, randomId("chatcmpl-", 29));
  for (int i = 0; i < 100; ++i) {
    double u = randomUnit();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

}  // namespace mock_generation_test
}  // namespace
}  // namespace sluice::mock
