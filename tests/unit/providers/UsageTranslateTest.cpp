// Token usage across every translation: an upstream answer that reports cache reads, cache
// writes and reasoning tokens, whole and streamed, read back in each client format. The table
// says what each client format can carry: every format the input, output and cache-read counts;
// cache writes all but Gemini (no such field; the writes stay inside promptTokenCount);
// reasoning all but Anthropic (thinking is inside output_tokens). The canonical usage the
// gateway counts and prices keeps all five whatever the client.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <vector>

#include "TranslateTestUtil.hpp"
#include "cloud/EventStream.hpp"

namespace sluice::providers {
namespace {
namespace usage_translate_test {

namespace json = boost::json;
using testing::fixedContext;
using testing::translateStream;

// The counts in OpenAI's sense: input includes cache reads and writes, output the reasoning.
struct Counts {
  std::int64_t input = 0, output = 0, cached = 0, cache_write = 0, reasoning = 0;
  bool operator==(const Counts&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Counts& c) {
  return os << "{input " << c.input << ", output " << c.output << ", cached " << c.cached << ", cache_write "
            << c.cache_write << ", reasoning " << c.reasoning << "}";
}

// One prompt of 1000 tokens: 600 read from the cache, 200 written to it, 200 plain; 300 answer
// tokens of which 120 reasoning. Each upstream says it its own way.
constexpr std::string_view kChatWhole =
    R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,)"
    R"("message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,)"
    R"("completion_tokens":300,"total_tokens":1300,"prompt_tokens_details":{"cached_tokens":600,)"
    R"("cache_write_tokens":200},"completion_tokens_details":{"reasoning_tokens":120}}})";
constexpr std::string_view kChatStream =
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":null}],\"usage\":null}\n\n"
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
    "\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n"
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],"
    "\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":300,\"total_tokens\":1300,\"prompt_tokens_details\":"
    "{\"cached_tokens\":600,\"cache_write_tokens\":200},\"completion_tokens_details\":{\"reasoning_tokens\":120}}}\n\n"
    "data: [DONE]\n\n";

constexpr std::string_view kAnthropicWhole =
    R"({"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi"}],)"
    R"("stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":200,"cache_creation_input_tokens":200,)"
    R"("cache_read_input_tokens":600,"output_tokens":300}})";
constexpr std::string_view kAnthropicStream =
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","
    "\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":"
    "{\"input_tokens\":200,\"cache_creation_input_tokens\":200,\"cache_read_input_tokens\":600,\"output_tokens\":1}}}"
    "\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
    "\"text\",\"text\":\"\"}}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
    "\"text_delta\",\"text\":\"Hi\"}}\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\","
    "\"stop_sequence\":null},\"usage\":{\"output_tokens\":300}}\n\n"
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

constexpr std::string_view kGeminiWhole =
    R"({"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP","index":0}],)"
    R"("usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":180,"totalTokenCount":1300,)"
    R"("cachedContentTokenCount":600,"thoughtsTokenCount":120},"modelVersion":"m","responseId":"r1"})";
// Gemini tells the prompt's counts from the first chunk on.
constexpr std::string_view kGeminiStream =
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}],\"role\":\"model\"},\"index\":0}],"
    "\"usageMetadata\":{\"promptTokenCount\":1000,\"cachedContentTokenCount\":600,\"totalTokenCount\":1000},"
    "\"modelVersion\":\"m\",\"responseId\":\"r1\"}\r\n\r\n"
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"},\"finishReason\":\"STOP\","
    "\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":1000,\"candidatesTokenCount\":180,\"totalTokenCount\":1300,"
    "\"cachedContentTokenCount\":600,\"thoughtsTokenCount\":120},\"modelVersion\":\"m\",\"responseId\":\"r1\"}"
    "\r\n\r\n";

// Bedrock Converse: inputTokens counts neither cache reads nor writes. The stream is AWS's binary
// event stream (its usage in the closing metadata event).
constexpr std::string_view kBedrockWhole =
    R"({"output":{"message":{"role":"assistant","content":[{"text":"Hi"}]}},"stopReason":"end_turn",)"
    R"("usage":{"inputTokens":200,"outputTokens":300,"totalTokens":1300,"cacheReadInputTokens":600,)"
    R"("cacheWriteInputTokens":200},"metrics":{"latencyMs":9}})";
