// Gemini generateContent as a client and as an upstream format: golden requests, responses and
// streams in every direction to and from OpenAI Chat and Anthropic Messages, stream splitting,
// stream endings, signatures and tool-call ids, errors both ways, and bad inputs.
#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "TranslateTestUtil.hpp"
#include "providers/gemini/GenerateCodec.hpp"

namespace sluice::providers {
namespace {
namespace gemini_translate_test {

using testing::expectGolden;
using testing::fixedContext;
using testing::readFixture;
using testing::translateStream;

constexpr auto kOpenAI = Format::OpenAIChat;
constexpr auto kAnthropic = Format::AnthropicMessages;
constexpr auto kGemini = Format::GeminiGenerate;

std::string g(const std::string& name) {
  return "gemini/" + name;
}

// A Gemini client's context: the model and the stream flag come from the URL.
TranslateContext geminiClient(const std::string& model = "gemini-2.5-flash", bool stream = false) {
  auto ctx = fixedContext();
  ctx.client_model = model;
  ctx.client_stream = stream;
  return ctx;
}

std::string request(Format client, Format upstream, const std::string& body, const TranslateContext& ctx,
                    RequestInfo* info = nullptr) {
  std::string out;
  auto err = translateRequest(client, upstream, body, out, ctx, info);
  EXPECT_FALSE(err) << (err ? err->param + ": " + err->message : "");
  return out;
}

boost::json::value parse(const std::string& s) {
  return boost::json::parse(s);
}

// ---- requests -----------------------------------------------------------------------------

TEST(GeminiGolden, GeminiRequestToOpenAI) {
  RequestInfo info;
  auto out = request(kGemini, kOpenAI, readFixture(g("gemini_request_full.json")), geminiClient("gemini-2.5-flash", true),
                     &info);
  EXPECT_EQ(info.model, "gemini-2.5-flash");
  EXPECT_TRUE(info.stream);
  EXPECT_TRUE(info.include_usage);
  expectGolden(g("gemini_request_full.to_openai.json"), out);
  auto v = parse(out);
  // Missing ids are synthesized and the responses answer them by name, in order.
  const auto& msgs = v.at("messages").as_array();
  EXPECT_EQ(msgs[2].at("tool_calls").at(0).at("id").as_string(), "call_0");
  EXPECT_EQ(msgs[2].at("tool_calls").at(1).at("id").as_string(), "call_1");
  EXPECT_EQ(msgs[3].at("tool_call_id").as_string(), "call_0");
  EXPECT_EQ(msgs[3].at("content").as_string(), "15 degrees, foggy");
  EXPECT_EQ(msgs[4].at("tool_call_id").as_string(), "call_1");
  // OPENAPI upper-case types become JSON Schema names.
  EXPECT_EQ(v.at("tools").at(0).at("function").at("parameters").at("type").as_string(), "object");
}

TEST(GeminiGolden, GeminiRequestToAnthropic) {
  auto out = request(kGemini, kAnthropic, readFixture(g("gemini_request_full.json")), geminiClient());
  expectGolden(g("gemini_request_full.to_anthropic.json"), out);
  auto v = parse(out);
  EXPECT_EQ(v.at("model").as_string(), "gemini-2.5-flash");  // the gateway sets upstream_model in practice
  EXPECT_EQ(v.at("thinking").at("budget_tokens").as_int64(), 2048);
  EXPECT_EQ(v.at("tool_choice").at("name").as_string(), "get_forecast");
}

TEST(GeminiGolden, GeminiRequestRoundTripsThroughItself) {
  auto out = request(kGemini, kGemini, readFixture(g("gemini_request_full.json")), geminiClient());
  expectGolden(g("gemini_request_full.to_gemini.json"), out);
  auto v = parse(out);
  EXPECT_FALSE(v.as_object().contains("model"));  // the model goes in the URL
  // The signed call keeps its signature; the thought part had none and is not replayed.
  const auto& parts = v.at("contents").at(1).at("parts").as_array();
  EXPECT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1].at("thoughtSignature").as_string(), "CiwBVKhc7nCsFlpt8Y2gPjP0Jx4p8iFzA0+wUGsRqKQc1S2sJ1GgKzRn");
  // Repeated user turns merge.
  EXPECT_EQ(v.at("contents").as_array().size(), 3u);
}

TEST(GeminiGolden, OpenAIRequestToGemini) {
  auto ctx = fixedContext();
  ctx.upstream_model = "gemini-2.5-flash";
  RequestInfo info;
  auto out = request(kOpenAI, kGemini, readFixture("openai_request_full.json"), ctx, &info);
  EXPECT_TRUE(info.stream);  // the gateway calls :streamGenerateContent?alt=sse
  expectGolden(g("openai_request_full.to_gemini.json"), out);
  auto v = parse(out);
  EXPECT_FALSE(v.as_object().contains("model"));
  // Tool results are matched to their calls by name; calls from elsewhere carry the placeholder.
  const auto& contents = v.at("contents").as_array();
  EXPECT_EQ(contents[1].at("parts").at(0).at("thoughtSignature").as_string(), gemini::kSkipSignature);
  EXPECT_EQ(contents[2].at("parts").at(0).at("functionResponse").at("response").at("output").as_string(),
            "18C, cloudy");
}

TEST(GeminiGolden, AnthropicRequestToGemini) {
  auto out = request(kAnthropic, kGemini, readFixture("anthropic_request_full.json"), fixedContext());
  expectGolden(g("anthropic_request_full.to_gemini.json"), out);
  auto v = parse(out);
  EXPECT_EQ(v.at("generationConfig").at("thinkingConfig").at("thinkingBudget").as_int64(), 16000);
  EXPECT_TRUE(v.at("generationConfig").at("thinkingConfig").at("includeThoughts").as_bool());
  EXPECT_EQ(v.at("systemInstruction").at("parts").as_array().size(), 2u);
}

TEST(GeminiGolden, ReferenceRequestsFromGooglesDocs) {
  // snake_case spelling, role omitted, inline image, thinking off.
  auto out = request(kGemini, kOpenAI, readFixture(g("reference_request_snake_case.json")), geminiClient());
  expectGolden(g("reference_request_snake_case.to_openai.json"), out);
  auto v = parse(out);
  EXPECT_EQ(v.at("max_tokens").as_int64(), 800);
  EXPECT_EQ(v.at("messages").at(0).at("content").as_string(), "You are a cat. Your name is Neko.");
  auto a = request(kGemini, kAnthropic, readFixture(g("reference_request_function_calling.json")), geminiClient());
  expectGolden(g("reference_request_function_calling.to_anthropic.json"), a);
}

// ---- responses ----------------------------------------------------------------------------

TEST(GeminiGolden, GeminiResponseToOpenAI) {
  std::string out;
  Usage usage;
  auto err = translateResponse(kOpenAI, kGemini, readFixture(g("gemini_response_thinking_tools.json")), out,
                               fixedContext(), &usage);
  ASSERT_FALSE(err) << err->message;
  EXPECT_EQ(usage.input, 120);
  EXPECT_EQ(usage.output, 38 + 114);
  EXPECT_EQ(usage.reasoning, 114);
  EXPECT_EQ(usage.cached, 64);
  expectGolden(g("gemini_response_thinking_tools.to_openai.json"), out);
  auto v = parse(out);
  const auto& c = v.at("choices").at(0);
  EXPECT_EQ(c.at("finish_reason").as_string(), "tool_calls");
  const auto& calls = c.at("message").at("tool_calls").as_array();
  EXPECT_EQ(calls[0].at("id").as_string(), "call_0");
  EXPECT_EQ(calls[1].at("id").as_string(), "call_1");
  EXPECT_EQ(calls[0].at("extra_content").at("google").at("thought_signature").as_string(),
            "CpwCAdHtim9Gmy0dGb8vQy8l6h5TfI0YfZ7eJcPqHk0vN2d2YkSx");
  EXPECT_EQ(v.at("usage").at("completion_tokens_details").at("reasoning_tokens").as_int64(), 114);
}

TEST(GeminiGolden, GeminiResponseToAnthropic) {
  std::string out;
  auto err =
      translateResponse(kAnthropic, kGemini, readFixture(g("gemini_response_thinking_tools.json")), out, fixedContext());
  ASSERT_FALSE(err) << err->message;
  expectGolden(g("gemini_response_thinking_tools.to_anthropic.json"), out);
  auto v = parse(out);
  EXPECT_EQ(v.at("stop_reason").as_string(), "tool_use");
  // thinking, text, carrier thinking (the call's signature), tool_use, tool_use
  const auto& content = v.at("content").as_array();
  ASSERT_EQ(content.size(), 5u);
  EXPECT_EQ(content[2].at("type").as_string(), "thinking");
  EXPECT_EQ(content[2].at("thinking").as_string(), "");
  EXPECT_EQ(content[3].at("type").as_string(), "tool_use");
  // input 120 of which 64 cached -> 56 uncached.
  EXPECT_EQ(v.at("usage").at("input_tokens").as_int64(), 56);
  EXPECT_EQ(v.at("usage").at("cache_read_input_tokens").as_int64(), 64);
}

TEST(GeminiGolden, ReferenceResponses) {
  std::string out;
  ASSERT_FALSE(translateResponse(kOpenAI, kGemini, readFixture(g("reference_response_text.json")), out, fixedContext()));
  expectGolden(g("reference_response_text.to_openai.json"), out);
  out.clear();
  ASSERT_FALSE(
      translateResponse(kAnthropic, kGemini, readFixture(g("reference_response_function_call.json")), out, fixedContext()));
  expectGolden(g("reference_response_function_call.to_anthropic.json"), out);
}

TEST(GeminiGolden, OpenAIResponseToGemini) {
  std::string out;
  Usage usage;
  auto err = translateResponse(kGemini, kOpenAI, readFixture("openai_response_tools.json"), out, geminiClient(), &usage);
  ASSERT_FALSE(err) << err->message;
  EXPECT_EQ(out.front(), '{');
  expectGolden(g("openai_response_tools.to_gemini.json"), out);
  auto v = parse(out);
  const auto& cand = v.at("candidates").at(0);
  EXPECT_EQ(cand.at("finishReason").as_string(), "STOP");
  EXPECT_EQ(cand.at("content").at("role").as_string(), "model");
  EXPECT_EQ(v.at("usageMetadata").at("promptTokenCount").as_int64(), 91);
}

TEST(GeminiGolden, AnthropicResponseToGemini) {
  std::string out;
  auto err = translateResponse(kGemini, kAnthropic, readFixture("anthropic_response_thinking_tools.json"), out,
                               geminiClient());
  ASSERT_FALSE(err) << err->message;
  expectGolden(g("anthropic_response_thinking_tools.to_gemini.json"), out);
  auto v = parse(out);
  const auto& parts = v.at("candidates").at(0).at("content").at("parts").as_array();
  EXPECT_TRUE(parts[0].at("thought").as_bool());
  EXPECT_FALSE(parts[0].at("thoughtSignature").as_string().empty());
  EXPECT_EQ(v.at("usageMetadata").at("promptTokenCount").as_int64(), 2095 + 1024);
  EXPECT_EQ(v.at("usageMetadata").at("cachedContentTokenCount").as_int64(), 1024);
}

// ---- signatures and ids round trips ---------------------------------------------------------

TEST(GeminiSignatures, FunctionCallSignatureSurvivesAnAnthropicClient) {
  std::string res;
  ASSERT_FALSE(
      translateResponse(kAnthropic, kGemini, readFixture(g("gemini_response_thinking_tools.json")), res, fixedContext()));
  // The Anthropic client replays the assistant turn, then answers both calls.
  auto content = parse(res).at("content");
  boost::json::object body{{"model", "gemini-2.5-flash"}, {"max_tokens", 1000}};
  body["messages"] = boost::json::array{
      boost::json::object{{"role", "user"}, {"content", "Weather in Paris and Tokyo?"}},
      boost::json::object{{"role", "assistant"}, {"content", content}},
      boost::json::object{
          {"role", "user"},
          {"content", boost::json::array{boost::json::object{{"type", "tool_result"},
                                                             {"tool_use_id", "call_0"},
                                                             {"content", "12C"}},
                                         boost::json::object{{"type", "tool_result"},
                                                             {"tool_use_id", "call_1"},
                                                             {"content", "{\"temp\":24}"}}}}}};
  auto out = parse(request(kAnthropic, kGemini, boost::json::serialize(body), fixedContext()));
  const auto& model = out.at("contents").at(1).at("parts").as_array();
  // thought (signature ""), text, call with its signature, call without.
  ASSERT_EQ(model.size(), 3u) << boost::json::serialize(out);  // unsigned thought dropped
  EXPECT_EQ(model[1].at("functionCall").at("name").as_string(), "get_weather");
  EXPECT_EQ(model[1].at("thoughtSignature").as_string(), "CpwCAdHtim9Gmy0dGb8vQy8l6h5TfI0YfZ7eJcPqHk0vN2d2YkSx");
  EXPECT_FALSE(model[2].as_object().contains("thoughtSignature"));
  const auto& results = out.at("contents").at(2).at("parts").as_array();
  EXPECT_EQ(results[0].at("functionResponse").at("response").at("output").as_string(), "12C");
  EXPECT_EQ(results[1].at("functionResponse").at("response").at("temp").as_int64(), 24);
}

TEST(GeminiSignatures, FunctionCallSignatureSurvivesAnOpenAIClient) {
  std::string res;
  ASSERT_FALSE(
      translateResponse(kOpenAI, kGemini, readFixture(g("gemini_response_thinking_tools.json")), res, fixedContext()));
  auto msg = parse(res).at("choices").at(0).at("message");
  boost::json::object body{{"model", "gemini-2.5-flash"}};
  body["messages"] = boost::json::array{
      boost::json::object{{"role", "user"}, {"content", "Weather?"}}, msg,
      boost::json::object{{"role", "tool"}, {"tool_call_id", "call_0"}, {"content", "12C"}},
      boost::json::object{{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "24C"}}};
  auto out = parse(request(kOpenAI, kGemini, boost::json::serialize(body), fixedContext()));
  const auto& model = out.at("contents").at(1).at("parts").as_array();
  EXPECT_EQ(model[1].at("thoughtSignature").as_string(), "CpwCAdHtim9Gmy0dGb8vQy8l6h5TfI0YfZ7eJcPqHk0vN2d2YkSx");
  EXPECT_EQ(out.at("contents").at(2).at("parts").at(1).at("functionResponse").at("name").as_string(), "get_weather");
}

TEST(GeminiSignatures, AnthropicThinkingSignatureSurvivesAGeminiClient) {
  std::string res;
  ASSERT_FALSE(
      translateResponse(kGemini, kAnthropic, readFixture("anthropic_response_thinking_tools.json"), res, geminiClient()));
  auto content = parse(res).at("candidates").at(0).at("content");
  boost::json::object body{
      {"contents", boost::json::array{boost::json::object{{"role", "user"},
                                                          {"parts", boost::json::array{boost::json::object{
                                                                        {"text", "Weather in SF?"}}}}},
                                      content}}};
  // The client answers the call by id (the Gemini response carried functionCall.id).
  auto callId = content.at("parts").as_array().back().at("functionCall").at("id");
  body["contents"].as_array().push_back(boost::json::object{
      {"role", "user"},
      {"parts", boost::json::array{boost::json::object{
                    {"functionResponse",
                     boost::json::object{{"id", callId}, {"name", "get_weather"}, {"response", {{"output", "15C"}}}}}}}}});
  auto out = parse(request(kGemini, kAnthropic, boost::json::serialize(body), geminiClient("claude-sonnet-4-5")));
  const auto& blocks = out.at("messages").at(1).at("content").as_array();
  EXPECT_EQ(blocks[0].at("type").as_string(), "thinking");
  EXPECT_FALSE(blocks[0].at("signature").as_string().empty());
  EXPECT_EQ(out.at("messages").at(2).at("content").at(0).at("tool_use_id"), callId);
}

TEST(GeminiSignatures, StreamedThoughtPartsMergeIntoOneSignedReasoning) {
  // A Gemini client's history as streamed: thought text in pieces, then the signature.
  std::string body = R"({"contents":[{"role":"user","parts":[{"text":"hi"}]},
    {"role":"model","parts":[{"text":"Let me ","thought":true},{"text":"think.","thought":true},
                             {"text":"","thought":true,"thoughtSignature":"SIG"},{"text":"Hello!"}]},
    {"role":"user","parts":[{"text":"again"}]}]})";
  auto out = parse(request(kGemini, kAnthropic, body, geminiClient("claude-sonnet-4-5")));
  const auto& blocks = out.at("messages").at(1).at("content").as_array();
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].at("thinking").as_string(), "Let me think.");
  EXPECT_EQ(blocks[0].at("signature").as_string(), "SIG");
}

