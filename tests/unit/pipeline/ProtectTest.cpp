// Protect: request redaction in every client format (fields and masks, block path, user text,
// outgoing text), whole-body restore, and restoring stream encoders fed at every byte split.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/Protect.hpp"
#include "providers/Translate.hpp"
#include "providers/anthropic/MessagesCodec.hpp"
#include "providers/gemini/GenerateCodec.hpp"
#include "providers/openai/ChatCodec.hpp"
#include "redact/Redactor.hpp"
#include "redact/Restorer.hpp"
#include "redact/TokenCipher.hpp"

namespace sluice::pipeline {
namespace {
namespace protect_test {

namespace json = boost::json;
using providers::Format;
using providers::StreamEvent;

std::shared_ptr<const redact::TokenCipher> cipher() {
  static const auto c = std::make_shared<const redact::TokenCipher>("0123456789abcdef0123456789abcdef", "vk_test");
  return c;
}

std::string tok(std::string_view label, std::string_view value) { return *cipher()->seal(label, value); }

// Every rule applies to one field only, so a value redacted in one field and left in another
// proves the field mask.
std::shared_ptr<const redact::RuleSet> rules() {
  static const auto r = redact::RuleSet::compile({
      {"EMAIL", R"([A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})", redact::Action::Encrypt, {"user"}, ""},
      {"PHONE", R"(\+1 \d{3} \d{3} \d{4})", redact::Action::Encrypt, {"tool"}, ""},
      {"CARD", R"(\b\d{16}\b)", redact::Action::Encrypt, {"tool_arguments"}, "luhn"},
      {"SECRET", R"(BEGIN SECRET)", redact::Action::Block, {}, ""},
  });
  return r;
}

const redact::Redactor& redactor() {
  static const redact::Redactor r(rules(), cipher().get());
  return r;
}

constexpr std::string_view kEmail = "jane@example.com";
constexpr std::string_view kEmail2 = "bob@example.org";
constexpr std::string_view kPhone = "+1 415 555 0100";
constexpr std::string_view kCard = "4111111111111111";

json::value parse(std::string_view s) {
  boost::system::error_code ec;
  auto v = json::parse(s, ec);
  EXPECT_FALSE(ec) << s;
  return v;
}

std::string at(const json::value& doc, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* v = doc.find_pointer(pointer, ec);
  if (!v || !v->is_string()) {
    ADD_FAILURE() << "no string at " << pointer << " in " << json::serialize(doc);
    return {};
  }
  return std::string(v->as_string());
}

// The field holds a `label` token in place of `value`, and restores to `original`.
void expectRedacted(const json::value& doc, std::string_view pointer, std::string_view label, std::string_view value,
                    std::string_view original) {
  const std::string s = at(doc, pointer);
  EXPECT_EQ(s.find(value), std::string::npos) << pointer << ": " << s;
  EXPECT_NE(s.find("[[sluice:" + std::string(label) + ":"), std::string::npos) << pointer << ": " << s;
  EXPECT_EQ(redact::restoreAll(s, *cipher()), original) << pointer;
}

void expectSame(const json::value& doc, std::string_view pointer, std::string_view original) {
  EXPECT_EQ(at(doc, pointer), original) << pointer;
}

std::string outgoingOf(const RequestScan& r, std::string_view role, redact::Field f) {
  std::string all;
  for (const auto& o : r.outgoing)
    if (o.role == role && o.field == f) all += o.text + "|";
  return all;
}

void expectRulesHit(const RequestScan& r) {
  EXPECT_EQ(r.rules_hit.size(), 3u);
  for (auto name : {"EMAIL", "PHONE", "CARD"})
    EXPECT_NE(std::find(r.rules_hit.begin(), r.rules_hit.end(), name), r.rules_hit.end()) << name;
}

// ---------------------------------------------------------------------------------------------
// Requests

const std::string kChatBody = R"({"model":"gpt-4o","messages":[
 {"role":"system","content":"Admin is admin@corp.example"},
 {"role":"user","content":"My mail is jane@example.com, phone +1 415 555 0100"},
 {"role":"assistant","content":"Paying for jane@example.com","tool_calls":[{"id":"call_1","type":"function","function":{"name":"pay","arguments":"{\"card\":\"4111111111111111\",\"memo\":\"line1\\nline2 \\\"q\\\" jane@example.com\"}"}}]},
 {"role":"tool","tool_call_id":"call_1","content":"Call +1 415 555 0100 to confirm 4111111111111111"},
 {"role":"user","content":[{"type":"text","text":"Thanks! Also bob@example.org"},{"type":"image_url","image_url":{"url":"https://x.example/a.png"}},{"type":"text","text":"and me"}]}
],"stream":true})";

TEST(ProtectScan, OpenAIChatRedactsEachFieldWithItsMask) {
  ScanOptions opts;
  opts.collect_outgoing = true;
  const auto r = scanRequest(Format::OpenAIChat, kChatBody, &redactor(), opts);
  ASSERT_TRUE(r.ok);
  ASSERT_TRUE(r.changed);
  EXPECT_TRUE(r.blocked_rule.empty());
  const auto doc = parse(r.body);
  expectSame(doc, "/messages/0/content", "Admin is admin@corp.example");  // EMAIL is user-only
  expectRedacted(doc, "/messages/1/content", "EMAIL", kEmail, "My mail is jane@example.com, phone +1 415 555 0100");
  EXPECT_NE(at(doc, "/messages/1/content").find(kPhone), std::string::npos);  // PHONE is tool-only
  expectSame(doc, "/messages/2/content", "Paying for jane@example.com");
  const auto args = parse(at(doc, "/messages/2/tool_calls/0/function/arguments"));
  expectRedacted(args, "/card", "CARD", kCard, kCard);
  expectSame(args, "/memo", "line1\nline2 \"q\" jane@example.com");  // decoded and re-encoded intact
  expectRedacted(doc, "/messages/3/content", "PHONE", kPhone, "Call +1 415 555 0100 to confirm 4111111111111111");
  EXPECT_NE(at(doc, "/messages/3/content").find(kCard), std::string::npos);  // CARD is arguments-only
  expectRedacted(doc, "/messages/4/content/0/text", "EMAIL", kEmail2, "Thanks! Also bob@example.org");
  expectSame(doc, "/messages/4/content/1/image_url/url", "https://x.example/a.png");
  EXPECT_TRUE(doc.at("stream").as_bool());
  EXPECT_EQ(r.encrypted, 4u);
  EXPECT_EQ(r.masked, 0u);
  expectRulesHit(r);
  EXPECT_EQ(r.user_text, "Thanks! Also bob@example.org\nand me");
  // Outgoing text is what goes upstream.
  ASSERT_EQ(r.outgoing.size(), 7u);
  EXPECT_EQ(outgoingOf(r, "system", redact::kSystem), "Admin is admin@corp.example|");
  const auto users = outgoingOf(r, "user", redact::kUser);
  EXPECT_EQ(users.find(kEmail), std::string::npos) << users;
  EXPECT_NE(users.find("[[sluice:EMAIL:"), std::string::npos) << users;
  EXPECT_NE(users.find("and me"), std::string::npos) << users;
  const auto argsOut = outgoingOf(r, "assistant", redact::kToolArguments);
  EXPECT_EQ(argsOut.find(kCard), std::string::npos) << argsOut;
  EXPECT_NE(argsOut.find("[[sluice:CARD:"), std::string::npos) << argsOut;
  EXPECT_EQ(outgoingOf(r, "tool", redact::kTool).find(kPhone), std::string::npos);
}

