// Golden tests for every translation direction, stream splitting, stream endings and errors.
#include "providers/Translate.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "TranslateTestUtil.hpp"
#include "core/JsonText.hpp"

namespace sluice::providers {
namespace {
namespace translate_test {

using testing::expectGolden;
using testing::fixedContext;
using testing::readFixture;
using testing::translateStream;

constexpr auto kOpenAI = Format::OpenAIChat;
constexpr auto kAnthropic = Format::AnthropicMessages;

// ---- requests -----------------------------------------------------------------------------

TEST(TranslateGolden, OpenAIRequestToAnthropic) {
  std::string out;
  RequestInfo info;
  auto err = translateRequest(kOpenAI, kAnthropic, readFixture("openai_request_full.json"), out, fixedContext(), &info);
  ASSERT_FALSE(err) << err->message;
  EXPECT_TRUE(info.stream);
  EXPECT_TRUE(info.include_usage);
  EXPECT_EQ(info.model, "gpt-4o");
  expectGolden("openai_request_full.to_anthropic.json", out);
}

TEST(TranslateGolden, AnthropicRequestToOpenAI) {
  std::string out;
  RequestInfo info;
  auto err =
      translateRequest(kAnthropic, kOpenAI, readFixture("anthropic_request_full.json"), out, fixedContext(), &info);
  ASSERT_FALSE(err) << err->message;
  EXPECT_FALSE(info.stream);
  expectGolden("anthropic_request_full.to_openai.json", out);
}

TEST(TranslateGolden, AnthropicRequestRoundTripsThroughItself) {
  // Anthropic -> Anthropic keeps thinking signatures, images, tool use and results.
  std::string out;
  auto err = translateRequest(kAnthropic, kAnthropic, readFixture("anthropic_request_full.json"), out, fixedContext());
  ASSERT_FALSE(err) << err->message;
  expectGolden("anthropic_request_full.to_anthropic.json", out);
}

// ---- responses ----------------------------------------------------------------------------

TEST(TranslateGolden, OpenAIResponseToAnthropic) {
  std::string out;
  Usage usage;
  auto err =
      translateResponse(kAnthropic, kOpenAI, readFixture("openai_response_tools.json"), out, fixedContext(), &usage);
  ASSERT_FALSE(err) << err->message;
  EXPECT_EQ(out.front(), '{');  // never SSE
  EXPECT_EQ(usage.input, 91);
  EXPECT_EQ(usage.output, 14);
  expectGolden("openai_response_tools.to_anthropic.json", out);
}

TEST(TranslateGolden, AnthropicResponseToOpenAI) {
  std::string out;
  Usage usage;
  auto err = translateResponse(kOpenAI, kAnthropic, readFixture("anthropic_response_thinking_tools.json"), out,
                               fixedContext(), &usage);
  ASSERT_FALSE(err) << err->message;
  EXPECT_EQ(out.front(), '{');
  EXPECT_EQ(usage.input, 2095 + 1024);  // canonical input includes cache reads
  EXPECT_EQ(usage.cached, 1024);
  EXPECT_EQ(usage.output, 503);
  expectGolden("anthropic_response_thinking_tools.to_openai.json", out);
  // Reasoning stays apart from the answer.
  auto v = boost::json::parse(out);
  const auto& msg = v.at("choices").at(0).at("message");
  EXPECT_EQ(msg.at("content").as_string(), "I'll check the current weather in San Francisco for you.");
  EXPECT_EQ(msg.at("reasoning_content").as_string(),
            "The user wants the weather in San Francisco; I will call the tool.");
}

// ---- streams ------------------------------------------------------------------------------

struct StreamCase {
  const char* fixture;
  Format client;
  Format upstream;
  const char* golden;
};

const StreamCase kStreamCases[] = {
    {"anthropic_stream_tool_use.sse", kOpenAI, kAnthropic, "anthropic_stream_tool_use.to_openai.sse"},
    {"anthropic_stream_thinking.sse", kOpenAI, kAnthropic, "anthropic_stream_thinking.to_openai.sse"},
    {"openai_stream_parallel_tools.sse", kAnthropic, kOpenAI, "openai_stream_parallel_tools.to_anthropic.sse"},
    {"openai_stream_reasoning_no_usage.sse", kAnthropic, kOpenAI, "openai_stream_reasoning_no_usage.to_anthropic.sse"},
    {"anthropic_stream_tool_use.sse", kAnthropic, kAnthropic, "anthropic_stream_tool_use.to_anthropic.sse"},
    {"openai_stream_parallel_tools.sse", kOpenAI, kOpenAI, "openai_stream_parallel_tools.to_openai.sse"},
};

TEST(TranslateStream, GoldenWholeStreams) {
  for (const auto& c : kStreamCases) {
    auto in = readFixture(c.fixture);
    expectGolden(c.golden, translateStream(c.client, c.upstream, {in}, fixedContext()));
  }
}

TEST(TranslateStream, EverySplitPointGivesTheSameOutput) {
  for (const auto& c : kStreamCases) {
    auto in = readFixture(c.fixture);
    std::string_view all(in);
    auto whole = translateStream(c.client, c.upstream, {all}, fixedContext());
    for (std::size_t i = 0; i <= all.size(); ++i) {
      auto split = translateStream(c.client, c.upstream, {all.substr(0, i), all.substr(i)}, fixedContext());
      ASSERT_EQ(whole, split) << c.fixture << " split at " << i;
    }
    // And one byte at a time.
    std::vector<std::string_view> bytes;
    for (std::size_t i = 0; i < all.size(); ++i) bytes.push_back(all.substr(i, 1));
    EXPECT_EQ(whole, translateStream(c.client, c.upstream, bytes, fixedContext())) << c.fixture << " byte by byte";
  }
}

TEST(TranslateStream, OutputIsProducedChunkByChunk) {
  // Nothing waits for the end: the first text delta is translated as soon as its event is complete.
  auto in = readFixture("anthropic_stream_tool_use.sse");
  auto t = makeStreamTranslator(kOpenAI, kAnthropic, fixedContext());
  auto cut = in.find("\"text\":\"Okay\"");
  cut = in.find("\n\n", cut) + 2;
  std::string out;
  ASSERT_TRUE(t->feed(std::string_view(in).substr(0, cut), out));
  EXPECT_NE(out.find("\"content\":\"Okay\""), std::string::npos);
  EXPECT_EQ(out.find("[DONE]"), std::string::npos);
}

TEST(TranslateStream, UsageIsExtractedFromBothFormats) {
  Usage u;
  translateStream(kOpenAI, kAnthropic, {readFixture("anthropic_stream_tool_use.sse")}, fixedContext(), &u);
  EXPECT_EQ(u.input, 472);
  EXPECT_EQ(u.output, 89);
  translateStream(kAnthropic, kOpenAI, {readFixture("openai_stream_parallel_tools.sse")}, fixedContext(), &u);
  EXPECT_EQ(u.input, 81);
  EXPECT_EQ(u.output, 46);
  EXPECT_EQ(u.cached, 64);
  Usage none;
  translateStream(kAnthropic, kOpenAI, {readFixture("openai_stream_reasoning_no_usage.sse")}, fixedContext(), &none);
  EXPECT_FALSE(none.known());
}

TEST(TranslateStream, AnthropicUsageReportsUncachedInputToAnthropicClients) {
  auto out = translateStream(kAnthropic, kOpenAI, {readFixture("openai_stream_parallel_tools.sse")}, fixedContext());
  // 81 prompt tokens of which 64 cached -> input_tokens 17 + cache_read_input_tokens 64.
  EXPECT_NE(out.find("\"usage\":{\"input_tokens\":17,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":64,"
                     "\"output_tokens\":46}"),
            std::string::npos)
      << out;
}

TEST(TranslateStream, NoUsageStillEndsProperly) {
  auto toAnthropic =
      translateStream(kAnthropic, kOpenAI, {readFixture("openai_stream_reasoning_no_usage.sse")}, fixedContext());
  EXPECT_TRUE(toAnthropic.ends_with(
      "event: message_delta\ndata: "
      "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":"
      "null},\"usage\":{\"output_tokens\":0}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
      << toAnthropic;
  auto toOpenAI = translateStream(kOpenAI, kAnthropic, {readFixture("anthropic_stream_thinking.sse")}, fixedContext());
  EXPECT_TRUE(toOpenAI.ends_with("\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")) << toOpenAI;
  EXPECT_EQ(toOpenAI.find("\"usage\""), std::string::npos);
}

TEST(TranslateStream, MissingClosingEventIsAddedWhenTheUpstreamFinished) {
  // OpenAI upstream that stops after the finish_reason chunk, without [DONE].
  std::string in =
      "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
      "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n";
  auto out = translateStream(kAnthropic, kOpenAI, {in}, fixedContext());
  EXPECT_NE(out.find("\"stop_reason\":\"max_tokens\""), std::string::npos) << out;
  EXPECT_TRUE(out.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")) << out;
  // Anthropic upstream cut after message_delta, before message_stop.
  std::string a =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"model\":\"c\","
      "\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
      "\"usage\":{\"output_tokens\":5}}\n\n";
  auto o = translateStream(kOpenAI, kAnthropic, {a}, fixedContext());
  EXPECT_TRUE(o.ends_with("data: [DONE]\n\n")) << o;
  EXPECT_NE(o.find("\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5,\"total_tokens\":8"), std::string::npos)
      << o;
}

TEST(TranslateStream, TruncatedUpstreamEndsWithAnErrorEventThenTheClosing) {
  std::string in =
      "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: "
      "{\"id\"";
  auto toAnthropic = translateStream(kAnthropic, kOpenAI, {in}, fixedContext());
  EXPECT_TRUE(toAnthropic.ends_with(
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"the upstream stream "
      "ended "
      "before the response was complete\"}}\n\n"))
      << toAnthropic;
  EXPECT_NE(toAnthropic.find("content_block_stop"), std::string::npos);
  std::string a =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"model\":\"c\"}}\n\n";
  auto toOpenAI = translateStream(kOpenAI, kAnthropic, {a}, fixedContext());
  EXPECT_NE(toOpenAI.find("data: {\"error\":{\"message\":\"the upstream stream ended"), std::string::npos) << toOpenAI;
  EXPECT_TRUE(toOpenAI.ends_with("data: [DONE]\n\n"));
  // An upstream that sent nothing at all still gets a well-formed answer.
  auto empty = translateStream(kOpenAI, kAnthropic, {}, fixedContext());
  EXPECT_TRUE(empty.ends_with("data: [DONE]\n\n")) << empty;
}

TEST(TranslateStream, MidStreamErrorIsTranslated) {
  std::string a =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"model\":\"c\"}}\n\n"
      "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": "
      "\"Overloaded\"}}\n\n";
  auto o = translateStream(kOpenAI, kAnthropic, {a}, fixedContext());
  EXPECT_NE(o.find("data: {\"error\":{\"message\":\"Overloaded\",\"type\":\"server_error\",\"param\":null,\"code\":"
                   "\"overloaded\"}}\n\ndata: [DONE]\n\n"),
            std::string::npos)
      << o;
  std::string in =
      "data: {\"error\":{\"message\":\"Rate limit "
      "reached\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}\n\n";
  auto a2 = translateStream(kAnthropic, kOpenAI, {in}, fixedContext());
  EXPECT_NE(a2.find("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":"
                    "\"Rate limit reached\"}}\n\n"),
            std::string::npos)
      << a2;
  EXPECT_EQ(a2.find("message_stop"), std::string::npos);
}

TEST(TranslateStream, OversizedEventFailsTheStream) {
  auto t = makeStreamTranslator(kOpenAI, kAnthropic, fixedContext());
  std::string out;
  std::string big = "event: content_block_delta\ndata: {\"x\":\"" + std::string(StreamDecoder::kMaxEvent, 'a');
  EXPECT_FALSE(t->feed(big, out));
  t->finish(out);
  EXPECT_NE(out.find("exceeded the size limit"), std::string::npos);
  EXPECT_TRUE(out.ends_with("data: [DONE]\n\n"));
}

TEST(TranslateStream, CrlfFramingIsAccepted) {
  auto in = readFixture("anthropic_stream_thinking.sse");
  std::string crlf;
  for (char c : in) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  EXPECT_EQ(translateStream(kOpenAI, kAnthropic, {in}, fixedContext()),
            translateStream(kOpenAI, kAnthropic, {crlf}, fixedContext()));
}

// ---- errors -------------------------------------------------------------------------------

TEST(TranslateError, AnthropicErrorsBecomeOpenAIErrorsWithTheSameStatus) {
  struct Case {
    int status;
    const char* type;
    const char* openaiType;
    const char* code;
  } cases[] = {
      {400, "invalid_request_error", "invalid_request_error", "null"},
      {401, "authentication_error", "authentication_error", "\"invalid_api_key\""},
      {403, "permission_error", "permission_error", "null"},
      {404, "not_found_error", "not_found_error", "\"not_found\""},
      {429, "rate_limit_error", "rate_limit_error", "\"rate_limit_exceeded\""},
      {500, "api_error", "server_error", "null"},
      {529, "overloaded_error", "server_error", "\"overloaded\""},
  };
  for (const auto& c : cases) {
    std::string body = std::string("{\"type\":\"error\",\"error\":{\"type\":\"") + c.type + "\",\"message\":\"m\"}}";
    int status = 0;
    auto out = translateError(kOpenAI, kAnthropic, c.status, body, &status);
    EXPECT_EQ(status, c.status);
    EXPECT_EQ(out, std::string("{\"error\":{\"message\":\"m\",\"type\":\"") + c.openaiType +
                       "\",\"param\":null,\"code\":" + c.code + "}}");
  }
}

TEST(TranslateError, OpenAIErrorsBecomeAnthropicErrorsWithTheSameStatus) {
  std::string body =
      R"({"error":{"message":"Incorrect API key provided: sk-abc.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}})";
  int status = 0;
  EXPECT_EQ(
      translateError(kAnthropic, kOpenAI, 401, body, &status),
      R"({"type":"error","error":{"type":"authentication_error","message":"Incorrect API key provided: sk-abc."}})");
  EXPECT_EQ(status, 401);
  EXPECT_EQ(translateError(kAnthropic, kOpenAI, 429, R"({"error":{"message":"quota","type":"insufficient_quota"}})"),
            R"({"type":"error","error":{"type":"rate_limit_error","message":"quota"}})");
  EXPECT_EQ(translateError(kAnthropic, kOpenAI, 503, "upstream connect error"),
            R"({"type":"error","error":{"type":"overloaded_error","message":"upstream connect error"}})");
  EXPECT_EQ(translateError(kAnthropic, kOpenAI, 502, ""),
            R"x({"type":"error","error":{"type":"api_error","message":"upstream error (HTTP 502)"}})x");
}

TEST(TranslateError, TranslationErrorsRenderInTheClientFormat) {
  std::string out;
  auto err = translateRequest(kOpenAI, kAnthropic, R"({"model":"m","messages":[]})", out, fixedContext());
  ASSERT_TRUE(err);
  EXPECT_EQ(err->status, 400);
  EXPECT_EQ(
      errorBody(kOpenAI, *err),
      R"({"error":{"message":"messages must not be empty","type":"invalid_request_error","param":"messages","code":null}})");
  EXPECT_EQ(errorBody(kAnthropic, *err),
            R"({"type":"error","error":{"type":"invalid_request_error","message":"messages must not be empty"}})");
}

TEST(TranslateError, UpstreamBodyThatIsNotAResponseIsA502) {
  std::string out;
  auto err = translateResponse(kOpenAI, kAnthropic, "<html>bad gateway</html>", out, fixedContext());
  ASSERT_TRUE(err);
  EXPECT_EQ(err->status, 502);
}

// ---- deep nesting ---------------------------------------------------------------------------

// A JSON schema `levels` objects deep (arrays of arrays of ... of strings).
std::string deepSchema(int levels) {
  std::string s = R"({"type":"string"})";
  for (int i = 1; i < levels; ++i) s = R"({"type":"array","items":)" + s + "}";
  return s;
}

std::string requestWithTool(Format client, const std::string& schema) {
  switch (client) {
    case Format::OpenAIChat:
      return R"({"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"t","parameters":)" +
             schema + "}}]}";
    case Format::AnthropicMessages:
      return R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"t","input_schema":)" +
             schema + "}]}";
    case Format::GeminiGenerate:
      return R"({"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"t","parametersJsonSchema":)" +
             schema + "}]}]}";
    case Format::OpenAIResponses:
      return R"({"model":"m","input":"hi","tools":[{"type":"function","name":"t","parameters":)" + schema + "}]}";
    case Format::BedrockConverse:  // an upstream format only
      break;
  }
  return {};
}

