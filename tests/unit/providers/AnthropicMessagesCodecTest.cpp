// Anthropic Messages codec: request decoding rules, encoding rules and bad inputs.
#include "providers/anthropic/MessagesCodec.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "providers/Translate.hpp"

namespace sluice::providers::anthropic {
namespace {
namespace anthropic_messages_codec_test {

void expectBad(std::string_view body, std::string_view param, std::string_view messagePart) {
  Request r;
  auto err = decodeMessagesRequest(body, r);
  ASSERT_TRUE(err) << body;
  EXPECT_EQ(err->status, 400);
  EXPECT_EQ(err->param, param) << body;
  EXPECT_NE(err->message.find(messagePart), std::string::npos) << err->message;
}

std::optional<ApiError> toAnthropic(std::string_view openaiBody, boost::json::value& out) {
  std::string body;
  TranslateContext ctx;
  auto err = translateRequest(Format::OpenAIChat, Format::AnthropicMessages, openaiBody, body, ctx);
  if (!err) out = boost::json::parse(body);
  return err;
}

TEST(AnthropicMessagesCodec, BadRequestsGetClearErrors) {
  expectBad(R"({"model":"c","max_tokens":1})", "messages", "messages is required");
  expectBad(R"({"model":"c","max_tokens":1,"messages":[]})", "messages", "must not be empty");
  expectBad(R"({"model":"c","messages":[{"role":"user","content":""}]})", "messages[0].content", "must not be empty");
  expectBad(R"({"model":"c","messages":[{"role":"user","content":[]}]})", "messages[0].content", "must not be empty");
  expectBad(R"({"model":"c","messages":[{"role":"user","content":[{"type":"document","source":{}}]}]})",
            "messages[0].content[0].type", "document");
  expectBad(
      R"({"model":"c","messages":[{"role":"user","content":[{"type":"tool_use","id":"x","name":"f","input":{}}]}]})",
      "messages[0].content[0].type", "in a user message");
  expectBad(
      R"({"model":"c","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"f","input":[]}]}]})",
      "messages[0].content[0].input", "must be an object");
  expectBad(
      R"({"model":"c","messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]})",
      "tools[0].type", "no equivalent");
  expectBad(R"({"model":"c","messages":[{"role":"user","content":"x"}],"tools":[{"name":"f"}]})",
            "tools[0].input_schema", "must be an object");
  expectBad(R"({"model":"c","messages":[{"role":"user","content":"x"}],"thinking":{"type":"enabled"}})",
            "thinking.budget_tokens", "required");
  expectBad(R"({"model":"c","messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"maybe"}})",
            "tool_choice.type", "auto, any, tool or none");
  expectBad(
      R"({"model":"c","messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}]})",
      "messages[0].content[0].source.type", "cannot be translated");
}

TEST(AnthropicMessagesCodec, AcceptsSystemRoleEntriesAndEmptyTools) {
  Request r;
  auto err = decodeMessagesRequest(
      R"({"model":"c","max_tokens":5,"tools":[],"system":"a","messages":[{"role":"system","content":"b"},{"role":"user","content":"hi"}]})",
      r);
  ASSERT_FALSE(err) << err->message;
  ASSERT_EQ(r.system.size(), 2u);
  EXPECT_EQ(r.system[1].text, "b");
  EXPECT_TRUE(r.tools.empty());
  std::string out;
  TranslateContext ctx;
  ASSERT_FALSE(translateRequest(
      Format::AnthropicMessages, Format::OpenAIChat,
      R"({"model":"c","max_tokens":5,"tools":[],"messages":[{"role":"system","content":"b"},{"role":"user","content":"hi"}]})",
      out, ctx));
  EXPECT_EQ(
      out,
      R"({"model":"c","messages":[{"role":"system","content":"b"},{"role":"user","content":"hi"}],"max_tokens":5})");
}

// Claude Code sends adaptive thinking (and output_config, context_management) for models it
// does not know: the upstream's default reasoning applies.
TEST(AnthropicMessagesCodec, AdaptiveThinkingLeavesTheBudgetToTheUpstream) {
  Request r;
  auto err = decodeMessagesRequest(
      R"({"model":"c","max_tokens":64,"thinking":{"type":"adaptive"},"output_config":{"effort":"high"},)"
      R"("messages":[{"role":"user","content":"hi"}]})",
      r);
  ASSERT_FALSE(err) << err->message;
  EXPECT_FALSE(r.reasoning_budget.has_value());
  Request bad;
  auto e2 = decodeMessagesRequest(R"({"model":"c","max_tokens":5,"thinking":{"type":"sometimes"},"messages":[{"role":"user","content":"hi"}]})", bad);
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->param, "thinking.type");
}

