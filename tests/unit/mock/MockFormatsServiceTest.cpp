// The Anthropic, Gemini and Responses formats of the mock through the real HTTP server:
// routing, headers, knobs (failures, reset-after, pacing) and stats.
#include "mock/MockService.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace sluice::mock {
namespace {
namespace mock_formats_service_test {

namespace json = boost::json;
namespace bhttp = http::bhttp;
using namespace std::chrono_literals;

struct Reply {
  boost::system::error_code ec;
  int status = 0;
  std::string body;
  http::Response res;
};

class MockFormatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_ = std::make_shared<MockService>(MockOptions{});
    server_ = std::make_unique<http::Server>(
        1, http::ServerLimits{}, [s = service_](http::Request& q, http::Responder& r) { return s->handle(q, r); });
    endpoint_ = server_->listen("127.0.0.1", 0);
    thread_ = std::thread([this] { server_->run(); });
  }
  void TearDown() override {
    server_->stop(200ms);
    thread_.join();
  }

  Reply call(bhttp::verb method, std::string target, std::string body = {},
             std::initializer_list<std::pair<const char*, const char*>> headers = {}) {
    net::io_context ioc;
    http::tcp::socket sock(ioc);
    sock.connect(endpoint_);
    http::Request req{method, target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    if (!body.empty()) req.set(bhttp::field::content_type, "application/json");
    for (auto& [k, v] : headers) req.set(k, v);
    req.body() = std::move(body);
    req.prepare_payload();
    bhttp::write(sock, req);
    http::beast::flat_buffer buf;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(64 << 20);
    Reply r;
    bhttp::read(sock, buf, parser, r.ec);
    r.res = parser.release();
    r.status = r.res.result_int();
    r.body = r.res.body();
    return r;
  }
  Reply post(std::string target, std::string body,
             std::initializer_list<std::pair<const char*, const char*>> headers = {}) {
    return call(bhttp::verb::post, std::move(target), std::move(body), headers);
  }

  std::shared_ptr<MockService> service_;
  std::unique_ptr<http::Server> server_;
  http::tcp::endpoint endpoint_;
  std::thread thread_;
};

int countOf(const std::string& s, std::string_view needle) {
  int n = 0;
  for (auto p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

constexpr const char* kMessages =
    R"({"model":"claude-sonnet-4-20250514","max_tokens":64,"messages":[{"role":"user","content":"Hello"}]})";
constexpr const char* kMessagesStream =
    R"({"model":"claude-sonnet-4-20250514","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Hello"}]})";
constexpr const char* kGenerate = R"({"contents":[{"role":"user","parts":[{"text":"Hello"}]}]})";

TEST_F(MockFormatsTest, AnthropicMessagesOnBothPaths) {
  for (const char* path : {"/v1/messages", "/anthropic/v1/messages"}) {
    auto r = post(path, kMessages, {{"x-api-key", "sk-ant"}, {"anthropic-version", "2023-06-01"}});
    ASSERT_FALSE(r.ec) << r.ec.message();
    EXPECT_EQ(r.status, 200);
    EXPECT_FALSE(r.res["request-id"].empty());
    auto v = json::parse(r.body);
    EXPECT_EQ(v.at("type"), "message");
    EXPECT_TRUE(v.at("id").as_string().starts_with("msg_"));
  }
  auto count = post("/v1/messages/count_tokens", R"({"model":"m","messages":[{"role":"user","content":"Hello"}]})");
  EXPECT_EQ(count.body, R"({"input_tokens":6})");
  auto stats = json::parse(call(bhttp::verb::get, "/mock/stats").body);
  EXPECT_EQ(stats.at("by_key").at("sk-ant").as_int64(), 2);
}

TEST_F(MockFormatsTest, AnthropicStreamAndReset) {
  auto r = post("/v1/messages", kMessagesStream, {{"x-mock-chunks", "4"}});
  ASSERT_FALSE(r.ec);
  EXPECT_EQ(r.res[bhttp::field::content_type], "text/event-stream; charset=utf-8");
  EXPECT_EQ(countOf(r.body, "event: content_block_delta"), 4);
  EXPECT_TRUE(r.body.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));

  auto cut = post("/v1/messages", kMessagesStream, {{"x-mock-reset-after", "2"}});
  EXPECT_TRUE(cut.ec);
  EXPECT_EQ(countOf(cut.body, "event: content_block_delta"), 2);
  EXPECT_EQ(cut.body.find("message_stop"), std::string::npos);

  auto stats = json::parse(call(bhttp::verb::get, "/mock/stats").body);
  EXPECT_EQ(stats.at("streams_completed").as_int64(), 1);
}

TEST_F(MockFormatsTest, InBandErrorEventsInEveryFormat) {
#define SLUICE_INBAND {"x-mock-error-event-rate", "1"}, {"x-mock-error-event-after", "2"}
  // Anthropic: two deltas, then the overload event, and the response ends whole.
  auto a = post("/v1/messages", kMessagesStream, {SLUICE_INBAND, {"x-mock-fail-status", "529"}});
  ASSERT_FALSE(a.ec) << a.ec.message();
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(countOf(a.body, "event: content_block_delta"), 2);
  EXPECT_TRUE(a.body.ends_with("\n\n"));
  const auto errAt = a.body.find("event: error\ndata: ");
  ASSERT_NE(errAt, std::string::npos) << a.body;
  auto ev = json::parse(a.body.substr(errAt + 19));
  EXPECT_EQ(ev.at("error").at("type"), "overloaded_error");
  EXPECT_EQ(a.body.find("message_stop"), std::string::npos);

  auto c = post("/v1/chat/completions", R"({"model":"m","stream":true,"messages":[{"role":"user","content":"Hello"}]})",
                {SLUICE_INBAND, {"x-mock-fail-status", "429"}});
  ASSERT_FALSE(c.ec);
  EXPECT_NE(c.body.find(R"(data: {"error":{"message":"Rate limit reached for requests.","type":"rate_limit_error")"),
            std::string::npos)
      << c.body;
  EXPECT_EQ(c.body.find("[DONE]"), std::string::npos);

  auto r = post("/v1/responses", R"({"model":"gpt-4.1","input":"Hello","stream":true})",
                {SLUICE_INBAND, {"x-mock-fail-status", "503"}});
  ASSERT_FALSE(r.ec);
  EXPECT_EQ(countOf(r.body, "event: response.output_text.delta"), 2);
  const auto failedAt = r.body.find("event: response.failed\ndata: ");
  ASSERT_NE(failedAt, std::string::npos) << r.body;
  auto failed = json::parse(r.body.substr(failedAt + 29));
  EXPECT_EQ(failed.at("response").at("status"), "failed");
  EXPECT_EQ(failed.at("response").at("error").at("code"), "server_is_overloaded");
  EXPECT_EQ(r.body.find("response.completed"), std::string::npos);

  auto g = post("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", kGenerate,
                {SLUICE_INBAND, {"x-mock-fail-status", "529"}});
  ASSERT_FALSE(g.ec);
  EXPECT_TRUE(g.body.ends_with(
      R"(data: {"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}})"
      "\r\n\r\n"))
      << g.body;
  // The JSON-array form stays one valid array.
  auto arr = post("/v1beta/models/gemini-2.5-flash:streamGenerateContent", kGenerate,
                  {SLUICE_INBAND, {"x-mock-fail-status", "503"}});
  ASSERT_FALSE(arr.ec);
  auto items = json::parse(arr.body).as_array();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items.back().at("error").at("status"), "UNAVAILABLE");

  // Rate 0 (the default): the stream ends as usual.
  auto whole = post("/v1/messages", kMessagesStream, {{"x-mock-error-event-after", "1"}});
  EXPECT_EQ(whole.body.find("event: error"), std::string::npos);
  EXPECT_NE(whole.body.find("message_stop"), std::string::npos);
