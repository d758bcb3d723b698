#include "mock/MockKnobs.hpp"
#include "mock/ToolPlanner.hpp"

#include <gtest/gtest.h>

namespace sluice::mock {
namespace {
namespace mock_knobs_test {

http::Request request(std::initializer_list<std::pair<const char*, const char*>> headers) {
  http::Request req{http::bhttp::verb::post, "/v1/chat/completions", 11};
  for (auto& [k, v] : headers) req.set(k, v);
  return req;
}

TEST(MockKnobs, OptionsAreTheDefaults) {
  MockOptions o;
  o.ttfb_ms = 5;
  o.chunks = 3;
  o.fail_rate = 0.5;
  auto k = MockKnobs::fromOptions(o);
  ASSERT_FALSE(applyKnobHeaders(request({}), k));
  EXPECT_EQ(k.ttfb_ms, 5);
  EXPECT_EQ(k.chunks, 3);
  EXPECT_EQ(k.fail_rate, 0.5);
  EXPECT_EQ(k.reset_after, -1);
  EXPECT_FALSE(k.retry_after_s);
  EXPECT_FALSE(k.fail_body);
}

TEST(MockKnobs, HeadersOverrideOptions) {
  auto k = MockKnobs::fromOptions(MockOptions{});
  ASSERT_FALSE(applyKnobHeaders(request({{"x-mock-ttfb-ms", "120"},
                                         {"X-Mock-Chunks", " 4 "},
                                         {"x-mock-chunk-interval-ms", "10"},
                                         {"x-mock-fail-rate", "1"},
                                         {"x-mock-fail-status", "429"},
                                         {"x-mock-reset-after", "2"},
                                         {"x-mock-retry-after", "7"},
                                         {"x-mock-fail-body", "{\"x\":1}"}}),
                                k));
  EXPECT_EQ(k.ttfb_ms, 120);
  EXPECT_EQ(k.chunks, 4);
  EXPECT_EQ(k.chunk_interval_ms, 10);
  EXPECT_EQ(k.fail_rate, 1.0);
  EXPECT_EQ(k.fail_status, 429);
  EXPECT_EQ(k.reset_after, 2);
  EXPECT_EQ(k.retry_after_s, 7);
  EXPECT_EQ(k.fail_body, "{\"x\":1}");
}

TEST(MockKnobs, MalformedHeadersNameTheHeader) {
  for (auto [name, value] : std::initializer_list<std::pair<const char*, const char*>>{
           {"x-mock-chunks", "many"},
           {"x-mock-chunks", "-1"},
           {"x-mock-chunks", "100001"},
           {"x-mock-ttfb-ms", "1.5"},
           {"x-mock-fail-rate", "1.5"},
           {"x-mock-fail-rate", "abc"},
           {"x-mock-fail-status", "200"},
           {"x-mock-reset-after", "-2"},
           {"x-mock-retry-after", "soon"}}) {
    auto k = MockKnobs::fromOptions(MockOptions{});
    auto e = applyKnobHeaders(request({{name, value}}), k);
    ASSERT_TRUE(e) << name << ": " << value;
    EXPECT_NE(e->find(name), std::string::npos) << *e;
  }
}

TEST(MockKnobs, UsageHeaderNamesCacheAndReasoningCounts) {
  auto k = MockKnobs::fromOptions(MockOptions{});
  ASSERT_FALSE(applyKnobHeaders(request({{"x-mock-usage", "cache_read=600, cache_write=200,reasoning=120"}}), k));
  EXPECT_EQ(k.usage.cache_read, 600);
  EXPECT_EQ(k.usage.cache_write, 200);
  EXPECT_EQ(k.usage.reasoning, 120);
  auto partial = MockKnobs::fromOptions(MockOptions{});
  ASSERT_FALSE(applyKnobHeaders(request({{"x-mock-usage", "reasoning=5"}}), partial));
  EXPECT_EQ(partial.usage.cache_read, 0);
  EXPECT_EQ(partial.usage.reasoning, 5);
  for (const char* bad : {"cache_read", "cache_read=x", "cache_read=-1", "thinking=3", "reasoning=1,reasoning=2",
                          "cache_write=1000000001"}) {
    auto b = MockKnobs::fromOptions(MockOptions{});
    auto e = applyKnobHeaders(request({{"x-mock-usage", bad}}), b);
    ASSERT_TRUE(e) << bad;
    EXPECT_NE(e->find("x-mock-usage"), std::string::npos) << *e;
  }
}

TEST(MockKnobs, EchoHeader) {
  MockKnobs k;
  EXPECT_FALSE(applyKnobHeaders(request({{"x-mock-echo", "1"}}), k));
  EXPECT_TRUE(k.echo);
  EXPECT_FALSE(applyKnobHeaders(request({{"x-mock-echo", "false"}}), k));
  EXPECT_FALSE(k.echo);
  auto e = applyKnobHeaders(request({{"x-mock-echo", "yes"}}), k);
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("x-mock-echo"), std::string::npos);
}

TEST(MockKnobs, EchoKeyHeaderAndOption) {
  MockKnobs k;
  EXPECT_FALSE(k.echo_key);
  EXPECT_FALSE(applyKnobHeaders(request({{"x-mock-echo-key", "true"}}), k));
  EXPECT_TRUE(k.echo_key);
  EXPECT_FALSE(k.echo);
  auto e = applyKnobHeaders(request({{"x-mock-echo-key", "2"}}), k);
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("x-mock-echo-key"), std::string::npos);
  MockOptions o;
  o.echo_key = true;
  EXPECT_TRUE(MockKnobs::fromOptions(o).echo_key);
}

TEST(MockKnobs, EchoPutsTheUserTextInTextAndArguments) {
  ToolDecision text;
  text.user_text = "mail a@b.c";
  echoUserText(text);
  EXPECT_EQ(text.reply, std::optional<std::string>("mail a@b.c"));
  ToolDecision calls;
  calls.user_text = "x\"y";
  ToolCall c;
  c.name = "send";
  c.arguments = R"({"to":"example","n":1,"tags":["example"]})";
  calls.calls.push_back(c);
  echoUserText(calls);
  EXPECT_EQ(calls.calls[0].arguments, R"({"to":"x\"y","n":1,"tags":["x\"y"]})");
}

