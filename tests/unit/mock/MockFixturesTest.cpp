// The mock's answers against example payloads from the providers' API references
// (tests/fixtures/mock): every field an example carries is in the mock's answer with the same
// JSON kind, and streams follow the same event sequences.
#include "mock/AnthropicMock.hpp"
#include "mock/GeminiMock.hpp"
#include "mock/OpenAIMock.hpp"
#include "mock/ResponsesMock.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace sluice::mock {
namespace {
namespace mock_fixtures_test {

namespace json = boost::json;

std::string readFixture(std::string_view name) {
  const auto path = std::filesystem::path(__FILE__).parent_path() / "../../fixtures/mock" / name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json::value fixtureJson(std::string_view name) { return json::parse(readFixture(name)); }

bool number(const json::value& v) { return v.is_int64() || v.is_uint64() || v.is_double(); }

// Values compared by kind only: tool arguments and echoed request fields differ by design.
bool opaque(std::string_view key) {
  return key == "input" || key == "args" || key == "metadata" || key == "parameters" || key == "tools";
}

const json::value* typeOf(const json::value& v) {
  const auto* o = v.if_object();
  return o ? o->if_contains("type") : nullptr;
}

// Every field of `ref` is in `got` with the same JSON kind; null in `ref` matches anything.
// Array elements of `got` are matched to the `ref` element of the same "type" (else the first).
void expectShape(const json::value& ref, const json::value& got, const std::string& path = "$") {
  if (ref.is_null()) return;
  if (number(ref)) {
    EXPECT_TRUE(number(got)) << path << ": expected a number, got " << json::serialize(got);
    return;
  }
  if (ref.kind() != got.kind()) {
    ADD_FAILURE() << path << ": expected " << json::serialize(ref) << ", got " << json::serialize(got);
    return;
  }
  if (const auto* ro = ref.if_object()) {
    const auto& go = got.get_object();
    for (const auto& kv : *ro) {
      const auto* gv = go.if_contains(kv.key());
      if (!gv) {
        ADD_FAILURE() << path << ": missing field '" << kv.key() << "' in " << json::serialize(got);
        continue;
      }
      if (opaque(kv.key())) {
        if (!kv.value().is_null() && !gv->is_null()) {
          EXPECT_EQ(kv.value().kind(), gv->kind()) << path << "." << kv.key();
        }
        continue;
      }
      expectShape(kv.value(), *gv, path + "." + std::string(kv.key()));
    }
    return;
  }
  if (const auto* ra = ref.if_array()) {
    if (ra->empty()) return;
    const auto& ga = got.get_array();
    for (std::size_t i = 0; i < ga.size(); ++i) {
      const json::value* match = &(*ra)[0];
      if (const auto* gt = typeOf(ga[i])) {
        match = nullptr;
        for (const auto& r : *ra)
          if (const auto* rt = typeOf(r); rt && *rt == *gt) match = &r;
        if (!match) {
          ADD_FAILURE() << path << "[" << i << "]: element of a type the reference does not show: "
                        << json::serialize(ga[i]);
          continue;
        }
      }
      expectShape(*match, ga[i], path + "[" + std::to_string(i) + "]");
    }
  }
}

struct Event {
  std::string name;  // the SSE event name, else the data's "type", else "data"
  json::value data;  // null for [DONE]
};

std::vector<Event> parseSse(std::string_view text) {
  std::vector<Event> out;
  std::string name, data;
  auto flush = [&] {
    if (data.empty()) return;
    Event e;
    if (data == "[DONE]") {
      e.name = "[DONE]";
    } else {
      e.data = json::parse(data);
      e.name = name;
      if (e.name.empty()) {
        const auto* t = typeOf(e.data);
        e.name = (t && t->is_string()) ? std::string(t->get_string()) : "data";
      }
    }
    out.push_back(std::move(e));
    name.clear();
    data.clear();
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = end + 1;
    if (line.empty()) flush();
    else if (line.starts_with("event: ")) name = std::string(line.substr(7));
    else if (line.starts_with("data: ")) data += line.substr(6);
  }
  flush();
  return out;
}

// Event names with consecutive repeats collapsed (any number of deltas is one step).
std::vector<std::string> sequence(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events)
    if (out.empty() || out.back() != e.name) out.push_back(e.name);
  return out;
}

// Each mock event has the fields of the reference event of the same name.
void expectEventShapes(const std::vector<Event>& ref, const std::vector<Event>& got) {
  for (const auto& g : got) {
    auto it = std::find_if(ref.begin(), ref.end(), [&](const Event& r) { return r.name == g.name; });
    if (it == ref.end()) continue;
    expectShape(it->data, g.data, g.name);
  }
}

constexpr std::string_view kWeatherTool =
    R"({"name":"get_weather","description":"Get the weather","input_schema":{"type":"object",
      "properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},
      "required":["location"]}})";