#undef SLUICE_INBAND
}

TEST_F(MockFormatsTest, AnthropicErrors) {
  auto r = post("/v1/messages", kMessages,
                {{"x-mock-fail-rate", "1"}, {"x-mock-fail-status", "529"}, {"x-mock-retry-after", "7"}});
  EXPECT_EQ(r.status, 529);
  EXPECT_EQ(r.res[bhttp::field::retry_after], "7");
  auto v = json::parse(r.body);
  EXPECT_EQ(v.at("type"), "error");
  EXPECT_EQ(v.at("error").at("type"), "overloaded_error");
  EXPECT_EQ(v.at("request_id"), r.res["request-id"]);

  r = post("/v1/messages", kMessages, {{"x-mock-fail-rate", "1"}, {"x-mock-fail-status", "429"}});
  EXPECT_EQ(json::parse(r.body).at("error").at("type"), "rate_limit_error");

  r = post("/v1/messages", R"({"model":"m","messages":[{"role":"user","content":"Hello"}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body).at("error").at("message"), "max_tokens: Field required");

  r = post("/v1/messages", "{not json");
  EXPECT_EQ(json::parse(r.body).at("error").at("type"), "invalid_request_error");

  r = post("/v1/messages", kMessages, {{"x-mock-chunks", "many"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body).at("type"), "error");

  r = call(bhttp::verb::get, "/v1/messages");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(json::parse(r.body).at("type"), "error");
}

TEST_F(MockFormatsTest, AnthropicModels) {
  auto r = call(bhttp::verb::get, "/anthropic/v1/models");
  EXPECT_EQ(json::parse(r.body).at("data").at(0).at("type"), "model");
  r = call(bhttp::verb::get, "/v1/models", {}, {{"anthropic-version", "2023-06-01"}});
  EXPECT_TRUE(json::parse(r.body).as_object().contains("has_more"));
  r = call(bhttp::verb::get, "/v1/models");  // OpenAI's without the header
  EXPECT_EQ(json::parse(r.body).at("object"), "list");
}

TEST_F(MockFormatsTest, GeminiGenerateAndStream) {
  for (const char* path : {"/v1beta/models/gemini-2.5-flash:generateContent?key=g-key",
                           "/gemini/v1beta/models/gemini-2.5-flash:generateContent?key=g-key"}) {
    auto r = post(path, kGenerate);
    ASSERT_EQ(r.status, 200) << r.body;
    auto v = json::parse(r.body);
    EXPECT_EQ(v.at("candidates").at(0).at("content").at("role"), "model");
    EXPECT_EQ(v.at("modelVersion"), "gemini-2.5-flash");
  }
  auto stats = json::parse(call(bhttp::verb::get, "/mock/stats").body);
  EXPECT_EQ(stats.at("by_key").at("g-key").as_int64(), 2);

  auto sse = post("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", kGenerate,
                  {{"x-goog-api-key", "g2"}, {"x-mock-chunks", "3"}});
  ASSERT_FALSE(sse.ec);
  EXPECT_EQ(sse.res[bhttp::field::content_type], "text/event-stream");
  EXPECT_EQ(countOf(sse.body, "data: {"), 3 + 1);
  EXPECT_EQ(countOf(sse.body, "\r\n\r\n"), 3 + 1);

  auto arr = post("/v1beta/models/gemini-2.5-flash:streamGenerateContent", kGenerate, {{"x-mock-chunks", "3"}});
  ASSERT_FALSE(arr.ec);
  EXPECT_EQ(arr.res[bhttp::field::content_type], "application/json; charset=UTF-8");
  EXPECT_EQ(json::parse(arr.body).as_array().size(), 4u);

  auto paced = std::chrono::steady_clock::now();
  post("/v1beta/models/m:streamGenerateContent?alt=sse", kGenerate,
       {{"x-mock-chunks", "3"}, {"x-mock-chunk-interval-ms", "30"}});
  EXPECT_GE(std::chrono::steady_clock::now() - paced, 90ms);
}

TEST_F(MockFormatsTest, GeminiOtherEndpointsAndErrors) {
  auto r = post("/v1beta/models/gemini-2.5-flash:countTokens", kGenerate);
  EXPECT_EQ(json::parse(r.body).at("totalTokens").as_int64(), 6);
  r = post("/v1beta/models/text-embedding-004:embedContent", R"({"content":{"parts":[{"text":"a"}]}})");
  EXPECT_EQ(json::parse(r.body).at("embedding").at("values").as_array().size(), 8u);
  r = post("/v1beta/models/text-embedding-004:batchEmbedContents",
           R"({"requests":[{"content":{"parts":[{"text":"a"}]}},{"content":{"parts":[{"text":"b"}]}}]})");
  EXPECT_EQ(json::parse(r.body).at("embeddings").as_array().size(), 2u);
  r = call(bhttp::verb::get, "/gemini/v1beta/models");
  EXPECT_FALSE(json::parse(r.body).at("models").as_array().empty());
  r = call(bhttp::verb::get, "/v1beta/models/gemini-2.5-flash");
  EXPECT_EQ(json::parse(r.body).at("name"), "models/gemini-2.5-flash");
  r = call(bhttp::verb::get, "/v1beta/models/nope");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body).at("error").at("status"), "NOT_FOUND");

  for (auto [status, name] : {std::pair{"429", "RESOURCE_EXHAUSTED"}, std::pair{"503", "UNAVAILABLE"},
                              std::pair{"500", "INTERNAL"}, std::pair{"403", "PERMISSION_DENIED"}}) {
    r = post("/v1beta/models/m:generateContent", kGenerate, {{"x-mock-fail-rate", "1"}, {"x-mock-fail-status", status}});
    EXPECT_EQ(r.status, std::stoi(status));
    auto e = json::parse(r.body).at("error");
    EXPECT_EQ(e.at("code").as_int64(), std::stoi(status));
    EXPECT_EQ(e.at("status"), name);
  }
  r = post("/v1beta/models/m:generateContent", "{}");
  EXPECT_EQ(json::parse(r.body).at("error").at("status"), "INVALID_ARGUMENT");
  r = post("/v1beta/models/m:unknownMethod", kGenerate);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body).at("error").at("status"), "NOT_FOUND");
}