// ---- streams ------------------------------------------------------------------------------

struct StreamCase {
  const char* fixture;
  Format client;
  Format upstream;
  const char* golden;
};

const StreamCase kStreamCases[] = {
    {"gemini/reference_stream_text.sse", kOpenAI, kGemini, "gemini/reference_stream_text.to_openai.sse"},
    {"gemini/reference_stream_text.sse", kAnthropic, kGemini, "gemini/reference_stream_text.to_anthropic.sse"},
    {"gemini/gemini_stream_thinking_tools.sse", kOpenAI, kGemini, "gemini/gemini_stream_thinking_tools.to_openai.sse"},
    {"gemini/gemini_stream_thinking_tools.sse", kAnthropic, kGemini,
     "gemini/gemini_stream_thinking_tools.to_anthropic.sse"},
    {"gemini/gemini_stream_no_usage.sse", kOpenAI, kGemini, "gemini/gemini_stream_no_usage.to_openai.sse"},
    {"gemini/gemini_stream_no_usage.sse", kAnthropic, kGemini, "gemini/gemini_stream_no_usage.to_anthropic.sse"},
    {"openai_stream_parallel_tools.sse", kGemini, kOpenAI, "gemini/openai_stream_parallel_tools.to_gemini.sse"},
    {"openai_stream_reasoning_no_usage.sse", kGemini, kOpenAI, "gemini/openai_stream_reasoning_no_usage.to_gemini.sse"},
    {"anthropic_stream_tool_use.sse", kGemini, kAnthropic, "gemini/anthropic_stream_tool_use.to_gemini.sse"},
    {"anthropic_stream_thinking.sse", kGemini, kAnthropic, "gemini/anthropic_stream_thinking.to_gemini.sse"},
    {"gemini/gemini_stream_thinking_tools.sse", kGemini, kGemini, "gemini/gemini_stream_thinking_tools.to_gemini.sse"},
};

