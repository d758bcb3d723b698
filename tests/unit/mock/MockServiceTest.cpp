// The mock's handler behind the real HTTP server on 127.0.0.1:0, driven by a plain Beast client.
#include "mock/MockService.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace sluice::mock {
namespace {
namespace mock_service_test {

namespace json = boost::json;
namespace bhttp = http::bhttp;
using namespace std::chrono_literals;

struct Reply {
  boost::system::error_code ec;  // of the read: set when the connection broke mid-answer
  int status = 0;
  std::string body;
  http::Response res;
};

class MockServiceTest : public ::testing::Test {
 protected:
  void start(MockOptions o = {}) {
    service_ = std::make_shared<MockService>(o);
    server_ = std::make_unique<http::Server>(
        1, http::ServerLimits{}, [s = service_](http::Request& q, http::Responder& r) { return s->handle(q, r); });
    endpoint_ = server_->listen("127.0.0.1", 0);
    thread_ = std::thread([this] { server_->run(); });
  }
  void SetUp() override { start(); }
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

constexpr const char* kChat = R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello"}]})";
constexpr const char* kChatStreamUsage =
    R"({"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello"}]})";

int countOf(const std::string& s, std::string_view needle) {
  int n = 0;
  for (auto p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

TEST_F(MockServiceTest, ChatCompletion) {
  auto r = post("/v1/chat/completions", kChat, {{"Authorization", "Bearer sk-a"}});
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.res[bhttp::field::content_type], "application/json");
  EXPECT_FALSE(r.res["x-request-id"].empty());
  auto v = json::parse(r.body);
  EXPECT_EQ(v.at("object"), "chat.completion");
  EXPECT_EQ(v.at("model"), "gpt-4o-mini");
  EXPECT_EQ(v.at("usage").at("completion_tokens").as_int64(), 8);
}

TEST_F(MockServiceTest, StreamedChatWithUsage) {
  auto r = post("/v1/chat/completions", kChatStreamUsage, {{"x-mock-chunks", "5"}});
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.res[bhttp::field::content_type], "text/event-stream; charset=utf-8");
  EXPECT_EQ(r.res[bhttp::field::cache_control], "no-cache");
  EXPECT_EQ(countOf(r.body, "data: "), 1 + 5 + 1 + 1 + 1);
  EXPECT_EQ(countOf(r.body, "\"usage\":null"), 1 + 5 + 1);
  EXPECT_NE(r.body.find("\"choices\":[],\"usage\":{\"prompt_tokens\":6,\"completion_tokens\":5"), std::string::npos);
  EXPECT_TRUE(r.body.ends_with("data: [DONE]\n\n"));
}

TEST_F(MockServiceTest, ResetAfterBreaksTheStream) {
  auto r = post("/v1/chat/completions", kChatStreamUsage, {{"x-mock-reset-after", "2"}});
  EXPECT_TRUE(r.ec);  // no terminating chunk
  EXPECT_EQ(countOf(r.body, "\"content\":"), 1 + 2);
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
  EXPECT_EQ(r.body.find("finish_reason\":\"stop"), std::string::npos);

  auto plain = post("/v1/chat/completions", kChat, {{"x-mock-reset-after", "0"}});
  EXPECT_TRUE(plain.ec);
  EXPECT_TRUE(plain.body.empty());
  // The server keeps serving.
  EXPECT_EQ(call(bhttp::verb::get, "/healthz").body, "ok");
}

TEST_F(MockServiceTest, Pacing) {
  auto t0 = std::chrono::steady_clock::now();
  auto r = post("/v1/chat/completions", kChatStreamUsage,
                {{"x-mock-ttfb-ms", "100"}, {"x-mock-chunks", "3"}, {"x-mock-chunk-interval-ms", "40"}});
  auto elapsed = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ec);
  EXPECT_GE(elapsed, 100ms + 3 * 40ms);
  EXPECT_EQ(countOf(r.body, "data: "), 1 + 3 + 1 + 1 + 1);
}

TEST_F(MockServiceTest, InjectedFailure) {
  auto r = post("/v1/chat/completions", kChat,
                {{"x-mock-fail-rate", "1"}, {"x-mock-fail-status", "429"}, {"x-mock-retry-after", "3"}});
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.res[bhttp::field::retry_after], "3");
  auto v = json::parse(r.body);
  EXPECT_EQ(v.at("error").at("code"), "rate_limit_exceeded");

