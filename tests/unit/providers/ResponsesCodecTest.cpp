// OpenAI Responses API as a client format: request decoding (every item kind, the 400s and the
// dropped fields), response encoding, stream encoding (goldens, sequence numbers, closing events),
// and the shape of our output against reference payloads from OpenAI's API reference.
#include "providers/openai/ResponsesCodec.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <initializer_list>
#include <map>

#include "TranslateTestUtil.hpp"
#include "providers/anthropic/MessagesCodec.hpp"
#include "providers/openai/ChatCodec.hpp"

namespace sluice::providers {
namespace {
namespace responses_codec_test {

namespace json = boost::json;
using openai::ResponsesEcho;
using testing::expectGolden;
using testing::readFixture;

// ---- helpers ----------------------------------------------------------------------------------

Request decodeOk(std::string_view body, ResponsesEcho* echo = nullptr) {
  Request req;
  auto err = openai::decodeResponsesRequest(body, req, echo);
  EXPECT_FALSE(err) << (err ? err->param + ": " + err->message : "");
  return req;
}

ApiError decodeErr(std::string_view body) {
  Request req;
  auto err = openai::decodeResponsesRequest(body, req);
  EXPECT_TRUE(err) << body;
  return err.value_or(ApiError{});
}

struct Sse {
  std::string event;
  json::value data;
};

// Splits client SSE output into events, checking the framing of every one.
std::vector<Sse> parseSse(const std::string& s) {
  std::vector<Sse> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto end = s.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event at " << pos;
    if (end == std::string::npos) break;
    std::string_view ev(s.data() + pos, end - pos);
    pos = end + 2;
    EXPECT_TRUE(ev.starts_with("event: ")) << ev;
    auto nl = ev.find('\n');
    Sse e;
    e.event = std::string(ev.substr(7, nl - 7));
    auto data = ev.substr(nl + 1);
    EXPECT_TRUE(data.starts_with("data: ")) << ev;
    EXPECT_EQ(data.find('\n'), std::string_view::npos) << "one data line per event";
    e.data = json::parse(data.substr(6));
    out.push_back(std::move(e));
  }
  return out;
}

// Every event is named like its type, sequence numbers run 0,1,2,... and exactly one closing
// event ends the stream.
void expectWellFormed(const std::string& sse, std::string_view closing) {
  auto events = parseSse(sse);
  ASSERT_GE(events.size(), 3u) << sse;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& o = events[i].data.as_object();
    EXPECT_EQ(o.at("type").as_string(), events[i].event);
    EXPECT_EQ(o.at("sequence_number").as_int64(), static_cast<std::int64_t>(i)) << events[i].event;
    bool isClosing = events[i].event == "response.completed" || events[i].event == "response.incomplete" ||
                     events[i].event == "response.failed";
    EXPECT_EQ(isClosing, i + 1 == events.size()) << events[i].event << " at " << i;
  }
  EXPECT_EQ(events.front().event, "response.created");
  EXPECT_EQ(events[1].event, "response.in_progress");
  EXPECT_EQ(events.back().event, closing);
}

class EncoderSink final : public StreamEventSink {
 public:
  EncoderSink(StreamEncoder& enc, std::string& out) : enc_(enc), out_(out) {}
  void onEvent(const StreamEvent& ev) override { enc_.encode(ev, out_); }