TEST(GeminiStream, GoldenWholeStreams) {
  for (const auto& c : kStreamCases) {
    auto in = readFixture(c.fixture);
    expectGolden(c.golden, translateStream(c.client, c.upstream, {in}, fixedContext()));
  }
}

TEST(GeminiStream, EverySplitPointGivesTheSameOutput) {
  for (const auto& c : kStreamCases) {
    auto in = readFixture(c.fixture);
    std::string_view all(in);
    auto whole = translateStream(c.client, c.upstream, {all}, fixedContext());
    for (std::size_t i = 0; i <= all.size(); ++i) {
      auto split = translateStream(c.client, c.upstream, {all.substr(0, i), all.substr(i)}, fixedContext());
      ASSERT_EQ(whole, split) << c.fixture << " split at " << i;
    }
    std::vector<std::string_view> bytes;
    for (std::size_t i = 0; i < all.size(); ++i) bytes.push_back(all.substr(i, 1));
    EXPECT_EQ(whole, translateStream(c.client, c.upstream, bytes, fixedContext())) << c.fixture << " byte by byte";
  }
}

TEST(GeminiStream, TextIsForwardedChunkByChunk) {
  auto in = readFixture(g("reference_stream_text.sse"));
  auto t = makeStreamTranslator(kOpenAI, kGemini, fixedContext());
  auto cut = in.find("\r\n\r\n") + 4;
  std::string out;
  ASSERT_TRUE(t->feed(std::string_view(in).substr(0, cut), out));
  EXPECT_NE(out.find("\"content\":\"The\""), std::string::npos) << out;
  EXPECT_EQ(out.find("[DONE]"), std::string::npos);
}