  auto raw = post("/v1/chat/completions", kChat,
                  {{"x-mock-fail-rate", "1"}, {"x-mock-fail-status", "503"}, {"x-mock-fail-body", "{\"oops\":1}"}});
  EXPECT_EQ(raw.status, 503);
  EXPECT_EQ(raw.body, "{\"oops\":1}");
}

// x-mock-echo-key: the failure quotes the credential, as real providers' 401s do, in every
// family's error shape; without it the key is not in the answer.
TEST_F(MockServiceTest, EchoKeyQuotesTheCredentialInFailures) {
  const char* kKey = "sk-echo-me-0123456789";
  struct Case {
    const char* path;
    const char* header;
    std::string value;
  };
  for (const Case& c : {Case{"/v1/chat/completions", "authorization", std::string("Bearer ") + kKey},
                        Case{"/v1/messages", "x-api-key", kKey},
                        Case{"/v1beta/models/gemini-2.0-flash:generateContent", "x-goog-api-key", kKey},
                        Case{"/openai/deployments/d/chat/completions?api-version=1", "api-key", kKey}}) {
    auto echoed = post(c.path, kChat, {{"x-mock-fail-rate", "1"}, {"x-mock-fail-status", "401"}, {"x-mock-echo-key", "1"},
                                       {c.header, c.value.c_str()}});
    EXPECT_EQ(echoed.status, 401) << c.path;
    EXPECT_NE(echoed.body.find(std::string("API key provided: ") + kKey), std::string::npos) << c.path << ": " << echoed.body;
    EXPECT_TRUE(json::parse(echoed.body).is_object());
    auto quiet = post(c.path, kChat, {{"x-mock-fail-rate", "1"}, {"x-mock-fail-status", "401"}, {c.header, c.value.c_str()}});
    EXPECT_EQ(quiet.body.find(kKey), std::string::npos) << c.path;
  }
}

TEST_F(MockServiceTest, ErrorsInOpenAIFormat) {
  auto bad = post("/v1/chat/completions", "{not json");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body).at("error").at("type"), "invalid_request_error");
  EXPECT_EQ(post("/v1/chat/completions", R"({"model":"m"})").status, 400);
  auto nf = post("/v1/nothing", "{}");
  EXPECT_EQ(nf.status, 404);
  EXPECT_TRUE(json::parse(nf.body).at("error").is_object());
  auto wrong = call(bhttp::verb::get, "/v1/chat/completions");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.res[bhttp::field::allow], "POST");
  EXPECT_EQ(post("/v1/chat/completions", kChat, {{"x-mock-chunks", "lots"}}).status, 400);
}

TEST_F(MockServiceTest, EmbeddingsModelsAndStats) {
  auto e = post("/v1/embeddings", R"({"model":"text-embedding-3-small","input":"hi","encoding_format":"base64"})",
                {{"Authorization", "Bearer sk-b"}});
  EXPECT_EQ(e.status, 200);
  EXPECT_TRUE(json::parse(e.body).at("data").at(0).at("embedding").is_string());
  EXPECT_EQ(call(bhttp::verb::get, "/v1/models").status, 200);
  EXPECT_EQ(call(bhttp::verb::get, "/v1/models/gpt-4o").status, 200);
  EXPECT_EQ(call(bhttp::verb::get, "/v1/models/nope").status, 404);

  auto s = json::parse(call(bhttp::verb::get, "/mock/stats").body);
  EXPECT_EQ(s.at("requests").to_number<std::uint64_t>(), 4u);
  EXPECT_EQ(s.at("by_key").at("sk-b").to_number<std::uint64_t>(), 1u);
  EXPECT_EQ(s.at("by_path").at("/v1/embeddings").to_number<std::uint64_t>(), 1u);
  EXPECT_EQ(s.at("last_request").at("path"), "/v1/models/nope");

  EXPECT_EQ(post("/mock/reset", "").status, 200);
  s = json::parse(call(bhttp::verb::get, "/mock/stats").body);
  EXPECT_EQ(s.at("requests").to_number<std::uint64_t>(), 0u);
}

TEST_F(MockServiceTest, LongUnpacedStream) {
  auto r = post("/v1/completions", R"({"model":"m","prompt":"x","stream":true})", {{"x-mock-chunks", "20000"}});
  ASSERT_FALSE(r.ec);
  EXPECT_EQ(countOf(r.body, "data: "), 20000 + 1 + 1);
}

}  // namespace mock_service_test
}  // namespace
}  // namespace sluice::mock