std::string awsEvent(const std::string& type, const std::string& payload) {
  return cloud::encodeEventStreamMessage(
      {{":event-type", type}, {":content-type", "application/json"}, {":message-type", "event"}}, payload);
}
const std::string kBedrockStream =
    awsEvent("messageStart", R"({"role":"assistant"})") +
    awsEvent("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"text":"Hi"}})") +
    awsEvent("contentBlockStop", R"({"contentBlockIndex":0})") + awsEvent("messageStop", R"({"stopReason":"end_turn"})") +
    awsEvent("metadata",
             R"({"usage":{"inputTokens":200,"outputTokens":300,"totalTokens":1300,"cacheReadInputTokens":600,)"
             R"("cacheWriteInputTokens":200},"metrics":{"latencyMs":9}})");

struct Upstream {
  Format format;
  std::string_view whole, stream;
  Counts told;  // what it reports, in OpenAI's sense
};

const Upstream kUpstreams[] = {
    {Format::OpenAIChat, kChatWhole, kChatStream, {1000, 300, 600, 200, 120}},
    {Format::AnthropicMessages, kAnthropicWhole, kAnthropicStream, {1000, 300, 600, 200, 0}},
    {Format::GeminiGenerate, kGeminiWhole, kGeminiStream, {1000, 300, 600, 0, 120}},
    {Format::BedrockConverse, kBedrockWhole, kBedrockStream, {1000, 300, 600, 200, 0}},
};

const Format kClients[] = {Format::OpenAIChat, Format::OpenAIResponses, Format::AnthropicMessages,
                           Format::GeminiGenerate};

// What a client of `client` sees of `told`.
Counts expectedFor(Format client, const Counts& told) {
  Counts c = told;
  if (client == Format::AnthropicMessages) c.reasoning = 0;  // not carried: inside output_tokens
  if (client == Format::GeminiGenerate) c.cache_write = 0;   // not carried: inside promptTokenCount
  return c;
}

std::int64_t intAt(const json::object& o, std::string_view k) {
  const auto* v = o.if_contains(k);
  return v && v->is_int64() ? v->as_int64() : 0;
}
const json::object& objAt(const json::object& o, std::string_view k) {
  static const json::object kEmpty;
  const auto* v = o.if_contains(k);
  return v && v->is_object() ? v->as_object() : kEmpty;
}

// A client-format usage object, read back into OpenAI's sense.
Counts countsOf(Format client, const json::object& u) {
  Counts c;
  switch (client) {
    case Format::OpenAIChat:
      c.input = intAt(u, "prompt_tokens");
      c.output = intAt(u, "completion_tokens");
      c.cached = intAt(objAt(u, "prompt_tokens_details"), "cached_tokens");
      c.cache_write = intAt(objAt(u, "prompt_tokens_details"), "cache_write_tokens");
      c.reasoning = intAt(objAt(u, "completion_tokens_details"), "reasoning_tokens");
      EXPECT_EQ(intAt(u, "total_tokens"), c.input + c.output);
      break;
    case Format::OpenAIResponses:
      c.input = intAt(u, "input_tokens");
      c.output = intAt(u, "output_tokens");
      c.cached = intAt(objAt(u, "input_tokens_details"), "cached_tokens");
      c.cache_write = intAt(objAt(u, "input_tokens_details"), "cache_write_tokens");
      c.reasoning = intAt(objAt(u, "output_tokens_details"), "reasoning_tokens");
      EXPECT_EQ(intAt(u, "total_tokens"), c.input + c.output);
      break;
    case Format::AnthropicMessages:
      c.cached = intAt(u, "cache_read_input_tokens");
      c.cache_write = intAt(u, "cache_creation_input_tokens");
      c.input = intAt(u, "input_tokens") + c.cached + c.cache_write;
      c.output = intAt(u, "output_tokens");
      break;
    case Format::GeminiGenerate:
      c.input = intAt(u, "promptTokenCount");
      c.cached = intAt(u, "cachedContentTokenCount");
      c.reasoning = intAt(u, "thoughtsTokenCount");
      c.output = intAt(u, "candidatesTokenCount") + c.reasoning;
      EXPECT_EQ(intAt(u, "totalTokenCount"), c.input + c.output);
      break;
    case Format::BedrockConverse:  // an upstream format only
      break;
  }
  return c;
}

Counts canonicalCounts(const Usage& u) {
  auto z = [](std::int64_t v) { return v < 0 ? 0 : v; };
  return {z(u.input), z(u.output), z(u.cached), z(u.cache_creation), z(u.reasoning)};
}

