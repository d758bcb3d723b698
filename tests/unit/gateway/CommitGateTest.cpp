#include "gateway/CommitGate.hpp"

#include "cloud/EventStream.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::gateway {
namespace {
namespace commit_gate_test {

using providers::Format;
using V = CommitGate::Verdict;

// Feeds `stream` split at every byte boundary pattern of a given step; the verdict must not
// depend on how the upstream's bytes were cut.
V feedAll(Format f, const std::string& stream, std::size_t step, CommitGate* out = nullptr) {
  CommitGate g(f);
  V v = V::Hold;
  for (std::size_t i = 0; i < stream.size(); i += step) v = g.feed(std::string_view(stream).substr(i, step));
  if (out) *out = g;
  return v;
}

void expectEverySplit(Format f, const std::string& stream, V want, int status = 0) {
  for (std::size_t step : {std::size_t(1), std::size_t(2), std::size_t(7), stream.size()}) {
    CommitGate g(f);
    EXPECT_EQ(feedAll(f, stream, step, &g), want) << "step " << step << ":\n" << stream;
    if (want == V::Fail) {
      EXPECT_EQ(g.status(), status) << stream;
    }
  }
}

TEST(CommitGate, OpenAIChatCommitsOnContentToolCallsReasoningOrFinish) {
  const std::string role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
  expectEverySplit(Format::OpenAIChat, role, V::Hold);
  expectEverySplit(Format::OpenAIChat, role + "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n", V::Commit);
  expectEverySplit(Format::OpenAIChat,
                   role + "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\"}]}}]}\n\n",
                   V::Commit);
  expectEverySplit(Format::OpenAIChat, role + "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\n",
                   V::Commit);
  expectEverySplit(Format::OpenAIChat, role + "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
                   V::Commit);
  expectEverySplit(Format::OpenAIChat, role + "data: [DONE]\n\n", V::Commit);
  // Usage alone (the last chunk) ends an empty answer; empty choices without it do not.
  expectEverySplit(Format::OpenAIChat, "data: {\"choices\":[],\"usage\":{\"total_tokens\":3}}\n\n", V::Commit);
  expectEverySplit(Format::OpenAIChat, "data: {\"choices\":[]}\n\n", V::Hold);
  // SSE comments and unfinished events hold.
  expectEverySplit(Format::OpenAIChat, ": keep-alive\n\n", V::Hold);
  expectEverySplit(Format::OpenAIChat, "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}", V::Hold);
}

TEST(CommitGate, OpenAIChatErrorsAndGarbageFail) {
  expectEverySplit(Format::OpenAIChat,
                   "data: {\"error\":{\"message\":\"Rate limit\",\"type\":\"rate_limit_error\",\"code\":\"rate_limit_exceeded\"}}\n\n",
                   V::Fail, 429);
  expectEverySplit(Format::OpenAIChat,
                   "data: {\"error\":{\"message\":\"busy\",\"type\":\"server_error\",\"code\":\"server_overloaded\"}}\n\n",
                   V::Fail, 503);
  expectEverySplit(Format::OpenAIChat, "data: {\"error\":{\"message\":\"x\",\"type\":\"server_error\"}}\n\n", V::Fail, 500);
  expectEverySplit(Format::OpenAIChat, "data: {\"error\":\"a string\"}\n\n", V::Fail, 500);
  expectEverySplit(Format::OpenAIChat, "data: {\"choices\":[{\"delta\":{\"content\":\"cut\"\n\n", V::Fail, 502);
  expectEverySplit(Format::OpenAIChat, "data: [1,2]\n\n", V::Fail, 502);
  expectEverySplit(Format::OpenAIChat, "data: \xff\xfe\n\n", V::Fail, 502);
  // After a commit, an error is the stream's: the gate is done.
  CommitGate g(Format::OpenAIChat);
  EXPECT_EQ(g.feed("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"), V::Commit);
  EXPECT_EQ(g.feed("data: {\"error\":{\"message\":\"x\"}}\n\n"), V::Commit);
  CommitGate e(Format::OpenAIChat);
  EXPECT_EQ(e.feed("data: {\"error\":{\"message\":\"line\\none\",\"type\":\"server_error\"}}\n\n"), V::Fail);
  EXPECT_EQ(e.message(), "line one");
  EXPECT_NE(e.errorData().find("server_error"), std::string::npos);
}

TEST(CommitGate, Responses) {
  const std::string created =
      "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n"
      "event: response.in_progress\ndata: {\"type\":\"response.in_progress\"}\n\n"
      "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"item\":{\"type\":\"message\"}}\n\n"
      "event: response.content_part.added\ndata: {\"type\":\"response.content_part.added\"}\n\n";
  expectEverySplit(Format::OpenAIResponses, created, V::Hold);
  expectEverySplit(Format::OpenAIResponses,
                   created + "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n",
                   V::Commit);
  expectEverySplit(Format::OpenAIResponses,
                   "data: {\"type\":\"response.output_item.added\",\"item\":{\"type\":\"function_call\"}}\n\n", V::Commit);
  expectEverySplit(Format::OpenAIResponses,
                   created + "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\","
                             "\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"slow down\"}}}\n\n",
                   V::Fail, 429);
  expectEverySplit(Format::OpenAIResponses, "data: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\"}\n\n",
                   V::Fail, 500);
  expectEverySplit(Format::OpenAIResponses, "data: {\"type\":\"response.failed\"}\n\n", V::Fail, 500);
}

TEST(CommitGate, Anthropic) {
  const std::string start =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\n"
      "event: ping\ndata: {\"type\": \"ping\"}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
  expectEverySplit(Format::AnthropicMessages, start, V::Hold);
  expectEverySplit(Format::AnthropicMessages,
                   start + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
                   V::Commit);
  expectEverySplit(Format::AnthropicMessages,
                   "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\"}}\n\n",
                   V::Commit);
  expectEverySplit(Format::AnthropicMessages,
                   start + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
                   V::Fail, 529);
  expectEverySplit(Format::AnthropicMessages,
                   "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"x\"}}\n\n", V::Fail,
                   429);
  expectEverySplit(Format::AnthropicMessages,
                   "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"x\"}}\n\n", V::Fail, 500);
  expectEverySplit(Format::AnthropicMessages, "event: error\ndata: nonsense\n\n", V::Fail, 502);
  expectEverySplit(Format::AnthropicMessages, "event: content_block_start\ndata: {\n\n", V::Fail, 502);
  expectEverySplit(Format::AnthropicMessages, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", V::Commit);
}

TEST(CommitGate, Gemini) {
  expectEverySplit(Format::GeminiGenerate,
                   "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"}}]}\r\n\r\n", V::Hold);
  expectEverySplit(Format::GeminiGenerate, "data: {\"usageMetadata\":{\"promptTokenCount\":3}}\r\n\r\n", V::Hold);
  expectEverySplit(Format::GeminiGenerate,
                   "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}],\"role\":\"model\"}}]}\r\n\r\n", V::Commit);
  expectEverySplit(Format::GeminiGenerate,
                   "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\"}}]}}]}\r\n\r\n", V::Commit);
  expectEverySplit(Format::GeminiGenerate, "data: {\"candidates\":[{\"finishReason\":\"SAFETY\"}]}\r\n\r\n", V::Commit);
  expectEverySplit(Format::GeminiGenerate, "data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"}}\r\n\r\n", V::Commit);
  expectEverySplit(Format::GeminiGenerate,
                   "data: {\"error\":{\"code\":503,\"message\":\"overloaded\",\"status\":\"UNAVAILABLE\"}}\r\n\r\n", V::Fail, 503);
  expectEverySplit(Format::GeminiGenerate, "data: {\"error\":{\"code\":99,\"message\":\"odd\"}}\r\n\r\n", V::Fail, 500);
}

