#include "cache/CacheKey.hpp"

#include <gtest/gtest.h>

namespace sluice::cache {
namespace {
namespace cache_key_test {

using providers::Format;

std::string keyOf(std::string_view body, std::string_view ns = "vk:1", Format f = Format::OpenAIChat,
                  std::string_view model = {}) {
  auto r = makeCacheKey(f, body, ns, model);
  EXPECT_TRUE(r.key) << r.uncacheable << " for " << body;
  return r.key ? r.key->hex : std::string();
}

std::string whyNot(std::string_view body, Format f = Format::OpenAIChat) {
  auto r = makeCacheKey(f, body, "vk:1");
  EXPECT_FALSE(r.key) << body;
  return r.uncacheable;
}

constexpr std::string_view kBase =
    R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"temperature":0.7,"max_tokens":100})";

TEST(CacheKey, IsHexSha256) {
  auto k = keyOf(kBase);
  EXPECT_EQ(64u, k.size());
  EXPECT_EQ(std::string::npos, k.find_first_not_of("0123456789abcdef"));
}

TEST(CacheKey, FieldOrderWhitespaceAndNumberSpellingDoNotChangeIt) {
  auto k = keyOf(kBase);
  EXPECT_EQ(k, keyOf(R"({ "max_tokens" : 100, "temperature": 0.70,
      "messages": [ { "content": "Hi", "role": "user" } ], "model": "gpt-4o-mini" })"));
  EXPECT_EQ(k, keyOf(R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"temperature":7e-1,"max_tokens":100.0})"));
  EXPECT_EQ(k, keyOf(R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"\u0048i"}],"temperature":0.7,"max_tokens":1e2})"));
}

TEST(CacheKey, StreamFlagAndBookkeepingFieldsDoNotChangeIt) {
  auto k = keyOf(kBase);
  EXPECT_EQ(k, keyOf(R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"temperature":0.7,"max_tokens":100,
      "stream":true,"stream_options":{"include_usage":true},"user":"alice","metadata":{"a":"b"},"store":false,"n":1,
      "service_tier":"auto","prompt_cache_key":"x"})"));
}

TEST(CacheKey, WhatChangesTheAnswerChangesIt) {
  auto k = keyOf(kBase);
  EXPECT_NE(k, keyOf(R"({"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}],"temperature":0.7,"max_tokens":100})"));
  EXPECT_NE(k, keyOf(R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi!"}],"temperature":0.7,"max_tokens":100})"));
  EXPECT_NE(k, keyOf(R"({"model":"gpt-4o-mini","messages":[{"role":"system","content":"Hi"}],"temperature":0.7,"max_tokens":100})"));
  EXPECT_NE(k, keyOf(R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"temperature":0.8,"max_tokens":100})"));
  EXPECT_NE(k, keyOf(R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"temperature":0.7,"max_tokens":101})"));
  EXPECT_NE(k, keyOf(R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"temperature":0.7})"));
  EXPECT_NE(k, keyOf(R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"temperature":0.7,"max_tokens":100,"seed":1})"));
  EXPECT_NE(k, keyOf(R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"temperature":0.7,"max_tokens":100,
      "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]})"));
  // Message order matters (arrays are not sorted).
  EXPECT_NE(keyOf(R"({"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]})"),
            keyOf(R"({"model":"m","messages":[{"role":"user","content":"b"},{"role":"user","content":"a"}]})"));
}

TEST(CacheKey, NamespacesAndFormatsAreIsolated) {
  EXPECT_NE(keyOf(kBase, "vk:1"), keyOf(kBase, "vk:2"));
  EXPECT_NE(keyOf(kBase, "vk:1"), keyOf(kBase, "master"));
  EXPECT_EQ(keyOf(kBase, "vk:1"), keyOf(kBase, namespaceFor(1)));
  EXPECT_EQ("master", namespaceFor(std::nullopt));
  EXPECT_EQ("shared", namespaceFor(7, true));
  // A namespace cannot spill into the body: lengths are part of what is hashed.
  EXPECT_NE(keyOf(kBase, "a"), keyOf(kBase, "a\n"));
  EXPECT_NE(keyOf(R"({"model":"m","max_tokens":5})", "vk:1", Format::OpenAIChat),
            keyOf(R"({"model":"m","max_tokens":5})", "vk:1", Format::AnthropicMessages));
}