const boost::json::value* toolSchemaOf(Format upstream, const boost::json::value& body) {
  const auto& tool = body.at("tools").at(0);
  switch (upstream) {
    case Format::OpenAIChat: return &tool.at("function").at("parameters");
    case Format::AnthropicMessages: return &tool.at("input_schema");
    case Format::GeminiGenerate: {
      const auto& d = tool.at("functionDeclarations").at(0).as_object();
      return d.contains("parametersJsonSchema") ? &d.at("parametersJsonSchema") : &d.at("parameters");
    }
    case Format::OpenAIResponses: return &tool.at("parameters");
    case Format::BedrockConverse: break;  // its tools are under toolConfig: not one of this test's upstreams
  }
  return nullptr;
}

constexpr Format kClients[] = {Format::OpenAIChat, Format::AnthropicMessages, Format::GeminiGenerate,
                               Format::OpenAIResponses};
constexpr Format kUpstreams[] = {Format::OpenAIChat, Format::AnthropicMessages, Format::GeminiGenerate};

TranslateContext deepContext() {
  auto ctx = fixedContext();
  ctx.client_model = "m";  // Gemini clients: from the URL
  ctx.upstream_model = "m";
  return ctx;
}

// Structured-output and tool schemas of real agents nest well past Boost.JSON's default of 32.
TEST(TranslateDeep, A128LevelToolSchemaCrossesEveryDirectionUnchanged) {
  for (int levels : {127, 128, 200}) {
    const std::string schema = deepSchema(levels);
    boost::system::error_code ec;
    const auto expected = parseJson(schema, ec);
    ASSERT_FALSE(ec);
    for (Format client : kClients) {
      for (Format up : kUpstreams) {
        std::string out;
        auto err = translateRequest(client, up, requestWithTool(client, schema), out, deepContext());
        ASSERT_FALSE(err) << formatName(client) << " -> " << formatName(up) << ": " << err->message;
        const auto body = parseJson(out, ec);
        ASSERT_FALSE(ec) << formatName(client) << " -> " << formatName(up) << ": " << ec.message();
        const auto* got = toolSchemaOf(up, body);
        ASSERT_TRUE(got);
        EXPECT_EQ(*got, expected) << formatName(client) << " -> " << formatName(up) << " at " << levels << " levels";
      }
    }
  }
}

