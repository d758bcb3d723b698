#include "gateway/ResponseHistory.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "gateway/ResponseCapture.hpp"

namespace sluice::gateway {
namespace {

namespace json = boost::json;
using namespace history;

json::object obj(std::string_view s) {
  return json::parse(s).as_object();
}

TEST(ResponseHistory, IdsAreShortAndPlain) {
  EXPECT_TRUE(validId("resp_0123abcDEF-_"));
  EXPECT_TRUE(validId(std::string(kMaxIdLength, 'a')));
  EXPECT_FALSE(validId(std::string(kMaxIdLength + 1, 'a')));
  for (const char* bad : {"", "resp_'", "resp_\"", "a b", "../x", "resp_%00", "r\xc3\xa9sp", "a/b", "a;b", "a\\b"})
    EXPECT_FALSE(validId(bad)) << bad;
  EXPECT_FALSE(validId(std::string_view("resp_\0x", 7)));
}

TEST(ResponseHistory, ATurnSaysWhetherItIsKeptAndWhatItContinues) {
  auto t = readTurn(obj(R"({"model":"m","input":"hi"})"), true);
  EXPECT_TRUE(t.keep);  // OpenAI's default is store: true
  EXPECT_FALSE(t.previous);
  ASSERT_TRUE(t.own);
  EXPECT_EQ(json::serialize(*t.own),
            R"([{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}])");
  EXPECT_FALSE(readTurn(obj(R"({"store":false})"), true).keep);
  EXPECT_FALSE(readTurn(obj(R"({"store":"yes"})"), true).keep);
  EXPECT_TRUE(readTurn(obj(R"({"store":null})"), true).keep);
  EXPECT_FALSE(readTurn(obj(R"({})"), false).keep);  // store.responses off
  auto c = readTurn(obj(R"({"previous_response_id":"resp_1","input":[{"role":"user","content":"q"}]})"), true);
  EXPECT_EQ(c.previous, "resp_1");
  EXPECT_EQ(c.own->size(), 1u);
  EXPECT_FALSE(readTurn(obj(R"({"previous_response_id":null})"), true).previous);
  EXPECT_FALSE(readTurn(obj(R"({"input":{}})"), true).own);
  EXPECT_TRUE(readTurn(obj(R"({})"), true).own->empty());
}

TEST(ResponseHistory, AChainIsTheEarlierInputThenItsOutputThenTheNewInput) {
  json::array prevIn = json::parse(R"([{"role":"user","content":"q1"}])").as_array();
  json::object prev = obj(
      R"({"id":"resp_1","instructions":"be brief","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a1"}]}]})");
  json::array own = json::parse(R"([{"role":"user","content":"q2"}])").as_array();
  json::array whole = chainedInput(prevIn, prev, own);
  EXPECT_EQ(
      json::serialize(whole),
      R"([{"role":"user","content":"q1"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a1"}]},{"role":"user","content":"q2"}])");
  json::object body = obj(R"({"model":"m","previous_response_id":"resp_1","input":"q2","instructions":"new"})");
  rewriteBody(body, &whole, true);
  EXPECT_FALSE(body.contains("previous_response_id"));
  EXPECT_EQ(body.at("input").as_array().size(), 3u);
  EXPECT_EQ(body.at("store"), true);
  EXPECT_EQ(body.at("instructions"), "new");  // only this request's instructions
  json::object plain = obj(R"({"input":"x"})");
  rewriteBody(plain, nullptr, false);
  EXPECT_EQ(json::serialize(plain), R"({"input":"x"})");
}

TEST(ResponseHistory, AKeptResponseSaysStoredAndWhatItContinued) {
  json::object r = obj(R"({"id":"resp_2","store":false,"previous_response_id":null})");
  markStored(r, std::string("resp_1"));
  EXPECT_EQ(r.at("store"), true);
  EXPECT_EQ(r.at("previous_response_id"), "resp_1");
}

TEST(ResponseHistory, ListQueryIsCheckedParameterByParameter) {
  std::string error, param;
  auto q = parseListQuery("limit=2&order=asc&after=msg_1&include%5B%5D=x", error, param);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->limit, 2u);
  EXPECT_TRUE(q->ascending);
  EXPECT_EQ(q->after, "msg_1");
  for (const char* bad : {"limit=0", "limit=101", "limit=1x", "limit=", "order=ASC", "after=%27"}) {
    EXPECT_FALSE(parseListQuery(bad, error, param)) << bad;
  }
  EXPECT_FALSE(parseListQuery("limit=-1", error, param));
  EXPECT_EQ(param, "limit");
  auto d = parseListQuery("", error, param);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->limit, 20u);
  EXPECT_FALSE(d->ascending);
}