 private:
  StreamEncoder& enc_;
  std::string& out_;
};

std::shared_ptr<const ResponsesEcho> codexEcho() {
  auto echo = std::make_shared<ResponsesEcho>();
  decodeOk(readFixture("responses/request_codex.json"), echo.get());
  return echo;
}

// An upstream stream (bytes of `upstream` format) through its real decoder into our encoder.
std::string encodeUpstream(Format upstream, std::string_view bytes, std::shared_ptr<const ResponsesEcho> echo,
                           const std::vector<std::size_t>& cuts = {}) {
  auto dec =
      upstream == Format::AnthropicMessages ? anthropic::makeMessagesStreamDecoder() : openai::makeChatStreamDecoder();
  openai::ResponsesStreamOptions o;
  o.created = 1700000000;
  o.echo = std::move(echo);
  auto enc = openai::makeResponsesStreamEncoder(o);
  std::string out;
  EncoderSink sink(*enc, out);
  std::size_t prev = 0;
  for (auto c : cuts) {
    EXPECT_TRUE(dec->feed(bytes.substr(prev, c - prev), sink));
    prev = c;
  }
  EXPECT_TRUE(dec->feed(bytes.substr(prev), sink));
  enc->finish(out);
  EXPECT_TRUE(enc->ended());
  return out;
}

// Canonical events built by hand (the string views point at literals).
StreamEvent ev(StreamEvent::Kind k, std::string_view text = {}) {
  StreamEvent e;
  e.kind = k;
  e.text = text;
  return e;
}

std::string encodeEvents(std::initializer_list<StreamEvent> events, bool finish = true,
                         std::shared_ptr<const ResponsesEcho> echo = nullptr) {
  openai::ResponsesStreamOptions o;
  o.created = 1700000000;
  o.echo = std::move(echo);
  auto enc = openai::makeResponsesStreamEncoder(o);
  std::string out;
  for (const auto& e : events) enc->encode(e, out);
  if (finish) enc->finish(out);
  return out;
}

// Keys (and JSON kinds) of `ref` that `ours` lacks or types differently; nulls in either match anything.
void expectSameShape(const json::value& ref, const json::value& ours, const std::string& path) {
  if (ref.is_null() || ours.is_null()) return;
  if (ref.is_number() && ours.is_number()) return;
  ASSERT_EQ(ref.kind(), ours.kind()) << path;
  if (ref.is_object()) {
    for (const auto& [k, v] : ref.as_object()) {
      auto* o = ours.as_object().if_contains(k);
      ASSERT_TRUE(o) << path << "." << std::string(k) << " missing";
      if (std::string_view(k) == "tools" || std::string_view(k) == "metadata") continue;  // echoes
      expectSameShape(v, *o, path + "." + std::string(k));
    }
  } else if (ref.is_array() && !ref.as_array().empty() && !ours.as_array().empty()) {
    expectSameShape(ref.as_array()[0], ours.as_array()[0], path + "[0]");
  }
}

// ---- requests: every item kind ------------------------------------------------------------------

TEST(ResponsesRequest, CodexRequestDecodesEveryItemKind) {
  ResponsesEcho echo;
  auto req = decodeOk(readFixture("responses/request_codex.json"), &echo);
  EXPECT_EQ(req.model, "gpt-5-codex");
  ASSERT_EQ(req.system.size(), 2u);  // instructions, then the developer message
  EXPECT_EQ(req.system[0].text, "You are Codex, a coding agent running in the user's terminal.");
  EXPECT_EQ(req.system[1].text, "<permissions>workspace-write</permissions>");
  ASSERT_EQ(req.messages.size(), 7u);

  const auto& u0 = req.messages[0];
  EXPECT_EQ(u0.role, Role::User);
  ASSERT_EQ(u0.parts.size(), 2u);
  EXPECT_EQ(u0.parts[0].text, "Fix the typo in README.md and run the tests.");
  EXPECT_EQ(u0.parts[1].kind, Part::Kind::Image);
  EXPECT_EQ(u0.parts[1].media_type, "image/png");
  EXPECT_EQ(u0.parts[1].data, "iVBORw0KGgo=");

  // reasoning + function_call make one assistant turn; our own encrypted_content is a signature.
  const auto& a1 = req.messages[1];
  EXPECT_EQ(a1.role, Role::Assistant);
  ASSERT_EQ(a1.parts.size(), 2u);
  EXPECT_EQ(a1.parts[0].kind, Part::Kind::Reasoning);
  EXPECT_EQ(a1.parts[0].text, "I should look at the README first.");
  EXPECT_EQ(a1.parts[0].signature, "EqQBCkgIARABGAIiQL");
  EXPECT_EQ(a1.parts[1].kind, Part::Kind::ToolCall);
  EXPECT_EQ(a1.parts[1].id, "call_shell_1");
  EXPECT_EQ(a1.parts[1].name, "shell");
  EXPECT_EQ(a1.parts[1].arguments, R"({"command":["cat","README.md"]})");

  const auto& u2 = req.messages[2];
  ASSERT_EQ(u2.parts.size(), 1u);
  EXPECT_EQ(u2.parts[0].kind, Part::Kind::ToolResult);
  EXPECT_EQ(u2.parts[0].id, "call_shell_1");
  EXPECT_EQ(u2.parts[0].name, "shell");
  ASSERT_EQ(u2.parts[0].content.size(), 1u);
  EXPECT_EQ(u2.parts[0].content[0].text, "# Sluice\nA gatway for LLMs.\n");

  // OpenAI-encrypted reasoning without a summary is dropped; the custom call is a tool call
  // with one string argument.
  const auto& a3 = req.messages[3];
  ASSERT_EQ(a3.parts.size(), 1u);
  EXPECT_EQ(a3.parts[0].kind, Part::Kind::ToolCall);
  EXPECT_EQ(a3.parts[0].name, "apply_patch");
  auto args = json::parse(a3.parts[0].arguments);
  EXPECT_EQ(args.at("input").as_string(),
            "*** Begin Patch\n*** Update File: README.md\n-A gatway for LLMs.\n+A gateway for LLMs.\n*** End Patch\n");

  const auto& u4 = req.messages[4];
  ASSERT_EQ(u4.parts.size(), 1u);
  EXPECT_EQ(u4.parts[0].kind, Part::Kind::ToolResult);
  EXPECT_EQ(u4.parts[0].id, "call_patch_1");
  EXPECT_EQ(u4.parts[0].name, "apply_patch");

  EXPECT_EQ(req.messages[5].role, Role::Assistant);
  EXPECT_EQ(req.messages[5].parts[0].text, "Fixed the typo.");
  EXPECT_EQ(req.messages[6].role, Role::User);  // an item without "type" is a message
  EXPECT_EQ(req.messages[6].parts[0].text, "Thanks! Now run the tests.");

  ASSERT_EQ(req.tools.size(), 2u);
  EXPECT_EQ(req.tools[0].name, "shell");
  EXPECT_NE(req.tools[0].parameters.find("\"workdir\""), std::string::npos);
  EXPECT_EQ(req.tools[1].name, "apply_patch");
  EXPECT_NE(req.tools[1].description.find("The input must match this lark grammar:\nstart: begin_patch"),
            std::string::npos)
      << req.tools[1].description;
  auto params = json::parse(req.tools[1].parameters);
  EXPECT_EQ(params.at("properties").at("input").at("type").as_string(), "string");
  EXPECT_EQ(params.at("required").at(0).as_string(), "input");

  EXPECT_EQ(req.tool_choice.mode, ToolChoice::Mode::Auto);
  EXPECT_EQ(req.parallel_tool_calls, std::optional<bool>(false));
  EXPECT_EQ(req.reasoning_budget, std::optional<std::int64_t>(openai::kReasoningBudgetMedium));
  EXPECT_TRUE(req.stream);
  EXPECT_TRUE(req.include_usage);
  EXPECT_EQ(req.response_format.kind, ResponseFormat::Kind::Unset);  // text.verbosity alone is dropped

  EXPECT_EQ(echo.model, "gpt-5-codex");
  EXPECT_EQ(echo.custom_tools, std::vector<std::string>{"apply_patch"});
  EXPECT_TRUE(echo.isCustomTool("apply_patch"));
  EXPECT_FALSE(echo.isCustomTool("shell"));
  auto fields = json::parse("{" + echo.fields + "}").as_object();
  EXPECT_EQ(fields.at("instructions").as_string(), "You are Codex, a coding agent running in the user's terminal.");
  EXPECT_EQ(fields.at("store").as_bool(), false);
  EXPECT_EQ(fields.at("parallel_tool_calls").as_bool(), false);
  EXPECT_EQ(fields.at("reasoning").at("effort").as_string(), "medium");
  EXPECT_EQ(fields.at("reasoning").at("summary").as_string(), "auto");
  EXPECT_EQ(fields.at("tools").as_array().size(), 2u);
  EXPECT_EQ(fields.at("truncation").as_string(), "auto");
  EXPECT_EQ(fields.at("metadata").at("session").as_string(), "abc");
  EXPECT_EQ(fields.at("temperature").as_double(), 1.0);
}

TEST(ResponsesRequest, CodexRequestTranslatesToAnthropicAndChat) {
  auto req = decodeOk(readFixture("responses/request_codex.json"));
  std::string anthropicBody, chatBody;
  EncodeOptions opts;
  opts.model = "claude-sonnet-4-5";
  auto err = anthropic::encodeMessagesRequest(req, opts, anthropicBody);
  ASSERT_FALSE(err) << err->message;
  expectGolden("responses/request_codex.to_anthropic.json", anthropicBody);
  // Anthropic gets its signed thinking back, and the custom tool as a one-string-argument tool.
  auto a = json::parse(anthropicBody);
  EXPECT_EQ(a.at("messages").at(1).at("content").at(0).at("type").as_string(), "thinking");
  EXPECT_EQ(a.at("messages").at(1).at("content").at(0).at("signature").as_string(), "EqQBCkgIARABGAIiQL");
  opts.model = "gpt-4.1";
  err = openai::encodeChatRequest(req, opts, chatBody);
  ASSERT_FALSE(err) << err->message;
  expectGolden("responses/request_codex.to_openai_chat.json", chatBody);
}

TEST(ResponsesRequest, StringInputAndOptions) {
  auto req = decodeOk(R"({"model":"m","input":"Hello","instructions":"Be brief.","temperature":0.2,"top_p":0.9,
    "max_output_tokens":300,"tool_choice":{"type":"function","name":"f"},
    "tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{}},"strict":true}],
    "text":{"format":{"type":"json_schema","name":"answer","schema":{"type":"object"},"strict":true}},
    "reasoning":{"effort":"minimal"},"user":"u-42"})");
  ASSERT_EQ(req.messages.size(), 1u);
  EXPECT_EQ(req.messages[0].role, Role::User);
  EXPECT_EQ(req.messages[0].parts[0].text, "Hello");
  EXPECT_EQ(req.system[0].text, "Be brief.");
  EXPECT_EQ(req.temperature, std::optional<double>(0.2));
  EXPECT_EQ(req.top_p, std::optional<double>(0.9));
  EXPECT_EQ(req.max_tokens, std::optional<std::int64_t>(300));
  EXPECT_EQ(req.tool_choice.mode, ToolChoice::Mode::Named);
  EXPECT_EQ(req.tool_choice.name, "f");
  EXPECT_EQ(req.response_format.kind, ResponseFormat::Kind::JsonSchema);
  EXPECT_EQ(req.response_format.name, "answer");
  EXPECT_EQ(req.response_format.schema, R"({"type":"object"})");
  EXPECT_TRUE(req.response_format.strict);
  EXPECT_EQ(req.reasoning_budget, std::optional<std::int64_t>(0));
  EXPECT_EQ(req.user, "u-42");
  EXPECT_FALSE(req.stream);