TEST(TranslateDeep, ABodyDeeperThanTheLimitIsA400SayingSo) {
  for (Format client : kClients) {
    for (Format up : kUpstreams) {
      std::string out;
      auto err = translateRequest(client, up, requestWithTool(client, deepSchema(static_cast<int>(kMaxJsonDepth))), out,
                                  deepContext());
      ASSERT_TRUE(err) << formatName(client) << " -> " << formatName(up);
      EXPECT_EQ(err->status, 400);
      EXPECT_NE(err->message.find("nested deeper than " + std::to_string(kMaxJsonDepth)), std::string::npos) << err->message;
    }
  }
  std::string out;
  auto err = translateRequest(Format::OpenAIChat, Format::AnthropicMessages, std::string(100'000, '['), out, deepContext());
  ASSERT_TRUE(err);
  EXPECT_NE(err->message.find("nested deeper than"), std::string::npos) << err->message;
}

// Tool-call arguments an upstream answers with, nested 128 levels, reach an OpenAI client whole.
TEST(TranslateDeep, DeepToolCallArgumentsInAnswersAreKept) {
  const std::string args = std::string(128, '[') + "1" + std::string(128, ']');
  boost::system::error_code ec;
  const auto expected = parseJson(args, ec);
  const std::string wrapped = R"({"a":)" + args + "}";
  const std::string anthropic =
      R"({"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"t","input":)" +
      wrapped + R"(}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}})";
  const std::string gemini = R"({"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"t","args":)" + wrapped +
                             R"(}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1}})";
  for (auto [up, body] : {std::pair{Format::AnthropicMessages, anthropic}, std::pair{Format::GeminiGenerate, gemini}}) {
    std::string out;
    auto err = translateResponse(Format::OpenAIChat, up, body, out, deepContext());
    ASSERT_FALSE(err) << formatName(up) << ": " << err->message;
    const auto v = parseJson(out, ec);
    ASSERT_FALSE(ec);
    const auto& call = v.at("choices").at(0).at("message").at("tool_calls").at(0).at("function");
    const auto& text = call.at("arguments").as_string();
    const auto got = parseJson(std::string_view(text.data(), text.size()), ec);
    ASSERT_FALSE(ec) << formatName(up);
    EXPECT_EQ(got.at("a"), expected) << formatName(up);
  }
}

}  // namespace translate_test
}  // namespace
}  // namespace sluice::providers