anthropic::MessagesRequest anthropicRequest(std::string_view body) {
  anthropic::MessagesRequest r;
  auto e = anthropic::parseMessagesRequest(json::parse(body), r);
  EXPECT_FALSE(e) << (e ? e->message : "");
  return r;
}

anthropic::MessagesRequest anthropicToolRequest(bool stream) {
  std::string body = R"({"model":"claude-sonnet-4-20250514","max_tokens":1024,"stream":)";
  body += stream ? "true" : "false";
  body += R"(,"tools":[)";
  body += kWeatherTool;
  body += R"(],"messages":[{"role":"user","content":"What is the weather in Paris? Use get_weather."}]})";
  return anthropicRequest(body);
}

Generation plan(const ToolDecision& d, std::size_t chunks = 8) { return planAnswer(d, chunks, std::nullopt, {}, 1); }

// ------------------------------------------------------------------ Anthropic

TEST(MockFixtures, AnthropicMessage) {
  auto req = anthropicRequest(
      R"({"model":"claude-sonnet-4-20250514","max_tokens":1024,"messages":[{"role":"user","content":"Hello"}]})");
  auto got = json::parse(anthropic::messageJson(req, plan(req.tools), "msg_01test"));
  expectShape(fixtureJson("anthropic_message.json"), got);
  EXPECT_EQ(got.at("stop_reason"), "end_turn");
  EXPECT_EQ(got.at("usage").at("input_tokens").as_int64(), 6);
}

TEST(MockFixtures, AnthropicToolUse) {
  auto req = anthropicToolRequest(false);
  auto got = json::parse(anthropic::messageJson(req, plan(req.tools), "msg_01test"));
  expectShape(fixtureJson("anthropic_tool_use.json"), got);
  EXPECT_EQ(got.at("stop_reason"), "tool_use");
  const auto& block = got.at("content").at(0);
  EXPECT_EQ(block.at("type"), "tool_use");
  EXPECT_TRUE(block.at("id").as_string().starts_with("toolu_"));
  EXPECT_EQ(block.at("input"), json::parse(R"({"location":"example"})"));
}

TEST(MockFixtures, AnthropicStream) {
  auto req = anthropicRequest(R"({"model":"claude-sonnet-4-20250514","max_tokens":1024,"stream":true,
      "messages":[{"role":"user","content":"Hello"}]})");
  const auto ref = parseSse(readFixture("anthropic_stream.sse"));
  const auto got = parseSse(anthropic::messageStream(req, plan(req.tools, 3), "msg_01test").all());
  EXPECT_EQ(sequence(got), sequence(ref));
  expectEventShapes(ref, got);
  for (const auto& e : got) EXPECT_EQ(e.data.at("type").as_string(), e.name);  // event name == data type
}

TEST(MockFixtures, AnthropicToolStream) {
  auto req = anthropicToolRequest(true);
  const auto ref = parseSse(readFixture("anthropic_tool_stream.sse"));
  const auto got = parseSse(anthropic::messageStream(req, plan(req.tools, 3), "msg_01test").all());
  EXPECT_EQ(sequence(got), sequence(ref));
  expectEventShapes(ref, got);
  std::string args;
  for (const auto& e : got)
    if (e.name == "content_block_delta") args += e.data.at("delta").at("partial_json").as_string();
  EXPECT_EQ(json::parse(args), json::parse(R"({"location":"example"})"));
}

