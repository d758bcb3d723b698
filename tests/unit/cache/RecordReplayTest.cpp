// Record a stream (or a whole answer) as it passes, replay it in every client format, and check
// the replay against the original: same content byte for byte (text, reasoning, tool-call names
// and arguments, finish reason, usage) and, where the translator can render the original, the
// same SSE bytes a fresh rendering gives.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../providers/TranslateTestUtil.hpp"
#include "cache/Recorder.hpp"
#include "cache/Replay.hpp"
#include "providers/openai/ResponsesCodec.hpp"

namespace sluice::cache {
namespace {
namespace record_replay_test {

using providers::Format;
using providers::Part;
using providers::testing::fixedContext;

// The providers' fixtures (TranslateTestUtil's own lookup is relative to where it is included).
std::string readFixture(const std::string& name) {
  auto path = (std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "fixtures" / "providers" / name).lexically_normal();
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
using providers::testing::translateStream;

constexpr Format kFormats[] = {Format::OpenAIChat, Format::AnthropicMessages, Format::GeminiGenerate};

struct StreamCase {
  const char* fixture;
  Format format;
};
const StreamCase kStreams[] = {
    {"openai_stream_parallel_tools.sse", Format::OpenAIChat},
    {"openai_stream_reasoning_no_usage.sse", Format::OpenAIChat},
    {"anthropic_stream_tool_use.sse", Format::AnthropicMessages},
    {"anthropic_stream_thinking.sse", Format::AnthropicMessages},
    {"gemini/gemini_stream_thinking_tools.sse", Format::GeminiGenerate},
    {"gemini/reference_stream_text.sse", Format::GeminiGenerate},
};

Entry record(Format f, std::string_view bytes, std::size_t step = 0) {
  auto rec = Recorder::forStream(f);
  EXPECT_TRUE(rec);
  if (step == 0) {
    rec->feed(bytes);
  } else {
    for (std::size_t i = 0; i < bytes.size(); i += step) rec->feed(bytes.substr(i, step));
  }
  auto e = rec->finish();
  EXPECT_TRUE(e) << rec->why();
  return e ? std::move(*e) : Entry{};
}

// Keep-alive pings are not content and are not recorded.
std::string withoutPings(std::string s) {
  static const std::string kPing = "event: ping\ndata: {\"type\":\"ping\"}\n\n";
  for (auto at = s.find(kPing); at != std::string::npos; at = s.find(kPing)) s.erase(at, kPing.size());
  return s;
}

std::string join(const std::vector<std::string>& chunks) {
  std::string all;
  for (const auto& c : chunks) all += c;
  return all;
}

// What a client reads: the answer text, reasoning text, tool calls, finish and token counts.
std::string content(const Entry& e) {
  std::string text, reasoning, tools;
  for (const auto& p : e.response.content) {
    if (p.kind == Part::Kind::Text) text += p.text;
    if (p.kind == Part::Kind::Reasoning) reasoning += p.text;
    // Arguments as JSON values: Anthropic and Gemini carry them as objects, not text, so their
    // spacing is the encoder's.
    if (p.kind == Part::Kind::ToolCall) tools += p.name + "(" + boost::json::serialize(boost::json::parse(p.arguments)) + ")\n";
  }
  const auto& u = e.response.usage;
  // "Not reported" and 0 are the same to a client (Anthropic and Gemini always write counts).
  auto count = [](std::int64_t n) { return std::to_string(std::max<std::int64_t>(n, 0)); };
  return "text=" + text + "\nreasoning=" + reasoning + "\ntools=" + tools +
         "finish=" + std::to_string(static_cast<int>(e.response.finish)) + "\nusage=" + count(u.input) + "/" +
         count(u.output) + "\n";
}

ReplayOptions fixedReplay() {
  ReplayOptions o;
  o.created = 1700000000;
  o.include_usage = true;
  return o;
}

TEST(CacheRecord, SameEntryWhateverTheSplit) {
  for (const auto& c : kStreams) {
    auto in = readFixture(c.fixture);
    auto whole = serializeEntry(record(c.format, in));
    for (std::size_t step : {1u, 7u, 64u}) {
      auto e = record(c.format, in, step);
      e.stored_at_ms = parseEntry(whole)->stored_at_ms;
      EXPECT_EQ(whole, serializeEntry(e)) << c.fixture << " step " << step;
    }
  }
}

TEST(CacheRecord, KeepsTheContentOfTheStream) {
  auto e = record(Format::OpenAIChat, readFixture("openai_stream_parallel_tools.sse"));
  EXPECT_EQ("text=\nreasoning=\ntools=get_weather({\"location\":\"Paris\"})\nget_weather({\"location\":\"Tokyo\"})\n"
            "finish=4\nusage=81/46\n",
            content(e));
  ASSERT_EQ(2u, e.response.content.size());
  EXPECT_EQ("{\"location\": \"Paris\"}", e.response.content[0].arguments);  // the model's bytes, as sent
  EXPECT_EQ("call_8dVq3c9mD1Zk7Bd2pQh1xYtN", e.response.content[1].id);
  EXPECT_EQ(64, e.response.usage.cached);
  EXPECT_EQ("chatcmpl-BQb0iSFzE1zz1OVhaqg3u2Yqn1Ezf", e.response.id);
  EXPECT_EQ("gpt-4.1-nano-2025-04-14", e.response.model);
  ASSERT_EQ(2u, e.pieces.size());
  EXPECT_EQ((std::vector<std::uint32_t>{11, 10}), e.pieces[0]);  // "{\"location\"", ": \"Paris\"}"
}

// The replay in the recorded format equals what the gateway renders from the original stream.
TEST(CacheReplay, SameFormatStreamIsByteForByteTheFreshRendering) {
  for (const auto& c : kStreams) {
    auto in = readFixture(c.fixture);
    auto e = record(c.format, in);
    auto fresh = withoutPings(translateStream(c.format, c.format, {in}, fixedContext()));
    auto replayed = join(replayStream(c.format, e, fixedReplay()));
    EXPECT_EQ(fresh, replayed) << c.fixture;
    // Recording the replay gives the same entry: text, arguments, signatures, deltas, usage.
    auto again = record(c.format, replayed);
    again.stored_at_ms = e.stored_at_ms;
    // Token counts are compared as a client reads them (content()): a count that was not
    // reported and a 0 differ in the entry but not on the wire, and a Gemini stream's first
    // partial usageMetadata is not repeated.
    EXPECT_EQ(content(e), content(again)) << c.fixture;
    again.response.usage = e.response.usage;
    again.start_usage = e.start_usage;
    EXPECT_EQ(serializeEntry(e), serializeEntry(again)) << c.fixture;
  }
}

// In another format, the replay equals the live translation of the original stream.
TEST(CacheReplay, OtherFormatStreamIsByteForByteTheLiveTranslation) {
  for (const auto& c : kStreams) {
    auto in = readFixture(c.fixture);
    auto e = record(c.format, in);
    for (auto client : kFormats) {
      auto live = withoutPings(translateStream(client, c.format, {in}, fixedContext()));
      EXPECT_EQ(live, join(replayStream(client, e, fixedReplay())))
          << c.fixture << " -> " << providers::formatName(client);
    }
  }
}

// Content check independent of the translator: decode the replayed bytes again.
TEST(CacheReplay, ReplayedStreamCarriesTheOriginalContentInEveryFormat) {
  for (const auto& c : kStreams) {
    auto e = record(c.format, readFixture(c.fixture));
    for (auto client : kFormats) {
      auto again = record(client, join(replayStream(client, e, fixedReplay())));
      EXPECT_EQ(content(e), content(again)) << c.fixture << " -> " << providers::formatName(client);
    }
  }
}

TEST(CacheReplay, StreamToWholeInEveryFormat) {
  for (const auto& c : kStreams) {
    auto e = record(c.format, readFixture(c.fixture));
    for (auto client : kFormats) {
      auto body = replayWhole(client, e, fixedReplay());
      std::string why;
      auto back = Recorder::fromWhole(client, 200, body, kDefaultMaxEntryBytes, &why);
      ASSERT_TRUE(back) << why << "\n" << body;
      EXPECT_EQ(content(e), content(*back)) << c.fixture << " -> " << providers::formatName(client) << "\n" << body;
    }
  }
}

struct WholeCase {
  const char* fixture;
  Format format;
};
const WholeCase kWholes[] = {
    {"openai_response_tools.json", Format::OpenAIChat},
    {"anthropic_response_thinking_tools.json", Format::AnthropicMessages},
    {"gemini/gemini_response_thinking_tools.json", Format::GeminiGenerate},
    {"gemini/reference_response_text.json", Format::GeminiGenerate},
};

TEST(CacheReplay, WholeToStreamInEveryFormat) {
  for (const auto& c : kWholes) {
    std::string why;
    auto e = Recorder::fromWhole(c.format, 200, readFixture(c.fixture), kDefaultMaxEntryBytes, &why);
    ASSERT_TRUE(e) << c.fixture << ": " << why;
    for (auto client : kFormats) {
      auto sse = join(replayStream(client, *e, fixedReplay()));
      auto again = record(client, sse);
      EXPECT_EQ(content(*e), content(again)) << c.fixture << " -> " << providers::formatName(client) << "\n" << sse;
    }
  }
}

TEST(CacheReplay, WholeInTheSameFormatEqualsTheTranslatorsRendering) {
  for (const auto& c : kWholes) {
    auto body = readFixture(c.fixture);
    auto e = Recorder::fromWhole(c.format, 200, body);
    ASSERT_TRUE(e);
    for (auto client : kFormats) {
      std::string expected;
      ASSERT_FALSE(providers::translateResponse(client, c.format, body, expected, fixedContext()));
      EXPECT_EQ(expected, replayWhole(client, *e, fixedReplay())) << c.fixture << " -> " << providers::formatName(client);
    }
  }
}

TEST(CacheReplay, StreamsEndWellFormed) {
  auto e = record(Format::AnthropicMessages, readFixture("anthropic_stream_tool_use.sse"));
  auto openai = join(replayStream(Format::OpenAIChat, e, fixedReplay()));
  EXPECT_TRUE(openai.ends_with("data: [DONE]\n\n")) << openai;
  EXPECT_NE(std::string::npos, openai.find("\"usage\":{"));
  auto noUsage = fixedReplay();
  noUsage.include_usage = false;
  EXPECT_EQ(std::string::npos, join(replayStream(Format::OpenAIChat, e, noUsage)).find("\"usage\":{"));
  auto anthropic = join(replayStream(Format::AnthropicMessages, e, fixedReplay()));
  EXPECT_NE(std::string::npos, anthropic.find("event: message_delta"));
  EXPECT_TRUE(anthropic.find("event: message_stop") != std::string::npos) << anthropic;
  auto gemini = join(replayStream(Format::GeminiGenerate, e, fixedReplay()));
  EXPECT_NE(std::string::npos, gemini.find("\"finishReason\""));
  EXPECT_NE(std::string::npos, gemini.find("\"usageMetadata\""));
  auto opts = fixedReplay();
  opts.gemini_json_array = true;
  auto array = join(replayStream(Format::GeminiGenerate, e, opts));
  EXPECT_TRUE(array.starts_with("[")) << array;
  EXPECT_TRUE(array.ends_with("]")) << array;
}

TEST(CacheReplay, ResponsesClientsGetACompletedResponse) {
  auto e = record(Format::OpenAIChat, readFixture("openai_stream_parallel_tools.sse"));
  auto sse = join(replayStream(Format::OpenAIResponses, e, fixedReplay()));
  EXPECT_NE(std::string::npos, sse.find("event: response.completed")) << sse;
  auto live = translateStream(Format::OpenAIResponses, Format::OpenAIChat, {readFixture("openai_stream_parallel_tools.sse")},
                              fixedContext());
  EXPECT_EQ(live, sse);
  auto body = replayWhole(Format::OpenAIResponses, e, fixedReplay());
  EXPECT_NE(std::string::npos, body.find("\"status\":\"completed\"")) << body;
  EXPECT_NE(std::string::npos, body.find("Tokyo")) << body;
}

TEST(CacheRecord, GivesUpOnWhatMustNotBeCached) {
  auto openai = readFixture("openai_stream_parallel_tools.sse");
  {  // stopped before the finish
    auto rec = Recorder::forStream(Format::OpenAIChat);
    rec->feed(std::string_view(openai).substr(0, openai.find("\"finish_reason\":\"tool_calls\"") - 200));
    EXPECT_FALSE(rec->finish());
    EXPECT_NE("", rec->why());
  }
  {  // an error event
    auto rec = Recorder::forStream(Format::OpenAIChat);
    rec->feed(R"(data: {"id":"x","choices":[{"index":0,"delta":{"content":"Hel"}}]})" "\n\n");
    rec->feed(R"(data: {"error":{"message":"overloaded","type":"server_error"}})" "\n\n");
    rec->feed(R"(data: {"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})" "\n\ndata: [DONE]\n\n");
    EXPECT_FALSE(rec->finish());
    EXPECT_TRUE(rec->gaveUp());
  }
  {  // over the bound
    auto rec = Recorder::forStream(Format::OpenAIChat, 64);
    rec->feed(openai);
    EXPECT_FALSE(rec->finish());
    EXPECT_NE(std::string::npos, rec->why().find("bound"));
  }
  {  // a Gemini JSON-array stream
    auto rec = Recorder::forStream(Format::GeminiGenerate);
    rec->feed("[{\"candidates\":[]}");
    EXPECT_FALSE(rec->finish());
  }
  {  // a Responses stream (a ChatGPT subscription channel's) that ends with an error event
    auto rec = Recorder::forStream(Format::OpenAIResponses);
    ASSERT_TRUE(rec);
    rec->feed("event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\"}\n\n");
    EXPECT_FALSE(rec->finish());
  }
  EXPECT_FALSE(Recorder::fromWhole(Format::OpenAIChat, 500, readFixture("openai_response_tools.json")));
  EXPECT_FALSE(Recorder::fromWhole(Format::OpenAIChat, 200, "{}"));
  EXPECT_FALSE(Recorder::fromWhole(Format::OpenAIChat, 200, readFixture("openai_response_tools.json"), 16));
}

TEST(CacheRecord, RecordsAResponsesStreamAndAnswer) {
  const std::string s =
      "event: response.created\ndata: "
      "{\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"model\":\"gpt-5\"}}\n\n"
      "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n"
      "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\","
      "\"usage\":{\"input_tokens\":5,\"output_tokens\":2}}}\n\n";
  auto rec = Recorder::forStream(Format::OpenAIResponses);
  ASSERT_TRUE(rec);
  rec->feed(s);
  auto e = rec->finish();
  ASSERT_TRUE(e) << rec->why();
  EXPECT_EQ("resp_1", e->response.id);
  EXPECT_EQ("text=Hi\nreasoning=\ntools=finish=1\nusage=5/2\n", content(*e));
  auto whole = Recorder::fromWhole(
      Format::OpenAIResponses, 200,
      R"({"id":"resp_2","model":"gpt-5","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"Hi"}]}],"usage":{"input_tokens":5,"output_tokens":2}})");
  ASSERT_TRUE(whole);
  EXPECT_EQ("text=Hi\nreasoning=\ntools=finish=1\nusage=5/2\n", content(*whole));
}

