// ConverseCodec: a canonical request with every kind of part as Bedrock's Converse body, the
// refusals a Converse upstream needs, an answer and an error decoded, and a ConverseStream
// (AWS event-stream frames) decoded at every split into the same canonical events.
#include "providers/bedrock/ConverseCodec.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "cloud/EventStream.hpp"

namespace converse_codec_test {
using namespace sluice::providers;
using namespace sluice::providers::bedrock;
namespace json = boost::json;

Part toolCall(std::string id, std::string name, std::string args) {
  Part p;
  p.kind = Part::Kind::ToolCall;
  p.id = std::move(id);
  p.name = std::move(name);
  p.arguments = std::move(args);
  return p;
}

Request conversation() {
  Request r;
  r.model = "client-model";
  r.system.push_back(Part::makeText("Be brief."));
  Message u;
  u.parts.push_back(Part::makeText("Weather in Paris?"));
  Part img;
  img.kind = Part::Kind::Image;
  img.media_type = "image/png";
  img.data = "iVBORw0KGgo=";
  u.parts.push_back(img);
  Message a;
  a.role = Role::Assistant;
  Part think;
  think.kind = Part::Kind::Reasoning;
  think.text = "Use the tool.";
  think.signature = "sig-1";
  a.parts.push_back(think);
  Part unsigned_think;
  unsigned_think.kind = Part::Kind::Reasoning;
  unsigned_think.text = "from a client that cannot sign";
  a.parts.push_back(unsigned_think);
  a.parts.push_back(toolCall("call_1", "get_weather", R"({"city":"Paris"})"));
  a.parts.push_back(toolCall("call_2", "old_tool", "{\"trunc"));
  Message t;
  Part res;
  res.kind = Part::Kind::ToolResult;
  res.id = "call_1";
  res.content.push_back(Part::makeText("18C"));
  t.parts.push_back(res);
  Part failed;
  failed.kind = Part::Kind::ToolResult;
  failed.id = "call_2";
  failed.is_error = true;
  t.parts.push_back(failed);
  r.messages = {u, a, t};
  r.tools.push_back(
      {"get_weather", "Weather for a city", R"({"type":"object","properties":{"city":{"type":"string"}}})"});
  r.tool_choice.mode = ToolChoice::Mode::Required;
  r.max_tokens = 300;
  r.temperature = 0.5;
  r.top_p = 0.9;
  r.top_k = 40;
  r.stop = {"END"};
  return r;
}

json::object encode(const Request& r, std::string model) {
  std::string out;
  EncodeOptions o;
  o.model = std::move(model);
  auto err = encodeConverseRequest(r, o, out);
  EXPECT_FALSE(err) << (err ? err->message : "");
  return json::parse(out).as_object();
}

TEST(ConverseCodecTest, RequestWithEveryPart) {
  json::object b = encode(conversation(), "us.anthropic.claude-sonnet-4-5-20250929-v1:0");
  EXPECT_EQ(json::serialize(b.at("system")), R"([{"text":"Be brief."}])");
  const auto& msgs = b.at("messages").as_array();
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_EQ(
      json::serialize(msgs[0]),
      R"({"role":"user","content":[{"text":"Weather in Paris?"},{"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}}]})");
  EXPECT_EQ(
      json::serialize(msgs[1]),
      R"({"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"Use the tool.","signature":"sig-1"}}},)"
      R"({"toolUse":{"toolUseId":"call_1","name":"get_weather","input":{"city":"Paris"}}},)"
      R"({"toolUse":{"toolUseId":"call_2","name":"old_tool","input":{"_raw_arguments":"{\"trunc"}}}]})");
  EXPECT_EQ(
      json::serialize(msgs[2]),
      R"({"role":"user","content":[{"toolResult":{"toolUseId":"call_1","content":[{"text":"18C"}],"status":"success"}},)"
      R"({"toolResult":{"toolUseId":"call_2","content":[{"text":""}],"status":"error"}}]})");
  EXPECT_EQ(json::serialize(b.at("inferenceConfig")),
            R"({"maxTokens":300,"temperature":5E-1,"topP":9E-1,"stopSequences":["END"]})");
  EXPECT_EQ(json::serialize(b.at("additionalModelRequestFields")), R"({"top_k":40})");
  // The offered tool, the one only the history names (Bedrock refuses tool blocks it was not
  // told of), and the choice.
  EXPECT_EQ(
      json::serialize(b.at("toolConfig")),
      R"({"tools":[{"toolSpec":{"name":"get_weather","inputSchema":{"json":{"type":"object","properties":{"city":{"type":"string"}}}},"description":"Weather for a city"}},)"
      R"({"toolSpec":{"name":"old_tool","inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"any":{}}})");
  EXPECT_FALSE(b.contains("model"));
}