TEST(GeminiStream, UsageIsTheLastUsageMetadata) {
  Usage u;
  translateStream(kOpenAI, kGemini, {readFixture(g("reference_stream_text.sse"))}, fixedContext(), &u);
  EXPECT_EQ(u.input, 11);
  EXPECT_EQ(u.output, 40 + 889);
  EXPECT_EQ(u.reasoning, 889);
  auto out = translateStream(kOpenAI, kGemini, {readFixture(g("reference_stream_text.sse"))}, fixedContext());
  EXPECT_NE(out.find("\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":929,\"total_tokens\":940"), std::string::npos)
      << out;
  Usage none;
  translateStream(kAnthropic, kGemini, {readFixture(g("gemini_stream_no_usage.sse"))}, fixedContext(), &none);
  EXPECT_FALSE(none.known());
}

TEST(GeminiStream, NoUsageStillEndsWithTheClosingEvents) {
  auto toOpenAI = translateStream(kOpenAI, kGemini, {readFixture(g("gemini_stream_no_usage.sse"))}, fixedContext());
  EXPECT_TRUE(toOpenAI.ends_with("\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")) << toOpenAI;
  auto toAnthropic =
      translateStream(kAnthropic, kGemini, {readFixture(g("gemini_stream_no_usage.sse"))}, fixedContext());
  EXPECT_TRUE(toAnthropic.ends_with(
      "{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":0}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
      << toAnthropic;
  auto toGemini = translateStream(kGemini, kOpenAI, {readFixture("openai_stream_reasoning_no_usage.sse")}, fixedContext());
  EXPECT_TRUE(toGemini.ends_with("\"finishReason\":\"STOP\",\"index\":0}],\"modelVersion\":\"deepseek-reasoner\","
                                 "\"responseId\":\"0f1e0c3a-6c1a-4b8e-9d3e-6a2f1b7c9e10\"}\r\n\r\n"))
      << toGemini;
  EXPECT_EQ(toGemini.find("usageMetadata"), std::string::npos);
}

TEST(GeminiStream, TruncatedStreamsEndWithAnError) {
  // Gemini upstream cut before finishReason.
  std::string in =
      "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n";
  auto o = translateStream(kOpenAI, kGemini, {in}, fixedContext());
  EXPECT_NE(o.find("data: {\"error\":{\"message\":\"the upstream stream ended before the response was complete\""),
            std::string::npos)
      << o;
  EXPECT_TRUE(o.ends_with("data: [DONE]\n\n"));
  auto a = translateStream(kAnthropic, kGemini, {in}, fixedContext());
  EXPECT_TRUE(a.ends_with("\"message\":\"the upstream stream ended before the response was complete\"}}\n\n")) << a;
  // Gemini client of a truncated OpenAI upstream.
  std::string oi = "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n";
  auto gm = translateStream(kGemini, kOpenAI, {oi}, fixedContext());
  EXPECT_TRUE(gm.ends_with("data: {\"error\":{\"code\":502,\"message\":\"the upstream stream ended before the "
                           "response was complete\",\"status\":\"INTERNAL\"}}\r\n\r\n"))
      << gm;
  auto empty = translateStream(kGemini, kAnthropic, {}, fixedContext());
  EXPECT_TRUE(empty.starts_with("data: {\"error\"")) << empty;
}

TEST(GeminiStream, MidStreamErrorsTranslateBothWays) {
  std::string in =
      "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n"
      "data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded. Please try again later.\",\"status\":"
      "\"UNAVAILABLE\"}}\r\n\r\n";
  auto a = translateStream(kAnthropic, kGemini, {in}, fixedContext());
  EXPECT_NE(a.find("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"The "
                   "model is overloaded. Please try again later.\"}}\n\n"),
            std::string::npos)
      << a;
  std::string an =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"model\":\"c\"}}\n\n"
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}\n\n";
  auto gm = translateStream(kGemini, kAnthropic, {an}, fixedContext());
  EXPECT_EQ(gm, "data: {\"error\":{\"code\":429,\"message\":\"slow down\",\"status\":\"RESOURCE_EXHAUSTED\"}}\r\n\r\n");
}