  auto j = decodeOk(R"({"model":"m","input":"x","text":{"format":{"type":"json_object"}},"tool_choice":"required"})");
  EXPECT_EQ(j.response_format.kind, ResponseFormat::Kind::JsonObject);
  EXPECT_EQ(j.tool_choice.mode, ToolChoice::Mode::Required);
  auto n = decodeOk(R"({"model":"m","input":"x","tool_choice":"none","reasoning":{"effort":"high"}})");
  EXPECT_EQ(n.tool_choice.mode, ToolChoice::Mode::None);
  EXPECT_EQ(n.reasoning_budget, std::optional<std::int64_t>(openai::kReasoningBudgetHigh));
}

TEST(ResponsesRequest, DroppedFieldsAreAccepted) {
  auto req = decodeOk(R"({"model":"m","input":[{"type":"message","role":"user","content":"hi"}],
    "store":true,"metadata":{"a":"b"},"prompt_cache_key":"k","include":["reasoning.encrypted_content"],
    "service_tier":"flex","truncation":"auto","max_tool_calls":3,"stream_options":{"include_obfuscation":false},
    "text":{"verbosity":"low"},"safety_identifier":"hashed-user","previous_response_id":null,"unknown_field":1})");
  EXPECT_EQ(req.messages.size(), 1u);
  EXPECT_EQ(req.user, "hashed-user");
}

TEST(ResponsesRequest, ReasoningItemsAndRedactedReasoning) {
  auto req = decodeOk(R"({"model":"m","input":[
    {"role":"user","content":"q"},
    {"type":"reasoning","summary":[],"encrypted_content":"sluice-redacted:ErcBCkgIAhAB"},
    {"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"raw thoughts"}]},
    {"type":"reasoning","summary":[{"type":"summary_text","text":"a"},{"type":"summary_text","text":"b"}]},
    {"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"no"}]}]})");
  ASSERT_EQ(req.messages.size(), 2u);
  const auto& a = req.messages[1].parts;
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].kind, Part::Kind::RedactedReasoning);
  EXPECT_EQ(a[0].data, "ErcBCkgIAhAB");
  EXPECT_EQ(a[1].kind, Part::Kind::Reasoning);
  EXPECT_EQ(a[1].text, "raw thoughts");
  EXPECT_TRUE(a[1].signature.empty());
  EXPECT_EQ(a[2].text, "a\n\nb");
  EXPECT_EQ(a[3].text, "no");
}

TEST(ResponsesRequest, FunctionCallOutputWithContentParts) {
  auto req = decodeOk(R"({"model":"m","input":[
    {"type":"function_call","call_id":"c1","name":"screenshot","arguments":""},
    {"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"here"},
      {"type":"input_image","image_url":"https://example.com/a.png"}]}]})");
  ASSERT_EQ(req.messages.size(), 2u);
  EXPECT_EQ(req.messages[0].parts[0].arguments, "{}");
  const auto& r = req.messages[1].parts[0];
  EXPECT_EQ(r.name, "screenshot");
  ASSERT_EQ(r.content.size(), 2u);
  EXPECT_EQ(r.content[1].kind, Part::Kind::Image);
  EXPECT_EQ(r.content[1].url, "https://example.com/a.png");
}

