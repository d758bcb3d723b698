#include "providers/UpstreamPath.hpp"

#include <gtest/gtest.h>

namespace sluice::providers {
namespace {
namespace upstream_path_test {

using config::ChannelType;

std::string encoded(std::string_view v) {
  std::string out;
  appendEncoded(out, v);
  return out;
}

TEST(UpstreamPath, EncodesAllButUnreserved) {
  EXPECT_EQ(encoded("gemini-2.5-flash_x~"), "gemini-2.5-flash_x~");
  EXPECT_EQ(encoded("a/b"), "a%2Fb");
  EXPECT_EQ(encoded("v1:0"), "v1%3A0");
  EXPECT_EQ(encoded("x?k=1#f%"), "x%3Fk%3D1%23f%25");
  EXPECT_EQ(encoded("a b\r\n"), "a%20b%0D%0A");
  EXPECT_EQ(encoded(std::string_view("\0\xff", 2)), "%00%FF");
  EXPECT_EQ(encoded("."), "%2E");
  EXPECT_EQ(encoded(".."), "%2E%2E");
  EXPECT_EQ(encoded("..."), "...");
}

TEST(UpstreamPath, PercentDecodeIsStrict) {
  EXPECT_EQ(percentDecode("a%2Fb%2f+").value(), "a/b/+");
  EXPECT_FALSE(percentDecode("%").has_value());
  EXPECT_FALSE(percentDecode("a%2").has_value());
  EXPECT_FALSE(percentDecode("%zz").has_value());
  EXPECT_EQ(percentDecode("%00").value(), std::string(1, '\0'));
}

TEST(UpstreamPath, PathChannelsTakeOneSegment) {
  EXPECT_FALSE(pathModelProblem(ChannelType::Gemini, "gemini-2.5-flash").has_value());
  EXPECT_FALSE(pathModelProblem(ChannelType::Gemini, "models/gemini-2.5-flash").has_value());
  EXPECT_TRUE(pathModelProblem(ChannelType::Gemini, "models/a/b").has_value());
  EXPECT_TRUE(pathModelProblem(ChannelType::Gemini, "meta-llama/Llama-3.1-8B-Instruct").has_value());
  EXPECT_TRUE(pathModelProblem(ChannelType::Azure, "models/gpt-4o").has_value());
  EXPECT_TRUE(pathModelProblem(ChannelType::Azure, "..").has_value());  // a mapped name follows the rule too
  for (auto t : {ChannelType::OpenAI, ChannelType::OpenAICompatible, ChannelType::Mock, ChannelType::Anthropic})
    EXPECT_FALSE(pathModelProblem(t, "meta-llama/Llama-3.1-8B-Instruct").has_value());
}

TEST(UpstreamPath, ForwardsQueryValuesReEncoded) {
  EXPECT_EQ(forwardQuery("").query, "");
  EXPECT_EQ(forwardQuery("beta=true").query, "beta=true");
  EXPECT_EQ(forwardQuery("alt=sse&key=secret").query, "alt=sse");
  EXPECT_EQ(forwardQuery("%6Bey=secret&alt=sse").query, "alt=sse");
  EXPECT_EQ(forwardQuery("a=x#y&&b=1/2?3").query, "a=x%23y&b=1%2F2%3F3");
  EXPECT_EQ(forwardQuery("a=b+c%20d").query, "a=b%20c%20d");
  EXPECT_EQ(forwardQuery("flag&=v").query, "flag");
  EXPECT_EQ(forwardQuery("q=\xc3\xa9").query, "q=%C3%A9");
  EXPECT_FALSE(forwardQuery("a=%0d%0aHost:%20evil").problem.empty());
  EXPECT_FALSE(forwardQuery("a=%00").problem.empty());
  EXPECT_FALSE(forwardQuery("a=%zz").problem.empty());
  EXPECT_FALSE(forwardQuery("%=1").problem.empty());
  EXPECT_TRUE(forwardQuery("a=%zz").query.empty());
}

// Bedrock: the model id is one encoded segment (':' and an ARN's '/' too), whatever the
// client's op and query; the stream is converse-stream.
TEST(UpstreamPath, BedrockConverseTargets) {
  TargetParts t;
  t.type = config::ChannelType::Bedrock;
  t.translated = true;
  t.op = "/chat/completions";
  t.query = "a=1";
  t.model = "anthropic.claude-3-5-sonnet-20241022-v2:0";
  EXPECT_EQ(upstreamTarget(t), "/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse");
  t.stream = true;
  EXPECT_EQ(upstreamTarget(t), "/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse-stream");
  t.stream = false;
  t.model = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0";
  EXPECT_EQ(upstreamTarget(t),
            "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-5-haiku-"
            "20241022-v1%3A0/converse");
  t.model = "../x?y#z";
  t.base_path = "/proxy";
  EXPECT_EQ(upstreamTarget(t), "/proxy/model/..%2Fx%3Fy%23z/converse");
  EXPECT_FALSE(pathModelProblem(config::ChannelType::Bedrock, "a/b").has_value());
}

// Vertex AI: project, location and model are one segment each; the publisher and method follow
// from the model (Claude: anthropic rawPredict / streamRawPredict; else google generateContent).
TEST(UpstreamPath, VertexTargets) {
  TargetParts t;
  t.type = config::ChannelType::Vertex;
  t.project = "my-project";
  t.location = "us-central1";
  t.translated = true;
  t.op = "/chat/completions";
  t.query = "a=1";
  t.model = "gemini-2.5-flash";
  EXPECT_EQ(upstreamTarget(t),
            "/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent");
  t.stream = true;
  EXPECT_EQ(upstreamTarget(t), "/v1/projects/my-project/locations/us-central1/publishers/google/models/"
                               "gemini-2.5-flash:streamGenerateContent?alt=sse");
  // A Gemini client's own call: its method and (re-encoded) query as they are.
  t.translated = false;
  t.op = "streamGenerateContent";
  t.query = "alt=sse";
  EXPECT_EQ(upstreamTarget(t), "/v1/projects/my-project/locations/us-central1/publishers/google/models/"
                               "gemini-2.5-flash:streamGenerateContent?alt=sse");
  // Claude: rawPredict, no query whatever the client sent; '@' stays as Google's clients send it.
  t.model = "claude-sonnet-4@20250514";
  t.op = "/v1/messages";
  t.stream = false;
  EXPECT_EQ(upstreamTarget(t), "/v1/projects/my-project/locations/us-central1/publishers/anthropic/models/"
                               "claude-sonnet-4@20250514:rawPredict");
  t.stream = true;
  t.translated = true;
  EXPECT_EQ(upstreamTarget(t), "/v1/projects/my-project/locations/us-central1/publishers/anthropic/models/"
                               "claude-sonnet-4@20250514:streamRawPredict");
  t.base_path = "/proxy";
  t.location = "global";
  EXPECT_EQ(upstreamTarget(t),
            "/proxy/v1/projects/my-project/locations/global/publishers/anthropic/models/claude-sonnet-4@20250514:"
            "streamRawPredict");
}

// The attack table for the model in a vertex path: whatever the name, it never adds a segment,
// a query, a fragment or a method; the names that would are refused before routing.
TEST(UpstreamPath, VertexModelCannotWalkThePath) {
  using config::ChannelType;
  for (const char* bad : {"../../admin", "gemini/../x", "a/b", "gemini-2.5-flash:streamRawPredict", "x:y", "..", ".",
                          "@", "gemini?alt=json", "gemini#frag", "gemini%2F..", "gemini\r\nHost: evil", "gem ini",
                          "gemini\\x"}) {
    EXPECT_TRUE(pathModelProblem(ChannelType::Vertex, bad).has_value()) << bad;
  }
  for (const char* good : {"gemini-2.5-flash", "claude-sonnet-4@20250514", "claude-3-5-haiku@20241022",
                           "gemini-2.0-flash-001"})
    EXPECT_FALSE(pathModelProblem(ChannelType::Vertex, good).has_value()) << good;
  // Even a name that escaped the check stays one encoded segment.
  TargetParts t;
  t.type = ChannelType::Vertex;
  t.project = "p";
  t.location = "l";
  t.translated = true;
  t.model = "../x?y#z:w";
  EXPECT_EQ(upstreamTarget(t), "/v1/projects/p/locations/l/publishers/google/models/..%2Fx%3Fy%23z%3Aw:generateContent");
  t.model = "..";
  EXPECT_EQ(upstreamTarget(t), "/v1/projects/p/locations/l/publishers/google/models/..:generateContent");
  EXPECT_TRUE(vertexAnthropic("claude-opus-4"));
  EXPECT_FALSE(vertexAnthropic("gemini-claude"));
}

TEST(UpstreamPath, BuildsEachProvidersTarget) {
  TargetParts t;
  t.base_path = "/v1";
  t.type = ChannelType::OpenAI;
  t.op = "/chat/completions";
  t.model = "meta-llama/Llama-3.1-8B-Instruct";  // in the body, not the path
  t.query = "a=1";
  EXPECT_EQ(upstreamTarget(t), "/v1/chat/completions?a=1");
  t.translated = true;
  EXPECT_EQ(upstreamTarget(t), "/v1/chat/completions");
  // A ChatGPT subscription: translated to the Responses API of the Codex endpoint.
  t.base_path = "/backend-api/codex";
  t.responses = true;
  EXPECT_EQ(upstreamTarget(t), "/backend-api/codex/responses");

  t = TargetParts{};
  t.type = ChannelType::Gemini;
  t.op = "streamGenerateContent";
  t.model = "models/gemini-2.5-flash";
  t.query = "alt=sse";
  EXPECT_EQ(upstreamTarget(t), "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
  t.model = "anthropic.claude-3-5-sonnet-20240620-v1:0";
  t.query = "";
  t.op = "generateContent";
  EXPECT_EQ(upstreamTarget(t), "/v1beta/models/anthropic.claude-3-5-sonnet-20240620-v1%3A0:generateContent");
  t.translated = true;
  t.stream = true;
  t.model = "../../admin";  // never passes the checks; still one segment if it got here
  EXPECT_EQ(upstreamTarget(t), "/v1beta/models/..%2F..%2Fadmin:streamGenerateContent?alt=sse");

  t = TargetParts{};
  t.type = ChannelType::Azure;
  t.op = "/embeddings";
  t.model = "my-deploy";
  t.query = "ignored=1";
  EXPECT_EQ(upstreamTarget(t), "/openai/deployments/my-deploy/embeddings?api-version=2024-10-21");
  t.api_version = "2025-01-01-preview";
  t.translated = true;
  t.model = "..";
  EXPECT_EQ(upstreamTarget(t), "/openai/deployments/%2E%2E/chat/completions?api-version=2025-01-01-preview");

  t = TargetParts{};
  t.type = ChannelType::Anthropic;
  t.op = "/v1/messages";
  t.query = "beta=true";
  EXPECT_EQ(upstreamTarget(t), "/v1/messages?beta=true");
  t.translated = true;
  EXPECT_EQ(upstreamTarget(t), "/v1/messages");
}

}  // namespace upstream_path_test
}  // namespace
}  // namespace sluice::providers