TEST(GeminiStream, JsonArrayFramingWithoutAltSse) {
  auto ctx = fixedContext();
  ctx.gemini_json_array = true;
  auto out = translateStream(kGemini, kAnthropic, {readFixture("anthropic_stream_tool_use.sse")}, ctx);
  auto v = boost::json::parse(out);  // the whole stream is one JSON array
  ASSERT_TRUE(v.is_array());
  EXPECT_GE(v.as_array().size(), 2u);
  EXPECT_EQ(v.as_array().back().at("candidates").at(0).at("finishReason").as_string(), "STOP");
  ASSERT_TRUE(v.as_array().back().as_object().contains("usageMetadata"));
}

TEST(GeminiStream, FunctionCallsAreSentWholeWithValidArgs) {
  auto out = translateStream(kGemini, kOpenAI, {readFixture("openai_stream_parallel_tools.sse")}, fixedContext());
  // Both calls in one chunk, with whole args objects.
  auto pos = out.find("\"functionCall\"");
  ASSERT_NE(pos, std::string::npos);
  auto line = out.substr(out.rfind("data: ", pos) + 6);
  line = line.substr(0, line.find("\r\n"));
  auto v = boost::json::parse(line);
  const auto& parts = v.at("candidates").at(0).at("content").at("parts").as_array();
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].at("functionCall").at("args").at("location").as_string(), "Paris");
  EXPECT_EQ(parts[1].at("functionCall").at("args").at("location").as_string(), "Tokyo");
  EXPECT_EQ(parts[0].at("functionCall").at("id").as_string(), "call_PieqNSej6kM9hgYbcQdbZSaC");
}

