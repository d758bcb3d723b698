#include "gateway/StreamSplice.hpp"

#include <gtest/gtest.h>

#include <string>

#include "providers/Translate.hpp"

namespace sluice::gateway {
namespace {
namespace stream_splice_test {

using providers::Format;
using providers::StreamTranslator;

// Attempt `n`'s translator, writing through the splice.
std::unique_ptr<StreamTranslator> attempt(StreamSplice& s, Format client, Format upstream) {
  providers::TranslateContext tc;
  tc.include_usage = true;
  tc.created = 1;
  tc.wrap_encoder = [&s](std::unique_ptr<providers::StreamEncoder> fresh) {
    return s.encoderFor(std::move(fresh), {});
  };
  return providers::makeStreamTranslator(client, upstream, tc);
}

std::string chatChunk(std::string_view delta) {
  return std::string(
             "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{"
             "\"index\":0,\"delta\":") +
         std::string(delta) + ",\"finish_reason\":null}]}\n\n";
}

TEST(StreamSplice, AContinuationAddsItsTextToTheSameStreamWithOneRoleAndOneFinish) {
  StreamSplice s;
  std::string out;
  auto first = attempt(s, Format::OpenAIChat, Format::AnthropicMessages);
  ASSERT_TRUE(first->feed(
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\","
      "\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
      "\"text\",\"text\":\"\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
      "\"text_delta\",\"text\":\"Hello there \"}}\n\n",
      out));
  EXPECT_TRUE(s.continuable());
  EXPECT_EQ(s.text(), "Hello there ");
  s.broke(7);
  first.reset();
  EXPECT_TRUE(s.continuing());
  EXPECT_EQ(s.outputSoFar(), 3);  // 12 bytes: 3 tokens, more than the 1 message_start said
  const std::size_t before = out.size();
  auto second = attempt(s, Format::OpenAIChat, Format::OpenAIChat);
  ASSERT_TRUE(
      second->feed(chatChunk("{\"role\":\"assistant\",\"content\":\"\"}") + chatChunk("{\"content\":\" world\"}") +
                       "data: {\"id\":\"c2\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                       "data: {\"id\":\"c2\",\"choices\":[],\"usage\":{\"prompt_tokens\":14,\"completion_tokens\":"
                       "2,\"total_tokens\":16}}\n\ndata: [DONE]\n\n",
                   out));
  second->finish(out);
  const std::string tail = out.substr(before);
  EXPECT_EQ(tail.find("\"role\""), std::string::npos) << tail;               // no second role
  EXPECT_NE(tail.find("\"content\":\"world\""), std::string::npos) << tail;  // the repeated space left out
  EXPECT_EQ(tail.find("\"id\":\"c2\""), std::string::npos) << tail;          // the stream's id throughout
  EXPECT_NE(tail.find("\"finish_reason\":\"stop\""), std::string::npos);
  // Summed: input 10 + 14, output 3 (estimated) + 2.
  EXPECT_NE(tail.find("\"prompt_tokens\":24,\"completion_tokens\":5"), std::string::npos) << tail;
  EXPECT_EQ(s.usage().input, 24);
  EXPECT_EQ(s.usage().output, 5);
  EXPECT_EQ(s.text(), "Hello there world");
}

TEST(StreamSplice, AnErrorAfterContentIsHeldWhileTheAnswerCanBeContinued) {
  StreamSplice s;
  std::string out;
  auto t = attempt(s, Format::OpenAIChat, Format::OpenAIChat);
  ASSERT_TRUE(t->feed(chatChunk("{\"role\":\"assistant\",\"content\":\"Hi\"}") +
                          "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n",
                      out));
  ASSERT_TRUE(s.takeHeldError().has_value());
  EXPECT_EQ(out.find("overloaded"), std::string::npos) << out;
}

TEST(StreamSplice, AnErrorBeforeAnyContentIsTheStreamsOwn) {
  StreamSplice s;
  std::string out;
  auto t = attempt(s, Format::OpenAIChat, Format::OpenAIChat);
  ASSERT_TRUE(t->feed("data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n", out));
  EXPECT_FALSE(s.takeHeldError().has_value());
  EXPECT_NE(out.find("overloaded"), std::string::npos);
}

TEST(StreamSplice, ABegunToolCallIsNotContinuable) {
  StreamSplice s;
  std::string out;
  auto t = attempt(s, Format::AnthropicMessages, Format::OpenAIChat);
  ASSERT_TRUE(t->feed(chatChunk("{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":"
                                "\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\"}}]}"),
                      out));
  EXPECT_FALSE(s.continuable());
  std::string end;
  s.fail(providers::ApiError{502, providers::ErrorKind::Api, "cut", {}, {}}, end);
  // The open tool block is closed before the error event.
  EXPECT_NE(end.find("content_block_stop"), std::string::npos) << end;
  EXPECT_NE(end.find("event: error"), std::string::npos) << end;
}

TEST(StreamSplice, AContinuationDropsItsReasoningAndItsStart) {
  StreamSplice s;
  std::string out;
  auto first = attempt(s, Format::AnthropicMessages, Format::OpenAIChat);
  ASSERT_TRUE(first->feed(chatChunk("{\"role\":\"assistant\",\"content\":\"One\"}"), out));
  s.broke(1);
  first.reset();
  const std::size_t before = out.size();
  auto second = attempt(s, Format::AnthropicMessages, Format::AnthropicMessages);
  ASSERT_TRUE(second->feed(
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"model\":\"m\","
      "\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
      "\"thinking\",\"thinking\":\"\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
      "\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":"
      "\"text\",\"text\":\"\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":"
      "\"text_delta\",\"text\":\" two\"}}\n\n",
      out));
  const std::string tail = out.substr(before);
  EXPECT_EQ(tail.find("message_start"), std::string::npos) << tail;
  EXPECT_EQ(tail.find("thinking"), std::string::npos) << tail;
  EXPECT_EQ(tail.find("content_block_start"), std::string::npos) << tail;  // the open text block goes on
  EXPECT_NE(tail.find("\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" two\"}"), std::string::npos) << tail;
}

TEST(Resume, APrefillForAnthropicAndAnInstructionForTheOthers) {
  const std::string body = R"({"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"hi"}]})";
  providers::Resume r;
  r.text = "Hello there \n";
  r.prefill = true;
  r.output_so_far = 30;
  providers::TranslateContext tc;
  tc.resume = &r;
  std::string out;
  ASSERT_FALSE(providers::translateRequest(Format::OpenAIChat, Format::AnthropicMessages, body, out, tc));
  EXPECT_NE(out.find(R"({"role":"assistant","content":[{"type":"text","text":"Hello there"}]})"), std::string::npos)
      << out;
  EXPECT_NE(out.find(R"("max_tokens":70)"), std::string::npos) << out;
  r.prefill = false;
  out.clear();
  ASSERT_FALSE(providers::translateRequest(Format::OpenAIChat, Format::OpenAIChat, body, out, tc));
  EXPECT_NE(out.find(R"({"role":"assistant","content":"Hello there \n"})"), std::string::npos) << out;
  EXPECT_NE(out.find(std::string(providers::kResumeInstruction)), std::string::npos) << out;
}

TEST(Resume, TheClientsOwnPrefillIsTheStartOfTheAnswer) {
  const std::string body =
      R"({"model":"c","max_tokens":100,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"{"}]})";
  providers::Resume r;
  r.text = "\"a\":";
  r.prefill = true;
  providers::TranslateContext tc;
  tc.resume = &r;
  std::string out;
  ASSERT_FALSE(providers::translateRequest(Format::AnthropicMessages, Format::AnthropicMessages, body, out, tc));
  EXPECT_NE(out.find(R"("text":"{\"a\":")"), std::string::npos) << out;
}

}  // namespace stream_splice_test
}  // namespace
}  // namespace sluice::gateway
