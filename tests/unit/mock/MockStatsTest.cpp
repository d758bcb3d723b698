#include "mock/MockStats.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace sluice::mock {
namespace {
namespace mock_stats_test {

namespace json = boost::json;

http::Request request(std::string target, std::initializer_list<std::pair<const char*, const char*>> headers,
                      std::string body = {}) {
  http::Request req{http::bhttp::verb::post, target, 11};
  for (auto& [k, v] : headers) req.set(k, v);
  req.body() = std::move(body);
  return req;
}

TEST(MockStats, KeyComesFromTheUsualAuthHeaders) {
  EXPECT_EQ(MockStats::requestKey(request("/v1/x", {{"Authorization", "Bearer sk-one"}})), "sk-one");
  EXPECT_EQ(MockStats::requestKey(request("/v1/x", {{"authorization", "bearer  sk-two"}})), "sk-two");
  EXPECT_EQ(MockStats::requestKey(request("/v1/x", {{"x-api-key", "ak"}})), "ak");
  EXPECT_EQ(MockStats::requestKey(request("/v1/x", {{"x-goog-api-key", "gk"}})), "gk");
  EXPECT_EQ(MockStats::requestKey(request("/v1beta/models/m:generateContent?alt=sse&key=qk", {})), "qk");
  EXPECT_EQ(MockStats::requestKey(request("/v1/x", {})), "");
}

TEST(MockStats, CountsAndLastRequest) {
  MockStats s;
  s.record(MockStats::sample(request("/v1/chat/completions?x=1", {{"Authorization", "Bearer k1"}},
                                     R"({"model":"m","stream_options":{"include_usage":true}})")));
  s.record(MockStats::sample(request("/v1/embeddings", {{"Authorization", "Bearer k2"}, {"X-Trace", "t"}}, "not json")));
  s.record(MockStats::sample(request("/v1/embeddings", {{"Authorization", "Bearer k2"}})));
  s.record(MockStats::sample(request("/v1/models", {})));

  auto v = json::parse(s.toJson());
  EXPECT_EQ(v.at("requests").to_number<std::uint64_t>(), 4u);
  EXPECT_EQ(v.at("by_key").at("k1").to_number<std::uint64_t>(), 1u);
  EXPECT_EQ(v.at("by_key").at("k2").to_number<std::uint64_t>(), 2u);
  EXPECT_EQ(v.at("by_key").as_object().size(), 2u);
  EXPECT_EQ(v.at("by_path").at("/v1/chat/completions").to_number<std::uint64_t>(), 1u);
  EXPECT_EQ(v.at("by_path").at("/v1/embeddings").to_number<std::uint64_t>(), 2u);
  EXPECT_EQ(v.at("last_request").at("path"), "/v1/models");
}

TEST(MockStats, BodyIsParsedJsonOrString) {
  MockStats s;
  s.record(MockStats::sample(request("/v1/chat/completions", {{"Authorization", "Bearer k1"}},
                                     R"({"model":"m","stream_options":{"include_usage":true}})")));
  auto v = json::parse(s.toJson());
  auto& last = v.at("last_request");
  EXPECT_EQ(last.at("method"), "POST");
  EXPECT_EQ(last.at("headers").at("authorization"), "Bearer k1");
  EXPECT_EQ(last.at("body").at("stream_options").at("include_usage"), true);

  s.record(MockStats::sample(request("/v1/x", {{"X-Trace", "t"}}, "not json")));
  v = json::parse(s.toJson());
  EXPECT_EQ(v.at("last_request").at("body"), "not json");
  EXPECT_EQ(v.at("last_request").at("headers").at("x-trace"), "t");
}

TEST(MockStats, ResetZeroes) {
  MockStats s;
  s.record(MockStats::sample(request("/v1/x", {{"Authorization", "Bearer k"}})));
  s.reset();
  auto v = json::parse(s.toJson());
  EXPECT_EQ(v.at("requests").to_number<std::uint64_t>(), 0u);
  EXPECT_TRUE(v.at("by_key").as_object().empty());
  EXPECT_TRUE(v.at("last_request").is_null());
}

}  // namespace mock_stats_test
}  // namespace
}  // namespace sluice::mock