// ---- errors -------------------------------------------------------------------------------

TEST(GeminiError, GeminiErrorsBecomeOpenAIAndAnthropicErrorsWithTheSameStatus) {
  int status = 0;
  EXPECT_EQ(translateError(kOpenAI, kGemini, 400, readFixture(g("reference_error_invalid_key.json")), &status),
            R"({"error":{"message":"API key not valid. Please pass a valid API key.","type":"invalid_request_error","param":null,"code":null}})");
  EXPECT_EQ(status, 400);
  EXPECT_EQ(translateError(kAnthropic, kGemini, 429, readFixture(g("reference_error_quota.json")), &status),
            R"({"type":"error","error":{"type":"rate_limit_error","message":"You exceeded your current quota, please check your plan and billing details."}})");
  EXPECT_EQ(status, 429);
  struct Case {
    int status;
    const char* gstatus;
    const char* anthropicType;
  } cases[] = {
      {401, "UNAUTHENTICATED", "authentication_error"}, {403, "PERMISSION_DENIED", "permission_error"},
      {404, "NOT_FOUND", "not_found_error"},            {500, "INTERNAL", "api_error"},
      {503, "UNAVAILABLE", "overloaded_error"},         {504, "DEADLINE_EXCEEDED", "timeout_error"},
  };
  for (const auto& c : cases) {
    std::string body = std::string("{\"error\":{\"code\":") + std::to_string(c.status) + ",\"message\":\"m\",\"status\":\"" +
                       c.gstatus + "\"}}";
    auto out = translateError(kAnthropic, kGemini, c.status, body, &status);
    EXPECT_EQ(status, c.status);
    EXPECT_EQ(out, std::string("{\"type\":\"error\",\"error\":{\"type\":\"") + c.anthropicType + "\",\"message\":\"m\"}}");
  }
  // Not JSON at all.
  EXPECT_EQ(translateError(kOpenAI, kGemini, 502, "<html>bad gateway</html>"),
            R"({"error":{"message":"<html>bad gateway</html>","type":"server_error","param":null,"code":null}})");
}