TEST(CommitGate, HoldsAtMostABoundedAmount) {
  CommitGate g(Format::OpenAIChat);
  const std::string role = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n";
  V v = V::Hold;
  std::size_t fed = 0;
  while (v == V::Hold && fed <= 2 * CommitGate::kMaxHeld) {
    v = g.feed(role);
    fed += role.size();
  }
  EXPECT_EQ(v, V::Commit);
  EXPECT_GT(fed, CommitGate::kMaxHeld);
  EXPECT_LE(fed, CommitGate::kMaxHeld + role.size());
  // One event past the splitter's bound commits too (the tap then reports it).
  CommitGate big(Format::OpenAIChat);
  EXPECT_EQ(big.feed("data: " + std::string(8u << 20, 'x')), V::Commit);
}

// Bedrock's ConverseStream: binary frames, held until text or a tool call; an exception frame
// before that fails the attempt with the status AWS gives the exception; a corrupted frame too.
std::string awsEvent(const std::string& type, const std::string& payload) {
  return cloud::encodeEventStreamMessage(
      {{":event-type", type}, {":content-type", "application/json"}, {":message-type", "event"}}, payload);
}
std::string awsException(const std::string& name, const std::string& payload) {
  return cloud::encodeEventStreamMessage(
      {{":exception-type", name}, {":content-type", "application/json"}, {":message-type", "exception"}}, payload);
}