TEST(MockKnobs, StreamFaultHeaders) {
  auto k = MockKnobs::fromOptions(MockOptions{});
  EXPECT_EQ(k.error_event_rate, 0.0);
  EXPECT_EQ(k.stall_after, -1);
  EXPECT_EQ(k.stall_rate, 1.0);  // every stream stalls once stall-after is set
  EXPECT_EQ(k.slow_rate, 0.0);
  ASSERT_FALSE(applyKnobHeaders(request({{"x-mock-error-event-rate", "0.3"},
                                         {"x-mock-error-event-after", "2"},
                                         {"x-mock-stall-after", "0"},
                                         {"x-mock-stall-rate", "0.25"},
                                         {"x-mock-slow-rate", "0.2"},
                                         {"x-mock-slow-ms", "3000"}}),
                                k));
  EXPECT_EQ(k.error_event_rate, 0.3);
  EXPECT_EQ(k.error_event_after, 2);
  EXPECT_EQ(k.stall_after, 0);
  EXPECT_EQ(k.stall_rate, 0.25);
  EXPECT_EQ(k.slow_rate, 0.2);
  EXPECT_EQ(k.slow_ms, 3000);
  for (auto [name, value] : std::initializer_list<std::pair<const char*, const char*>>{
           {"x-mock-error-event-rate", "2"},
           {"x-mock-error-event-after", "-1"},
           {"x-mock-stall-after", "-2"},
           {"x-mock-stall-rate", "1.5"},
           {"x-mock-slow-rate", "x"},
           {"x-mock-slow-ms", "600001"}}) {
    auto kk = MockKnobs::fromOptions(MockOptions{});
    auto e = applyKnobHeaders(request({{name, value}}), kk);
    ASSERT_TRUE(e) << name << ": " << value;
    EXPECT_NE(e->find(name), std::string::npos) << *e;
  }
  MockOptions o;
  o.error_event_rate = 0.5;
  o.error_event_after = 3;
  o.stall_after = 4;
  o.slow_rate = 1;
  o.slow_ms = 50;
  const auto fo = MockKnobs::fromOptions(o);
  EXPECT_EQ(fo.error_event_rate, 0.5);
  EXPECT_EQ(fo.error_event_after, 3);
  EXPECT_EQ(fo.stall_after, 4);
  EXPECT_EQ(fo.slow_ms, 50);
  EXPECT_FALSE(validateOptions(o));
  o.slow_rate = 1.5;
  ASSERT_TRUE(validateOptions(o));
  EXPECT_NE(validateOptions(o)->find("--slow-rate"), std::string::npos);
  o.slow_rate = 0;
  o.stall_after = -3;
  ASSERT_TRUE(validateOptions(o));
  EXPECT_NE(validateOptions(o)->find("--stall-after"), std::string::npos);
  o.stall_after = 2;
  o.stall_rate = -0.1;
  ASSERT_TRUE(validateOptions(o));
  EXPECT_NE(validateOptions(o)->find("--stall-rate"), std::string::npos);
}

TEST(MockKnobs, ValidatesOptions) {
  EXPECT_FALSE(validateOptions(MockOptions{}));
  MockOptions o;
  o.fail_rate = 2;
  EXPECT_TRUE(validateOptions(o));
  o = MockOptions{};
  o.fail_status = 200;
  EXPECT_TRUE(validateOptions(o));
  o = MockOptions{};
  o.chunks = -1;
  EXPECT_TRUE(validateOptions(o));
}

}  // namespace mock_knobs_test
}  // namespace
}  // namespace sluice::mock
