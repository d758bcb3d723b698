#include "mock/OpenAIMock.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cstring>

namespace sluice::mock::openai {
namespace {
namespace open_a_i_mock_test {

namespace json = boost::json;

json::value J(std::string_view s) { return json::parse(s); }

// The payloads of "data: ...\n\n" events, in order.
std::vector<std::string> events(const std::string& sse) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < sse.size()) {
    EXPECT_EQ(sse.compare(pos, 6, "data: "), 0) << "at " << pos << ": " << sse.substr(pos, 40);
    auto end = sse.find("\n\n", pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << "unterminated event";
      break;
    }
    out.push_back(sse.substr(pos + 6, end - pos - 6));
    pos = end + 2;
  }
  return out;
}

const ResponseMeta kMeta{"chatcmpl-test", 1700000000};

ChatRequest chat(std::string_view body) {
  ChatRequest r;
  auto e = parseChatRequest(J(body), r);
  EXPECT_FALSE(e) << (e ? e->message : "");
  return r;
}

TEST(OpenAIMockChat, ParsesAndEstimatesPromptTokens) {
  auto r = chat(R"({"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief"},
      {"role":"user","content":[{"type":"text","text":"Hello"}]}],"n":2,"max_tokens":5,"stop":"x"})");
  EXPECT_EQ(r.model, "gpt-4o-mini");
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.max_tokens, 5);
  ASSERT_EQ(r.stop.size(), 1u);
  EXPECT_EQ(r.prompt_tokens, (2 + 4) + (2 + 4));  // ceil(8/4)+4, ceil(5/4)+4
  EXPECT_EQ(chat(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":9,
      "max_completion_tokens":4})").max_tokens, 4);
}

TEST(OpenAIMockChat, RejectsBadRequestsLikeOpenAI) {
  ChatRequest r;
  auto e = parseChatRequest(J(R"({"messages":[{"role":"user","content":"hi"}]})"), r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->type, "invalid_request_error");
  EXPECT_EQ(e->message, "you must provide a model parameter");

  e = parseChatRequest(J(R"({"model":"m"})"), r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "messages");
  EXPECT_EQ(e->code, "missing_required_parameter");

  e = parseChatRequest(J(R"({"model":"m","messages":[]})"), r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "empty_array");

  e = parseChatRequest(J(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"n":"2"})"), r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "invalid_type");
  EXPECT_EQ(e->param, "n");

  e = parseChatRequest(J(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"n":0})"), r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "integer_below_min_value");

  e = parseChatRequest(J(R"({"model":"m","messages":[{"role":"user","content":"hi"}],
      "stream_options":{"include_usage":true}})"), r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "stream_options");

  e = parseChatRequest(J(R"([1,2])"), r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
}

TEST(OpenAIMockChat, CompletionObjectHasOpenAIFields) {
  auto req = chat(R"({"model":"gpt-4o","messages":[{"role":"user","content":"Hello"}]})");
  auto gen = planGeneration(8, req.max_tokens, req.stop, req.n);
  auto v = J(chatCompletionJson(req, gen, kMeta));
  auto& o = v.as_object();
  EXPECT_EQ(o.at("id"), "chatcmpl-test");
  EXPECT_EQ(o.at("object"), "chat.completion");
  EXPECT_EQ(o.at("created").as_int64(), 1700000000);
  EXPECT_EQ(o.at("model"), "gpt-4o");
  EXPECT_EQ(o.at("system_fingerprint").as_string(), kSystemFingerprint);
  auto& choices = o.at("choices").as_array();
  ASSERT_EQ(choices.size(), 1u);
  auto& c = choices[0].as_object();
  EXPECT_EQ(c.at("index").as_int64(), 0);
  EXPECT_EQ(c.at("finish_reason"), "stop");
  EXPECT_TRUE(c.at("logprobs").is_null());
  auto& msg = c.at("message").as_object();
  EXPECT_EQ(msg.at("role"), "assistant");
  EXPECT_EQ(msg.at("content").as_string(), gen.text());
  EXPECT_TRUE(msg.at("refusal").is_null());
  auto& u = o.at("usage").as_object();
  EXPECT_EQ(u.at("prompt_tokens").as_int64(), 6);
  EXPECT_EQ(u.at("completion_tokens").as_int64(), 8);
  EXPECT_EQ(u.at("total_tokens").as_int64(), 14);
  EXPECT_EQ(u.at("prompt_tokens_details").at("cached_tokens").as_int64(), 0);
  EXPECT_EQ(u.at("completion_tokens_details").at("reasoning_tokens").as_int64(), 0);
}

TEST(OpenAIMockChat, LengthFinishWhenCapped) {
  auto req = chat(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"n":3})");
  auto gen = planGeneration(8, req.max_tokens, req.stop, req.n);
  auto v = J(chatCompletionJson(req, gen, kMeta));
  ASSERT_EQ(v.at("choices").as_array().size(), 3u);
  EXPECT_EQ(v.at("choices").at(2).at("finish_reason"), "length");
  EXPECT_EQ(v.at("choices").at(2).at("message").at("content"), "Hello from");
  EXPECT_EQ(v.at("usage").at("completion_tokens").as_int64(), 6);
}