TEST(MockFixtures, AnthropicErrorAndCountTokens) {
  auto err = json::parse(anthropic::errorJson(anthropic::error(404, "Not found"), "req_1"));
  expectShape(fixtureJson("anthropic_error.json"), err);
  EXPECT_EQ(err.at("error").at("type"), "not_found_error");
  expectShape(fixtureJson("anthropic_count_tokens.json"), json::parse(anthropic::countTokensJson(12)));
  EXPECT_EQ(anthropic::simulatedFailure(529).type, "overloaded_error");
  EXPECT_EQ(anthropic::simulatedFailure(429).type, "rate_limit_error");
  EXPECT_EQ(anthropic::simulatedFailure(500).type, "api_error");
  EXPECT_EQ(anthropic::simulatedFailure(401).type, "authentication_error");
  EXPECT_EQ(anthropic::simulatedFailure(403).type, "permission_error");
}

TEST(MockFixtures, AnthropicCountTokensMatchesUsage) {
  constexpr std::string_view body =
      R"({"model":"m","max_tokens":5,"system":"Be brief","messages":[{"role":"user","content":"Hello"}]})";
  std::int64_t n = 0;
  ASSERT_FALSE(anthropic::parseCountTokensRequest(json::parse(body), n));
  EXPECT_EQ(n, anthropicRequest(body).input_tokens);
  EXPECT_EQ(n, (2 + 4) + (2 + 4));  // the same estimate as OpenAI's for the same conversation
}

// ------------------------------------------------------------------ Gemini

gemini::GenerateRequest geminiRequest(std::string_view body) {
  gemini::GenerateRequest r;
  auto e = gemini::parseGenerateRequest(json::parse(body), "gemini-2.5-flash", r);
  EXPECT_FALSE(e) << (e ? e->message : "");
  return r;
}

TEST(MockFixtures, GeminiGenerateContent) {
  auto req = geminiRequest(R"({"contents":[{"role":"user","parts":[{"text":"Hello"}]}]})");
  auto got = json::parse(gemini::generateJson(req, plan(req.tools), "resp1"));
  expectShape(fixtureJson("gemini_generate_content.json"), got);
  EXPECT_EQ(got.at("modelVersion"), "gemini-2.5-flash");
  EXPECT_EQ(got.at("usageMetadata").at("totalTokenCount").as_int64(), 6 + 8);
}

TEST(MockFixtures, GeminiFunctionCall) {
  auto req = geminiRequest(R"({"contents":[{"role":"user","parts":[{"text":"please schedule_meeting"}]}],
      "tools":[{"functionDeclarations":[{"name":"schedule_meeting","parameters":{"type":"OBJECT",
        "properties":{"attendees":{"type":"ARRAY","items":{"type":"STRING"}},"date":{"type":"STRING"},
        "topic":{"type":"STRING"}},"required":["attendees","date","topic"]}}]}]})");
  auto got = json::parse(gemini::generateJson(req, plan(req.tools), "resp1"));
  expectShape(fixtureJson("gemini_function_call.json"), got);
  EXPECT_EQ(got.at("candidates").at(0).at("content").at("parts").at(0).at("functionCall").at("args"),
            json::parse(R"({"attendees":["example"],"date":"example","topic":"example"})"));
}

TEST(MockFixtures, GeminiStreamSseAndArray) {
  auto req = geminiRequest(R"({"contents":[{"parts":[{"text":"Hello"}]}]})");
  const auto gen = plan(req.tools, 3);
  const auto ref = parseSse(readFixture("gemini_stream.sse"));
  const std::string sse = gemini::generateStream(req, gen, "r1", true).all();
  EXPECT_NE(sse.find("\r\n\r\n"), std::string::npos);
  const auto got = parseSse(sse);
  ASSERT_EQ(got.size(), 4u);
  for (std::size_t i = 0; i + 1 < got.size(); ++i) expectShape(ref.front().data, got[i].data);
  expectShape(ref.back().data, got.back().data);
  EXPECT_EQ(got.back().data.at("candidates").at(0).at("finishReason"), "STOP");

  // Without alt=sse: one JSON array of the same objects.
  auto arr = json::parse(gemini::generateStream(req, gen, "r1", false).all());
  ASSERT_EQ(arr.as_array().size(), 4u);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(arr.as_array()[i], got[i].data);
  // No content: still a valid array.
  auto empty = json::parse(gemini::generateStream(req, plan(req.tools, 0), "r1", false).all());
  EXPECT_EQ(empty.as_array().size(), 1u);
}