TEST(ResponseHistory, ListPagesNewestFirstWithStableIds) {
  json::array items =
      json::parse(
          R"([{"role":"user","content":"a"},{"id":"fc_9","type":"function_call"},{"role":"user","content":"c"}])")
          .as_array();
  ListQuery q;
  json::object page = listPage(items, "resp_abc", q);
  EXPECT_EQ(page.at("object"), "list");
  const auto& data = page.at("data").as_array();
  ASSERT_EQ(data.size(), 3u);
  EXPECT_EQ(data[0].at("id"), "msg_abc_2");
  EXPECT_EQ(data[1].at("id"), "fc_9");
  EXPECT_EQ(page.at("first_id"), "msg_abc_2");
  EXPECT_EQ(page.at("last_id"), "msg_abc_0");
  EXPECT_EQ(page.at("has_more"), false);

  q.limit = 1;
  q.ascending = true;
  page = listPage(items, "resp_abc", q);
  EXPECT_EQ(page.at("data").as_array()[0].at("id"), "msg_abc_0");
  EXPECT_EQ(page.at("has_more"), true);
  q.after = "msg_abc_0";
  page = listPage(items, "resp_abc", q);
  EXPECT_EQ(page.at("data").as_array()[0].at("id"), "fc_9");
  q.after = "unknown";
  page = listPage(items, "resp_abc", q);
  EXPECT_TRUE(page.at("data").as_array().empty());
  EXPECT_TRUE(page.at("first_id").is_null());
  EXPECT_EQ(page.at("has_more"), false);
  // Items that are not objects are listed as they are, under their made-up id.
  page = listPage(json::parse(R"(["odd"])").as_array(), "resp_x", ListQuery{});
  EXPECT_EQ(page.at("first_id"), "msg_x_0");
}

TEST(ResponseHistory, ErrorBodiesAreOpenAIsAndNeverEchoAHostileId) {
  EXPECT_EQ(
      notFoundBody("resp_1"),
      R"({"error":{"message":"Response with id 'resp_1' not found.","type":"invalid_request_error","param":null,"code":null}})");
  EXPECT_EQ(
      previousNotFoundBody("resp_1"),
      R"({"error":{"message":"Previous response with id 'resp_1' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}})");
  EXPECT_EQ(deletedBody("resp_1"), R"({"id":"resp_1","object":"response","deleted":true})");
  const std::string hostile = previousNotFoundBody("<script>'\"" + std::string(500, 'x'));
  EXPECT_EQ(hostile.find("<script>"), std::string::npos);
  EXPECT_LT(hostile.size(), 300u);
}

// ---- the capture ----

TEST(ResponseCapture, AStreamGivesItsCompletedResponse) {
  ResponseCapture c(1 << 20);
  c.start(true);
  const std::string s =
      "event: response.created\ndata: "
      "{\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"output\":[]}}\n\n"
      "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n"
      "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\","
      "\"output\":[{\"type\":\"message\"}]}}\n\n";
  for (std::size_t i = 0; i < s.size(); i += 7) c.feed(std::string_view(s).substr(i, 7));  // any split
  c.finish();
  auto r = c.take();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->at("id"), "resp_1");
  EXPECT_EQ(r->at("output").as_array().size(), 1u);
  EXPECT_FALSE(c.take());
}

TEST(ResponseCapture, AnIncompleteStreamIsKeptAFailedOneIsNot) {
  ResponseCapture c(1 << 20);
  c.start(true);
  c.feed("data: {\"type\":\"response.incomplete\",\"response\":{\"id\":\"resp_i\"}}\n\n");
  EXPECT_TRUE(c.take());
  c.start(true);
  c.feed("event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_f\"}}\n\n");
  EXPECT_FALSE(c.take());
  c.start(true);
  c.feed("event: response.completed\ndata: {not json\n\n");
  EXPECT_FALSE(c.take());
}

TEST(ResponseCapture, AWholeBodyIsAResponseObjectWithAnId) {
  ResponseCapture c(1 << 20);
  c.start(false);
  c.feed(R"({"id":"resp_w","object":"response",)");
  c.feed(R"("output":[]})");
  c.finish();
  EXPECT_EQ(c.take()->at("id"), "resp_w");
  for (const char* bad : {R"({"object":"response"})", R"({"id":"x","object":"list"})", "[1]", "{"}) {
    c.start(false);
    c.feed(bad);
    c.finish();
    EXPECT_FALSE(c.take()) << bad;
  }
}

TEST(ResponseCapture, PastItsCapNothingIsKeptAndItSaysSo) {
  ResponseCapture c(64);
  c.start(false);
  c.feed(R"({"id":"resp_big","object":"response","output":[")" + std::string(100, 'x') + "\"]}");
  c.finish();
  EXPECT_FALSE(c.take());
  EXPECT_TRUE(c.tooLarge());
  c.start(true);
  EXPECT_FALSE(c.tooLarge());
  c.feed("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_b\",\"x\":\"" +
         std::string(100, 'y') + "\"}}\n\n");
  EXPECT_FALSE(c.take());
  EXPECT_TRUE(c.tooLarge());
}

}  // namespace
}  // namespace sluice::gateway