TEST(OpenAIMockChat, StreamWithoutUsage) {
  auto req = chat(R"({"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]})");
  auto gen = planGeneration(4, req.max_tokens, req.stop, req.n);
  auto script = chatCompletionStream(req, gen, kMeta);
  EXPECT_EQ(script.head.size(), 1u);
  EXPECT_EQ(script.content_count, 4u);
  auto ev = events(script.all());
  ASSERT_EQ(ev.size(), 1u + 4u + 1u + 1u);
  EXPECT_EQ(ev.back(), "[DONE]");
  std::string text;
  for (std::size_t i = 0; i + 1 < ev.size(); ++i) {
    auto v = J(ev[i]);
    auto& o = v.as_object();
    EXPECT_EQ(o.at("object"), "chat.completion.chunk");
    EXPECT_EQ(o.at("id"), "chatcmpl-test");
    EXPECT_EQ(o.at("model"), "gpt-4o-mini");
    EXPECT_EQ(o.at("created").as_int64(), 1700000000);
    EXPECT_FALSE(o.contains("usage")) << ev[i];
    auto& ch = o.at("choices").as_array();
    ASSERT_EQ(ch.size(), 1u);
    auto& delta = ch[0].at("delta").as_object();
    if (i == 0) {
      EXPECT_EQ(delta.at("role"), "assistant");
      EXPECT_EQ(delta.at("content"), "");
      EXPECT_TRUE(ch[0].at("finish_reason").is_null());
    } else if (i + 2 < ev.size()) {
      EXPECT_FALSE(delta.contains("role"));
      text += std::string(delta.at("content").as_string());
      EXPECT_TRUE(ch[0].at("finish_reason").is_null());
    } else {
      EXPECT_TRUE(delta.empty());
      EXPECT_EQ(ch[0].at("finish_reason"), "stop");
    }
  }
  EXPECT_EQ(text, gen.text());
}

TEST(OpenAIMockChat, StreamWithUsageAddsUsageChunkAndNulls) {
  auto req = chat(R"({"model":"m","stream":true,"stream_options":{"include_usage":true},
      "messages":[{"role":"user","content":"hello world!"}]})");
  EXPECT_TRUE(req.include_usage);
  auto gen = planGeneration(3, req.max_tokens, req.stop, req.n);
  auto ev = events(chatCompletionStream(req, gen, kMeta).all());
  ASSERT_EQ(ev.size(), 1u + 3u + 1u + 1u + 1u);
  EXPECT_EQ(ev.back(), "[DONE]");
  for (std::size_t i = 0; i + 2 < ev.size(); ++i) {
    auto v = J(ev[i]);
    ASSERT_TRUE(v.as_object().contains("usage")) << ev[i];
    EXPECT_TRUE(v.at("usage").is_null());
    EXPECT_EQ(v.at("choices").as_array().size(), 1u);
  }
  auto last = J(ev[ev.size() - 2]);
  EXPECT_TRUE(last.at("choices").as_array().empty());
  EXPECT_EQ(last.at("object"), "chat.completion.chunk");
  EXPECT_EQ(last.at("usage").at("prompt_tokens").as_int64(), 3 + 4);
  EXPECT_EQ(last.at("usage").at("completion_tokens").as_int64(), 3);
  EXPECT_EQ(last.at("usage").at("total_tokens").as_int64(), 10);
}

