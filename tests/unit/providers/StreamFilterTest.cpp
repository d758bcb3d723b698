#include "providers/openai/StreamFilter.hpp"

#include <gtest/gtest.h>

namespace sluice::providers::openai {
namespace {
namespace stream_filter_test {

const std::string kChunk1 =
    R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":null})"
    "\n\n";
const std::string kChunk2 =
    R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null})"
    "\n\n";
const std::string kUsage =
    R"(data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10,"prompt_tokens_details":{"cached_tokens":2}}})"
    "\n\n";
const std::string kDone = "data: [DONE]\n\n";
const std::string kStream = kChunk1 + kChunk2 + kUsage + kDone;

TEST(StreamFilter, PassesEverythingWhenTheClientAskedForUsage) {
  StreamFilter f(false);
  std::string out;
  ASSERT_TRUE(f.feed(kStream, out));
  EXPECT_EQ(out, kStream);
  EXPECT_EQ(f.usage().prompt_tokens, 7);
  EXPECT_EQ(f.usage().completion_tokens, 3);
  EXPECT_EQ(f.usage().cached_tokens, 2);
  EXPECT_TRUE(f.sawDone());
}

TEST(StreamFilter, RemovesWhatTheGatewayAddedWhenStripping) {
  StreamFilter f(true);
  std::string out;
  ASSERT_TRUE(f.feed(kStream, out));
  EXPECT_EQ(out.find("usage"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("delta":{"content":"Hi"}}])"), std::string::npos) << out;
  EXPECT_NE(out.find("data: [DONE]\n\n"), std::string::npos);
  EXPECT_EQ(f.usage().completion_tokens, 3);
}

// Any split of the stream into two reads gives the same output and usage.
TEST(StreamFilter, EverySplitPointGivesTheSameResult) {
  for (bool strip : {false, true}) {
    StreamFilter whole(strip);
    std::string expected;
    whole.feed(kStream, expected);
    for (std::size_t cut = 0; cut <= kStream.size(); ++cut) {
      StreamFilter f(strip);
      std::string out;
      f.feed(std::string_view(kStream).substr(0, cut), out);
      f.feed(std::string_view(kStream).substr(cut), out);
      EXPECT_EQ(out, expected) << "cut at " << cut;
      EXPECT_EQ(f.usage().completion_tokens, 3);
      EXPECT_TRUE(f.leftover().empty());
    }
  }
}

TEST(StreamFilter, CrLfFramingIsUnderstood) {
  std::string s = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n";
  StreamFilter f(true);
  std::string out;
  f.feed(s, out);
  EXPECT_EQ(out, s);
  EXPECT_TRUE(f.sawDone());
}

TEST(StreamFilter, HoldsBackAnUnfinishedEventAndBoundsIt) {
  StreamFilter f(false);
  std::string out;
  ASSERT_TRUE(f.feed("data: {\"partial\":", out));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(f.leftover(), "data: {\"partial\":");
  std::string huge(StreamFilter::kMaxEvent + 1, 'x');
  EXPECT_FALSE(f.feed(huge, out));
}

TEST(StreamFilter, ReadsUsageFromAResponsesApiCompletedEvent) {
  std::string s =
      "event: response.completed\n"
      R"(data: {"type":"response.completed","response":{"id":"resp_1","usage":{"input_tokens":11,"output_tokens":4,"input_tokens_details":{"cached_tokens":3}}}})"
      "\n\n";
  StreamFilter f(false);
  std::string out;
  f.feed(s, out);
  EXPECT_EQ(out, s);
  EXPECT_EQ(f.usage().prompt_tokens, 11);
  EXPECT_EQ(f.usage().completion_tokens, 4);
  EXPECT_EQ(f.usage().cached_tokens, 3);
}

TEST(Usage, FromAWholeBody) {
  Usage u;
  EXPECT_TRUE(parseUsageFromBody(R"({"usage":{"prompt_tokens":5,"completion_tokens":6}})", u));
  EXPECT_EQ(u.prompt_tokens, 5);
  EXPECT_EQ(u.completion_tokens, 6);
  Usage r;
  EXPECT_TRUE(parseUsageFromBody(R"({"usage":{"input_tokens":1,"output_tokens":2,"input_tokens_details":{"cached_tokens":1}}})", r));
  EXPECT_EQ(r.completion_tokens, 2);
  EXPECT_EQ(r.cached_tokens, 1);
  Usage none;
  EXPECT_FALSE(parseUsageFromBody("not json", none));
  EXPECT_FALSE(parseUsageFromBody(R"({"usage":null})", none));
}

}  // namespace stream_filter_test
}  // namespace
}  // namespace sluice::providers::openai