TEST(ProtectScan, NoHitLeavesTheBodyAlone) {
  const std::string body =
      R"({"model":"gpt-4o","messages":[{"role":"user","content":"hello there"},{"role":"assistant","content":"hi","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":\"line\\nbreak\"}"}}]},{"role":"tool","tool_call_id":"c","content":"42"}]})";
  const auto r = scanRequest(Format::OpenAIChat, body, &redactor(), {});
  ASSERT_TRUE(r.ok);
  EXPECT_FALSE(r.changed);
  EXPECT_TRUE(r.body.empty());
  EXPECT_TRUE(r.rules_hit.empty());
  EXPECT_EQ(r.encrypted + r.masked, 0u);
  EXPECT_EQ(r.user_text, "hello there");
  EXPECT_TRUE(r.outgoing.empty());
}

TEST(ProtectScan, NotAJsonObjectIsLeftToTheNormalPath) {
  for (std::string_view body : {"", "not json", "[1,2]", "\"x\"", "{\"messages\":"}) {
    const auto r = scanRequest(Format::OpenAIChat, body, &redactor(), {});
    EXPECT_FALSE(r.ok) << body;
    EXPECT_FALSE(r.changed) << body;
  }
  // Unexpected shapes inside an object are left alone.
  const auto r = scanRequest(Format::OpenAIChat,
                             R"({"messages":[5,{"role":"user","content":7},{"role":"user","content":[1,{"type":"text","text":3}]},{"role":"weird","content":"jane@example.com"}]})",
                             &redactor(), {});
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.changed);
}

TEST(ProtectScan, WithoutRedactorOnlyCollects) {
  ScanOptions opts;
  opts.collect_outgoing = true;
  const auto r = scanRequest(Format::OpenAIChat, kChatBody, nullptr, opts);
  ASSERT_TRUE(r.ok);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.user_text, "Thanks! Also bob@example.org\nand me");
  EXPECT_EQ(r.outgoing.size(), 7u);
  EXPECT_NE(outgoingOf(r, "user", redact::kUser).find(kEmail), std::string::npos);
}

TEST(ProtectScan, ToolResultsAreCollectedOnePartEachBeforeRedaction) {
  ScanOptions opts;
  opts.collect_tool_text = true;
  const std::string chat =
      R"({"messages":[{"role":"user","content":"read it"},{"role":"tool","tool_call_id":"a","content":"mail bob@example.org"},)"
      R"({"role":"tool","tool_call_id":"b","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}]})";
  auto r = scanRequest(Format::OpenAIChat, chat, &redactor(), opts);
  ASSERT_EQ(r.tool_texts.size(), 2u);
  EXPECT_EQ(r.tool_texts[0].path, "messages[1]");
  EXPECT_EQ(r.tool_texts[0].text, "mail bob@example.org");  // as the client sent it
  EXPECT_EQ(r.tool_texts[1].text, "one\ntwo");
  EXPECT_EQ(r.user_text, "read it");

  const std::string responses =
      R"({"input":[{"role":"user","content":"q"},{"type":"function_call_output","call_id":"c","output":"result text"}]})";
  r = scanRequest(Format::OpenAIResponses, responses, nullptr, opts);
  ASSERT_EQ(r.tool_texts.size(), 1u);
  EXPECT_EQ(r.tool_texts[0].path, "input[1]");
  EXPECT_EQ(r.tool_texts[0].text, "result text");

  const std::string anthropic =
      R"({"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"page text"}]}]})";
  r = scanRequest(Format::AnthropicMessages, anthropic, nullptr, opts);
  ASSERT_EQ(r.tool_texts.size(), 1u);
  EXPECT_EQ(r.tool_texts[0].path, "messages[0].content[0]");
  EXPECT_EQ(r.tool_texts[0].text, "page text");
  EXPECT_EQ(r.user_text, "");  // a tool result is not user text

  const std::string gemini =
      R"({"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"content":"doc"}}}]}]})";
  r = scanRequest(Format::GeminiGenerate, gemini, nullptr, opts);
  ASSERT_EQ(r.tool_texts.size(), 1u);
  EXPECT_EQ(r.tool_texts[0].path, "contents[0].parts[0].functionResponse");
  EXPECT_EQ(r.tool_texts[0].text, R"({"content":"doc"})");

  // Off unless asked; an empty result is no part; only the last max_tool_parts are kept.
  EXPECT_TRUE(scanRequest(Format::OpenAIChat, chat, nullptr, {}).tool_texts.empty());
  std::string many = R"({"messages":[)";
  for (int i = 0; i < 40; ++i)
    many += R"({"role":"tool","content":"r)" + std::to_string(i) + R"("},{"role":"tool","content":""},)";
  many += R"({"role":"user","content":"ok"}]})";
  r = scanRequest(Format::OpenAIChat, many, nullptr, opts);
  ASSERT_EQ(r.tool_texts.size(), opts.max_tool_parts);
  EXPECT_EQ(r.tool_texts.back().text, "r39");
}