TEST(ConverseCodecTest, AnthropicOnlyFieldsAndThinking) {
  Request r = conversation();
  json::object nova = encode(r, "amazon.nova-pro-v1:0");
  EXPECT_FALSE(nova.contains("additionalModelRequestFields")) << "top_k is not a Nova field";
  r.reasoning_budget = 2000;
  r.max_tokens.reset();
  json::object claude = encode(r, "anthropic.claude-3-7-sonnet-20250219-v1:0");
  EXPECT_EQ(json::serialize(claude.at("additionalModelRequestFields")),
            R"({"top_k":40,"thinking":{"type":"enabled","budget_tokens":2000}})");
  EXPECT_EQ(claude.at("inferenceConfig").at("maxTokens").as_int64(), 4096 + 2000);
  r.max_tokens = 1000;
  std::string out;
  EncodeOptions o;
  o.model = "anthropic.claude-3-7-sonnet-20250219-v1:0";
  auto err = encodeConverseRequest(r, o, out);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "max_tokens");
  EXPECT_TRUE(isAnthropicModel("arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-x"));
  EXPECT_FALSE(isAnthropicModel("meta.llama3-70b-instruct-v1:0"));
}

TEST(ConverseCodecTest, ToolChoiceNoneAndNoTools) {
  Request r;
  r.messages.push_back(Message{Role::User, {Part::makeText("hi")}});
  r.tools.push_back({"t", "", "{}"});
  r.tool_choice.mode = ToolChoice::Mode::None;
  EXPECT_FALSE(encode(r, "amazon.nova-lite-v1:0").contains("toolConfig")) << "no tool offered, none in the history";
  r.tool_choice.mode = ToolChoice::Mode::Named;
  r.tool_choice.name = "t";
  EXPECT_EQ(json::serialize(encode(r, "m").at("toolConfig").at("toolChoice")), R"({"tool":{"name":"t"}})");
}

TEST(ConverseCodecTest, Refusals) {
  struct Case {
    std::function<void(Request&)> change;
    const char* param;
  };
  std::vector<Case> cases = {
      {[](Request& r) { r.n = 2; }, "n"},
      {[](Request& r) { r.response_format.kind = ResponseFormat::Kind::JsonSchema; }, "response_format"},
      {[](Request& r) {
         r.messages[0].parts[1].data.clear();
         r.messages[0].parts[1].url = "https://example.com/a.png";
       },
       "messages[0].content[1]"},
      {[](Request& r) { r.messages[0].parts[1].media_type = "image/tiff"; }, "messages[0].content[1]"},
  };
  for (const auto& c : cases) {
    Request r = conversation();
    c.change(r);
    std::string out;
    auto err = encodeConverseRequest(r, {}, out);
    ASSERT_TRUE(err) << c.param;
    EXPECT_EQ(err->status, 400);
    EXPECT_EQ(err->param, c.param);
  }
}

