// The mock's OAuth token endpoints (mock/OAuthMock.hpp) on hostile input. Input: [mode] + bytes.
// Mode 0: the bytes are a jwt-bearer form body; none may be accepted (the fuzzer cannot sign
// with the account's key, made here at start). Mode 1: the bytes are an assertion's claims,
// signed here with the account's key: accepted exactly when the claims name the account, this
// endpoint, the cloud-platform scope and a live lifetime of at most an hour. Mode 2: the bytes
// are an Entra client-credentials form: a token only for the known client id and secret, the
// client_credentials grant and the Cognitive Services scope. Never a crash; a refusal says why.
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <boost/json.hpp>

#include <string>

#include "FuzzUtil.hpp"
#include "core/JsonText.hpp"
#include "mock/OAuthMock.hpp"
#include "redact/Base64Url.hpp"

using namespace sluice;

namespace {

constexpr std::int64_t kNow = 1'700'000'000;
constexpr std::string_view kAudience = "http://127.0.0.1:9000/token";
constexpr std::string_view kEmail = "fuzz@p.iam.gserviceaccount.com";

struct Fixture {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  std::vector<mock::GoogleAccount> accounts;
  mock::OAuthMock oauth;
  static std::vector<mock::GoogleAccount> account(EVP_PKEY* key) {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    const std::string pem(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    const std::string json = boost::json::serialize(boost::json::object{
        {"type", "service_account"}, {"client_email", kEmail}, {"private_key", pem}, {"token_uri", kAudience}});
    auto a = mock::googleAccountFromJson(json, nullptr);
    if (!a) fuzz::fail("the fixture's account does not parse");
    return {*a};
  }
  Fixture() : accounts(account(key)), oauth(accounts, {"app:s3cret"}, 60) {}
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

std::string b64(std::string_view s) {
  std::string out;
  redact::detail::appendB64Url(out, reinterpret_cast<const unsigned char*>(s.data()), s.size());
  return out;
}

std::string sign(std::string_view input) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::size_t len = 0;
  std::string sig;
  if (EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, fixture().key) == 1 &&
      EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1) {
    sig.resize(len);
    EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                   reinterpret_cast<const unsigned char*>(input.data()), input.size());
    sig.resize(len);
  }
  EVP_MD_CTX_free(ctx);
  return sig;
}

// What the claims must hold for a signed assertion to be accepted.
bool claimsAcceptable(std::string_view claims) {
  boost::system::error_code ec;
  auto v = sluice::parseJson(claims, ec);
  if (ec || !v.is_object()) return false;
  const auto& o = v.get_object();
  auto s = [&](const char* k) -> std::string {
    const auto* x = o.if_contains(k);
    return x && x->is_string() ? std::string(x->get_string()) : std::string("\x01");
  };
  auto i = [&](const char* k) -> std::optional<std::int64_t> {
    const auto* x = o.if_contains(k);
    constexpr std::int64_t kMax = std::int64_t{1} << 62;
    if (x && x->is_int64() && x->get_int64() > -kMax && x->get_int64() < kMax) return x->get_int64();
    if (x && x->is_uint64() && x->get_uint64() < static_cast<std::uint64_t>(kMax))
      return static_cast<std::int64_t>(x->get_uint64());
    return std::nullopt;
  };
  const std::string scope = " " + s("scope") + " ";
  auto iat = i("iat"), exp = i("exp");
  return s("iss") == kEmail && s("aud") == kAudience &&
         scope.find(" https://www.googleapis.com/auth/cloud-platform ") != std::string::npos && iat && exp &&
         *iat <= kNow + 60 && *exp > kNow && *exp - *iat <= 3600;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  Fixture& f = fixture();
  switch (data[0] % 3) {
    case 0: {
      auto why = mock::verifyJwtBearer(in, f.accounts, kNow, kAudience);
      if (!why) fuzz::fail("an assertion the account did not sign was accepted", in);
      if (why->empty()) fuzz::fail("a refusal without a reason");
      mock::parseForm(in);
      if (f.oauth.validBearer(in, kNow)) fuzz::fail("a bearer the mock never issued is valid", in);
      break;
    }
    case 1: {
      const std::string input = b64(R"({"alg":"RS256","typ":"JWT"})") + "." + b64(in);
      const std::string jwt = input + "." + b64(sign(input));
      const std::string form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + jwt;
      const bool accepted = !mock::verifyJwtBearer(form, f.accounts, kNow, kAudience).has_value();
      if (accepted != claimsAcceptable(in)) fuzz::fail(accepted ? "claims accepted that break a rule" : "good claims refused", in);
      break;
    }
    default: {
      const mock::OAuthMock::Answer a = f.oauth.entra("tenant", in, kNow);
      auto form = mock::parseForm(in);
      auto get = [&](const char* k) {
        if (!form) return std::string("\x01");
        auto it = form->find(k);
        return it == form->end() ? std::string("\x01") : it->second;
      };
      const bool should = form && get("grant_type") == "client_credentials" && get("client_id") == "app" &&
                          get("client_secret") == "s3cret" && get("scope") == "https://cognitiveservices.azure.com/.default";
      if ((a.status == 200) != should) fuzz::fail("an Entra answer that does not follow the form", in);
      boost::system::error_code ec;
      sluice::parseJson(a.body, ec);
      if (ec) fuzz::fail("an answer that is not JSON", a.body);
      if (a.status == 200) {
        auto v = sluice::parseJson(a.body, ec);
        const std::string tok(v.as_object().at("access_token").as_string());
        if (!f.oauth.validBearer("Bearer " + tok, kNow)) fuzz::fail("an issued token is not valid");
        if (f.oauth.validBearer("Bearer " + tok, kNow + 60 + 31)) fuzz::fail("a token valid past its lifetime and grace");
      }
    }
  }
  return 0;
}