TEST(ProtectScan, ArgumentsTextIsRedactedValueByValue) {
  // Raw JSON text would give "line\[[sluice:..." (the e-mail regex starts at the n of \n) and
  // miss a rule anchored to a whole value; decoded values get neither problem.
  const redact::Redactor r(redact::RuleSet::compile({
                               {"EMAIL", R"(\b[a-z0-9.]+@[a-z0-9.-]+\.[a-z]{2,}\b)", redact::Action::Encrypt, {}, ""},
                               {"ACCOUNT", R"(^ACCT-\d+$)", redact::Action::Encrypt, {"tool_arguments"}, ""},
                           }),
                           cipher().get());
  json::object args{{"memo", "line\njane@example.com"}, {"n", json::array{1, "ACCT-9 no"}}};
  json::object plain{{"acct", "ACCT-123"}};  // no escapes: the text scan alone must not decide
  auto call = [](const json::object& a) {
    return json::object{{"function", json::object{{"name", "f"}, {"arguments", json::serialize(a)}}}};
  };
  json::object body{{"messages", json::array{json::object{{"role", "assistant"}, {"tool_calls", json::array{call(args), call(plain)}}}}}};
  const auto res = scanRequest(Format::OpenAIChat, json::serialize(body), &r, {});
  ASSERT_TRUE(res.changed);
  EXPECT_EQ(res.encrypted, 2u);
  const auto doc = parse(res.body);
  const auto out = parse(at(doc, "/messages/0/tool_calls/0/function/arguments"));
  EXPECT_EQ(at(out, "/memo").rfind("line\n[[sluice:EMAIL:", 0), 0u) << at(out, "/memo");
  EXPECT_EQ(redact::restoreAll(at(out, "/memo"), *cipher()), "line\njane@example.com");
  EXPECT_EQ(at(out, "/n/1"), "ACCT-9 no");
  expectRedacted(parse(at(doc, "/messages/0/tool_calls/1/function/arguments")), "/acct", "ACCOUNT", "ACCT-123", "ACCT-123");

  // Arguments that are not JSON are redacted as text.
  json::object raw{{"messages", json::array{json::object{
                                    {"role", "assistant"},
                                    {"tool_calls", json::array{json::object{{"function", json::object{{"arguments", "{broken jane@example.com"}}}}}}}}}};
  const auto res2 = scanRequest(Format::OpenAIChat, json::serialize(raw), &r, {});
  ASSERT_TRUE(res2.changed);
  expectRedacted(parse(res2.body), "/messages/0/tool_calls/0/function/arguments", "EMAIL", kEmail, "{broken jane@example.com");
}

TEST(ProtectScan, BlockRuleReportsRuleAndPath) {
  const std::string chat =
      R"({"messages":[{"role":"system","content":"x"},{"role":"user","content":"jane@example.com"},{"role":"user","content":[{"type":"text","text":"ok"},{"type":"text","text":"here: BEGIN SECRET"}]}]})";
  auto r = scanRequest(Format::OpenAIChat, chat, &redactor(), {});
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.blocked_rule, "SECRET");
  EXPECT_EQ(r.blocked_path, "messages[2].content[1].text");
  EXPECT_FALSE(r.changed);
  EXPECT_TRUE(r.body.empty());

  const std::string args =
      R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{\"k\":[\"BEGIN SECRET\"]}"}}]}]})";
  r = scanRequest(Format::OpenAIChat, args, &redactor(), {});
  EXPECT_EQ(r.blocked_rule, "SECRET");
  EXPECT_EQ(r.blocked_path, "messages[0].tool_calls[0].function.arguments");

  const std::string anthropic =
      R"({"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":{"b":["x","BEGIN SECRET"]}}}]}]})";
  r = scanRequest(Format::AnthropicMessages, anthropic, &redactor(), {});
  EXPECT_EQ(r.blocked_rule, "SECRET");
  EXPECT_EQ(r.blocked_path, "messages[0].content[0].input.a.b[1]");

  const std::string gemini =
      R"({"system_instruction":{"parts":[{"text":"BEGIN SECRET"}]},"contents":[{"parts":[{"text":"hi"}]}]})";
  r = scanRequest(Format::GeminiGenerate, gemini, &redactor(), {});
  EXPECT_EQ(r.blocked_rule, "SECRET");
  EXPECT_EQ(r.blocked_path, "system_instruction.parts[0].text");

  const std::string responses =
      R"({"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"BEGIN SECRET"}]}]})";
  r = scanRequest(Format::OpenAIResponses, responses, &redactor(), {});
  EXPECT_EQ(r.blocked_rule, "SECRET");
  EXPECT_EQ(r.blocked_path, "input[0].output[0].text");
}