TEST(MockFixtures, GeminiOtherEndpoints) {
  expectShape(fixtureJson("gemini_error.json"), json::parse(gemini::errorJson(gemini::simulatedFailure(429))));
  EXPECT_EQ(std::string(gemini::statusName(429)), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(std::string(gemini::statusName(503)), "UNAVAILABLE");
  EXPECT_EQ(std::string(gemini::statusName(500)), "INTERNAL");
  EXPECT_EQ(std::string(gemini::statusName(400)), "INVALID_ARGUMENT");
  EXPECT_EQ(std::string(gemini::statusName(403)), "PERMISSION_DENIED");
  EXPECT_EQ(std::string(gemini::statusName(401)), "UNAUTHENTICATED");
  expectShape(fixtureJson("gemini_count_tokens.json"), json::parse(gemini::countTokensJson(6)));
  // Generation models carry sampling defaults; embedding models do not.
  const auto models = fixtureJson("gemini_models.json");
  EXPECT_TRUE(json::parse(gemini::modelsJson()).at("models").is_array());
  expectShape(models.at("models").at(0), json::parse(*gemini::modelJson("gemini-2.0-flash")));

  gemini::EmbedRequest one;
  ASSERT_FALSE(gemini::parseEmbedRequest(json::parse(R"({"content":{"parts":[{"text":"Hello"}]}})"), false, one));
  expectShape(fixtureJson("gemini_embed_content.json"), json::parse(gemini::embedJson(one, false)));
  gemini::EmbedRequest batch;
  ASSERT_FALSE(gemini::parseEmbedRequest(
      json::parse(R"({"requests":[{"content":{"parts":[{"text":"a"}]}},{"content":{"parts":[{"text":"b"}]}}]})"), true,
      batch));
  auto b = json::parse(gemini::embedJson(batch, true));
  expectShape(fixtureJson("gemini_batch_embed_contents.json"), b);
  EXPECT_EQ(b.at("embeddings").as_array().size(), 2u);

  std::int64_t n = 0;
  ASSERT_FALSE(gemini::parseCountTokensRequest(json::parse(R"({"contents":[{"parts":[{"text":"Hello"}]}]})"), n));
  EXPECT_EQ(n, 6);
  gemini::GenerateRequest bad;
  auto e = gemini::parseGenerateRequest(json::parse("{}"), "m", bad);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(json::parse(gemini::errorJson(*e)).at("error").at("status"), "INVALID_ARGUMENT");
}

// ------------------------------------------------------------------ OpenAI Responses

const responses::ResponseMeta kRespMeta{"resp_test", 1741476542, "msg_test"};

responses::ResponsesRequest responsesRequest(std::string_view body) {
  responses::ResponsesRequest r;
  auto e = responses::parseResponsesRequest(json::parse(body), r);
  EXPECT_FALSE(e) << (e ? e->message : "");
  return r;
}

constexpr std::string_view kResponsesTool =
    R"([{"type":"function","name":"get_current_weather","parameters":{"type":"object",
       "properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},
       "required":["location","unit"]}}])";

TEST(MockFixtures, ResponsesResponse) {
  auto req = responsesRequest(R"({"model":"gpt-4.1","input":"Tell me a story"})");
  auto got = json::parse(responses::responseJson(req, plan(req.tools), kRespMeta));
  expectShape(fixtureJson("responses_response.json"), got);
  EXPECT_EQ(got.at("output").at(0).at("content").at(0).at("text"), "Hello from sluice mock. This is a deterministic");
}

TEST(MockFixtures, ResponsesFunctionCall) {
  std::string body = R"({"model":"gpt-4.1","input":"What's the weather? use get_current_weather","tools":)";
  body += kResponsesTool;
  body += "}";
  auto req = responsesRequest(body);
  auto got = json::parse(responses::responseJson(req, plan(req.tools), kRespMeta));
  expectShape(fixtureJson("responses_function_call.json"), got);
  const auto& item = got.at("output").at(0);
  EXPECT_EQ(item.at("arguments"), R"({"location":"example","unit":"celsius"})");
  EXPECT_TRUE(item.at("call_id").as_string().starts_with("call_"));
  EXPECT_TRUE(item.at("id").as_string().starts_with("fc_"));
}

void expectSequenceNumbers(const std::vector<Event>& events) {
  for (std::size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].data.at("sequence_number").as_int64(), static_cast<std::int64_t>(i)) << events[i].name;
    EXPECT_EQ(events[i].data.at("type").as_string(), events[i].name);
  }
}