TEST(ResponsesRequest, UntranslatableInputIsA400NamingTheField) {
  struct Case {
    const char* body;
    const char* param;
    const char* says;
  } cases[] = {
      {R"({"model":"m","input":"x","previous_response_id":"resp_1"})", "previous_response_id",
       "keeps no conversation state"},
      {R"({"model":"m","input":"x","conversation":"conv_1"})", "conversation", "keeps no conversation state"},
      {R"({"model":"m","input":"x","background":true})", "background", "background"},
      {R"({"model":"m","input":"x","prompt":{"id":"pmpt_1"}})", "prompt", "stored prompt template"},
      {R"({"model":"m","input":[{"type":"item_reference","id":"msg_1"}]})", "input[0].type", "item_reference"},
      {R"({"model":"m","input":"x","tools":[{"type":"file_search"}]})", "tools[0].type", "'file_search'"},
      {R"({"model":"m","input":"x","tools":[{"type":"file_search","vector_store_ids":["vs"]}]})", "tools[0].type",
       "'file_search'"},
      {R"({"model":"m","input":"x","tools":[{"type":"function","name":"f"},{"type":"computer_use_preview"}]})",
       "tools[1].type", "'computer_use_preview'"},
      {R"({"model":"m","input":[{"type":"web_search_call","id":"ws_1","status":"completed"}]})", "input[0].type",
       "'web_search_call'"},
      {R"({"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]})",
       "input[0].content[0].file_id", "stored at OpenAI"},
      {R"({"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-1"}]}]})",
       "input[0].content[0].type", "'input_file'"},
      {R"({"model":"m","input":"x","tool_choice":{"type":"web_search_preview"}})", "tool_choice.type",
       "'web_search_preview'"},
      {R"({"model":"m","input":"x","top_logprobs":3})", "top_logprobs", "top_logprobs"},
      {R"({"model":"m"})", "input", "required"},
      {R"({"input":"x"})", "model", "required"},
      {R"({"model":"m","input":[]})", "input", "at least one"},
      {R"({"model":"m","input":"x","reasoning":{"effort":"extreme"}})", "reasoning.effort", "effort"},
      {R"({"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]})", "input[0].call_id",
       "required"},
      {R"({"model":"m","input":[{"role":"tool","content":"x"}]})", "input[0].role", "'tool'"},
      {R"({"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n"}}})", "text.format.schema",
       "schema"},
  };
  for (const auto& c : cases) {
    auto err = decodeErr(c.body);
    EXPECT_EQ(err.status, 400) << c.body;
    EXPECT_EQ(err.param, c.param) << c.body;
    EXPECT_NE(err.message.find(c.says), std::string::npos) << c.body << " -> " << err.message;
  }
}

// ---- responses --------------------------------------------------------------------------------

Response fullResponse() {
  Response res;
  res.id = "msg_01XFDUDYJgAACzvnptvVoYEL";
  res.model = "claude-sonnet-4-5-20250929";
  res.created = 1741476542;
  Part r;
  r.kind = Part::Kind::Reasoning;
  r.text = "The user wants the README fixed.";
  r.signature = "EqQBCkgIARAB";
  res.content.push_back(r);
  res.content.push_back(Part::makeText("I'll fix it"));
  res.content.push_back(Part::makeText(" now."));
  Part call;
  call.kind = Part::Kind::ToolCall;
  call.id = "toolu_01A";
  call.name = "shell";
  call.arguments = R"({"command":["ls"]})";
  res.content.push_back(call);
  Part patch;
  patch.kind = Part::Kind::ToolCall;
  patch.id = "toolu_01B";
  patch.name = "apply_patch";
  patch.arguments = R"({"input":"*** Begin Patch\n*** End Patch\n"})";
  res.content.push_back(patch);
  res.finish = FinishReason::ToolCalls;
  res.usage.input = 2095;
  res.usage.cached = 1024;
  res.usage.output = 503;
  return res;
}

TEST(ResponsesResponse, GoldenWithReasoningTextFunctionAndCustomCalls) {
  auto echo = codexEcho();
  std::string out;
  openai::encodeResponsesResponse(fullResponse(), out, echo.get());
  expectGolden("responses/response_full.json", out);
  auto v = json::parse(out);
  EXPECT_EQ(v.at("id").as_string(), "resp_01XFDUDYJgAACzvnptvVoYEL");
  EXPECT_EQ(v.at("object").as_string(), "response");
  EXPECT_EQ(v.at("status").as_string(), "completed");
  const auto& output = v.at("output").as_array();
  ASSERT_EQ(output.size(), 4u);
  EXPECT_EQ(output[0].at("type").as_string(), "reasoning");
  EXPECT_EQ(output[0].at("summary").at(0).at("text").as_string(), "The user wants the README fixed.");
  EXPECT_EQ(output[0].at("encrypted_content").as_string(), "sluice-sig:EqQBCkgIARAB");
  EXPECT_EQ(output[1].at("type").as_string(), "message");
  EXPECT_EQ(output[1].at("content").at(0).at("text").as_string(), "I'll fix it now.");
  EXPECT_TRUE(output[1].at("id").as_string().starts_with("msg_"));
  EXPECT_EQ(output[2].at("type").as_string(), "function_call");
  EXPECT_EQ(output[2].at("call_id").as_string(), "toolu_01A");
  EXPECT_TRUE(output[2].at("id").as_string().starts_with("fc_"));
  EXPECT_EQ(output[3].at("type").as_string(), "custom_tool_call");
  EXPECT_EQ(output[3].at("input").as_string(), "*** Begin Patch\n*** End Patch\n");
  const auto& u = v.at("usage");
  EXPECT_EQ(u.at("input_tokens").as_int64(), 2095);
  EXPECT_EQ(u.at("input_tokens_details").at("cached_tokens").as_int64(), 1024);
  EXPECT_EQ(u.at("output_tokens").as_int64(), 503);
  EXPECT_EQ(u.at("total_tokens").as_int64(), 2598);
  EXPECT_EQ(v.at("tools").as_array().size(), 2u);  // echoed
  EXPECT_EQ(v.at("parallel_tool_calls").as_bool(), false);

  // The decoder reads our own output back: the replayed reasoning keeps its signature.
  std::string replay = R"({"model":"m","input":[{"role":"user","content":"q"},)" + json::serialize(output[0]) + "," +
                       json::serialize(output[2]) + "," + json::serialize(output[3]) + "]}";
  auto req = decodeOk(replay);
  ASSERT_EQ(req.messages.size(), 2u);
  EXPECT_EQ(req.messages[1].parts[0].signature, "EqQBCkgIARAB");
  EXPECT_EQ(req.messages[1].parts[2].arguments, R"({"input":"*** Begin Patch\n*** End Patch\n"})");
}