TEST(ProtectScan, ResponsesRedactsEachFieldWithItsMask) {
  const std::string body = R"({"model":"gpt-4.1","instructions":"Admin is admin@corp.example","input":[
 {"role":"user","content":"I am jane@example.com"},
 {"type":"function_call","call_id":"c1","name":"pay","arguments":"{\"card\":\"4111111111111111\",\"who\":\"jane@example.com\"}"},
 {"type":"function_call_output","call_id":"c1","output":"Phone +1 415 555 0100"},
 {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done, jane@example.com"}]},
 {"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"card 4111111111111111"},
 {"type":"custom_tool_call_output","call_id":"c2","output":[{"type":"input_text","text":"ok +1 415 555 0100"}]},
 {"role":"user","content":[{"type":"input_text","text":"Send to bob@example.org"}]}
]})";
  ScanOptions opts;
  opts.collect_outgoing = true;
  const auto r = scanRequest(Format::OpenAIResponses, body, &redactor(), opts);
  ASSERT_TRUE(r.ok);
  ASSERT_TRUE(r.changed);
  const auto doc = parse(r.body);
  expectSame(doc, "/instructions", "Admin is admin@corp.example");
  expectRedacted(doc, "/input/0/content", "EMAIL", kEmail, "I am jane@example.com");
  const auto args = parse(at(doc, "/input/1/arguments"));
  expectRedacted(args, "/card", "CARD", kCard, kCard);
  expectSame(args, "/who", "jane@example.com");
  expectRedacted(doc, "/input/2/output", "PHONE", kPhone, "Phone +1 415 555 0100");
  expectSame(doc, "/input/3/content/0/text", "Done, jane@example.com");
  expectRedacted(doc, "/input/4/input", "CARD", kCard, "card 4111111111111111");
  expectRedacted(doc, "/input/5/output/0/text", "PHONE", kPhone, "ok +1 415 555 0100");
  expectRedacted(doc, "/input/6/content/0/text", "EMAIL", kEmail2, "Send to bob@example.org");
  EXPECT_EQ(r.encrypted, 6u);
  expectRulesHit(r);
  EXPECT_EQ(r.user_text, "Send to bob@example.org");
  EXPECT_EQ(r.outgoing.size(), 8u);
  EXPECT_EQ(outgoingOf(r, "tool", redact::kTool).find(kPhone), std::string::npos);

  // A plain string input is the user turn.
  const auto s = scanRequest(Format::OpenAIResponses, R"({"input":"mail jane@example.com"})", &redactor(), {});
  ASSERT_TRUE(s.changed);
  EXPECT_EQ(s.user_text, "mail jane@example.com");
  expectRedacted(parse(s.body), "/input", "EMAIL", kEmail, "mail jane@example.com");
}

TEST(ProtectScan, AnthropicRedactsEachFieldWithItsMask) {
  const std::string body = R"({"model":"claude","max_tokens":100,"system":[{"type":"text","text":"Admin admin@corp.example"}],"messages":[
 {"role":"user","content":"I am jane@example.com"},
 {"role":"assistant","content":[{"type":"thinking","thinking":"jane@example.com card 4111111111111111","signature":"sig=="},{"type":"text","text":"Paying jane@example.com"},{"type":"tool_use","id":"tu1","name":"pay","input":{"card":"4111111111111111","nested":{"list":["x 4111111111111111",3,true]},"n":5}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":[{"type":"text","text":"Call +1 415 555 0100"}]},{"type":"tool_result","tool_use_id":"tu2","content":"or +1 415 555 0100"},{"type":"text","text":"And bob@example.org"}]}
]})";
  ScanOptions opts;
  opts.collect_outgoing = true;
  const auto r = scanRequest(Format::AnthropicMessages, body, &redactor(), opts);
  ASSERT_TRUE(r.ok);
  ASSERT_TRUE(r.changed);
  const auto doc = parse(r.body);
  expectSame(doc, "/system/0/text", "Admin admin@corp.example");
  expectRedacted(doc, "/messages/0/content", "EMAIL", kEmail, "I am jane@example.com");
  expectSame(doc, "/messages/1/content/0/thinking", "jane@example.com card 4111111111111111");
  expectSame(doc, "/messages/1/content/0/signature", "sig==");
  expectSame(doc, "/messages/1/content/1/text", "Paying jane@example.com");
  expectRedacted(doc, "/messages/1/content/2/input/card", "CARD", kCard, kCard);
  expectRedacted(doc, "/messages/1/content/2/input/nested/list/0", "CARD", kCard, "x 4111111111111111");
  EXPECT_EQ(doc.at_pointer("/messages/1/content/2/input/n").as_int64(), 5);
  expectRedacted(doc, "/messages/2/content/0/content/0/text", "PHONE", kPhone, "Call +1 415 555 0100");
  expectRedacted(doc, "/messages/2/content/1/content", "PHONE", kPhone, "or +1 415 555 0100");
  expectRedacted(doc, "/messages/2/content/2/text", "EMAIL", kEmail2, "And bob@example.org");
  EXPECT_EQ(r.encrypted, 6u);
  expectRulesHit(r);
  EXPECT_EQ(r.user_text, "And bob@example.org");
  const auto argsOut = outgoingOf(r, "assistant", redact::kToolArguments);
  EXPECT_NE(argsOut.find("\"n\":5"), std::string::npos) << argsOut;  // the input object as JSON
  EXPECT_EQ(argsOut.find(kCard), std::string::npos) << argsOut;

  // A last user message of tool results only is not the user's turn: the one before it is.
  const std::string agent = R"({"messages":[{"role":"user","content":"first"},{"role":"user","content":[{"type":"text","text":"fix it"}]},
 {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"done"}]}]})";
  const auto a = scanRequest(Format::AnthropicMessages, agent, &redactor(), {});
  EXPECT_EQ(a.user_text, "first\nfix it");
}

TEST(ProtectScan, GeminiRedactsEachFieldWithItsMask) {
  const std::string body = R"({"systemInstruction":{"parts":[{"text":"Admin admin@corp.example"}]},"contents":[
 {"role":"user","parts":[{"text":"I am jane@example.com"}]},
 {"role":"model","parts":[{"text":"thinking about jane@example.com","thought":true,"thoughtSignature":"c2ln"},{"text":"Paying jane@example.com"},{"functionCall":{"name":"pay","args":{"card":"4111111111111111","deep":[{"v":"4111111111111111"}]}}}]},
 {"role":"user","parts":[{"functionResponse":{"name":"pay","response":{"output":"Call +1 415 555 0100"}}}]},
 {"parts":[{"text":"Send to bob@example.org"},{"inline_data":{"mime_type":"image/png","data":"AAAA"}}]}
],"generationConfig":{"temperature":0.2}})";
  ScanOptions opts;
  opts.collect_outgoing = true;
  const auto r = scanRequest(Format::GeminiGenerate, body, &redactor(), opts);
  ASSERT_TRUE(r.ok);
  ASSERT_TRUE(r.changed);
  const auto doc = parse(r.body);
  expectSame(doc, "/systemInstruction/parts/0/text", "Admin admin@corp.example");
  expectRedacted(doc, "/contents/0/parts/0/text", "EMAIL", kEmail, "I am jane@example.com");
  expectSame(doc, "/contents/1/parts/0/text", "thinking about jane@example.com");
  expectSame(doc, "/contents/1/parts/1/text", "Paying jane@example.com");
  expectRedacted(doc, "/contents/1/parts/2/functionCall/args/card", "CARD", kCard, kCard);
  expectRedacted(doc, "/contents/1/parts/2/functionCall/args/deep/0/v", "CARD", kCard, kCard);
  expectRedacted(doc, "/contents/2/parts/0/functionResponse/response/output", "PHONE", kPhone,
                 "Call +1 415 555 0100");
  expectRedacted(doc, "/contents/3/parts/0/text", "EMAIL", kEmail2, "Send to bob@example.org");
  expectSame(doc, "/contents/3/parts/1/inline_data/data", "AAAA");
  EXPECT_EQ(r.encrypted, 5u);
  expectRulesHit(r);
  EXPECT_EQ(r.user_text, "Send to bob@example.org");
  EXPECT_EQ(outgoingOf(r, "tool", redact::kTool).find(kPhone), std::string::npos);
  EXPECT_NE(outgoingOf(r, "tool", redact::kTool).find("[[sluice:PHONE:"), std::string::npos);
}