TEST(AnthropicMessagesCodec, DefaultMaxTokensIsTheNamedConstant) {
  boost::json::value v;
  ASSERT_FALSE(toAnthropic(R"({"model":"gpt","messages":[{"role":"user","content":"hi"}]})", v));
  EXPECT_EQ(v.at("max_tokens").as_int64(), kDefaultMaxTokens);
  EXPECT_EQ(v.at("messages").at(0).at("content").at(0).at("text").as_string(), "hi");
}

TEST(AnthropicMessagesCodec, UntranslatableOpenAIFieldsAreRejected) {
  boost::json::value v;
  auto e1 = toAnthropic(R"({"model":"g","messages":[{"role":"user","content":"x"}],"n":2})", v);
  ASSERT_TRUE(e1);
  EXPECT_EQ(e1->param, "n");
  auto e2 = toAnthropic(R"({"model":"g","messages":[{"role":"user","content":"x"}],"temperature":1.5})", v);
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->param, "temperature");
  auto e3 = toAnthropic(
      R"({"model":"g","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{}}}})",
      v);
  ASSERT_TRUE(e3);
  EXPECT_EQ(e3->param, "response_format");
  auto e4 = toAnthropic(
      R"({"model":"g","messages":[{"role":"user","content":"x"}],"max_tokens":100,"reasoning_effort":"high"})", v);
  ASSERT_TRUE(e4);
  EXPECT_EQ(e4->param, "max_tokens");
}

TEST(AnthropicMessagesCodec, ToolChoiceForms) {
  boost::json::value v;
  auto withBase = [](std::string_view tail) {
    std::string s =
        R"({"model":"g","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],)";
    s.append(tail);
    return s;
  };
  ASSERT_FALSE(toAnthropic(withBase(R"("tool_choice":"required"})"), v));
  EXPECT_EQ(boost::json::serialize(v.at("tool_choice")), R"({"type":"any"})");
  EXPECT_EQ(boost::json::serialize(v.at("tools").at(0)),
            R"({"name":"f","input_schema":{"type":"object","properties":{}}})");
  ASSERT_FALSE(toAnthropic(
      withBase(R"("tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false})"), v));
  EXPECT_EQ(boost::json::serialize(v.at("tool_choice")),
            R"({"type":"tool","name":"f","disable_parallel_tool_use":true})");
  ASSERT_FALSE(toAnthropic(withBase(R"("tool_choice":"none"})"), v));
  EXPECT_EQ(boost::json::serialize(v.at("tool_choice")), R"({"type":"none"})");
  ASSERT_FALSE(toAnthropic(withBase(R"("parallel_tool_calls":true})"), v));
  EXPECT_FALSE(v.as_object().contains("tool_choice"));
}

TEST(AnthropicMessagesCodec, UnsignedReasoningIsNotReplayed) {
  boost::json::value v;
  ASSERT_FALSE(toAnthropic(
      R"({"model":"g","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y","reasoning_content":"think"},{"role":"user","content":"z"}]})",
      v));
  EXPECT_EQ(boost::json::serialize(v.at("messages").at(1)),
            R"({"role":"assistant","content":[{"type":"text","text":"y"}]})");
}

TEST(AnthropicMessagesCodec, InvalidToolArgumentsInAResponseAreKeptRaw) {
  std::string out;
  TranslateContext ctx;
  ASSERT_FALSE(translateResponse(
      Format::AnthropicMessages, Format::OpenAIChat,
      R"({"id":"c","model":"g","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\": 1"}}]},"finish_reason":"length"}]})",
      out, ctx));
  auto v = boost::json::parse(out);
  EXPECT_EQ(boost::json::serialize(v.at("content").at(0).at("input")), R"({"_raw_arguments":"{\"a\": 1"})");
  EXPECT_EQ(v.at("stop_reason").as_string(), "max_tokens");
}

TEST(AnthropicMessagesCodec, StopSequenceIsReported) {
  std::string out;
  TranslateContext ctx;
  ASSERT_FALSE(translateResponse(
      Format::OpenAIChat, Format::AnthropicMessages,
      R"({"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"a"}],"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":1,"output_tokens":1}})",
      out, ctx));
  EXPECT_NE(out.find(R"("finish_reason":"stop")"), std::string::npos) << out;
  std::string back;
  ASSERT_FALSE(translateResponse(
      Format::AnthropicMessages, Format::AnthropicMessages,
      R"({"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"a"}],"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":1,"output_tokens":1}})",
      back, ctx));
  EXPECT_NE(back.find(R"("stop_reason":"stop_sequence","stop_sequence":"END")"), std::string::npos) << back;
}

}  // namespace anthropic_messages_codec_test
}  // namespace
}  // namespace sluice::providers::anthropic