TEST(ResponsesResponse, ShapeMatchesTheReferenceExamples) {
  Response text;
  text.id = "chatcmpl-abc123";
  text.model = "gpt-4.1-2025-04-14";
  text.created = 1741476542;
  text.content.push_back(Part::makeText("In a peaceful grove beneath a silver moon..."));
  text.finish = FinishReason::Stop;
  text.usage.input = 36;
  text.usage.output = 87;
  std::string out;
  openai::encodeResponsesResponse(text, out);
  expectSameShape(json::parse(readFixture("responses/reference_text_response.json")), json::parse(out), "response");

  Response call;
  call.id = "chatcmpl-abc124";
  call.model = "gpt-4.1-2025-04-14";
  Part p;
  p.kind = Part::Kind::ToolCall;
  p.id = "call_unLAR8MvFNptuiZK6K6HCy5k";
  p.name = "get_current_weather";
  p.arguments = R"({"location":"Boston, MA","unit":"celsius"})";
  call.content.push_back(p);
  call.finish = FinishReason::ToolCalls;
  call.usage.input = 291;
  call.usage.output = 23;
  openai::encodeResponsesResponse(call, out);
  expectSameShape(json::parse(readFixture("responses/reference_function_call_response.json")), json::parse(out),
                  "response");
}

TEST(ResponsesResponse, LengthIsIncompleteAndUnknownUsageIsNull) {
  Response res;
  res.id = "x";
  res.model = "m";
  res.content.push_back(Part::makeText("cut sh"));
  res.finish = FinishReason::Length;
  std::string out;
  openai::encodeResponsesResponse(res, out);
  auto v = json::parse(out);
  EXPECT_EQ(v.at("status").as_string(), "incomplete");
  EXPECT_EQ(v.at("incomplete_details").at("reason").as_string(), "max_output_tokens");
  EXPECT_EQ(v.at("output").at(0).at("status").as_string(), "incomplete");
  EXPECT_TRUE(v.at("usage").is_null());
  // Defaults are echoed without a request.
  EXPECT_EQ(v.at("tool_choice").as_string(), "auto");
  EXPECT_EQ(v.at("text").at("format").at("type").as_string(), "text");
  EXPECT_EQ(v.at("temperature").as_double(), 1.0);
}

TEST(ResponsesResponse, WithoutTheRequestCustomCallsAreFunctionCalls) {
  std::string out;
  openai::encodeResponsesResponse(fullResponse(), out);
  auto v = json::parse(out);
  EXPECT_EQ(v.at("output").at(3).at("type").as_string(), "function_call");
  EXPECT_EQ(v.at("output").at(3).at("arguments").as_string(), R"({"input":"*** Begin Patch\n*** End Patch\n"})");
}

TEST(ResponsesError, ErrorBodyIsTheOpenAIShape) {
  std::string out;
  openai::encodeResponsesError(ApiError::invalid("previous_response_id", "not supported"), out);
  EXPECT_EQ(
      out,
      R"({"error":{"message":"not supported","type":"invalid_request_error","param":"previous_response_id","code":null}})");
  auto e = openai::decodeResponsesError(429, R"({"error":{"message":"slow down","type":"rate_limit_error"}})");
  EXPECT_EQ(e.kind, ErrorKind::RateLimit);
  EXPECT_EQ(e.message, "slow down");
}

// ---- streams ----------------------------------------------------------------------------------

TEST(ResponsesStream, GoldenText) {
  StreamEvent start = ev(StreamEvent::Kind::Start);
  start.id = "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT";
  start.model = "gpt-4.1-2025-04-14";
  StreamEvent fin = ev(StreamEvent::Kind::Finish);
  fin.finish = FinishReason::Stop;
  StreamEvent usage = ev(StreamEvent::Kind::Usage);
  usage.usage.input = 37;
  usage.usage.output = 11;
  auto out = encodeEvents({start, ev(StreamEvent::Kind::Text, "Hi"), ev(StreamEvent::Kind::Text, " there!"), fin, usage,
                           ev(StreamEvent::Kind::Done)});
  expectGolden("responses/stream_text.sse", out);
  expectWellFormed(out, "response.completed");

  // Same event sequence and at least the fields of the reference stream, event by event.
  auto ours = parseSse(out);
  auto ref = parseSse(readFixture("responses/reference_text_stream.sse"));
  std::vector<std::string> ourTypes, refTypes;
  for (const auto& e : ours) {
    if (ourTypes.empty() || ourTypes.back() != e.event) ourTypes.push_back(e.event);
  }
  for (const auto& e : ref) {
    if (refTypes.empty() || refTypes.back() != e.event) refTypes.push_back(e.event);
  }
  EXPECT_EQ(ourTypes, refTypes);
  for (const auto& r : ref) {
    for (const auto& o : ours) {
      if (o.event == r.event) {
        expectSameShape(r.data, o.data, r.event);
        break;
      }
    }
  }
  auto done = ours.back().data.at("response");
  EXPECT_EQ(done.at("output").at(0).at("content").at(0).at("text").as_string(), "Hi there!");
  EXPECT_EQ(done.at("usage").at("total_tokens").as_int64(), 48);
}