TEST(ProtectScan, UserTextIsCappedOnACharacterBoundary) {
  ScanOptions opts;
  opts.max_user_text = 10;
  const auto r = scanRequest(Format::OpenAIChat, R"({"messages":[{"role":"user","content":"abcdefgh\u00e9\u00e9"}]})", nullptr, opts);
  EXPECT_EQ(r.user_text, "abcdefgh\xc3\xa9");
  opts.max_user_text = 9;
  const auto r2 = scanRequest(Format::OpenAIChat, R"({"messages":[{"role":"user","content":"abcdefgh\u00e9\u00e9"}]})", nullptr, opts);
  EXPECT_EQ(r2.user_text, "abcdefgh");
  opts.collect_user_text = false;
  EXPECT_TRUE(scanRequest(Format::OpenAIChat, R"({"messages":[{"role":"user","content":"a"}]})", nullptr, opts).user_text.empty());
}

TEST(ProtectScan, RequestRoundTripsThroughRestore) {
  // What the request sealed, the answer restores (a model echoing the tokens).
  const auto r = scanRequest(Format::OpenAIChat, kChatBody, &redactor(), {});
  const auto doc = parse(r.body);
  std::string answer = R"({"choices":[{"message":{"role":"assistant","content":)" +
                       json::serialize(json::value(at(doc, "/messages/1/content"))) + "}}]}";
  redact::RestoreStats st;
  ASSERT_TRUE(restoreWholeBody(answer, *cipher(), st));
  EXPECT_EQ(at(parse(answer), "/choices/0/message/content"), "My mail is jane@example.com, phone +1 415 555 0100");
}

// ---------------------------------------------------------------------------------------------
// Whole answers

const std::string kNote = "say \"hi\"\nbye\\";  // quote, newline and backslash: escaping must hold

std::string argsWithTokens() {
  json::object a;
  a["card"] = tok("CARD", kCard);
  a["note"] = tok("NOTE", kNote);
  a["n"] = 3;
  return json::serialize(a);
}

TEST(ProtectRestore, OpenAIContentAndArguments) {
  json::object msg;
  msg["role"] = "assistant";
  msg["content"] = "Mail " + tok("EMAIL", kEmail) + " now";
  json::array calls;
  calls.push_back(json::object{{"id", "c1"}, {"type", "function"}, {"function", json::object{{"name", "pay"}, {"arguments", argsWithTokens()}}}});
  msg["tool_calls"] = calls;
  json::object root{{"id", "x"}, {"choices", json::array{json::object{{"index", 0}, {"message", msg}}}}};
  std::string body = json::serialize(root);
  redact::RestoreStats st;
  ASSERT_TRUE(restoreWholeBody(body, *cipher(), st));
  EXPECT_EQ(st.restored, 3u);
  EXPECT_EQ(st.tampered, 0u);
  const auto doc = parse(body);
  EXPECT_EQ(at(doc, "/choices/0/message/content"), "Mail jane@example.com now");
  const auto args = parse(at(doc, "/choices/0/message/tool_calls/0/function/arguments"));
  EXPECT_EQ(at(args, "/card"), kCard);
  EXPECT_EQ(at(args, "/note"), kNote);
  EXPECT_EQ(args.at("n").as_int64(), 3);
}

TEST(ProtectRestore, JsonModeContentGetsEscapedValues) {
  json::object content{{"who", tok("NOTE", kNote)}};
  json::object root{{"choices", json::array{json::object{{"message", json::object{{"content", json::serialize(content)}}}}}}};
  std::string body = json::serialize(root);
  redact::RestoreStats st;
  ASSERT_TRUE(restoreWholeBody(body, *cipher(), st));
  EXPECT_EQ(at(parse(at(parse(body), "/choices/0/message/content")), "/who"), kNote);
  // Text that merely starts with a token is not JSON: the plain value.
  json::object plain{{"choices", json::array{json::object{{"message", json::object{{"content", tok("NOTE", kNote) + " ok"}}}}}}};
  body = json::serialize(plain);
  ASSERT_TRUE(restoreWholeBody(body, *cipher(), st));
  EXPECT_EQ(at(parse(body), "/choices/0/message/content"), kNote + " ok");
}

TEST(ProtectRestore, AnthropicToolUseInput) {
  json::object root{{"type", "message"},
                    {"content", json::array{json::object{{"type", "text"}, {"text", "Hi " + tok("EMAIL", kEmail)}},
                                            json::object{{"type", "tool_use"},
                                                         {"id", "t"},
                                                         {"name", "pay"},
                                                         {"input", json::object{{"card", tok("CARD", kCard)},
                                                                                {"nested", json::array{tok("NOTE", kNote), 1}}}}}}}};
  std::string body = json::serialize(root);
  redact::RestoreStats st;
  ASSERT_TRUE(restoreWholeBody(body, *cipher(), st));
  EXPECT_EQ(st.restored, 3u);
  const auto doc = parse(body);
  EXPECT_EQ(at(doc, "/content/0/text"), "Hi jane@example.com");
  EXPECT_EQ(at(doc, "/content/1/input/card"), kCard);
  EXPECT_EQ(at(doc, "/content/1/input/nested/0"), kNote);
}