TEST(ConverseCodecTest, AnswerDecoded) {
  Response res;
  auto err = decodeConverseResponse(
      R"({"output":{"message":{"role":"assistant","content":[)"
      R"({"reasoningContent":{"reasoningText":{"text":"hmm","signature":"s"}}},{"text":"It is 18C."},)"
      R"({"toolUse":{"toolUseId":"tu_1","name":"get_weather","input":{"city":"Paris"}}}]}},)"
      R"("stopReason":"tool_use","usage":{"inputTokens":10,"outputTokens":5,"totalTokens":45,"cacheReadInputTokens":20,"cacheWriteInputTokens":10},"metrics":{"latencyMs":300}})",
      res);
  ASSERT_FALSE(err);
  ASSERT_EQ(res.content.size(), 3u);
  EXPECT_EQ(res.content[0].kind, Part::Kind::Reasoning);
  EXPECT_EQ(res.content[0].signature, "s");
  EXPECT_EQ(res.content[1].text, "It is 18C.");
  EXPECT_EQ(res.content[2].kind, Part::Kind::ToolCall);
  EXPECT_EQ(res.content[2].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(res.finish, FinishReason::ToolCalls);
  EXPECT_EQ(res.usage.input, 40);
  EXPECT_EQ(res.usage.cached, 20);
  EXPECT_EQ(res.usage.cache_creation, 10);
  EXPECT_EQ(res.usage.output, 5);
  Response bad;
  EXPECT_TRUE(decodeConverseResponse("[]", bad));
  EXPECT_TRUE(decodeConverseResponse(R"({"output":{}})", bad));
}

TEST(ConverseCodecTest, ErrorsKeepTheirStatusAndName) {
  ApiError e = decodeConverseError(429, R"({"message":"Too many requests, please wait before trying again."})",
                                   "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/");
  EXPECT_EQ(e.status, 429);
  EXPECT_EQ(e.kind, ErrorKind::RateLimit);
  EXPECT_EQ(e.message, "ThrottlingException: Too many requests, please wait before trying again.");
  EXPECT_EQ(decodeConverseError(403, "not json", "AccessDeniedException").kind, ErrorKind::Permission);
  EXPECT_EQ(statusForException("modelStreamErrorException"), 424);
  EXPECT_EQ(statusForException("ServiceUnavailableException"), 503);
  EXPECT_EQ(statusForException("SomethingNew"), 500);
}

struct Recorder : StreamEventSink {
  std::vector<std::string> lines;
  void onEvent(const StreamEvent& ev) override {
    switch (ev.kind) {
      case StreamEvent::Kind::Start:
        lines.push_back("start");
        break;
      case StreamEvent::Kind::Text:
        lines.push_back("text:" + std::string(ev.text));
        break;
      case StreamEvent::Kind::Reasoning:
        lines.push_back("reasoning:" + std::string(ev.text));
        break;
      case StreamEvent::Kind::ReasoningSignature:
        lines.push_back("signature:" + std::string(ev.text));
        break;
      case StreamEvent::Kind::ToolCallStart:
        lines.push_back("call" + std::to_string(ev.tool_index) + ":" + std::string(ev.id) + ":" + std::string(ev.name));
        break;
      case StreamEvent::Kind::ToolCallArgs:
        lines.push_back("args" + std::to_string(ev.tool_index) + ":" + std::string(ev.text));
        break;
      case StreamEvent::Kind::Finish:
        lines.push_back("finish:" + std::string(stopReasonName(ev.finish)));
        break;
      case StreamEvent::Kind::Usage:
        lines.push_back("usage:" + std::to_string(ev.usage.input) + "/" + std::to_string(ev.usage.output));
        break;
      case StreamEvent::Kind::Done:
        lines.push_back("done");
        break;
      case StreamEvent::Kind::Error:
        lines.push_back("error:" + std::to_string(ev.error->status) + ":" + ev.error->message);
        break;
      default:
        lines.push_back("other");
        break;
    }
  }
};

std::string event(std::string type, std::string payload) {
  return sluice::cloud::encodeEventStreamMessage(
      {{":event-type", type}, {":content-type", "application/json"}, {":message-type", "event"}}, payload);
}

TEST(ConverseCodecTest, StreamAtEverySplit) {
  std::string stream =
      event("messageStart", R"({"role":"assistant","p":"abc"})") +
      event("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"thinking"}}})") +
      event("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"sig"}}})") +
      event("contentBlockStop", R"({"contentBlockIndex":0})") +
      event("contentBlockDelta", R"({"contentBlockIndex":1,"delta":{"text":"Hel"}})") +
      event("contentBlockDelta", R"({"contentBlockIndex":1,"delta":{"text":"lo"}})") +
      event("contentBlockStart",
            R"({"contentBlockIndex":2,"start":{"toolUse":{"toolUseId":"tu_9","name":"get_weather"}}})") +
      event("contentBlockDelta", R"({"contentBlockIndex":2,"delta":{"toolUse":{"input":"{\"city\":"}}})") +
      event("contentBlockDelta", R"({"contentBlockIndex":2,"delta":{"toolUse":{"input":"\"Paris\"}"}}})") +
      event("messageStop", R"({"stopReason":"tool_use"})") +
      event(
          "metadata",
          R"({"usage":{"inputTokens":7,"outputTokens":3,"totalTokens":12,"cacheReadInputTokens":2},"metrics":{"latencyMs":5}})");
  const std::vector<std::string> want = {"start",
                                         "reasoning:thinking",
                                         "signature:sig",
                                         "text:Hel",
                                         "text:lo",
                                         "call0:tu_9:get_weather",
                                         "args0:{\"city\":",
                                         "args0:\"Paris\"}",
                                         "finish:tool_use",
                                         "usage:9/3",
                                         "done"};
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{64}, stream.size()}) {
    auto d = makeConverseStreamDecoder();
    Recorder rec;
    for (std::size_t i = 0; i < stream.size(); i += piece)
      ASSERT_TRUE(d->feed(std::string_view(stream).substr(i, piece), rec));
    EXPECT_EQ(rec.lines, want) << "pieces of " << piece;
    EXPECT_EQ(d->pending(), 0u);
  }
}

TEST(ConverseCodecTest, StreamExceptionsAndBrokenFrames) {
  auto d = makeConverseStreamDecoder();
  Recorder rec;
  std::string exc = sluice::cloud::encodeEventStreamMessage({{":exception-type", "throttlingException"},
                                                             {":content-type", "application/json"},
                                                             {":message-type", "exception"}},
                                                            R"({"message":"Too many tokens"})");
  ASSERT_TRUE(d->feed(event("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"text":"a"}})") + exc, rec));
  EXPECT_EQ(rec.lines, (std::vector<std::string>{"text:a", "error:429:throttlingException: Too many tokens"}));

  auto cut = makeConverseStreamDecoder();
  Recorder cut_rec;
  std::string f = event("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"text":"a"}})");
  ASSERT_TRUE(cut->feed(std::string_view(f).substr(0, f.size() - 3), cut_rec));
  EXPECT_GT(cut->pending(), 0u) << "a stream that ends here was truncated";

  auto broken = makeConverseStreamDecoder();
  Recorder broken_rec;
  f[f.size() - 1] ^= 1;
  EXPECT_FALSE(broken->feed(f, broken_rec));
  ASSERT_EQ(broken_rec.lines.size(), 1u);
  EXPECT_EQ(broken_rec.lines[0].rfind("error:502:malformed event stream", 0), 0u) << broken_rec.lines[0];
}

}  // namespace converse_codec_test
