// OAuthToken: a service account's RS256 assertion verified with its public key, claim by claim;
// key files that cannot work refused with a reason; token answers (Google's, Entra's, errors) and
// when a token is refreshed.
#include "cloud/OAuthToken.hpp"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <boost/json.hpp>

#include "redact/Base64Url.hpp"

namespace oauth_token_test {
using namespace sluice::cloud;
namespace json = boost::json;

struct Key {
  EVP_PKEY* pkey = nullptr;
  std::string pem;
  ~Key() { EVP_PKEY_free(pkey); }
};

std::unique_ptr<Key> makeKey(bool rsa = true) {
  auto k = std::make_unique<Key>();
  k->pkey = rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, k->pkey, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  k->pem.assign(data, static_cast<size_t>(n));
  BIO_free(bio);
  return k;
}

std::string keyFile(const std::string& pem, std::string token_uri = "https://oauth2.googleapis.com/token") {
  return json::serialize(json::object{{"type", "service_account"},
                                      {"project_id", "my-project"},
                                      {"private_key_id", "abc123"},
                                      {"private_key", pem},
                                      {"client_email", "sluice@my-project.iam.gserviceaccount.com"},
                                      {"token_uri", token_uri}});
}

std::string decode(std::string_view b64) {
  auto d = sluice::redact::detail::decodeB64Url(b64);
  return d.value_or("(not base64url)");
}

TEST(OAuthTokenTest, AssertionIsAnRs256JwtTheAccountsPublicKeyVerifies) {
  auto key = makeKey();
  std::string why;
  auto sa = ServiceAccount::parse(keyFile(key->pem), &why);
  ASSERT_TRUE(sa) << why;
  EXPECT_EQ(sa->clientEmail(), "sluice@my-project.iam.gserviceaccount.com");
  EXPECT_EQ(sa->projectId(), "my-project");
  std::string jwt = sa->assertion("https://www.googleapis.com/auth/cloud-platform", 1764850000);
  size_t a = jwt.find('.'), b = jwt.rfind('.');
  ASSERT_NE(a, b);
  json::value header = json::parse(decode(jwt.substr(0, a)));
  json::value claims = json::parse(decode(jwt.substr(a + 1, b - a - 1)));
  EXPECT_EQ(header.at("alg"), "RS256");
  EXPECT_EQ(header.at("typ"), "JWT");
  EXPECT_EQ(header.at("kid"), "abc123");
  EXPECT_EQ(claims.at("iss"), "sluice@my-project.iam.gserviceaccount.com");
  EXPECT_EQ(claims.at("aud"), "https://oauth2.googleapis.com/token");
  EXPECT_EQ(claims.at("scope"), "https://www.googleapis.com/auth/cloud-platform");
  EXPECT_EQ(claims.at("iat").as_int64(), 1764850000);
  EXPECT_EQ(claims.at("exp").as_int64(), 1764850000 + 3600);

  std::string input = jwt.substr(0, b), sig = decode(jwt.substr(b + 1));
  auto verify = [&](std::string_view signed_input) {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key->pkey);
    int ok = EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                              reinterpret_cast<const unsigned char*>(signed_input.data()), signed_input.size());
    EVP_MD_CTX_free(ctx);
    return ok == 1;
  };
  EXPECT_TRUE(verify(input));
  std::string tampered = input;
  tampered[tampered.size() - 2] ^= 1;
  EXPECT_FALSE(verify(tampered));

  std::string body = sa->tokenRequestBody("https://www.googleapis.com/auth/cloud-platform", 1764850000);
  EXPECT_EQ(body.rfind("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=", 0), 0u);
  EXPECT_EQ(body.substr(body.find("assertion=") + 10)
                .find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."),
            std::string::npos);
}

TEST(OAuthTokenTest, KeyFilesThatCannotWorkAreRefusedWithAReason) {
  auto rsa = makeKey();
  auto ec = makeKey(false);
  struct Case {
    std::string file;
    const char* why;
  };
  std::vector<Case> cases = {
      {"not json", "not one"},
      {"[1]", "not one"},
      {R"({"type":"authorized_user"})", "service_account"},
      {json::serialize(
           json::object{{"type", "service_account"}, {"private_key", rsa->pem}, {"token_uri", "https://t"}}),
       "client_email"},
      {keyFile(rsa->pem, "file:///etc/passwd"), "token_uri"},
      {keyFile(rsa->pem, "https://t\r\nX: y"), "token_uri"},
      {keyFile("-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n"), "not a PEM private key"},
      {keyFile(ec->pem), "not an RSA key"},
  };
  for (const auto& c : cases) {
    std::string why;
    EXPECT_FALSE(ServiceAccount::parse(c.file, &why)) << c.file;
    EXPECT_NE(why.find(c.why), std::string::npos) << why;
  }
}

TEST(OAuthTokenTest, TokenAnswers) {
  std::string why;
  auto g = parseTokenResponse(R"({"access_token":"ya29.abc","expires_in":3599,"token_type":"Bearer"})", 1000, &why);
  ASSERT_TRUE(g) << why;
  EXPECT_EQ(g->token, "ya29.abc");
  EXPECT_EQ(g->expires_at, 4599);
  auto entra = parseTokenResponse(R"({"token_type":"Bearer","expires_in":"3599","access_token":"eyJ0"})", 0, &why);
  ASSERT_TRUE(entra) << why;
  EXPECT_EQ(entra->expires_at, 3599);

  EXPECT_FALSE(
      parseTokenResponse(R"({"error":"invalid_grant","error_description":"Invalid JWT Signature."})", 0, &why));
  EXPECT_EQ(why, "the token endpoint refused: invalid_grant (Invalid JWT Signature.)");
  for (std::string_view bad : {R"(not json)", R"({"expires_in":3600})", R"({"access_token":"a b","expires_in":3600})",
                               R"({"access_token":"ok\r\nX: y","expires_in":3600})", R"({"access_token":"ok"})",
                               R"({"access_token":"ok","expires_in":0})", R"({"access_token":"ok","expires_in":"12a"})",
                               R"({"access_token":"ok","expires_in":-5})"}) {
    why.clear();
    EXPECT_FALSE(parseTokenResponse(bad, 0, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
}

TEST(OAuthTokenTest, RefreshedAMarginBeforeExpiry) {
  AccessToken hour{"t", 10000 + 3600, 3600};
  EXPECT_FALSE(needsRefresh(hour, 10000));
  EXPECT_FALSE(needsRefresh(hour, 10000 + 3600 - 301));
  EXPECT_TRUE(needsRefresh(hour, 10000 + 3600 - 300));
  AccessToken short_lived{"t", 1000 + 600, 600};
  EXPECT_FALSE(needsRefresh(short_lived, 1000 + 539));
  EXPECT_TRUE(needsRefresh(short_lived, 1000 + 540));
  EXPECT_TRUE(needsRefresh(AccessToken{}, 0));
}

TEST(OAuthTokenTest, EntraFormBody) {
  EXPECT_EQ(entraTokenRequestBody("client-1", "s3cr=t&x"),
            "grant_type=client_credentials&client_id=client-1&client_secret=s3cr%3Dt%26x&scope=https%3A%2F%2F"
            "cognitiveservices.azure.com%2F.default");
}

}  // namespace oauth_token_test