TEST(CacheKey, UncacheableRequestsSayWhy) {
  EXPECT_NE("", whyNot("not json"));
  EXPECT_NE("", whyNot("[1,2]"));
  EXPECT_NE(std::string::npos, whyNot(R"({"model":"m","messages":[],"n":2})").find("n > 1"));
  EXPECT_NE(std::string::npos, whyNot(R"({"model":"m","messages":[],"logprobs":true})").find("logprobs"));
  EXPECT_NE("", whyNot(R"({"model":"m","messages":[],"modalities":["text","audio"]})"));
  EXPECT_NE("", whyNot(R"({"model":"m","input":"x","previous_response_id":"resp_1"})", Format::OpenAIResponses));
  EXPECT_NE("", whyNot(R"({"model":"m","input":"x","tools":[{"type":"web_search"}]})", Format::OpenAIResponses));
  EXPECT_NE("", whyNot(R"({"model":"m","max_tokens":5,"messages":[],"tools":[{"type":"web_search_20250305","name":"web_search"}]})",
                       Format::AnthropicMessages));
  EXPECT_NE("", whyNot(R"({"contents":[],"generationConfig":{"candidateCount":2}})", Format::GeminiGenerate));
  EXPECT_NE("", whyNot(R"({"contents":[],"tools":[{"googleSearch":{}}]})", Format::GeminiGenerate));
  EXPECT_NE("", whyNot(R"({"contents":[],"cachedContent":"cachedContents/1"})", Format::GeminiGenerate));
  // Sampling does not make a request uncacheable (the caller opted into caching).
  keyOf(R"({"model":"m","messages":[],"temperature":1.5,"top_p":0.9})");
}

TEST(CacheKey, AnthropicCacheControlAndMetadataDoNotCount) {
  auto k = keyOf(R"({"model":"claude","max_tokens":10,"system":[{"type":"text","text":"S"}],
      "messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
      "tools":[{"name":"t","input_schema":{"type":"object"}}]})", "vk:1", Format::AnthropicMessages);
  EXPECT_EQ(k, keyOf(R"({"model":"claude","max_tokens":10,"stream":true,"metadata":{"user_id":"u"},
      "system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],
      "messages":[{"role":"user","content":[{"type":"text","text":"Hi","cache_control":{"type":"ephemeral"}}]}],
      "tools":[{"name":"t","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}]})",
                     "vk:1", Format::AnthropicMessages));
  // ...but cache_control inside a tool's schema is the schema's business.
  EXPECT_NE(keyOf(R"({"model":"c","max_tokens":1,"messages":[],"tools":[{"name":"t","input_schema":{"properties":{"cache_control":{}}}}]})",
                  "vk:1", Format::AnthropicMessages),
            keyOf(R"({"model":"c","max_tokens":1,"messages":[],"tools":[{"name":"t","input_schema":{"properties":{}}}]})",
                  "vk:1", Format::AnthropicMessages));
}

TEST(CacheKey, GeminiTakesTheModelFromThePath) {
  std::string_view body = R"({"contents":[{"role":"user","parts":[{"text":"Hi"}]}],"generationConfig":{"temperature":0.2}})";
  auto flash = keyOf(body, "vk:1", Format::GeminiGenerate, "gemini-2.5-flash");
  EXPECT_NE(flash, keyOf(body, "vk:1", Format::GeminiGenerate, "gemini-2.5-pro"));
  EXPECT_EQ(flash, keyOf(R"({"generationConfig":{"candidateCount":1,"temperature":0.2},"labels":{"team":"x"},
      "contents":[{"parts":[{"text":"Hi"}],"role":"user"}]})", "vk:1", Format::GeminiGenerate, "gemini-2.5-flash"));
}

TEST(CacheKey, CanonicalTextIsSortedAndCompact) {
  std::string why;
  EXPECT_EQ(R"({"a":[1,2.5,{"x":true,"y":null}],"model":"m"})",
            canonicalRequestText(Format::OpenAIChat, R"({ "model":"m", "stream":false, "a":[1.0, 2.5, {"y":null,"x":true}] })",
                                 {}, &why));
}

}  // namespace cache_key_test
}  // namespace
}  // namespace sluice::cache