TEST(ResponsesStream, GoldenReasoningFromAnthropic) {
  auto out = encodeUpstream(Format::AnthropicMessages, readFixture("anthropic_stream_thinking.sse"), nullptr);
  expectGolden("responses/anthropic_stream_thinking.to_responses.sse", out);
  expectWellFormed(out, "response.completed");
  auto events = parseSse(out);
  bool sawDelta = false;
  for (const auto& e : events) {
    if (e.event == "response.reasoning_summary_text.delta") sawDelta = true;
    if (e.event == "response.output_item.done" && e.data.at("item").at("type") == "reasoning") {
      EXPECT_EQ(e.data.at("item").at("summary").at(0).at("text").as_string(),
                "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3");
      EXPECT_TRUE(e.data.at("item").at("encrypted_content").as_string().starts_with("sluice-sig:EqQBCgIYAhIM"));
    }
  }
  EXPECT_TRUE(sawDelta);
}

TEST(ResponsesStream, GoldenFunctionCallsFromAnthropicAndOpenAIChat) {
  auto a = encodeUpstream(Format::AnthropicMessages, readFixture("anthropic_stream_tool_use.sse"), nullptr);
  expectGolden("responses/anthropic_stream_tool_use.to_responses.sse", a);
  expectWellFormed(a, "response.completed");
  auto o = encodeUpstream(Format::OpenAIChat, readFixture("openai_stream_parallel_tools.sse"), nullptr);
  expectGolden("responses/openai_stream_parallel_tools.to_responses.sse", o);
  expectWellFormed(o, "response.completed");

  // Arguments deltas concatenate to the done arguments; the reference function-call events'
  // fields are all present.
  auto ref = parseSse(readFixture("responses/reference_function_call_stream.sse"));
  for (const auto* sse : {&a, &o}) {
    auto events = parseSse(*sse);
    std::map<std::string, std::string> args;
    int dones = 0;
    for (const auto& e : events) {
      const auto& d = e.data;
      if (e.event == "response.function_call_arguments.delta")
        args[std::string(d.at("item_id").as_string())] += std::string(d.at("delta").as_string());
      if (e.event == "response.function_call_arguments.done") {
        ++dones;
        EXPECT_EQ(args[std::string(d.at("item_id").as_string())], d.at("arguments").as_string());
      }
      for (const auto& r : ref) {
        if (r.event == e.event && r.event != "response.output_item.added" && r.event != "response.output_item.done")
          expectSameShape(r.data, e.data, r.event);
        auto* item = e.data.as_object().if_contains("item");
        if (r.event == e.event && item && item->at("type") == "function_call") expectSameShape(r.data, e.data, r.event);
      }
    }
    EXPECT_GE(dones, 1);
  }
}

TEST(ResponsesStream, GoldenCustomToolCallDecodesTheInputIncrementally) {
  auto in = readFixture("responses/anthropic_stream_apply_patch.sse");
  auto out = encodeUpstream(Format::AnthropicMessages, in, codexEcho());
  expectGolden("responses/anthropic_stream_apply_patch.to_responses.sse", out);
  expectWellFormed(out, "response.completed");
  const std::string expected =
      "*** Begin Patch\n*** Update File: a.txt\n-caf\xc3\xa9 \"x\"\n+caf\xc3\xa9 \"y\" "
      "\xf0\x9f\x98\x80\n*** End Patch\n";
  std::string deltas;
  int deltaCount = 0;
  for (const auto& e : parseSse(out)) {
    const auto& d = e.data;
    if (e.event == "response.custom_tool_call_input.delta") {
      deltas += std::string(d.at("delta").as_string());
      ++deltaCount;
    }
    if (e.event == "response.custom_tool_call_input.done") {
      EXPECT_EQ(d.at("input").as_string(), expected);
    }
    if (e.event == "response.output_item.done" && d.at("item").at("type") == "custom_tool_call") {
      EXPECT_EQ(d.at("item").at("input").as_string(), expected);
      EXPECT_EQ(d.at("item").at("call_id").as_string(), "toolu_01PatchA");
      EXPECT_EQ(d.at("item").at("name").as_string(), "apply_patch");
    }
    EXPECT_NE(e.event, "response.function_call_arguments.delta");
  }
  EXPECT_EQ(deltas, expected);
  EXPECT_GT(deltaCount, 3);  // streamed, not buffered to the end
  // Any split of the upstream bytes gives the same client stream.
  for (std::size_t i = 0; i <= in.size(); i += 7)
    EXPECT_EQ(encodeUpstream(Format::AnthropicMessages, in, codexEcho(), {i}), out) << i;
}

TEST(ResponsesStream, CustomToolInputSkipsOtherMembersAndFallsBackToTheRawText) {
  auto echo = codexEcho();
  StreamEvent start = ev(StreamEvent::Kind::ToolCallStart);
  start.id = "call_1";
  start.name = "apply_patch";
  StreamEvent fin = ev(StreamEvent::Kind::Finish);
  fin.finish = FinishReason::ToolCalls;
  auto args = [&](std::string_view t) {
    auto e = ev(StreamEvent::Kind::ToolCallArgs, t);
    e.tool_index = 0;
    return e;
  };
  // Other members (with braces and quotes inside strings) before "input" are skipped.
  auto out = encodeEvents({start, args(R"({"note":{"a":"}\"]","b":[1,{"input":"no"}]},"n":1,)"),
                           args(R"("input":"A\tB\\C\/D\u0041"})"), fin},
                          true, echo);
  std::string deltas, done;
  for (const auto& e : parseSse(out)) {
    if (e.event == "response.custom_tool_call_input.delta") deltas += std::string(e.data.at("delta").as_string());
    if (e.event == "response.custom_tool_call_input.done") done = std::string(e.data.at("input").as_string());
  }
  EXPECT_EQ(deltas, "A\tB\\C/DA");
  EXPECT_EQ(done, "A\tB\\C/DA");
  // Not the expected shape: no deltas, and the done input is the raw arguments text.
  auto raw = encodeEvents({start, args(R"({"patch":"x"})"), fin}, true, echo);
  for (const auto& e : parseSse(raw)) {
    EXPECT_NE(e.event, "response.custom_tool_call_input.delta");
    if (e.event == "response.custom_tool_call_input.done") {
      EXPECT_EQ(e.data.at("input").as_string(), R"({"patch":"x"})");
    }
  }
  expectWellFormed(raw, "response.completed");
}