json::object parseObject(std::string_view text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  EXPECT_FALSE(ec) << text;
  return !ec && v.is_object() ? v.as_object() : json::object{};
}

// Every `data:` payload of a client stream that is a JSON object.
std::vector<json::object> streamData(const std::string& s) {
  std::vector<json::object> out;
  std::size_t pos = 0;
  while ((pos = s.find("data: ", pos)) != std::string::npos) {
    pos += 6;
    auto end = s.find_first_of("\r\n", pos);
    std::string_view data(s.data() + pos, (end == std::string::npos ? s.size() : end) - pos);
    if (data.starts_with("{")) out.push_back(parseObject(data));
  }
  return out;
}

std::string_view typeOf(const json::object& o) {
  const auto* t = o.if_contains("type");
  return t && t->is_string() ? std::string_view(t->as_string()) : std::string_view();
}

// What a client ends up with from a stream, read as that format's SDKs read it.
struct StreamSeen {
  Counts final;
  Counts at_start;  // Anthropic: message_start's usage
};

StreamSeen seenIn(Format client, const std::string& out) {
  StreamSeen seen;
  const auto events = streamData(out);
  switch (client) {
    case Format::OpenAIChat:  // the usage chunk
      for (const auto& e : events)
        if (const auto* u = e.if_contains("usage"); u && u->is_object()) seen.final = countsOf(client, u->as_object());
      break;
    case Format::OpenAIResponses:  // response.completed
      for (const auto& e : events)
        if (typeOf(e) == "response.completed") seen.final = countsOf(client, objAt(objAt(e, "response"), "usage"));
      break;
    case Format::GeminiGenerate:  // the last usageMetadata
      for (const auto& e : events)
        if (e.contains("usageMetadata")) seen.final = countsOf(client, objAt(e, "usageMetadata"));
      break;
    case Format::AnthropicMessages: {
      // The SDKs' accumulation: message_start's usage, then each message_delta's fields over it.
      json::object acc;
      for (const auto& e : events) {
        if (typeOf(e) == "message_start") {
          acc = objAt(objAt(e, "message"), "usage");
          seen.at_start = countsOf(client, acc);
        } else if (typeOf(e) == "message_delta") {
          for (const auto& kv : objAt(e, "usage"))
            if (!kv.value().is_null()) acc[kv.key()] = kv.value();
        }
      }
      seen.final = countsOf(client, acc);
      break;
    }
    case Format::BedrockConverse:  // an upstream format only
      break;
  }
  return seen;
}

TEST(UsageTranslateTest, WholeAnswersKeepEveryCountTheClientFormatCarries) {
  for (const auto& up : kUpstreams) {
    for (Format client : kClients) {
      if (client == up.format) continue;  // served natively (UsageTapTest)
      SCOPED_TRACE(std::string(formatName(up.format)) + " -> " + std::string(formatName(client)));
      std::string body;
      Usage canonical;
      auto err = translateResponse(client, up.format, up.whole, body, fixedContext(), &canonical);
      ASSERT_FALSE(err) << err->message;
      EXPECT_EQ(canonicalCounts(canonical), up.told);
      const auto o = parseObject(body);
      const auto& u = objAt(o, client == Format::GeminiGenerate ? "usageMetadata" : "usage");
      EXPECT_EQ(countsOf(client, u), expectedFor(client, up.told)) << body;
    }
  }
}

TEST(UsageTranslateTest, StreamsKeepEveryCountTheClientFormatCarries) {
  for (const auto& up : kUpstreams) {
    for (Format client : kClients) {
      if (client == up.format) continue;
      SCOPED_TRACE(std::string(formatName(up.format)) + " -> " + std::string(formatName(client)));
      // Fed whole and byte by byte: the counts do not depend on how the bytes arrive.
      for (bool bytewise : {false, true}) {
        std::vector<std::string_view> pieces;
        if (bytewise) {
          for (std::size_t i = 0; i < up.stream.size(); ++i) pieces.push_back(up.stream.substr(i, 1));
        } else {
          pieces.push_back(up.stream);
        }
        Usage canonical;
        const std::string out = translateStream(client, up.format, pieces, fixedContext(true), &canonical);
        EXPECT_EQ(canonicalCounts(canonical), up.told);
        EXPECT_EQ(seenIn(client, out).final, expectedFor(client, up.told)) << out;
      }
    }
  }
}

