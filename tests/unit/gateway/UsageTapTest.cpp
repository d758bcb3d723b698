// Token usage of answers the gateway passes through in the client's own format (no
// translation): the stream taps and usageFromBody read cache reads, cache writes and reasoning
// tokens from each format, in OpenAI's sense (prompt_tokens with the cache reads and writes,
// completion_tokens with the reasoning), while every byte passes on unchanged.
#include <gtest/gtest.h>

#include <string>

#include "gateway/StreamTaps.hpp"

namespace sluice::gateway {
namespace {
namespace usage_tap_test {

struct Counts {
  std::int64_t input = 0, output = 0, cached = 0, cache_write = 0, reasoning = 0;
  bool operator==(const Counts&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Counts& c) {
  return os << "{input " << c.input << ", output " << c.output << ", cached " << c.cached << ", cache_write "
            << c.cache_write << ", reasoning " << c.reasoning << "}";
}

Counts countsOf(const Usage& u) {
  return {u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.cache_write_tokens, u.reasoning_tokens};
}

struct Case {
  const char* name;
  Wire wire;
  std::string_view whole, stream;
  Counts expected;
};

const Case kCases[] = {
    {"openai chat",
     Wire::OpenAI,
     R"({"id":"c","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":300,)"
     R"("total_tokens":1300,"prompt_tokens_details":{"cached_tokens":600,"cache_write_tokens":200},)"
     R"("completion_tokens_details":{"reasoning_tokens":120}}})",
     "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
     "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":300,"
     "\"prompt_tokens_details\":{\"cached_tokens\":600,\"cache_write_tokens\":200},"
     "\"completion_tokens_details\":{\"reasoning_tokens\":120}}}\n\ndata: [DONE]\n\n",
     {1000, 300, 600, 200, 120}},
    {"openai responses",
     Wire::OpenAI,
     R"({"id":"resp_1","object":"response","output":[],"usage":{"input_tokens":1000,"input_tokens_details":)"
     R"({"cached_tokens":600},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":120},)"
     R"("total_tokens":1300}})",
     "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n"
     "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\","
     "\"usage\":{\"input_tokens\":1000,\"input_tokens_details\":{\"cached_tokens\":600},\"output_tokens\":300,"
     "\"output_tokens_details\":{\"reasoning_tokens\":120},\"total_tokens\":1300}}}\n\n",
     {1000, 300, 600, 0, 120}},
    // input_tokens leaves the cache reads and writes out; message_delta tells the output.
    {"anthropic",
     Wire::Anthropic,
     R"({"id":"msg_1","type":"message","content":[],"usage":{"input_tokens":200,)"
     R"("cache_creation_input_tokens":200,"cache_read_input_tokens":600,"output_tokens":300}})",
     "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{"
     "\"input_tokens\":200,\"cache_creation_input_tokens\":200,\"cache_read_input_tokens\":600,"
     "\"output_tokens\":1}}}\n\n"
     "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
     "\"usage\":{\"output_tokens\":300}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
     {1000, 300, 600, 200, 0}},
    // Only the per-lifetime split of the writes; message_delta repeating the input side.
    {"anthropic cache_creation split",
     Wire::Anthropic,
     R"({"id":"msg_1","type":"message","content":[],"usage":{"input_tokens":200,"cache_read_input_tokens":600,)"
     R"("cache_creation":{"ephemeral_5m_input_tokens":150,"ephemeral_1h_input_tokens":50},"output_tokens":300}})",
     "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{"
     "\"input_tokens\":200,\"cache_read_input_tokens\":600,\"cache_creation\":{\"ephemeral_5m_input_tokens\":150,"
     "\"ephemeral_1h_input_tokens\":50},\"output_tokens\":1}}}\n\n"
     "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
     "\"usage\":{\"input_tokens\":200,\"cache_creation_input_tokens\":200,\"cache_read_input_tokens\":600,"
     "\"output_tokens\":300}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
     {1000, 300, 600, 200, 0}},
    // candidatesTokenCount leaves the thoughts out.
    {"gemini",
     Wire::Gemini,
     R"({"candidates":[],"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":180,)"
     R"("cachedContentTokenCount":600,"thoughtsTokenCount":120,"totalTokenCount":1300}})",
     "data: {\"candidates\":[],\"usageMetadata\":{\"promptTokenCount\":1000,\"cachedContentTokenCount\":600}}\r\n\r\n"
     "data: {\"candidates\":[],\"usageMetadata\":{\"promptTokenCount\":1000,\"candidatesTokenCount\":180,"
     "\"cachedContentTokenCount\":600,\"thoughtsTokenCount\":120,\"totalTokenCount\":1300}}\r\n\r\n",
     {1000, 300, 600, 0, 120}},
};

TEST(UsageTapTest, WholeBodiesOfEachFormat) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    Usage u;
    ASSERT_TRUE(usageFromBody(c.wire, c.whole, u));
    EXPECT_EQ(countsOf(u), c.expected);
  }
}

TEST(UsageTapTest, StreamsOfEachFormatPassOnUnchanged) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    for (std::size_t split : {c.stream.size(), std::size_t{7}}) {
      auto tap = makeStreamTap(c.wire, false);
      std::string out;
      for (std::size_t i = 0; i < c.stream.size(); i += split) ASSERT_TRUE(tap->feed(c.stream.substr(i, split), out));
      tap->finish(out);
      EXPECT_EQ(out, c.stream);
      EXPECT_EQ(countsOf(tap->usage()), c.expected);
    }
  }
}

TEST(UsageTapTest, CanonicalUsageKeepsAllFiveCounts) {
  providers::Usage cu;
  cu.input = 1000;
  cu.output = 300;
  cu.cached = 600;
  cu.cache_creation = 200;
  cu.reasoning = 120;
  EXPECT_EQ(countsOf(fromCanonical(cu)), (Counts{1000, 300, 600, 200, 120}));
  cu.cache_creation = cu.reasoning = -1;  // not reported
  EXPECT_EQ(countsOf(fromCanonical(cu)), (Counts{1000, 300, 600, 0, 0}));
}

}  // namespace usage_tap_test
}  // namespace
}  // namespace sluice::gateway
