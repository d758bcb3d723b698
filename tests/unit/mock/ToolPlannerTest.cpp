#include "mock/ToolPlanner.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace sluice::mock {
namespace {
namespace tool_planner_test {

namespace json = boost::json;

struct Tools {
  std::vector<json::value> schemas;
  ToolRequest req;
  Tools(std::initializer_list<std::pair<const char*, const char*>> tools) {
    schemas.reserve(tools.size());
    for (auto& [name, schema] : tools) schemas.push_back(json::parse(schema));
    std::size_t i = 0;
    for (auto& [name, schema] : tools) req.tools.push_back({name, &schemas[i++]});
  }
  std::vector<std::string> names(std::string text) {
    req.last_user_text = std::move(text);
    std::vector<std::string> out;
    for (const auto& c : decideTools(req).calls) out.push_back(c.name);
    return out;
  }
};

constexpr const char* kCity = R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})";
constexpr const char* kEmpty = R"({"type":"object","properties":{}})";

using V = std::vector<std::string>;

TEST(ToolPlanner, CallsOnlyWhenAsked) {
  Tools t{{"get_weather", kCity}, {"get_time", kEmpty}};
  EXPECT_EQ(t.names("Hello, how are you?"), V{});
  EXPECT_EQ(t.names("What's the weather? Use get_weather"), V{"get_weather"});
  EXPECT_EQ(t.names("GET_TIME please"), V{"get_time"});
  EXPECT_EQ(t.names("what is the get weather answer"), V{"get_weather"});  // "get_weather" spoken
  EXPECT_EQ(t.names("the weather_report is fine"), V{});                   // whole words only
  EXPECT_EQ(t.names("please use a tool"), V{"get_weather"});
  EXPECT_EQ(t.names("Call the time tool now"), V{"get_time"});
  EXPECT_EQ(t.names("use the get_time function"), V{"get_time"});
  EXPECT_EQ(t.names("you may invoke any function"), V{"get_weather"});
  EXPECT_EQ(t.names("use your tools"), V{"get_weather"});
}

TEST(ToolPlanner, ParallelCallsInTheOrderNamed) {
  Tools t{{"get_weather", kCity}, {"get_time", kEmpty}};
  EXPECT_EQ(t.names("first get_time, then get_weather"), (V{"get_time", "get_weather"}));
  t.req.parallel = false;
  EXPECT_EQ(t.names("first get_time, then get_weather"), V{"get_time"});
}

TEST(ToolPlanner, ToolChoice) {
  Tools t{{"get_weather", kCity}, {"get_time", kEmpty}};
  t.req.mode = ToolChoiceMode::None;
  EXPECT_EQ(t.names("use get_weather"), V{});
  t.req.mode = ToolChoiceMode::Required;
  EXPECT_EQ(t.names("Hello"), V{"get_weather"});
  t.req.mode = ToolChoiceMode::Named;
  t.req.forced_name = "get_time";
  EXPECT_EQ(t.names("use get_weather"), V{"get_time"});
  t.req.mode = ToolChoiceMode::Required;
  t.req.allowed = {"get_time"};
  EXPECT_EQ(t.names("Hello"), V{"get_time"});
}

TEST(ToolPlanner, ToolResultsAreAnsweredInText) {
  Tools t{{"get_weather", kCity}};
  t.req.last_user_text = "use get_weather";
  t.req.tool_results = {"sunny, 21C"};
  auto d = decideTools(t.req);
  EXPECT_TRUE(d.calls.empty());
  ASSERT_TRUE(d.reply);
  EXPECT_EQ(*d.reply, "The tool returned: sunny, 21C");

  t.req.tool_results = {std::string(150, 'a'), std::string(150, 'b')};
  d = decideTools(t.req);
  EXPECT_EQ(d.reply->size(), std::string("The tool returned: ").size() + 200);

  // The reply is said in pieces like any answer, and honors max_tokens.
  auto gen = planAnswer(d, 8, std::nullopt, {}, 1);
  EXPECT_EQ(gen.pieces, 8u);
  EXPECT_EQ(gen.text(), *d.reply);
  EXPECT_EQ(std::string(gen.finishReason()), "stop");
  gen = planAnswer(d, 8, 3, {}, 1);
  EXPECT_EQ(gen.pieces, 3u);
  EXPECT_TRUE(gen.truncated_by_length);
}