TEST(CommitGate, BedrockConverseStream) {
  const std::string start = awsEvent("messageStart", R"({"role":"assistant"})");
  expectEverySplit(Format::BedrockConverse, start, V::Hold);
  expectEverySplit(Format::BedrockConverse, start + awsEvent("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"text":""}})"),
                   V::Hold);
  expectEverySplit(Format::BedrockConverse, start + awsEvent("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"text":"Hi"}})"),
                   V::Commit);
  expectEverySplit(Format::BedrockConverse,
                   start + awsEvent("contentBlockStart",
                                    R"({"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"t","name":"f"}}})"),
                   V::Commit);
  expectEverySplit(Format::BedrockConverse,
                   start + awsEvent("contentBlockDelta",
                                    R"({"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"hm"}}})"),
                   V::Commit);
  expectEverySplit(Format::BedrockConverse, start + awsEvent("messageStop", R"({"stopReason":"end_turn"})"), V::Commit);
  expectEverySplit(Format::BedrockConverse, start + awsException("throttlingException", R"({"message":"Too many requests"})"),
                   V::Fail, 429);
  expectEverySplit(Format::BedrockConverse, start + awsException("serviceUnavailableException", R"({"message":"busy"})"),
                   V::Fail, 503);
  expectEverySplit(Format::BedrockConverse, awsException("validationException", R"({"message":"bad\ninput"})"), V::Fail,
                   400);
  CommitGate g(Format::BedrockConverse);
  EXPECT_EQ(g.feed(start + awsException("modelStreamErrorException", R"({"message":"boom"})")), V::Fail);
  EXPECT_EQ(g.message(), "modelStreamErrorException: boom");
  EXPECT_EQ(g.status(), 502);  // AWS's 424: the model failed upstream, another channel may do
  EXPECT_NE(g.errorData().find("modelStreamErrorException"), std::string::npos);
  std::string corrupt = start;
  corrupt[corrupt.size() - 1] ^= 0x01;  // the message CRC
  expectEverySplit(Format::BedrockConverse, corrupt, V::Fail, 502);
  // Complete frames decide before malformed bytes that follow them in the same read, as they
  // would in smaller reads (found by fuzz_commit_gate).
  expectEverySplit(Format::BedrockConverse,
                   start + awsException("throttlingException", R"({"message":"Too many requests"})") + "content_block",
                   V::Fail, 429);
}

}  // namespace commit_gate_test
}  // namespace
}  // namespace sluice::gateway
