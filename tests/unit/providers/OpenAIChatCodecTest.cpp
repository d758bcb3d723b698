// OpenAI Chat codec: request decoding rules and bad inputs.
#include "providers/openai/ChatCodec.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "providers/Translate.hpp"

namespace sluice::providers::openai {
namespace {
namespace open_a_i_chat_codec_test {

std::optional<ApiError> decode(std::string_view body) {
  Request r;
  return decodeChatRequest(body, r);
}

void expectBad(std::string_view body, std::string_view param, std::string_view messagePart) {
  auto err = decode(body);
  ASSERT_TRUE(err) << body;
  EXPECT_EQ(err->status, 400);
  EXPECT_EQ(err->param, param) << body;
  EXPECT_NE(err->message.find(messagePart), std::string::npos) << err->message;
}

TEST(OpenAIChatCodec, BadRequestsGetClearErrors) {
  expectBad("not json", "", "not valid JSON");
  expectBad("[1]", "", "JSON object");
  expectBad(R"({"messages":[{"role":"user","content":"hi"}]})", "model", "model is required");
  expectBad(R"({"model":"m"})", "messages", "messages is required");
  expectBad(R"({"model":"m","messages":{}})", "messages", "must be an array");
  expectBad(R"({"model":"m","messages":[]})", "messages", "must not be empty");
  expectBad(R"({"model":"m","messages":[{"role":"user","content":""}]})", "messages[0].content", "must not be empty");
  expectBad(R"({"model":"m","messages":[{"role":"user"}]})", "messages[0].content", "is required");
  expectBad(R"({"model":"m","messages":[{"role":"user","content":5}]})", "messages[0].content", "string or an array");
  expectBad(R"({"model":"m","messages":[{"role":"wizard","content":"x"}]})", "messages[0].role", "not one of");
  expectBad(R"({"model":"m","messages":[{"role":"function","name":"f","content":"x"}]})", "messages[0].role",
            "deprecated");
  expectBad(R"({"model":"m","messages":[{"role":"assistant","content":null}]})", "messages[0]",
            "neither content nor tool_calls");
  expectBad(R"({"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]})",
            "messages[0].content[0].type", "input_audio");
  expectBad(
      R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{oops"}}]}]})",
      "messages[0].tool_calls[0].function.arguments", "JSON object");
  expectBad(R"({"model":"m","messages":[{"role":"tool","content":"x"}]})", "messages[0].tool_call_id", "is required");
  expectBad(R"({"model":"m","messages":[{"role":"user","content":"x"}],"temperature":"hot"})", "temperature", "number");
  expectBad(R"({"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":0})", "max_tokens", "at least 1");
  expectBad(R"({"model":"m","messages":[{"role":"user","content":"x"}],"stop":5})", "stop", "string or an array");
  expectBad(R"({"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search"}]})",
            "tools[0].type", "no equivalent");
  expectBad(R"({"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"sometimes"})", "tool_choice",
            "tool_choice must be");
  expectBad(R"({"model":"m","messages":[{"role":"user","content":"x"}],"logprobs":true})", "logprobs", "logprobs");
  expectBad(R"({"model":"m","messages":[{"role":"system","content":"only system"}]})", "messages", "at least one");
}

TEST(OpenAIChatCodec, ToolResultsGetTheirFunctionNameAndStayInOneTurn) {
  Request r;
  auto err = decodeChatRequest(
      R"({"model":"m","messages":[{"role":"user","content":"x"},
          {"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":""}},
                                            {"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},
          {"role":"tool","tool_call_id":"a","content":"1"},{"role":"tool","tool_call_id":"b","content":"2"}]})",
      r);
  ASSERT_FALSE(err) << err->message;
  ASSERT_EQ(r.messages.size(), 3u);
  ASSERT_EQ(r.messages[2].parts.size(), 2u);
  EXPECT_EQ(r.messages[2].parts[0].name, "f");
  EXPECT_EQ(r.messages[2].parts[1].name, "g");
  EXPECT_EQ(r.messages[1].parts[0].arguments, "{}");
}

TEST(OpenAIChatCodec, ReasoningEffortMapsToABudget) {
  Request r;
  ASSERT_FALSE(
      decodeChatRequest(R"({"model":"m","messages":[{"role":"user","content":"x"}],"reasoning_effort":"high"})", r));
  EXPECT_EQ(r.reasoning_budget, kReasoningBudgetHigh);
  std::string out;
  TranslateContext ctx;
  ASSERT_FALSE(translateRequest(Format::OpenAIChat, Format::AnthropicMessages,
                                R"({"model":"m","messages":[{"role":"user","content":"x"}],"reasoning_effort":"low"})",
                                out, ctx));
  auto v = boost::json::parse(out);
  EXPECT_EQ(v.at("thinking").at("budget_tokens").as_int64(), kReasoningBudgetLow);
  EXPECT_GT(v.at("max_tokens").as_int64(), kReasoningBudgetLow);
}

TEST(OpenAIChatCodec, UpstreamRequestAsksForUsageAndCanUseMaxCompletionTokens) {
  Request r;
  r.model = "claude";
  r.messages.push_back(Message{Role::User, {Part::makeText("hi")}});
  r.stream = true;
  r.max_tokens = 100;
  EncodeOptions o;
  o.model = "gpt-4.1";
  o.openai_max_completion_tokens = true;
  std::string out;
  ASSERT_FALSE(encodeChatRequest(r, o, out));
  EXPECT_EQ(
      out,
      R"({"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":100,"stream":true,"stream_options":{"include_usage":true}})");
}

TEST(OpenAIChatCodec, ToolResultWithImageCannotGoToOpenAI) {
  std::string out;
  TranslateContext ctx;
  auto err = translateRequest(Format::AnthropicMessages, Format::OpenAIChat,
                              R"({"model":"c","max_tokens":10,"messages":[{"role":"user","content":"x"},
          {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},
          {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]}]})",
                              out, ctx);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "messages[2]");
}

TEST(OpenAIChatCodec, ErrorBodyShape) {
  ApiError e{404, ErrorKind::NotFound, "The model `x` does not exist", "model", "model_not_found"};
  std::string out;
  encodeChatError(e, out);
  EXPECT_EQ(
      out,
      R"({"error":{"message":"The model `x` does not exist","type":"not_found_error","param":"model","code":"model_not_found"}})");
}

}  // namespace open_a_i_chat_codec_test
}  // namespace
}  // namespace sluice::providers::openai