TEST(ToolPlanner, ArgumentsFitTheSchema) {
  auto args = [](const char* schema) {
    const json::value s = json::parse(schema);
    return json::parse(exampleArguments(&s));
  };
  EXPECT_EQ(args(R"({"type":"object","properties":{
      "s":{"type":"string"},"n":{"type":"number"},"i":{"type":"integer","minimum":5},"b":{"type":"boolean"},
      "e":{"type":"string","enum":["celsius","fahrenheit"]},"opt":{"type":"string"},
      "o":{"type":"object","properties":{"x":{"type":["integer","null"]}},"required":["x"]},
      "a":{"type":"array","items":{"type":"object","properties":{"y":{"type":"boolean"}},"required":["y"]}},
      "r":{"$ref":"#/$defs/D"},"u":{"anyOf":[{"type":"null"},{"type":"string","format":"date"}]}},
      "required":["s","n","i","b","e","o","a","r","u"],"$defs":{"D":{"type":"string","format":"email"}}})"),
            json::parse(R"({"s":"example","n":1,"i":5,"b":true,"e":"celsius","o":{"x":1},"a":[{"y":true}],
              "r":"user@example.com","u":"2024-01-01"})"));
  EXPECT_EQ(args(R"({"type":"OBJECT","properties":{"c":{"type":"STRING"}},"required":["c"]})"),
            json::parse(R"({"c":"example"})"));  // Gemini's upper-case types
  EXPECT_EQ(exampleArguments(nullptr), "{}");
  // A recursive schema terminates.
  EXPECT_NO_THROW(args(R"({"type":"object","properties":{"n":{"$ref":"#"}},"required":["n"]})"));
}

TEST(ToolPlanner, ToolCallGenerationStreamsArgumentsInAFewDeltas) {
  Tools t{{"get_weather", kCity}, {"get_time", kEmpty}};
  t.req.last_user_text = "get_weather and get_time";
  auto d = decideTools(t.req);
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_NE(d.calls[0].id_token, d.calls[1].id_token);
  auto gen = planAnswer(d, 8, 1, {}, 1);  // max_tokens does not cut tool calls
  ASSERT_TRUE(gen.hasToolCalls());
  EXPECT_EQ(std::string(gen.finishReason()), "tool_calls");
  const auto& calls = gen.tools->calls;
  EXPECT_EQ(calls[0].deltas.size(), 4u);
  EXPECT_EQ(calls[1].deltas.size(), 2u);  // "{}" has two code points
  EXPECT_EQ(gen.pieces, 6u);
  std::string joined;
  for (const auto& s : calls[0].deltas) joined += s;
  EXPECT_EQ(joined, calls[0].arguments);
  EXPECT_EQ(planAnswer(d, 0, std::nullopt, {}, 1).tools->calls[0].deltas.size(), 1u);
}

TEST(ToolPlanner, SplitTextKeepsCodePointsWhole) {
  auto parts = splitText("h\xC3\xA9llo w\xC3\xB6rld", 4);
  ASSERT_EQ(parts.size(), 4u);
  std::string joined;
  for (const auto& p : parts) {
    EXPECT_FALSE(p.empty());
    EXPECT_NE(static_cast<unsigned char>(p[0]) & 0xC0, 0x80);
    joined += p;
  }
  EXPECT_EQ(joined, "h\xC3\xA9llo w\xC3\xB6rld");
  EXPECT_EQ(splitText("ab", 5).size(), 2u);
  EXPECT_EQ(utf8Prefix("\xC3\xA9\xC3\xA9\xC3\xA9", 2), "\xC3\xA9\xC3\xA9");
}

TEST(ToolPlanner, ContentText) {
  EXPECT_EQ(contentText(json::parse(R"("x")")), "x");
  EXPECT_EQ(contentText(json::parse(R"([{"type":"text","text":"a"},{"type":"text","text":"b"}])")), "ab");
  EXPECT_EQ(contentText(json::parse(R"({"temp":21})")), R"({"temp":21})");
}

}  // namespace tool_planner_test
}  // namespace
}  // namespace sluice::mock
