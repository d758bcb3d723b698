// The signing stage's header lines (stages/SigningStage.cpp) against the mock's SigV4 verifier,
// which rebuilds the canonical request from the request as received (mock/BedrockMock.cpp): the
// lines verify for the exact target, body and key signed, and for nothing else. The signer itself
// replays AWS's published suite in tests/unit/cloud/SigV4Test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cloud/SigV4.hpp"
#include "gateway/stages/Stages.hpp"
#include "http/Server.hpp"
#include "mock/BedrockMock.hpp"
#include "routing/Router.hpp"

namespace sluice::gateway {
namespace {

namespace bhttp = boost::beast::http;
constexpr long long kNow = 1700000000;

routing::Channel bedrockChannel() {
  routing::Channel ch;
  ch.cfg.name = "bedrock";
  ch.cfg.type = config::ChannelType::Bedrock;
  ch.cfg.region = "us-east-1";
  ch.endpoint.host_header = "bedrock-runtime.us-east-1.amazonaws.com";
  return ch;
}

// A request as the relay sends it: the target, the Host, the stage's lines, the body.
http::Request requestWith(const std::string& target, const std::string& lines, const std::string& body) {
  http::Request req{bhttp::verb::post, target, 11};
  req.set(bhttp::field::host, "bedrock-runtime.us-east-1.amazonaws.com");
  std::string_view rest = lines;
  while (!rest.empty()) {
    const auto end = rest.find("\r\n");
    const std::string_view line = rest.substr(0, end);
    const auto colon = line.find(':');
    req.insert(line.substr(0, colon), line.substr(colon + 2));
    rest.remove_prefix(end + 2);
  }
  req.body() = body;
  return req;
}

TEST(SigningStage, LinesVerifyForWhatWasSignedOnly) {
  const auto ch = bedrockChannel();
  const auto key = *cloud::parseAwsKey("AKIAEXAMPLEKEY000001:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
  const std::vector<cloud::AwsCredentials> keys{key};
  const std::string target = "/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse";
  const std::string body = R"({"messages":[{"role":"user","content":[{"text":"hi"}]}]})";
  const std::string lines = signedHeaderLines(ch, key, target, body, kNow);
  EXPECT_EQ(lines.rfind("Authorization: AWS4-HMAC-SHA256 Credential=AKIAEXAMPLEKEY000001/20231114/us-east-1/bedrock/"
                        "aws4_request, SignedHeaders=host;x-amz-date, Signature=",
                        0),
            0u)
      << lines;
  EXPECT_NE(lines.find("\r\nX-Amz-Date: 20231114T221320Z\r\n"), std::string::npos) << lines;
  EXPECT_EQ(lines.find("wJalrXUtnFEMI"), std::string::npos) << "the secret never leaves the signer";
  EXPECT_FALSE(mock::bedrock::verifySignature(requestWith(target, lines, body), keys, kNow).has_value());

  // Anything else than what was signed is refused: the body, the path, the key, the clock.
  auto refused = [&](const http::Request& r, const std::vector<cloud::AwsCredentials>& ks, long long now) {
    auto e = mock::bedrock::verifySignature(r, ks, now);
    return e ? e->type : std::string("verified");
  };
  EXPECT_EQ(refused(requestWith(target, lines, body + " "), keys, kNow), "InvalidSignatureException");
  EXPECT_EQ(refused(requestWith("/model/anthropic.claude-3-5-sonnet-20241022-v2%3A1/converse", lines, body), keys, kNow),
            "InvalidSignatureException");
  const auto other = *cloud::parseAwsKey("AKIAEXAMPLEKEY000001:anotherSecretOfTheSameKeyId0000000000000");
  EXPECT_EQ(refused(requestWith(target, lines, body), {other}, kNow), "InvalidSignatureException");
  EXPECT_EQ(refused(requestWith(target, lines, body), keys, kNow + 3600), "InvalidSignatureException");
  const auto unknown = *cloud::parseAwsKey("AKIAUNKNOWN000000000:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
  EXPECT_EQ(refused(requestWith(target, lines, body), {unknown}, kNow), "UnrecognizedClientException");
  EXPECT_EQ(refused(requestWith(target, "", body), keys, kNow), "MissingAuthenticationTokenException");
}

TEST(SigningStage, SessionTokenIsSignedAndSent) {
  const auto ch = bedrockChannel();
  const auto key = *cloud::parseAwsKey("ASIAEXAMPLETEMP00001:tempSecret/0000000000000000000000000000:FwoGZXIvYXdzEXAMPLE/+token==");
  const std::string target = "/model/amazon.nova-pro-v1%3A0/converse-stream";
  const std::string lines = signedHeaderLines(ch, key, target, "{}", kNow);
  EXPECT_NE(lines.find("SignedHeaders=host;x-amz-date;x-amz-security-token, "), std::string::npos) << lines;
  EXPECT_NE(lines.find("\r\nX-Amz-Security-Token: FwoGZXIvYXdzEXAMPLE/+token==\r\n"), std::string::npos) << lines;
  EXPECT_FALSE(mock::bedrock::verifySignature(requestWith(target, lines, "{}"), {key}, kNow).has_value());
  // The same key without its token, or another token: refused.
  auto noToken = key;
  noToken.session_token.clear();
  EXPECT_TRUE(mock::bedrock::verifySignature(requestWith(target, lines, "{}"), {noToken}, kNow).has_value());
}

}  // namespace
}  // namespace sluice::gateway