TEST(ProtectRestore, GeminiFunctionCallArgs) {
  json::object part{{"functionCall", json::object{{"name", "pay"}, {"args", json::object{{"card", tok("CARD", kCard)}, {"note", tok("NOTE", kNote)}}}}}};
  json::object root{{"candidates", json::array{json::object{{"content", json::object{{"role", "model"}, {"parts", json::array{json::object{{"text", tok("EMAIL", kEmail)}}, part}}}}}}}};
  std::string body = json::serialize(root);
  redact::RestoreStats st;
  ASSERT_TRUE(restoreWholeBody(body, *cipher(), st));
  const auto doc = parse(body);
  EXPECT_EQ(at(doc, "/candidates/0/content/parts/0/text"), kEmail);
  EXPECT_EQ(at(doc, "/candidates/0/content/parts/1/functionCall/args/card"), kCard);
  EXPECT_EQ(at(doc, "/candidates/0/content/parts/1/functionCall/args/note"), kNote);
}

json::object geminiChunk(json::array parts) {
  return json::object{{"candidates", json::array{json::object{{"content", json::object{{"role", "model"}, {"parts", std::move(parts)}}}, {"index", 0}}}}};
}

TEST(ProtectRestore, GeminiJsonArrayRestoresTokensSplitAcrossChunks) {
  const std::string t = tok("EMAIL", kEmail);
  const std::string th = tok("NOTE", kNote);
  for (std::size_t cut = 0; cut <= t.size(); ++cut) {
    json::array chunks;
    chunks.push_back(geminiChunk(json::array{json::object{{"text", "Hi " + t.substr(0, cut)}}}));
    chunks.push_back(geminiChunk(json::array{json::object{{"text", th.substr(0, 12)}, {"thought", true}}}));
    chunks.push_back(geminiChunk(json::array{json::object{{"text", t.substr(cut) + " bye"}}, json::object{{"text", th.substr(12)}, {"thought", true}}}));
    chunks.push_back(geminiChunk(json::array{json::object{{"functionCall", json::object{{"name", "f"}, {"args", json::object{{"card", tok("CARD", kCard)}}}}}}}));
    std::string body = json::serialize(chunks);
    redact::RestoreStats st;
    ASSERT_TRUE(restoreWholeBody(body, *cipher(), st)) << cut;
    EXPECT_EQ(st.restored, 3u) << cut;
    const auto doc = parse(body);
    std::string text, thought;
    for (const auto& c : doc.as_array())
      for (const auto& p : c.at_pointer("/candidates/0/content/parts").as_array()) {
        if (!p.as_object().contains("text")) continue;
        (p.as_object().contains("thought") ? thought : text) += std::string(p.at("text").as_string());
      }
    EXPECT_EQ(text, "Hi jane@example.com bye") << cut;
    EXPECT_EQ(thought, kNote) << cut;
    EXPECT_EQ(at(doc, "/3/candidates/0/content/parts/0/functionCall/args/card"), kCard);
  }
}

TEST(ProtectRestore, NoTokenTamperedOrNotJsonLeavesTheBody) {
  redact::RestoreStats st;
  std::string body = R"({"choices":[{"message":{"content":"plain [text]"}}]})";
  const std::string before = body;
  EXPECT_FALSE(restoreWholeBody(body, *cipher(), st));
  EXPECT_EQ(body, before);

  std::string t = tok("EMAIL", kEmail);
  t[t.size() - 4] = t[t.size() - 4] == 'A' ? 'B' : 'A';
  body = R"({"choices":[{"message":{"content":")" + t + R"("}}]})";
  const std::string tampered = body;
  EXPECT_FALSE(restoreWholeBody(body, *cipher(), st));
  EXPECT_EQ(body, tampered);
  EXPECT_EQ(st.tampered, 1u);
  EXPECT_EQ(st.restored, 0u);

  body = "data: " + tok("EMAIL", kEmail) + "\n\n";
  const std::string sse = body;
  EXPECT_FALSE(restoreWholeBody(body, *cipher(), st));
  EXPECT_EQ(body, sse);
}

// ---------------------------------------------------------------------------------------------
// Streams

struct Decoded {
  std::string text, reasoning, signature;
  std::map<int, std::string> args;
  std::map<int, std::string> names;
  bool finished = false, done = false, error = false;
};

class Collector final : public providers::StreamEventSink {
 public:
  Decoded d;
  void onEvent(const StreamEvent& ev) override {
    using K = StreamEvent::Kind;
    switch (ev.kind) {
      case K::Text:
        d.text.append(ev.text);
        break;
      case K::Reasoning:
        d.reasoning.append(ev.text);
        break;
      case K::ReasoningSignature:
        d.signature.append(ev.text);
        break;
      case K::ToolCallStart:
        d.names[ev.tool_index] = std::string(ev.name);
        break;
      case K::ToolCallArgs:
        d.args[ev.tool_index].append(ev.text);
        break;
      case K::Finish:
        d.finished = true;
        break;
      case K::Done:
        d.done = true;
        break;
      case K::Error:
        d.error = true;
        break;
      default:
        break;
    }
  }
};

Decoded decodeClient(Format f, std::string_view bytes) {
  std::unique_ptr<providers::StreamDecoder> dec;
  switch (f) {
    case Format::OpenAIChat:
      dec = providers::openai::makeChatStreamDecoder();
      break;
    case Format::AnthropicMessages:
      dec = providers::anthropic::makeMessagesStreamDecoder();
      break;
    default:
      dec = providers::gemini::makeGenerateStreamDecoder();
      break;
  }
  Collector c;
  EXPECT_TRUE(dec->feed(bytes, c));
  EXPECT_EQ(dec->pending(), 0u);
  return c.d;
}