TEST(ResponsesStream, ClosingEventIsAlwaysWritten) {
  // Finished, but no usage and no upstream end-of-stream event.
  StreamEvent fin = ev(StreamEvent::Kind::Finish);
  fin.finish = FinishReason::Stop;
  auto noUsage = encodeEvents({ev(StreamEvent::Kind::Text, "ok"), fin});
  expectWellFormed(noUsage, "response.completed");
  EXPECT_TRUE(parseSse(noUsage).back().data.at("response").at("usage").is_null());

  // Nothing at all from the upstream.
  auto empty = encodeEvents({});
  expectWellFormed(empty, "response.failed");
  auto events = parseSse(empty);
  EXPECT_EQ(events[events.size() - 2].event, "error");
  EXPECT_EQ(events.back().data.at("response").at("status").as_string(), "failed");
  EXPECT_EQ(events.back().data.at("response").at("error").at("message").as_string(),
            "the upstream stream ended before the response was complete");

  // Cut mid-text.
  auto cut = encodeEvents({ev(StreamEvent::Kind::Text, "partial")});
  expectWellFormed(cut, "response.failed");
  EXPECT_EQ(parseSse(cut).back().data.at("response").at("output").at(0).at("status").as_string(), "incomplete");

  // Length limit.
  StreamEvent len = ev(StreamEvent::Kind::Finish);
  len.finish = FinishReason::Length;
  auto incomplete = encodeEvents({ev(StreamEvent::Kind::Text, "long"), len, ev(StreamEvent::Kind::Done)});
  expectWellFormed(incomplete, "response.incomplete");
  EXPECT_EQ(parseSse(incomplete).back().data.at("response").at("incomplete_details").at("reason").as_string(),
            "max_output_tokens");

  // Nothing is written after the closing event.
  openai::ResponsesStreamOptions o;
  o.created = 1;
  auto enc = openai::makeResponsesStreamEncoder(o);
  std::string out;
  enc->encode(ev(StreamEvent::Kind::Done), out);
  EXPECT_TRUE(enc->ended());
  auto size = out.size();
  enc->encode(ev(StreamEvent::Kind::Text, "late"), out);
  enc->finish(out);
  EXPECT_EQ(out.size(), size);
  expectWellFormed(out, "response.completed");
}

TEST(ResponsesStream, MidStreamErrorEndsWithResponseFailed) {
  std::string a =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"c\"}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":"
      "{\"type\":\"text\",\"text\":\"\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
      "{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n"
      "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": "
      "\"Overloaded\"}}\n\n";
  auto out = encodeUpstream(Format::AnthropicMessages, a, nullptr);
  expectWellFormed(out, "response.failed");
  auto events = parseSse(out);
  const auto& err = events[events.size() - 2];
  EXPECT_EQ(err.event, "error");
  EXPECT_EQ(err.data.at("message").as_string(), "Overloaded");
  EXPECT_EQ(err.data.at("code").as_string(), "server_error");
  EXPECT_TRUE(err.data.at("param").is_null());
  const auto& resp = events.back().data.at("response");
  EXPECT_EQ(resp.at("error").at("message").as_string(), "Overloaded");
  EXPECT_EQ(resp.at("output").at(0).at("content").at(0).at("text").as_string(), "Hel");
}

TEST(ResponsesStream, ReasoningThenTextThenToolFromChatUpstream) {
  auto out = encodeUpstream(Format::OpenAIChat, readFixture("openai_stream_reasoning_no_usage.sse"), nullptr);
  expectGolden("responses/openai_stream_reasoning_no_usage.to_responses.sse", out);
  expectWellFormed(out, "response.completed");
  // Output indexes of added/done pairs match and run 0..n-1.
  int next = 0;
  for (const auto& e : parseSse(out)) {
    if (e.event == "response.output_item.added") {
      EXPECT_EQ(e.data.at("output_index").as_int64(), next++);
    }
  }
  EXPECT_GE(next, 2);
}

}  // namespace responses_codec_test
}  // namespace
}  // namespace sluice::providers