TEST(OpenAIMockChat, StreamWithSeveralChoices) {
  auto req = chat(R"({"model":"m","stream":true,"n":2,"messages":[{"role":"user","content":"hi"}]})");
  auto gen = planGeneration(2, req.max_tokens, req.stop, req.n);
  auto ev = events(chatCompletionStream(req, gen, kMeta).all());
  ASSERT_EQ(ev.size(), 2u + 4u + 2u + 1u);
  EXPECT_EQ(J(ev[1]).at("choices").at(0).at("index").as_int64(), 1);
  EXPECT_EQ(J(ev[3]).at("choices").at(0).at("delta").at("content"), "Hello");
}

TEST(OpenAIMockChat, ModelNamesAreEscapedInChunks) {
  auto req = chat(R"({"model":"we\"ird\\model","stream":true,"messages":[{"role":"user","content":"hi"}]})");
  auto gen = planGeneration(1, req.max_tokens, req.stop, req.n);
  for (const auto& e : events(chatCompletionStream(req, gen, kMeta).all())) {
    if (e != "[DONE]") {
      EXPECT_EQ(J(e).at("model"), "we\"ird\\model");
    }
  }
}

TEST(OpenAIMockCompletions, TextCompletionAndStream) {
  CompletionRequest req;
  ASSERT_FALSE(parseCompletionRequest(J(R"({"model":"gpt-3.5-turbo-instruct","prompt":"Say hi",
      "stream":true,"stream_options":{"include_usage":true},"max_tokens":3})"), req));
  EXPECT_EQ(req.prompt_tokens, 2);
  auto gen = planGeneration(8, req.max_tokens, req.stop, req.choices);
  const ResponseMeta meta{"cmpl-test", 1};
  auto v = J(completionJson(req, gen, meta));
  EXPECT_EQ(v.at("object"), "text_completion");
  EXPECT_EQ(v.at("choices").at(0).at("text"), "Hello from sluice");
  EXPECT_EQ(v.at("choices").at(0).at("finish_reason"), "length");
  EXPECT_TRUE(v.at("choices").at(0).at("logprobs").is_null());
  EXPECT_EQ(v.at("usage").at("total_tokens").as_int64(), 5);

  auto ev = events(completionStream(req, gen, meta).all());
  ASSERT_EQ(ev.size(), 3u + 1u + 1u + 1u);
  EXPECT_EQ(J(ev[0]).at("object"), "text_completion");
  EXPECT_EQ(J(ev[0]).at("choices").at(0).at("text"), "Hello");
  EXPECT_TRUE(J(ev[0]).at("usage").is_null());
  EXPECT_EQ(J(ev[3]).at("choices").at(0).at("finish_reason"), "length");
  EXPECT_TRUE(J(ev[4]).at("choices").as_array().empty());
  EXPECT_EQ(J(ev[4]).at("usage").at("completion_tokens").as_int64(), 3);
  EXPECT_EQ(ev[5], "[DONE]");
}

TEST(OpenAIMockCompletions, PromptArraysMultiplyChoices) {
  CompletionRequest req;
  ASSERT_FALSE(parseCompletionRequest(J(R"({"model":"m","prompt":["a","b"],"n":2})"), req));
  EXPECT_EQ(req.choices, 4);
  ASSERT_FALSE(parseCompletionRequest(J(R"({"model":"m","prompt":[1,2,3]})"), req));
  EXPECT_EQ(req.prompt_tokens, 3);
  auto e = parseCompletionRequest(J(R"({"model":"m"})"), req);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "prompt");
}

TEST(OpenAIMockEmbeddings, FloatVectors) {
  EmbeddingsRequest req;
  ASSERT_FALSE(parseEmbeddingsRequest(J(R"({"model":"text-embedding-3-small","input":["one","two"]})"), req));
  auto v = J(embeddingsJson(req));
  EXPECT_EQ(v.at("object"), "list");
  EXPECT_EQ(v.at("model"), "text-embedding-3-small");
  auto& data = v.at("data").as_array();
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(data[1].at("object"), "embedding");
  EXPECT_EQ(data[1].at("index").as_int64(), 1);
  EXPECT_EQ(data[0].at("embedding").as_array().size(), std::size_t(kDefaultEmbeddingDimensions));
  EXPECT_EQ(v.at("usage").at("prompt_tokens").as_int64(), 2);
  EXPECT_EQ(v.at("usage").at("total_tokens").as_int64(), 2);
}

