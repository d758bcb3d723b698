// responses (gateway/stages/ResponsesStage.cpp) on its own, with a real SQLite store: a POST is
// marked store:true and its answer, read on the way back as the client gets it, is kept only at
// commit of a success; GET, input_items and DELETE answer for the owner only; a request naming
// previous_response_id leaves with the whole conversation and without the field.
#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <filesystem>

#include "../StageTestSupport.hpp"
#include "gateway/ResponseStoreService.hpp"

namespace sluice::gateway {
namespace {
namespace responses_stage_test {

namespace json = boost::json;
namespace bhttp = boost::beast::http;
using testing::makeSnapshot;
using testing::StageHarness;
using testing::virtualKey;

constexpr const char* kYaml = R"(auth:
  master_key: "mk"
channels:
  - {name: an, type: anthropic, base_url: "http://127.0.0.1:9", keys: ["k"], models: ["claude-*"]}
)";

class ResponsesStageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("sluice-responses-stage-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    svc_ = std::make_unique<ResponseStoreService>("sqlite://" + (dir_ / "s.db").string());
    snap_ = makeSnapshot(kYaml, {virtualKey(1, "a", "sk-slc-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
                                 virtualKey(2, "b", "sk-slc-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")});
  }
  void TearDown() override {
    svc_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A POST through auth and this stage; the stage, ready for the way back (null: not started).
  Stage* post(StageHarness& h, const std::string& body, const std::string& key, Step want = Step::Continue) {
    h.request("/v1/responses", body, {{"authorization", "Bearer " + key}});
    EXPECT_EQ(h.runThrough({"auth"}), Step::Continue);
    Stage* s = h.start("responses");
    if (s) {
      EXPECT_EQ(h.onRequest(*s), want);
    }
    return s;
  }

  // The relay's way back for a whole Responses answer, committed when it stands.
  void wayBack(StageHarness& h, Stage& s, int status, const std::string& body) {
    EXPECT_EQ(h.runThrough({"route"}), Step::Continue);
    const routing::Pick pick = h.firstPick();
    ResponseHead head(pick, status, false, providers::Format::AnthropicMessages, providers::Format::OpenAIResponses,
                      true);
    s.onResponseHeaders(h.ex(), head);
    std::string out = body;
    ResponseData piece{.upstream = "{}", .out = out, .end_of_stream = true};
    EXPECT_EQ(s.onResponseData(h.ex(), piece), DataStep::Continue);
    EXPECT_EQ(out, body);  // read, never rewritten
    if (status >= 200 && status < 300) h.onResponseCommit(s, ResponseEnd{pick, status, false, "{}"});
  }

  StageHarness::Answer stored(const std::string& id, const std::string& key, bhttp::verb method = bhttp::verb::get,
                              bool items = false) {
    StageHarness h(snap_, nullptr, nullptr, svc_.get());
    h.request("/v1/responses/" + id + (items ? "/input_items" : ""), "", {{"authorization", "Bearer " + key}});
    h.ex().req.method(method);
    h.call().op = "/responses/{id}";
    h.call().stored_id = id;
    h.call().stored_items = items;
    EXPECT_EQ(h.runThrough({"auth", "responses"}), Step::Answered);
    return h.answer();
  }

  std::filesystem::path dir_;
  std::unique_ptr<ResponseStoreService> svc_;
  std::shared_ptr<Snapshot> snap_;
};

const std::string kAnswer =
    R"({"id":"resp_t1","object":"response","status":"completed","store":false,"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a1"}]}]})";

TEST_F(ResponsesStageTest, AnAnswerIsKeptAtCommitForItsKeyOnly) {
  {
    StageHarness h(snap_, nullptr, nullptr, svc_.get());
    Stage* s = post(h, R"({"model":"claude-x","input":"q1"})", "sk-slc-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    ASSERT_NE(s, nullptr);
    EXPECT_NE(s->hooks() & Stage::kResponseCommit, 0u);
    EXPECT_EQ(json::parse(h.ex().req.body()).at("store"), true);  // a translated answer says so
    wayBack(h, *s, 200, kAnswer);
  }
  auto got = stored("resp_t1", "sk-slc-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  ASSERT_EQ(got.status, 200) << got.body;
  auto r = json::parse(got.body).as_object();
  EXPECT_EQ(r.at("store"), true);
  EXPECT_EQ(r.at("output").as_array().size(), 1u);
  auto items = stored("resp_t1", "sk-slc-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", bhttp::verb::get, true);
  ASSERT_EQ(items.status, 200);
  EXPECT_EQ(json::parse(items.body).at("data").as_array()[0].at("content").as_array()[0].at("text"), "q1");
  EXPECT_EQ(stored("resp_t1", "sk-slc-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb").status, 404);
  EXPECT_EQ(stored("resp_t1", "mk").status, 404);
  EXPECT_EQ(stored("resp_t1", "sk-slc-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", bhttp::verb::delete_).status, 404);
  auto del = stored("resp_t1", "sk-slc-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", bhttp::verb::delete_);
  EXPECT_EQ(del.status, 200);
  EXPECT_EQ(del.body, R"({"id":"resp_t1","object":"response","deleted":true})");
  EXPECT_EQ(stored("resp_t1", "sk-slc-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").status, 404);
  EXPECT_EQ(stored("resp_t1", "sk-slc-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", bhttp::verb::post).status, 405);
  EXPECT_EQ(stored("resp_'x", "sk-slc-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").status, 400);
}

TEST_F(ResponsesStageTest, AFailureOrStoreFalseIsNotKept) {
  {
    StageHarness h(snap_, nullptr, nullptr, svc_.get());
    Stage* s = post(h, R"({"model":"claude-x","input":"q"})", "mk");
    ASSERT_NE(s, nullptr);
    wayBack(h, *s, 500, kAnswer);  // no commit: nothing kept
  }
  EXPECT_EQ(stored("resp_t1", "mk").status, 404);
  StageHarness h(snap_, nullptr, nullptr, svc_.get());
  Stage* s = post(h, R"({"model":"claude-x","input":"q","store":false})", "mk");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->hooks(), 0u);
  EXPECT_EQ(json::parse(h.ex().req.body()).at("store"), false);
}

TEST_F(ResponsesStageTest, PreviousResponseIdLeavesAsTheWholeConversation) {
  {
    StageHarness h(snap_, nullptr, nullptr, svc_.get());
    Stage* s = post(h, R"({"model":"claude-x","input":"q1","instructions":"old"})",
                    "sk-slc-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    wayBack(h, *s, 200, kAnswer);
  }
  StageHarness h(snap_, nullptr, nullptr, svc_.get());
  Stage* s = post(h, R"({"model":"claude-x","previous_response_id":"resp_t1","input":"q2"})",
                  "sk-slc-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  ASSERT_NE(s, nullptr);
  auto body = json::parse(h.ex().req.body()).as_object();
  EXPECT_FALSE(body.contains("previous_response_id"));
  EXPECT_FALSE(body.contains("instructions"));
  const auto& input = body.at("input").as_array();
  ASSERT_EQ(input.size(), 3u);
  EXPECT_EQ(input[1].at("role"), "assistant");
  EXPECT_EQ(input[2].at("content").as_array()[0].at("text"), "q2");
  EXPECT_EQ(std::to_string(h.ex().req.body().size()), std::string(h.ex().req[bhttp::field::content_length]));

  // Another key (and the master key) cannot continue it.
  for (const char* other : {"sk-slc-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "mk"}) {
    StageHarness o(snap_, nullptr, nullptr, svc_.get());
    post(o, R"({"model":"claude-x","previous_response_id":"resp_t1","input":"q2"})", other, Step::Answered);
    auto a = o.answer();
    EXPECT_EQ(a.status, 400);
    EXPECT_EQ(json::parse(a.body).at("error").at("code"), "previous_response_not_found");
  }
}

}  // namespace responses_stage_test
}  // namespace
}  // namespace sluice::gateway