TEST(GeminiError, OpenAIAndAnthropicErrorsBecomeGeminiErrorsWithTheSameStatus) {
  int status = 0;
  EXPECT_EQ(translateError(kGemini, kOpenAI, 401,
                           R"({"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}})",
                           &status),
            R"({"error":{"code":401,"message":"Incorrect API key provided.","status":"UNAUTHENTICATED"}})");
  EXPECT_EQ(status, 401);
  struct Case {
    int status;
    const char* type;
    const char* gstatus;
  } cases[] = {
      {400, "invalid_request_error", "INVALID_ARGUMENT"}, {403, "permission_error", "PERMISSION_DENIED"},
      {404, "not_found_error", "NOT_FOUND"},              {429, "rate_limit_error", "RESOURCE_EXHAUSTED"},
      {500, "api_error", "INTERNAL"},                     {529, "overloaded_error", "UNAVAILABLE"},
  };
  for (const auto& c : cases) {
    std::string body = std::string("{\"type\":\"error\",\"error\":{\"type\":\"") + c.type + "\",\"message\":\"m\"}}";
    EXPECT_EQ(translateError(kGemini, kAnthropic, c.status, body, &status),
              std::string("{\"error\":{\"code\":") + std::to_string(c.status) + ",\"message\":\"m\",\"status\":\"" +
                  c.gstatus + "\"}}");
    EXPECT_EQ(status, c.status);
  }
}

TEST(GeminiError, UpstreamBodyThatIsNotAResponseIsA502) {
  std::string out;
  auto err = translateResponse(kOpenAI, kGemini, "<html>bad gateway</html>", out, fixedContext());
  ASSERT_TRUE(err);
  EXPECT_EQ(err->status, 502);
  err = translateResponse(kOpenAI, kGemini, R"({"candidates":[]})", out, fixedContext());
  ASSERT_TRUE(err);
  EXPECT_EQ(err->status, 502);
  // A blocked prompt is an answer, not an error.
  out.clear();
  ASSERT_FALSE(translateResponse(kOpenAI, kGemini,
                                 R"({"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":5}})",
                                 out, fixedContext()));
  EXPECT_NE(out.find("\"finish_reason\":\"content_filter\""), std::string::npos) << out;
}

// ---- bad inputs ---------------------------------------------------------------------------

void expectBad(std::string_view body, std::string_view param, std::string_view messagePart) {
  std::string out;
  auto err = translateRequest(kGemini, kOpenAI, body, out, geminiClient());
  ASSERT_TRUE(err) << body;
  EXPECT_EQ(err->status, 400);
  EXPECT_EQ(err->param, param) << body << " -> " << err->message;
  EXPECT_NE(err->message.find(messagePart), std::string::npos) << err->message;
  // Rendered for a Gemini client: the Google error shape.
  auto rendered = errorBody(kGemini, *err);
  EXPECT_TRUE(rendered.starts_with("{\"error\":{\"code\":400,\"message\":")) << rendered;
  EXPECT_TRUE(rendered.ends_with(",\"status\":\"INVALID_ARGUMENT\"}}")) << rendered;
}