TEST(MockFixtures, ResponsesStream) {
  auto req = responsesRequest(R"({"model":"gpt-4.1","instructions":"You are a helpful assistant.","input":"Hi"})");
  const auto ref = parseSse(readFixture("responses_stream.sse"));
  const auto got = parseSse(responses::responseStream(req, plan(req.tools, 3), kRespMeta).all());
  EXPECT_EQ(sequence(got), sequence(ref));
  expectEventShapes(ref, got);
  expectSequenceNumbers(got);
  EXPECT_EQ(got.back().data.at("response").at("usage").at("output_tokens").as_int64(), 3);
}

TEST(MockFixtures, ResponsesFunctionCallStream) {
  std::string body = R"({"model":"gpt-4.1","stream":true,"input":[{"role":"user","content":"call get_current_weather"}],"tools":)";
  body += kResponsesTool;
  body += "}";
  auto req = responsesRequest(body);
  const auto ref = parseSse(readFixture("responses_function_call_stream.sse"));
  const auto got = parseSse(responses::responseStream(req, plan(req.tools, 3), kRespMeta).all());
  std::vector<std::string> seq = sequence(got);
  ASSERT_GE(seq.size(), 3u);
  EXPECT_EQ(seq.front(), "response.created");
  EXPECT_EQ(seq.back(), "response.completed");
  EXPECT_EQ(std::vector<std::string>(seq.begin() + 2, seq.end() - 1), sequence(ref));
  expectEventShapes(ref, got);
  expectSequenceNumbers(got);
}

TEST(MockFixtures, ResponsesParallelCallsSequenceNumbers) {
  std::string body = R"({"model":"m","input":"use get_weather and get_time","tools":[
      {"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
      {"type":"function","name":"get_time","parameters":{"type":"object","properties":{}}}]})";
  auto req = responsesRequest(body);
  ASSERT_EQ(req.tools.calls.size(), 2u);
  const auto got = parseSse(responses::responseStream(req, plan(req.tools, 4), kRespMeta).all());
  expectSequenceNumbers(got);
  auto fin = got.back().data.at("response").at("output");
  ASSERT_EQ(fin.as_array().size(), 2u);
  EXPECT_EQ(fin.at(1).at("name"), "get_time");
  EXPECT_EQ(fin.at(1).at("arguments"), "{}");
}

// ------------------------------------------------------------------ OpenAI chat tool calls

TEST(MockFixtures, OpenAIChatToolCall) {
  openai::ChatRequest req;
  ASSERT_FALSE(openai::parseChatRequest(json::parse(R"({"model":"gpt-4o-mini","messages":[
      {"role":"user","content":"What's the weather like in Boston? Call get_current_weather."}],
      "tools":[{"type":"function","function":{"name":"get_current_weather","parameters":{"type":"object",
        "properties":{"location":{"type":"string"}},"required":["location"]}}}]})"),
                                        req));
  const openai::ResponseMeta meta{"chatcmpl-test", 1699896916};
  auto got = json::parse(openai::chatCompletionJson(req, plan(req.tools), meta));
  expectShape(fixtureJson("openai_chat_tool_call.json"), got);
  EXPECT_EQ(got.at("choices").at(0).at("finish_reason"), "tool_calls");

  req.stream = true;
  const auto ref = parseSse(readFixture("openai_chat_tool_stream.sse"));
  const auto chunks = parseSse(openai::chatCompletionStream(req, plan(req.tools, 2), meta).all());
  ASSERT_EQ(chunks.size(), 1u + 2u + 1u + 1u);
  expectShape(ref[0].data, chunks[0].data);
  expectShape(ref[1].data, chunks[1].data);
  expectShape(ref[1].data, chunks[2].data);
  expectShape(ref[3].data, chunks[3].data);
  EXPECT_EQ(chunks[4].name, "[DONE]");
  std::string args;
  for (std::size_t i = 1; i <= 2; ++i)
    args += chunks[i].data.at("choices").at(0).at("delta").at("tool_calls").at(0).at("function").at("arguments").as_string();
  EXPECT_EQ(args, R"({"location":"example"})");
}

}  // namespace mock_fixtures_test
}  // namespace
}  // namespace sluice::mock