std::string translateWithRestore(Format client, Format upstream, const std::vector<std::string_view>& pieces,
                                 const std::shared_ptr<redact::RestoreStats>& stats) {
  providers::TranslateContext ctx;
  ctx.created = 1700000000;
  ctx.include_usage = true;
  ctx.wrap_encoder = [stats](std::unique_ptr<providers::StreamEncoder> inner) {
    return makeRestoringEncoder(std::move(inner), cipher(), stats);
  };
  auto t = providers::makeStreamTranslator(client, upstream, ctx);
  std::string out;
  for (auto p : pieces) EXPECT_TRUE(t->feed(p, out));
  t->finish(out);
  EXPECT_TRUE(t->ended());
  return out;
}

std::string tampered() {
  std::string t = tok("EMAIL", "x@y.example");
  t[t.size() - 5] = t[t.size() - 5] == 'A' ? 'B' : 'A';
  return t;
}

const std::string& emailTok() {
  static const std::string t = tok("EMAIL", kEmail);
  return t;
}

const std::string kWantText = "Mail jane@example.com or " + tampered() + " done";

struct StreamCase {
  Format format;
  std::string upstream;
  std::size_t restored;
  bool reasoning = false;
};

// The upstream splits the tokens across its own events too: text inside the e-mail token, tool
// arguments inside the card token.
StreamCase chatCase() {
  auto chunk = [](json::object delta, json::value finish = nullptr) {
    json::object c{{"id", "chatcmpl-1"}, {"object", "chat.completion.chunk"}, {"created", 1}, {"model", "gpt-4o"},
                   {"choices", json::array{json::object{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", finish}}}}};
    return "data: " + json::serialize(c) + "\n\n";
  };
  const std::string args = argsWithTokens();
  const std::size_t argCut = args.find("[[sluice:CARD:") + 20;
  auto toolDelta = [](json::object fn, bool first) {
    json::object tc{{"index", 0}, {"function", std::move(fn)}};
    if (first) {
      tc["id"] = "call_1";
      tc["type"] = "function";
    }
    return json::object{{"tool_calls", json::array{tc}}};
  };
  std::string s;
  s += chunk({{"role", "assistant"}, {"content", ""}});
  s += chunk({{"content", "Mail " + emailTok().substr(0, 17)}});
  s += chunk({{"content", emailTok().substr(17) + " or " + tampered() + " done"}});
  s += chunk(toolDelta({{"name", "pay"}, {"arguments", ""}}, true));
  s += chunk(toolDelta({{"arguments", args.substr(0, argCut)}}, false));
  s += chunk(toolDelta({{"arguments", args.substr(argCut)}}, false));
  s += chunk({}, "tool_calls");
  s += R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}})"
       "\n\ndata: [DONE]\n\n";
  return {Format::OpenAIChat, s, 3};
}

StreamCase anthropicCase() {
  auto ev = [](std::string_view name, json::object data) {
    return "event: " + std::string(name) + "\ndata: " + json::serialize(data) + "\n\n";
  };
  auto delta = [&](int index, json::object d) {
    return ev("content_block_delta", {{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(d)}});
  };
  const std::string args = argsWithTokens();
  const std::size_t argCut = args.find("[[sluice:NOTE:") + 11;
  const std::string think = tok("EMAIL", kEmail2);
  std::string s;
  s += ev("message_start", {{"type", "message_start"},
                            {"message", json::object{{"id", "msg_1"}, {"type", "message"}, {"role", "assistant"}, {"model", "claude"},
                                                     {"content", json::array{}}, {"stop_reason", nullptr},
                                                     {"usage", json::object{{"input_tokens", 10}, {"output_tokens", 1}}}}}});
  s += ev("content_block_start", {{"type", "content_block_start"}, {"index", 0}, {"content_block", json::object{{"type", "thinking"}, {"thinking", ""}}}});
  s += delta(0, {{"type", "thinking_delta"}, {"thinking", "Think " + think.substr(0, 30)}});
  s += delta(0, {{"type", "thinking_delta"}, {"thinking", think.substr(30)}});
  s += delta(0, {{"type", "signature_delta"}, {"signature", "c2lnbmF0dXJl"}});
  s += ev("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}});
  s += ev("content_block_start", {{"type", "content_block_start"}, {"index", 1}, {"content_block", json::object{{"type", "text"}, {"text", ""}}}});
  s += "event: ping\ndata: {\"type\": \"ping\"}\n\n";
  s += delta(1, {{"type", "text_delta"}, {"text", "Mail " + emailTok().substr(0, 9)}});
  s += delta(1, {{"type", "text_delta"}, {"text", emailTok().substr(9) + " or " + tampered() + " done"}});
  s += ev("content_block_stop", {{"type", "content_block_stop"}, {"index", 1}});
  s += ev("content_block_start", {{"type", "content_block_start"}, {"index", 2},
                                  {"content_block", json::object{{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "pay"}, {"input", json::object{}}}}});
  s += delta(2, {{"type", "input_json_delta"}, {"partial_json", args.substr(0, argCut)}});
  s += delta(2, {{"type", "input_json_delta"}, {"partial_json", args.substr(argCut)}});
  s += ev("content_block_stop", {{"type", "content_block_stop"}, {"index", 2}});
  s += ev("message_delta", {{"type", "message_delta"}, {"delta", json::object{{"stop_reason", "tool_use"}, {"stop_sequence", nullptr}}},
                            {"usage", json::object{{"output_tokens", 30}}}});
  s += ev("message_stop", {{"type", "message_stop"}});
  return {Format::AnthropicMessages, s, 4, true};
}

StreamCase geminiCase() {
  auto chunk = [](json::array parts, std::string_view finish = {}) {
    json::object cand{{"content", json::object{{"parts", std::move(parts)}, {"role", "model"}}}, {"index", 0}};
    if (!finish.empty()) cand["finishReason"] = finish;
    json::object c{{"candidates", json::array{cand}},
                   {"usageMetadata", json::object{{"promptTokenCount", 10}, {"candidatesTokenCount", 3}, {"totalTokenCount", 13}}},
                   {"modelVersion", "gemini-2.5-flash"},
                   {"responseId", "r1"}};
    return "data: " + json::serialize(c) + "\r\n\r\n";
  };
  const std::string think = tok("EMAIL", kEmail2);
  std::string s;
  s += chunk({json::object{{"text", "Think " + think.substr(0, 25)}, {"thought", true}}});
  s += chunk({json::object{{"text", think.substr(25)}, {"thought", true}}});
  s += chunk({json::object{{"text", "Mail " + emailTok().substr(0, 30)}}});
  s += chunk({json::object{{"text", emailTok().substr(30) + " or " + tampered() + " done"}}});
  s += chunk({json::object{{"functionCall", json::object{{"name", "pay"}, {"args", parse(argsWithTokens())}}}}});
  s += chunk({json::object{{"text", ""}}}, "STOP");
  return {Format::GeminiGenerate, s, 4, true};
}

void checkStream(const StreamCase& c, const std::vector<std::string_view>& pieces, const std::string& label) {
  auto stats = std::make_shared<redact::RestoreStats>();
  const std::string out = translateWithRestore(c.format, c.format, pieces, stats);
  const Decoded d = decodeClient(c.format, out);
  ASSERT_EQ(d.text, kWantText) << label;
  if (c.reasoning) {
    ASSERT_EQ(d.reasoning, "Think bob@example.org") << label;
  }
  if (c.format == Format::AnthropicMessages) {
    ASSERT_EQ(d.signature, "c2lnbmF0dXJl") << label;
  }
  ASSERT_EQ(d.names.size(), 1u) << label;
  ASSERT_EQ(d.names.at(0), "pay") << label;
  boost::system::error_code ec;
  const auto args = json::parse(d.args.at(0), ec);
  ASSERT_FALSE(ec) << label << ": " << d.args.at(0);
  ASSERT_EQ(std::string(args.at("card").as_string()), kCard) << label;
  ASSERT_EQ(std::string(args.at("note").as_string()), kNote) << label;
  ASSERT_EQ(args.at("n").as_int64(), 3) << label;
  ASSERT_FALSE(d.error) << label << "\n" << out;
  ASSERT_TRUE(d.finished) << label;
  ASSERT_EQ(stats->restored, c.restored) << label;
  ASSERT_EQ(stats->tampered, 1u) << label;
}

void checkEverySplit(const StreamCase& c) {
  const std::string_view v(c.upstream);
  checkStream(c, {v}, "whole");
  for (std::size_t i = 0; i <= v.size(); ++i) {
    checkStream(c, {v.substr(0, i), v.substr(i)}, "split at " + std::to_string(i));
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < v.size(); ++i) bytes.push_back(v.substr(i, 1));
  checkStream(c, bytes, "one byte at a time");
}

TEST(ProtectStream, OpenAIChatAtEveryByteSplit) { checkEverySplit(chatCase()); }
TEST(ProtectStream, AnthropicAtEveryByteSplit) { checkEverySplit(anthropicCase()); }
TEST(ProtectStream, GeminiAtEveryByteSplit) { checkEverySplit(geminiCase()); }

TEST(ProtectStream, WithoutTheHookTokensPassThrough) {
  const auto c = chatCase();
  providers::TranslateContext ctx;
  auto t = providers::makeStreamTranslator(Format::OpenAIChat, Format::OpenAIChat, ctx);
  std::string out;
  t->feed(c.upstream, out);
  t->finish(out);
  const auto d = decodeClient(Format::OpenAIChat, out);
  EXPECT_EQ(d.text, "Mail " + emailTok() + " or " + tampered() + " done");
}

TEST(ProtectStream, CrossFormatClientsGetRestoredValues) {
  // Anthropic upstream -> OpenAI client, and OpenAI upstream -> Responses / Gemini clients.
  auto stats = std::make_shared<redact::RestoreStats>();
  const auto a = anthropicCase();
  const Decoded d = decodeClient(Format::OpenAIChat, translateWithRestore(Format::OpenAIChat, Format::AnthropicMessages, {a.upstream}, stats));
  EXPECT_EQ(d.text, kWantText);
  EXPECT_EQ(d.reasoning, "Think bob@example.org");
  EXPECT_EQ(std::string(parse(d.args.at(0)).at("note").as_string()), kNote);

  const auto c = chatCase();
  const std::string_view v(c.upstream);
  for (std::size_t i = 0; i <= v.size(); i += 7) {
    auto st = std::make_shared<redact::RestoreStats>();
    const std::string out = translateWithRestore(Format::OpenAIResponses, Format::OpenAIChat, {v.substr(0, i), v.substr(i)}, st);
    ASSERT_NE(out.find("Mail jane@example.com or "), std::string::npos) << i << out;
    ASSERT_EQ(out.find(emailTok()), std::string::npos) << i;
    ASSERT_NE(out.find("response.completed"), std::string::npos) << i;
    ASSERT_EQ(st->restored, 3u) << i;

    auto sg = std::make_shared<redact::RestoreStats>();
    const Decoded g = decodeClient(Format::GeminiGenerate,
                                   translateWithRestore(Format::GeminiGenerate, Format::OpenAIChat, {v.substr(0, i), v.substr(i)}, sg));
    ASSERT_EQ(g.text, kWantText) << i;
    ASSERT_EQ(std::string(parse(g.args.at(0)).at("card").as_string()), kCard) << i;
  }
}

TEST(ProtectStream, HeldTokenIsFlushedWhenTheStreamBreaks) {
  // The upstream stops inside a token: what was held goes out before the client's error event.
  auto stats = std::make_shared<redact::RestoreStats>();
  const std::string cut = emailTok().substr(0, 20);
  json::object c{{"id", "x"}, {"object", "chat.completion.chunk"}, {"created", 1}, {"model", "m"},
                 {"choices", json::array{json::object{{"index", 0}, {"delta", json::object{{"content", "Hi " + cut}}}, {"finish_reason", nullptr}}}}};
  const std::string up = "data: " + json::serialize(c) + "\n\n";
  const std::string out = translateWithRestore(Format::OpenAIChat, Format::OpenAIChat, {up}, stats);
  const Decoded d = decodeClient(Format::OpenAIChat, out);
  EXPECT_EQ(d.text, "Hi " + cut);
  EXPECT_TRUE(d.error);
  EXPECT_LT(out.find(cut), out.find("\"error\""));
}

}  // namespace protect_test
}  // namespace
}  // namespace sluice::pipeline