TEST(OpenAIMockEmbeddings, Base64IsLittleEndianFloat32OfTheSameVector) {
  EmbeddingsRequest fl, b64;
  ASSERT_FALSE(parseEmbeddingsRequest(J(R"({"model":"m","input":"hello","dimensions":16})"), fl));
  ASSERT_FALSE(parseEmbeddingsRequest(
      J(R"({"model":"m","input":"hello","dimensions":16,"encoding_format":"base64"})"), b64));
  auto vf = J(embeddingsJson(fl));
  auto vb = J(embeddingsJson(b64));
  auto& floats = vf.at("data").at(0).at("embedding").as_array();
  ASSERT_EQ(floats.size(), 16u);
  std::vector<float> expect;
  for (const auto& f : floats) expect.push_back(static_cast<float>(f.as_double()));
  EXPECT_EQ(vb.at("data").at(0).at("embedding").as_string(), base64Floats(expect));
  EXPECT_EQ(vb.at("data").at(0).at("embedding").as_string().size(), 88u);  // 64 bytes -> 22 quads
}

TEST(OpenAIMockEmbeddings, TokenInputsAndValidation) {
  EmbeddingsRequest req;
  ASSERT_FALSE(parseEmbeddingsRequest(J(R"({"model":"m","input":[[1,2],[3]]})"), req));
  EXPECT_EQ(req.inputs.size(), 2u);
  EXPECT_EQ(req.prompt_tokens, 3);
  EmbeddingsRequest r2;
  ASSERT_FALSE(parseEmbeddingsRequest(J(R"({"model":"m","input":[5,6,7]})"), r2));
  EXPECT_EQ(r2.inputs.size(), 1u);

  EmbeddingsRequest bad;
  EXPECT_TRUE(parseEmbeddingsRequest(J(R"({"model":"m","input":""})"), bad));
  EXPECT_TRUE(parseEmbeddingsRequest(J(R"({"model":"m","input":[]})"), bad));
  EXPECT_TRUE(parseEmbeddingsRequest(J(R"({"model":"m"})"), bad));
  auto e = parseEmbeddingsRequest(J(R"({"model":"m","input":"x","dimensions":3073})"), bad);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "integer_above_max_value");
  e = parseEmbeddingsRequest(J(R"({"model":"m","input":"x","encoding_format":"hex"})"), bad);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "encoding_format");
}

TEST(OpenAIMockModels, ListAndRetrieve) {
  auto v = J(modelsJson());
  EXPECT_EQ(v.at("object"), "list");
  bool found = false;
  for (const auto& m : v.at("data").as_array()) {
    EXPECT_EQ(m.at("object"), "model");
    EXPECT_EQ(m.at("owned_by"), "sluice-mock");
    EXPECT_TRUE(m.at("created").is_int64());
    found |= m.at("id") == "gpt-4o-mini";
  }
  EXPECT_TRUE(found);
  auto one = modelJson("text-embedding-3-small");
  ASSERT_TRUE(one);
  EXPECT_EQ(J(*one).at("id"), "text-embedding-3-small");
  EXPECT_FALSE(modelJson("nope"));
}

TEST(OpenAIMockErrors, ErrorObjectShape) {
  auto v = J(errorJson(simulatedFailure(429)));
  auto& e = v.at("error").as_object();
  EXPECT_EQ(e.size(), 4u);
  EXPECT_NE(std::string(e.at("message").as_string()).find("Simulated failure"), std::string::npos);
  EXPECT_EQ(e.at("code"), "rate_limit_exceeded");
  EXPECT_TRUE(e.at("param").is_null());
  EXPECT_EQ(J(errorJson(simulatedFailure(500))).at("error").at("type"), "server_error");
  EXPECT_TRUE(J(errorJson(simulatedFailure(500))).at("error").at("code").is_null());
  EXPECT_EQ(J(errorJson(simulatedFailure(401))).at("error").at("code"), "invalid_api_key");
  EXPECT_EQ(unknownPathError("POST", "/v1/nope").status, 404);
  EXPECT_EQ(methodNotAllowedError("GET", "/v1/chat/completions", "POST").status, 405);
}

}  // namespace open_a_i_mock_test
}  // namespace
}  // namespace sluice::mock::openai