TEST(GeminiBadInput, RequestsGetClearErrorsNamingTheField) {
  expectBad("not json", "", "not valid JSON");
  expectBad("[]", "", "must be a JSON object");
  expectBad(R"({})", "contents", "contents is required");
  expectBad(R"({"contents":{}})", "contents", "must be an array");
  expectBad(R"({"contents":[]})", "contents", "must not be empty");
  expectBad(R"({"contents":["hi"]})", "contents[0]", "must be an object");
  expectBad(R"({"contents":[{"role":"user"}]})", "contents[0].parts", "is required");
  expectBad(R"({"contents":[{"role":"user","parts":[]}]})", "contents[0].parts", "must not be empty");
  expectBad(R"({"contents":[{"role":"user","parts":"hi"}]})", "contents[0].parts", "must be an array");
  expectBad(R"({"contents":[{"role":"user","parts":[{"text":""}]}]})", "contents[0].parts", "only empty text");
  expectBad(R"({"contents":[{"role":"assistant","parts":[{"text":"x"}]}]})", "contents[0].role", "user or model");
  expectBad(R"({"contents":[{"role":"user","parts":[{"text":5}]}]})", "contents[0].parts[0].text", "must be a string");
  expectBad(R"({"contents":[{"role":"user","parts":[{}]}]})", "contents[0].parts[0]", "has no text");
  expectBad(R"({"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"application/pdf","data":"JVBER"}}]}]})",
            "contents[0].parts[0].inlineData.mimeType", "only images");
  expectBad(R"({"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png"}}]}]})",
            "contents[0].parts[0].inlineData.data", "is required");
  expectBad(R"({"contents":[{"role":"user","parts":[{"functionCall":{"name":"f","args":{}}}]}]})",
            "contents[0].parts[0].functionCall", "model turns");
  expectBad(R"({"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":[1]}}]}]})",
            "contents[0].parts[0].functionCall.args", "must be an object");
  expectBad(R"({"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]})",
            "contents[0].parts[0].functionResponse.name", "no earlier functionCall named 'f'");
  expectBad(R"({"contents":[{"role":"user","parts":[{"executableCode":{"language":"PYTHON","code":"1"}}]}]})",
            "contents[0].parts[0].executableCode", "code execution");
  expectBad(R"({"contents":[{"parts":[{"text":"x"}]}],"systemInstruction":{"parts":[{"inlineData":{}}]}})",
            "systemInstruction.parts[0]", "must be a text part");
  expectBad(R"({"contents":[{"parts":[{"text":"x"}]}],"tools":[{"googleSearch":{}}]})", "tools[0].googleSearch",
            "no equivalent");
  expectBad(R"({"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"description":"d"}]}]})",
            "tools[0].functionDeclarations[0].name", "is required");
  expectBad(R"({"contents":[{"parts":[{"text":"x"}]}],"toolConfig":{"functionCallingConfig":{"mode":"SOMETIMES"}}})",
            "toolConfig.functionCallingConfig.mode", "AUTO, ANY, NONE");
  expectBad(R"({"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"temperature":"hot"}})",
            "generationConfig.temperature", "must be a number");
  expectBad(R"({"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":0}})",
            "generationConfig.maxOutputTokens", "at least 1");
  expectBad(R"({"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"stopSequences":"END"}})",
            "generationConfig.stopSequences", "array of strings");
  expectBad(R"({"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"candidateCount":2}})",
            "generationConfig.candidateCount", "above 1");
  expectBad(R"({"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"text/x.enum"}})",
            "generationConfig.responseMimeType", "text/plain or application/json");
  expectBad(R"({"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseModalities":["IMAGE"]}})",
            "generationConfig.responseModalities", "only TEXT");
  expectBad(R"({"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":"lots"}}})",
            "generationConfig.thinkingConfig.thinkingBudget", "must be an integer");
  expectBad(R"({"contents":[{"parts":[{"text":"x"}]}],"cachedContent":"cachedContents/abc"})", "cachedContent",
            "context cache");
  // snake_case spellings are named as sent.
  expectBad(R"({"contents":[{"parts":[{"text":"x"}]}],"generation_config":{"max_output_tokens":-3}})",
            "generation_config.max_output_tokens", "at least 1");
}

TEST(GeminiBadInput, RequestsThatCannotReachGeminiAreRefused) {
  std::string out;
  auto err = translateRequest(kOpenAI, kGemini, R"({"model":"m","n":2,"messages":[{"role":"user","content":"x"}]})", out,
                              fixedContext());
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "n");
  // A tool result whose call is not in the conversation: Gemini needs the function name.
  err = translateRequest(kOpenAI, kGemini,
                         R"({"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c9","content":"r"}]})",
                         out, fixedContext());
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "messages[1]");
  EXPECT_NE(err->message.find("function's name"), std::string::npos);
  // A Gemini client without a model in its path.
  err = translateRequest(kGemini, kOpenAI, R"({"contents":[{"parts":[{"text":"x"}]}]})", out, fixedContext());
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "model");
}

TEST(GeminiBadInput, RepeatedRolesAndToolChoicesAreAccepted) {
  std::string body = R"({"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"user","parts":[{"text":"b"}]},
    {"role":"model","parts":[{"text":"c"}]},{"role":"model","parts":[{"text":"d"}]},{"parts":[{"text":"e"}]}],
    "tools":[{"functionDeclarations":[{"name":"f"},{"name":"g"},{"name":"h"}]}],
    "toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f","g"]}}})";
  auto v = parse(request(kGemini, kOpenAI, body, geminiClient()));
  EXPECT_EQ(v.at("messages").as_array().size(), 5u);
  EXPECT_EQ(v.at("tool_choice").as_string(), "required");
  EXPECT_EQ(v.at("tools").as_array().size(), 2u);  // ANY limited to f and g
  auto a = parse(request(kGemini, kAnthropic, body, geminiClient()));
  EXPECT_EQ(a.at("messages").as_array().size(), 3u);  // Anthropic needs alternation: merged
}

}  // namespace gemini_translate_test
}  // namespace
}  // namespace sluice::providers
