// The WebSocket mode's message handling without a socket: what a response.create becomes, the
// connection-local chain (expansion, the count and byte caps) and the warm-up's answer.
#include "gateway/ResponseChain.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace sluice::gateway {
namespace {
namespace responses_socket_test {

namespace json = boost::json;

json::object parsed(const std::string& s) {
  return json::parse(s).as_object();
}

TEST(ResponseChain, ACreateBecomesAStreamedPostBody) {
  ResponseChain chain({});
  auto t = chain.prepare(
      R"({"type":"response.create","model":"m","input":"hi","stream":false,"stream_options":{},"store":false})");
  ASSERT_FALSE(t.error) << *t.error;
  EXPECT_FALSE(t.warmup);
  EXPECT_EQ(t.model, "m");
  auto body = parsed(t.body);
  EXPECT_FALSE(body.contains("type"));
  EXPECT_FALSE(body.contains("stream_options"));
  EXPECT_EQ(body.at("stream"), true);
  EXPECT_EQ(body.at("store"), false);
  EXPECT_EQ(json::serialize(body.at("input")), R"([{"type":"message","role":"user","content":"hi"}])");
}

TEST(ResponseChain, PreviousResponseIdExpandsToTheWholeConversation) {
  ResponseChain chain({});
  auto warm = chain.prepare(
      R"({"type":"response.create","model":"m","generate":false,"input":[{"role":"developer","content":"d"}]})");
  ASSERT_FALSE(warm.error);
  ASSERT_TRUE(warm.warmup);
  auto events = chain.warmup(warm);
  ASSERT_EQ(events.size(), 2u);
  auto created = parsed(events[0]);
  auto completed = parsed(events[1]);
  EXPECT_EQ(created.at("type"), "response.created");
  EXPECT_EQ(completed.at("type"), "response.completed");
  EXPECT_EQ(completed.at("response").at("status"), "completed");
  const std::string warmId(completed.at("response").at("id").as_string());
  EXPECT_EQ(created.at("response").at("id").as_string(), warmId);

  auto t1 = chain.prepare(R"({"type":"response.create","model":"m","previous_response_id":")" + warmId +
                          R"(","input":[{"role":"user","content":"q1"}]})");
  ASSERT_FALSE(t1.error) << *t1.error;
  EXPECT_EQ(json::serialize(parsed(t1.body).at("input")),
            R"([{"role":"developer","content":"d"},{"role":"user","content":"q1"}])");
  EXPECT_FALSE(parsed(t1.body).contains("previous_response_id"));
  chain.keep("resp_1", std::move(t1.items),
             json::parse(R"([{"type":"message","role":"assistant","content":"a1"}])").as_array());

  auto t2 = chain.prepare(R"({"type":"response.create","model":"m","previous_response_id":"resp_1","input":"q2"})");
  ASSERT_FALSE(t2.error);
  EXPECT_EQ(json::serialize(parsed(t2.body).at("input")),
            R"([{"role":"developer","content":"d"},{"role":"user","content":"q1"},)"
            R"({"type":"message","role":"assistant","content":"a1"},{"type":"message","role":"user","content":"q2"}])");
}

TEST(ResponseChain, BadMessagesAreErrorMessagesNamingTheProblem) {
  ResponseChain chain({});
  auto code = [&](const std::string& m) {
    auto t = chain.prepare(m);
    if (!t.error) return std::string("(none)");
    auto e = parsed(*t.error);
    EXPECT_EQ(e.at("type"), "error");
    EXPECT_EQ(e.at("status"), 400);
    return std::string(e.at("error").at("code").as_string());
  };
  EXPECT_EQ(code("{"), "invalid_json");
  EXPECT_EQ(code("[1]"), "invalid_json");
  EXPECT_EQ(code(R"({"model":"m"})"), "missing_required_parameter");
  EXPECT_EQ(code(R"({"type":5})"), "missing_required_parameter");
  EXPECT_EQ(code(R"({"type":"response.steer"})"), "unsupported_event_type");
  EXPECT_EQ(code(R"({"type":"response.create","background":true})"), "unsupported_parameter");
  EXPECT_EQ(code(R"({"type":"response.create","previous_response_id":7})"), "invalid_type");
  EXPECT_EQ(code(R"({"type":"response.create","input":{}})"), "invalid_type");
  EXPECT_EQ(code(R"({"type":"response.create","previous_response_id":null,"input":null,"model":"m"})"), "(none)");
}

// An id the socket does not hold goes on in the body, for the POST path to expand from the
// gateway's stored responses; the turn is then not kept on the socket (its items are partial).
TEST(ResponseChain, AnIdTheSocketDoesNotHoldFallsBackToTheStore) {
  ResponseChain chain({});
  auto t = chain.prepare(R"({"type":"response.create","model":"m","previous_response_id":"resp_x","input":"q"})");
  ASSERT_FALSE(t.error);
  EXPECT_TRUE(t.from_store);
  auto body = parsed(t.body);
  EXPECT_EQ(body.at("previous_response_id"), "resp_x");
  // The turn's own input, as items (a string input is one user message).
  EXPECT_EQ(json::serialize(body.at("input")), R"([{"type":"message","role":"user","content":"q"}])");
  EXPECT_EQ(body.at("stream"), true);
  EXPECT_FALSE(body.contains("type"));
}

TEST(ResponseChain, KeepsOnlyTheLastResponsesWithinTheByteCap) {
  ResponsesSocketOptions o;
  o.kept_responses = 2;
  o.kept_bytes = 200;
  ResponseChain chain(o);
  auto items = [](const std::string& text) {
    return json::serialize(json::object{{"role", "user"}, {"content", text}});
  };
  chain.keep("r1", items("a"), {});
  chain.keep("r2", items("b"), {});
  chain.keep("r3", items("c"), {});
  auto found = [&](const char* id) {
    return !chain.prepare(std::string(R"({"type":"response.create","previous_response_id":")") + id + "\"}").from_store;
  };
  EXPECT_FALSE(found("r1"));  // past the count
  EXPECT_TRUE(found("r2"));
  EXPECT_TRUE(found("r3"));
  chain.keep("big", items(std::string(300, 'x')), {});  // larger than the whole cap: not kept
  EXPECT_FALSE(found("big"));
  EXPECT_TRUE(found("r3"));
  chain.keep("r4", items(std::string(150, 'y')), {});  // fits alone: the older ones make room
  EXPECT_TRUE(found("r4"));
  EXPECT_FALSE(found("r2"));
}

}  // namespace responses_socket_test
}  // namespace
}  // namespace sluice::gateway