// Anthropic clients (Claude Code among them) read the prompt's size from message_start: a
// translated stream puts there what the upstream told at its start (Gemini: from the first
// chunk), and the whole usage in message_delta when the upstream tells it only at the end
// (OpenAI).
TEST(UsageTranslateTest, AnthropicMessageStartCarriesTheInputUsageKnownAtTheStart) {
  {
    const std::string out =
        translateStream(Format::AnthropicMessages, Format::GeminiGenerate, {kGeminiStream}, fixedContext());
    const auto seen = seenIn(Format::AnthropicMessages, out);
    EXPECT_EQ(seen.at_start.input, 1000) << out;
    EXPECT_EQ(seen.at_start.cached, 600) << out;
    EXPECT_NE(out.find("\"usage\":{\"input_tokens\":400,\"cache_creation_input_tokens\":0,"
                       "\"cache_read_input_tokens\":600,"),
              std::string::npos)
        << out;
  }
  {
    const std::string out =
        translateStream(Format::AnthropicMessages, Format::OpenAIChat, {kChatStream}, fixedContext());
    const auto seen = seenIn(Format::AnthropicMessages, out);
    EXPECT_EQ(seen.at_start, Counts{}) << out;  // OpenAI tells nothing before the end
    EXPECT_EQ(seen.final, (Counts{1000, 300, 600, 200, 0})) << out;
    EXPECT_NE(out.find("\"usage\":{\"input_tokens\":200,\"cache_creation_input_tokens\":200,"
                       "\"cache_read_input_tokens\":600,\"output_tokens\":300}}"),
              std::string::npos)
        << out;
  }
  {
    // An OpenAI-compatible server reporting usage on every chunk tells the prompt at the start.
    constexpr std::string_view kEveryChunk =
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{"
        "\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":null}],\"usage\":{"
        "\"prompt_tokens\":1000,\"completion_tokens\":1,\"total_tokens\":1001,\"prompt_tokens_details\":{"
        "\"cached_tokens\":600}}}\n\n"
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{"
        "\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1000,"
        "\"completion_tokens\":300,\"total_tokens\":1300,\"prompt_tokens_details\":{\"cached_tokens\":600}}}\n\n"
        "data: [DONE]\n\n";
    const std::string out =
        translateStream(Format::AnthropicMessages, Format::OpenAIChat, {kEveryChunk}, fixedContext());
    const auto seen = seenIn(Format::AnthropicMessages, out);
    EXPECT_EQ(seen.at_start.input, 1000) << out;
    EXPECT_EQ(seen.at_start.cached, 600) << out;
    EXPECT_EQ(seen.final, (Counts{1000, 300, 600, 0, 0})) << out;
  }
}

// Anthropic may give the cache writes only as their per-lifetime split.
TEST(UsageTranslateTest, AnthropicCacheCreationSplitCountsAsCacheWrites) {
  constexpr std::string_view kSplit =
      R"({"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi"}],)"
      R"("stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":200,"cache_read_input_tokens":600,)"
      R"("cache_creation":{"ephemeral_5m_input_tokens":150,"ephemeral_1h_input_tokens":50},"output_tokens":300}})";
  std::string body;
  Usage canonical;
  ASSERT_FALSE(
      translateResponse(Format::OpenAIChat, Format::AnthropicMessages, kSplit, body, fixedContext(), &canonical));
  EXPECT_EQ(canonicalCounts(canonical), (Counts{1000, 300, 600, 200, 0}));
}

// Counts are the upstream's word: sums of huge ones saturate rather than overflow.
TEST(UsageTranslateTest, HugeCountsSaturate) {
  constexpr std::string_view kHuge =
      R"({"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi"}],)"
      R"("stop_reason":"end_turn","usage":{"input_tokens":9000000000000000000,)"
      R"("cache_read_input_tokens":9000000000000000000,"cache_creation":{"ephemeral_5m_input_tokens":)"
      R"(9000000000000000000,"ephemeral_1h_input_tokens":9000000000000000000},"output_tokens":1}})";
  std::string body;
  Usage canonical;
  ASSERT_FALSE(
      translateResponse(Format::OpenAIChat, Format::AnthropicMessages, kHuge, body, fixedContext(), &canonical));
  EXPECT_EQ(canonical.input, INT64_MAX);
  EXPECT_EQ(canonical.cache_creation, INT64_MAX);
  EXPECT_NE(body.find("\"total_tokens\":9223372036854775807"), std::string::npos) << body;
}

}  // namespace usage_translate_test
}  // namespace
}  // namespace sluice::providers