TEST_F(MockFormatsTest, ResponsesAndToolLoop) {
  auto r = post("/v1/responses", R"({"model":"gpt-4.1","input":"Hello"})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body).at("object"), "response");

  auto s = post("/v1/responses", R"({"model":"gpt-4.1","input":"Hello","stream":true})", {{"x-mock-chunks", "2"}});
  ASSERT_FALSE(s.ec);
  EXPECT_EQ(countOf(s.body, "event: response.output_text.delta"), 2);
  EXPECT_TRUE(s.body.find("event: response.completed") != std::string::npos);

  // An agent loop against the chat endpoint: a tool call, then the answer to its result.
  const std::string tools =
      R"("tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object",
        "properties":{"q":{"type":"string"}},"required":["q"]}}}])";
  auto first = post("/v1/chat/completions",
                    R"({"model":"m","messages":[{"role":"user","content":"please use the lookup tool"}],)" + tools + "}");
  auto call1 = json::parse(first.body).at("choices").at(0).at("message").at("tool_calls").at(0);
  EXPECT_EQ(call1.at("function").at("arguments"), R"({"q":"example"})");
  const std::string id(call1.at("id").as_string());
  auto second = post("/v1/chat/completions",
                     R"({"model":"m","messages":[{"role":"user","content":"please use the lookup tool"},
      {"role":"assistant","content":null,"tool_calls":[{"id":")" + id +
                         R"(","type":"function","function":{"name":"lookup","arguments":"{}"}}]},
      {"role":"tool","tool_call_id":")" + id + R"(","content":"42"}],)" + tools + "}");
  auto msg = json::parse(second.body).at("choices").at(0);
  EXPECT_EQ(msg.at("finish_reason"), "stop");
  EXPECT_EQ(msg.at("message").at("content"), "The tool returned: 42");
}

}  // namespace mock_formats_service_test
}  // namespace
}  // namespace sluice::mock