TEST(CacheRecord, AcceptsAFinalEventWithoutItsBlankLine) {
  std::string s = R"(data: {"id":"x","model":"m","choices":[{"index":0,"delta":{"content":"Hi"}}]})" "\n\n"
                  R"(data: {"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})";
  auto rec = Recorder::forStream(Format::OpenAIChat);
  rec->feed(s);
  auto e = rec->finish();
  ASSERT_TRUE(e) << rec->why();
  EXPECT_EQ("text=Hi\nreasoning=\ntools=finish=1\nusage=0/0\n", content(*e));
}

TEST(CacheEntry, SerializationRoundTripsAndRejectsDamage) {
  for (const auto& c : kStreams) {
    auto e = record(c.format, readFixture(c.fixture));
    auto bytes = serializeEntry(e);
    auto back = parseEntry(bytes);
    ASSERT_TRUE(back) << c.fixture;
    EXPECT_EQ(bytes, serializeEntry(*back));
    EXPECT_EQ(content(e), content(*back));
    EXPECT_LE(bytes.size(), e.byteSize()) << "byteSize() must not undercount";
    for (std::size_t cut : {std::size_t{0}, std::size_t{1}, bytes.size() / 2, bytes.size() - 1})
      EXPECT_FALSE(parseEntry(std::string_view(bytes).substr(0, cut))) << c.fixture << " cut at " << cut;
    auto longer = bytes + "x";
    EXPECT_FALSE(parseEntry(longer));
    auto otherVersion = bytes;
    otherVersion[1] = 99;
    EXPECT_FALSE(parseEntry(otherVersion));
  }
}

}  // namespace record_replay_test
}  // namespace
}  // namespace sluice::cache
