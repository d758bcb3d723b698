// The Responses API as an upstream format (a ChatGPT subscription channel, ChatGPT's Codex
// endpoint): requests made fit for it, its streams and whole answers translated to each client.
#include "providers/openai/ResponsesUpstream.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "TranslateTestUtil.hpp"
#include "providers/openai/ResponsesCodec.hpp"

namespace sluice::providers {
namespace {

namespace json = boost::json;
using testing::fixedContext;
using testing::readFixture;
using testing::translateStream;

json::object parsed(const std::string& s) {
  return json::parse(s).as_object();
}

TEST(ResponsesUpstream, ChatRequestForTheCodexEndpoint) {
  const std::string chat = R"({"model":"gpt-5","max_tokens":99,"temperature":0.2,"top_p":0.5,"stop":["x"],"user":"u1",
    "messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Weather?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"w","arguments":"{\"c\":\"P\"}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"sunny"}],
    "tools":[{"type":"function","function":{"name":"w","description":"weather","parameters":{"type":"object"}}}],"tool_choice":"auto"})";
  TranslateContext ctx = fixedContext();
  ctx.codex = true;
  ctx.upstream_model = "gpt-5-codex";
  std::string out;
  ASSERT_FALSE(translateRequest(Format::OpenAIChat, Format::OpenAIResponses, chat, out, ctx));
  const auto o = parsed(out);
  EXPECT_EQ("gpt-5-codex", o.at("model").as_string());
  EXPECT_EQ("Be terse.", o.at("instructions").as_string());
  EXPECT_EQ(true, o.at("stream").as_bool());
  EXPECT_EQ(false, o.at("store").as_bool());
  for (const char* dropped : {"max_output_tokens", "temperature", "top_p", "stop", "user"})
    EXPECT_FALSE(o.contains(dropped)) << dropped;
  EXPECT_EQ(json::parse(R"([
    {"type":"message","role":"user","content":[{"type":"input_text","text":"Weather?"}]},
    {"type":"function_call","call_id":"call_1","name":"w","arguments":"{\"c\":\"P\"}"},
    {"type":"function_call_output","call_id":"call_1","output":"sunny"}])"),
            o.at("input"));
  EXPECT_EQ(
      json::parse(
          R"([{"type":"function","name":"w","description":"weather","parameters":{"type":"object"},"strict":false}])"),
      o.at("tools"));
  EXPECT_EQ("auto", o.at("tool_choice").as_string());

  // No system prompt: the endpoint requires instructions all the same.
  out.clear();
  ASSERT_FALSE(translateRequest(Format::AnthropicMessages, Format::OpenAIResponses,
                                R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})", out,
                                ctx));
  EXPECT_EQ(openai::kDefaultInstructions, parsed(out).at("instructions").as_string());
  // n > 1 cannot be asked of it.
  EXPECT_TRUE(translateRequest(Format::OpenAIChat, Format::OpenAIResponses,
                               R"({"model":"m","n":2,"messages":[{"role":"user","content":"hi"}]})", out, ctx));
}

TEST(ResponsesUpstream, ResponsesClientBodyMadeFitForCodex) {
  auto made = openai::codexRequestBody(R"({"model":"a","input":"hi","max_output_tokens":5,"store":true})", "b");
  ASSERT_TRUE(made);
  const auto o = parsed(*made);
  EXPECT_EQ("b", o.at("model").as_string());
  EXPECT_EQ(true, o.at("stream").as_bool());
  EXPECT_EQ(false, o.at("store").as_bool());
  EXPECT_EQ(openai::kDefaultInstructions, o.at("instructions").as_string());
  EXPECT_FALSE(o.contains("max_output_tokens"));
  EXPECT_FALSE(openai::codexRequestBody("[1]", ""));
}