namespace sluice::providers::openai {
namespace {
namespace responses_codec_test {

// What Codex sends on every request: a namespace of function tools and web_search.
TEST(ResponsesRequest, NamespacesAreFlattenedAndWebSearchIsDropped) {
  Request req;
  auto err = decodeResponsesRequest(
      R"({"model":"m","input":"x","tools":[{"type":"web_search","external_web_access":false},)"
      R"({"type":"namespace","name":"multi_agent_v1","description":"d","tools":[)"
      R"({"type":"function","name":"spawn_agent","parameters":{"type":"object","properties":{}}},)"
      R"({"type":"function","name":"wait","parameters":{"type":"object","properties":{}}}]},)"
      R"({"type":"function","name":"exec_command","parameters":{"type":"object","properties":{}}}]})",
      req);
  ASSERT_FALSE(err) << err->message;
  ASSERT_EQ(req.tools.size(), 3u);
  EXPECT_EQ(req.tools[0].name, "spawn_agent");
  EXPECT_EQ(req.tools[1].name, "wait");
  EXPECT_EQ(req.tools[2].name, "exec_command");
}

// Codex's default ("responses-lite") shape: the tools in an additional_tools input item, grouped
// in namespaces, one of them a custom grammar tool; history calls that carry a namespace.
TEST(ResponsesRequest, AdditionalToolsItemsAndNamespacedCallsRoundTrip) {
  ResponsesEcho echo;
  Request req;
  auto err = decodeResponsesRequest(
      R"j({"model":"gpt-6.2-sol","stream":true,"reasoning":{"effort":"low","context":"all_turns"},)j"
      R"j("text":{"verbosity":"low"},"include":["reasoning.encrypted_content"],"prompt_cache_key":"k",)j"
      R"j("client_metadata":{"a":"b"},"input":[)j"
      R"j({"type":"additional_tools","id":"at_1","role":"developer","tools":[)j"
      R"j({"type":"namespace","name":"functions","description":"","tools":[)j"
      R"j({"type":"custom","name":"exec","description":"Run JS","format":{"type":"grammar","syntax":"lark","definition":"start: /.+/"}},)j"
      R"j({"type":"function","name":"wait","strict":false,"parameters":{"type":"object","properties":{}}}]},)j"
      R"j({"type":"namespace","name":"collaboration","description":"","tools":[)j"
      R"j({"type":"function","name":"wait","parameters":{"type":"object","properties":{}}},)j"
      R"j({"type":"function","name":"list_agents","parameters":{"type":"object","properties":{}}}]}]},)j"
      R"j({"type":"message","id":"msg_1","role":"user","content":[{"type":"input_text","text":"go"}]},)j"
      R"j({"type":"custom_tool_call","id":"ctc_1","call_id":"c1","name":"exec","namespace":"functions","input":"text(1)"},)j"
      R"j({"type":"custom_tool_call_output","id":"ctco_1","call_id":"c1","output":[{"type":"input_text","text":"1"}]},)j"
      R"j({"type":"function_call","id":"fc_2","call_id":"c2","name":"wait","namespace":"collaboration","arguments":"{}"},)j"
      R"j({"type":"function_call_output","call_id":"c2","output":"ok"}]})j",
      req, &echo);
  ASSERT_FALSE(err) << err->param << ": " << err->message;
  ASSERT_EQ(req.tools.size(), 4u);
  EXPECT_EQ(req.tools[0].name, "exec");
  EXPECT_NE(req.tools[0].description.find("start: /.+/"), std::string::npos);
  EXPECT_EQ(req.tools[1].name, "wait");
  EXPECT_EQ(req.tools[2].name, "collaboration__wait");  // the name was taken
  EXPECT_EQ(req.tools[3].name, "list_agents");
  ASSERT_EQ(req.messages.size(), 5u);
  ASSERT_EQ(req.messages[1].parts.size(), 1u);
  EXPECT_EQ(req.messages[1].parts[0].name, "exec");
  EXPECT_EQ(req.messages[1].parts[0].arguments, R"j({"input":"text(1)"})j");
  EXPECT_EQ(req.messages[3].parts[0].name, "collaboration__wait");
  EXPECT_EQ(req.messages[3].parts[0].arguments, "{}");
  EXPECT_EQ(req.reasoning_budget, kReasoningBudgetLow);

  // The upstream's calls come back under the declared names, with their namespaces.
  Response res;
  res.id = "msg_x";
  res.model = "gpt-6.2-sol";
  Part a;
  a.kind = Part::Kind::ToolCall;
  a.id = "call_a";
  a.name = "exec";
  a.arguments = R"j({"input":"text(2)"})j";
  Part b = a;
  b.id = "call_b";
  b.name = "collaboration__wait";
  b.arguments = "{}";
  Part c = b;
  c.id = "call_c";
  c.name = "unknown_tool";
  res.content = {a, b, c};
  res.finish = FinishReason::ToolCalls;
  std::string body;
  encodeResponsesResponse(res, body, &echo);
  auto out = boost::json::parse(body).as_object().at("output").as_array();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].at("type"), "custom_tool_call");
  EXPECT_EQ(out[0].at("name"), "exec");
  EXPECT_EQ(out[0].at("namespace"), "functions");
  EXPECT_EQ(out[0].at("input"), "text(2)");
  EXPECT_EQ(out[1].at("type"), "function_call");
  EXPECT_EQ(out[1].at("name"), "wait");
  EXPECT_EQ(out[1].at("namespace"), "collaboration");
  EXPECT_EQ(out[2].at("name"), "unknown_tool");
  EXPECT_FALSE(out[2].as_object().contains("namespace"));

  // Streamed: the added and done items carry the namespace too.
  auto enc = makeResponsesStreamEncoder({1, std::make_shared<ResponsesEcho>(echo)});
  std::string sse;
  StreamEvent ev;
  ev.kind = StreamEvent::Kind::Start;
  ev.id = "msg_x";
  enc->encode(ev, sse);
  ev = {};
  ev.kind = StreamEvent::Kind::ToolCallStart;
  ev.id = "call_b";
  ev.name = "collaboration__wait";
  enc->encode(ev, sse);
  ev = {};
  ev.kind = StreamEvent::Kind::ToolCallArgs;
  ev.text = "{}";
  enc->encode(ev, sse);
  enc->finish(sse);
  EXPECT_NE(sse.find(R"j("name":"wait","namespace":"collaboration")j"), std::string::npos) << sse;
  EXPECT_EQ(sse.find("collaboration__wait"), std::string::npos) << sse;
}

TEST(ResponsesRequest, AdditionalToolsErrorsNameTheField) {
  Request req;
  auto err = decodeResponsesRequest(R"({"model":"m","input":[{"type":"additional_tools","tools":{}}]})", req);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "input[0].tools");
  req = {};
  err = decodeResponsesRequest(
      R"({"model":"m","input":[{"type":"message","role":"user","content":"x"},{"type":"additional_tools","tools":[{"type":"file_search"}]}]})",
      req);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "input[1].tools[0].type");
  req = {};
  err = decodeResponsesRequest(
      R"({"model":"m","input":"x","tools":[{"type":"namespace","name":"a","tools":[{"type":"namespace","name":"b","tools":[]}]}]})",
      req);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "tools[0].tools[0].type");
}

// store is echoed as the request said it (the gateway's responses stage says true for an answer
// it keeps); absent, nothing keeps the answer, so false.
TEST(ResponsesCodec, StoreIsEchoedAsTheRequestSaysIt) {
  for (const auto& [body, want] :
       std::vector<std::pair<std::string, bool>>{{R"({"model":"m","input":"x","store":true})", true},
                                                 {R"({"model":"m","input":"x","store":false})", false},
                                                 {R"({"model":"m","input":"x"})", false}}) {
    Request req;
    ResponsesEcho echo;
    ASSERT_FALSE(openai::decodeResponsesRequest(body, req, &echo)) << body;
    auto fields = boost::json::parse("{" + echo.fields + "}").as_object();
    EXPECT_EQ(fields.at("store").as_bool(), want) << body;
  }
}

}  // namespace responses_codec_test
}  // namespace
}  // namespace sluice::providers::openai