TEST(ResponsesUpstream, StreamToEachClient) {
  const std::string sse = readFixture("responses/reference_text_stream.sse");
  Usage usage;
  const std::string chat = translateStream(Format::OpenAIChat, Format::OpenAIResponses, {sse}, fixedContext(), &usage);
  EXPECT_NE(std::string::npos, chat.find(R"("content":"Hi")")) << chat;
  EXPECT_NE(std::string::npos, chat.find(R"("finish_reason":"stop")")) << chat;
  EXPECT_TRUE(chat.ends_with("data: [DONE]\n\n")) << chat;
  EXPECT_EQ(37, usage.input);
  EXPECT_EQ(11, usage.output);
  const std::string anth = translateStream(Format::AnthropicMessages, Format::OpenAIResponses, {sse}, fixedContext());
  EXPECT_NE(std::string::npos, anth.find(R"("id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654")")) << anth;
  EXPECT_NE(std::string::npos, anth.find(R"("output_tokens":11)")) << anth;
  EXPECT_NE(std::string::npos, anth.find("event: message_stop")) << anth;

  // A function call, its arguments in deltas, split byte by byte.
  const std::string calls = readFixture("responses/reference_function_call_stream.sse") +
                            "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":"
                            "\"resp_c\",\"usage\":{\"input_tokens\":4,\"output_tokens\":6}}}\n\n";
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < calls.size(); ++i) bytes.push_back(std::string_view(calls).substr(i, 1));
  const std::string gem = translateStream(Format::GeminiGenerate, Format::OpenAIResponses, bytes, fixedContext());
  EXPECT_NE(
      std::string::npos,
      gem.find(R"("functionCall":{"id":"call_1234xyz","name":"get_weather","args":{"location":"Paris, France"}})"))
      << gem;
  EXPECT_NE(std::string::npos, gem.find(R"("candidatesTokenCount":6)")) << gem;
}

TEST(ResponsesUpstream, ErrorEventsEndTheStream) {
  const std::string sse =
      "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\"}}\n\n"
      "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_1\","
      "\"error\":{\"code\":\"server_error\",\"message\":\"it broke\"}}}\n\n";
  const std::string chat = translateStream(Format::OpenAIChat, Format::OpenAIResponses, {sse}, fixedContext());
  EXPECT_NE(std::string::npos, chat.find("it broke")) << chat;
  std::string assembled;
  auto err = openai::assembleResponsesStream(sse, assembled);
  ASSERT_TRUE(err);
  EXPECT_EQ("it broke", err->message);
  EXPECT_TRUE(
      openai::assembleResponsesStream("event: response.created\ndata: {\"type\":\"response.created\"}\n\n", assembled));
}

TEST(ResponsesUpstream, WholeAnswerAssembledFromTheStream) {
  // The Codex endpoint may leave response.completed's output empty: the items come from
  // output_item.done.
  const std::string sse =
      "event: response.created\ndata: "
      "{\"type\":\"response.created\",\"response\":{\"id\":\"resp_9\",\"model\":\"gpt-5\"}}\n\n"
      "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,"
      "\"item\":{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hello\"}"
      "]}}\n\n"
      "event: response.completed\ndata: "
      "{\"type\":\"response.completed\",\"response\":{\"id\":\"resp_9\",\"model\":\"gpt-5\","
      "\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":7,\"output_tokens\":3,"
      "\"input_tokens_details\":{\"cached_tokens\":2}}}}\n\n";
  std::string assembled;
  ASSERT_FALSE(openai::assembleResponsesStream(sse, assembled));
  EXPECT_EQ("Hello", parsed(assembled).at("output").as_array()[0].at("content").as_array()[0].at("text").as_string());
  std::string body;
  Usage usage;
  ASSERT_FALSE(
      translateResponse(Format::AnthropicMessages, Format::OpenAIResponses, sse, body, fixedContext(), &usage));
  const auto o = parsed(body);
  EXPECT_EQ("resp_9", o.at("id").as_string());
  EXPECT_EQ("Hello", o.at("content").as_array()[0].at("text").as_string());
  EXPECT_EQ("end_turn", o.at("stop_reason").as_string());
  EXPECT_EQ(7, usage.input);
  EXPECT_EQ(2, usage.cached);
  EXPECT_EQ(3, usage.output);
  // A function call answer.
  body.clear();
  ASSERT_FALSE(translateResponse(Format::OpenAIChat, Format::OpenAIResponses,
                                 readFixture("responses/reference_function_call_response.json"), body, fixedContext()));
  const auto c = parsed(body).at("choices").as_array()[0].as_object();
  EXPECT_EQ("tool_calls", c.at("finish_reason").as_string());
  EXPECT_EQ("get_current_weather",
            c.at("message").at("tool_calls").as_array()[0].at("function").at("name").as_string());
}

TEST(ResponsesUpstream, TheCodexEndpointsRefusalReadsAsItsDetail) {
  const std::string body =
      translateError(Format::OpenAIChat, Format::OpenAIResponses, 400, R"({"detail":"Stream must be set to true"})");
  EXPECT_EQ("Stream must be set to true", parsed(body).at("error").at("message").as_string());
}

}  // namespace
}  // namespace sluice::providers
