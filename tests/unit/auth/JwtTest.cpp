// auth/Jwt: the IdP's discovery document, JWKS and ID tokens as Sluice reads and checks them.
// The tokens were signed once by the keys of kJwks (node's crypto, RS256 and ES256).
#include <gtest/gtest.h>

#include <boost/json/value.hpp>

#include "auth/Jwt.hpp"
#include "core/JsonText.hpp"

namespace sluice::auth {
namespace {

namespace json = boost::json;

constexpr const char* kJwks = R"({"keys":[{"kty":"EC","x":"MEU0C1DGWyowKxrcNq0sGCVc2JerPmx-Ndq6uyBtMpE","y":"nGulGvqG56ke5BMZ7BCpHpKCYj-1ShRtp_NWbTVJ0zk","crv":"P-256","kid":"ec-1","use":"sig","alg":"ES256"},{"kty":"RSA","n":"uRIgTM0dCcIPdhB5KHSItHnrRIV1QJl7tQPNjY6BOpm_k_YLLwAAdjV7UZAsJtVBKDXjBAPp24lwxmPXvEFeyZWBjO7RR_LijZSoiCROEux2WqyY066SNiMAmvYmLBLtNsqqnIY3zC1-F9y08VZWTgDHWAfrZykqx8pKUgLvscTVot4du37n_VIFcOkX6kqLtwyOCV-U1W20oi7khU7IsvqFXzRG6eTILuZplhdXnfgGDWAZ_qb9r9LNwpfr0r2cxCbyjjOc59IkrCqE0e_WokBYAIRInHDZ6cpA7ItOyxVXyVz10xttVd4H3oEveJJsUzbUURPfRJG5zCearKmReQ","e":"AQAB","kid":"rsa-1","use":"sig","alg":"RS256"}]})";
constexpr const char* kEs256 = "eyJhbGciOiJFUzI1NiIsImtpZCI6ImVjLTEifQ.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlLmNvbSIsInN1YiI6InUxIiwiYXVkIjpbInNsdWljZSIsIm90aGVyIl0sImF6cCI6InNsdWljZSIsImV4cCI6MTcwMDAwMDMwMCwiaWF0IjoxNzAwMDAwMDAwLCJub25jZSI6Im4wbmNlIiwiZW1haWwiOiJhQGIuYyIsImdyb3VwcyI6WyJmaW5hbmNlIiwicGxhdGZvcm0tYWRtaW5zIl19.KMGzbmRMayBkFucUU33K8T4BTDc7e1nO5iIZTSYO7EtiOBJjFgrGjCn89tDRpiSlWOjjhsnzsrZx8xFgdEUhUQ";
constexpr const char* kRs256 = "eyJhbGciOiJSUzI1NiIsImtpZCI6InJzYS0xIiwidHlwIjoiSldUIn0.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlLmNvbSIsInN1YiI6InUxIiwiYXVkIjpbInNsdWljZSIsIm90aGVyIl0sImF6cCI6InNsdWljZSIsImV4cCI6MTcwMDAwMDMwMCwiaWF0IjoxNzAwMDAwMDAwLCJub25jZSI6Im4wbmNlIiwiZW1haWwiOiJhQGIuYyIsImdyb3VwcyI6WyJmaW5hbmNlIiwicGxhdGZvcm0tYWRtaW5zIl19.rF7kPbKhKn6fusPg9g4j18PJjcvqBBvagkLtNxPq5XVsPQgVLSKRisWqb-Y_rci8AWXRil_OSv4sr4k_awkxqwywM2UoWBTFRnwjCoGt2eL2Rsl7IyTxO-N5mwuxfRm9F52JzRfomIzrwnSlCT8aM5uknvu9hOufgUlTHUCde6aU6xQVNrbAKsuDBLxu4vxLy0j8Y6u3imrVrCLjh7DKlQmJpisMeJOdVdubKZ1AptCZY19nGgP35290kNBJjKdmir6QuOyXj_ebwgblqrnKKfbiwgTlGCACli7FI5GtRY7eQl3KMHRSTqTYRaTowQSG_y3cHyeJR5fwnPZADiREUg";
// Their claims: iss https://idp.example.com, aud [sluice, other], azp sluice, iat 1700000000,
// exp 1700000300, nonce n0nce, groups [finance, platform-admins].

ClaimRules rules() { return ClaimRules{"https://idp.example.com", "sluice", "n0nce", 1700000100, 60}; }

std::vector<Jwk> keys() {
  std::string why;
  auto k = parseJwks(kJwks, why);
  EXPECT_TRUE(k) << why;
  return k ? *k : std::vector<Jwk>{};
}

bool verifiesWithAny(const Jwt& jwt) {
  for (const auto& k : keys())
    if (verifyJwt(jwt, k)) return true;
  return false;
}

TEST(Jwt, Rs256AndEs256TokensVerifyAndTheirClaimsPass) {
  ASSERT_EQ(keys().size(), 2u);
  for (const char* token : {kEs256, kRs256}) {
    std::string why;
    auto jwt = parseJwt(token, why);
    ASSERT_TRUE(jwt) << why;
    EXPECT_TRUE(verifiesWithAny(*jwt));
    EXPECT_EQ(checkClaims(jwt->claims, rules()), "");
  }
}

TEST(Jwt, AChangedPayloadOrSignatureDoesNotVerify) {
  std::string why;
  for (std::string token : {std::string(kEs256), std::string(kRs256)}) {
    // One character of the payload changed.
    std::string changed = token;
    const auto dot = changed.find('.');
    changed[dot + 5] = changed[dot + 5] == 'A' ? 'B' : 'A';
    auto jwt = parseJwt(changed, why);
    if (jwt) {
      EXPECT_FALSE(verifiesWithAny(*jwt));
    }
    // The signature of another token.
    std::string other = token.substr(0, token.rfind('.')) + std::string(token == kEs256 ? kRs256 : kEs256).substr(std::string(token == kEs256 ? kRs256 : kEs256).rfind('.'));
    jwt = parseJwt(other, why);
    ASSERT_TRUE(jwt);
    EXPECT_FALSE(verifiesWithAny(*jwt));
  }
}

TEST(Jwt, UnsignedAndHmacTokensAreRefused) {
  std::string why;
  EXPECT_FALSE(parseJwt("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", why));
  EXPECT_FALSE(parseJwt("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.c2ln", why));
  EXPECT_NE(why.find("none"), std::string::npos) << why;
  EXPECT_FALSE(parseJwt("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", why));
  EXPECT_FALSE(parseJwt("a.b", why));
  EXPECT_FALSE(parseJwt("a.b.c.d", why));
  EXPECT_FALSE(parseJwt("!!.!!.!!", why));
}

TEST(Jwt, ClaimChecksNameWhatIsWrong) {
  std::string why;
  auto jwt = parseJwt(kRs256, why);
  ASSERT_TRUE(jwt);
  auto with = [&](const char* name, json::value v) {
    json::object c = jwt->claims;
    if (v.is_null())
      c.erase(name);
    else
      c[name] = std::move(v);
    return checkClaims(c, rules());
  };
  EXPECT_NE(with("iss", "https://idp.example.com/").find("issuer"), std::string::npos);
  EXPECT_NE(with("aud", "other").find("not for this client"), std::string::npos);
  EXPECT_EQ(with("aud", "sluice"), "");
  EXPECT_NE(with("azp", nullptr).find("several audiences and no azp"), std::string::npos);
  EXPECT_NE(with("azp", "other").find("another client"), std::string::npos);
  EXPECT_NE(with("exp", 1700000000).find("expired"), std::string::npos);
  EXPECT_EQ(with("exp", 1700000050), "");  // within the 60 s leeway
  EXPECT_NE(with("exp", nullptr).find("no exp"), std::string::npos);
  EXPECT_NE(with("exp", "1700000300").find("no exp"), std::string::npos);
  EXPECT_NE(with("iat", 1700000500).find("future"), std::string::npos);
  EXPECT_NE(with("nonce", "n0nc3").find("nonce"), std::string::npos);
  EXPECT_NE(with("nonce", nullptr).find("nonce"), std::string::npos);
  EXPECT_NE(with("sub", "").find("no sub"), std::string::npos);
}

TEST(Jwt, RolesAreTheHighestMappedGroupElseTheDefault) {
  const std::vector<std::pair<std::string, std::string>> map = {
      {"finance", "viewer"}, {"platform-admins", "admin"}, {"ml-platform", "operator"}};
  auto withDefault = map;
  withDefault.emplace_back("*", "member");
  auto claims = [](json::value groups) { return json::object{{"groups", std::move(groups)}}; };
  EXPECT_EQ(roleFromClaims(claims(json::array{"finance", "platform-admins"}), "groups", map), "admin");
  EXPECT_EQ(roleFromClaims(claims(json::array{"ml-platform", "finance"}), "groups", map), "operator");
  EXPECT_EQ(roleFromClaims(claims("finance"), "groups", map), "viewer");
  EXPECT_EQ(roleFromClaims(claims(json::array{"contractors"}), "groups", map), std::nullopt);
  EXPECT_EQ(roleFromClaims(claims(json::array{"contractors"}), "groups", withDefault), "member");
  EXPECT_EQ(roleFromClaims(json::object{}, "groups", withDefault), "member");
  EXPECT_EQ(roleFromClaims(claims(json::array{1, nullptr, json::array{"finance"}}), "groups", map), std::nullopt);
  EXPECT_EQ(roleFromClaims(claims(json::array{"Finance"}), "groups", map), std::nullopt);  // names are exact
}

TEST(Jwt, DiscoveryNeedsTheIssuerHttpsEndpointsAndS256) {
  const std::string issuer = "https://idp.example.com/realms/acme";
  const std::string good = R"({"issuer":"https://idp.example.com/realms/acme",
    "authorization_endpoint":"https://idp.example.com/auth","token_endpoint":"https://idp.example.com/token",
    "jwks_uri":"https://idp.example.com/certs","end_session_endpoint":"https://idp.example.com/logout",
    "code_challenge_methods_supported":["plain","S256"],
    "token_endpoint_auth_methods_supported":["client_secret_post"]})";
  std::string why;
  auto d = parseDiscovery(good, issuer, why);
  ASSERT_TRUE(d) << why;
  EXPECT_EQ(d->token_endpoint, "https://idp.example.com/token");
  EXPECT_EQ(d->end_session_endpoint, "https://idp.example.com/logout");
  EXPECT_TRUE(d->client_secret_post);
  EXPECT_FALSE(parseDiscovery(good, issuer + "/", why));
  EXPECT_NE(why.find("issuer"), std::string::npos);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_FALSE(parseDiscovery(replaced("https://idp.example.com/token", "http://idp.example.com/token"), issuer, why));
  EXPECT_FALSE(parseDiscovery(replaced("\"plain\",\"S256\"", "\"plain\""), issuer, why));
  EXPECT_NE(why.find("S256"), std::string::npos);
  EXPECT_FALSE(parseDiscovery("[]", issuer, why));
  auto basic = parseDiscovery(replaced("[\"client_secret_post\"]", "[\"client_secret_basic\",\"client_secret_post\"]"), issuer, why);
  ASSERT_TRUE(basic);
  EXPECT_FALSE(basic->client_secret_post);
}

TEST(Jwt, JwksSkipsKeysItCannotUse) {
  std::string why;
  auto k = parseJwks(R"({"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"},{"kty":"oct","k":"c2VjcmV0"},
    {"kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA"},{"kty":"EC","crv":"P-521"},"x",
    {"kty":"RSA","use":"enc","n":"AQAB","e":"AQAB"}]})", why);
  ASSERT_TRUE(k);
  EXPECT_TRUE(k->empty());
  EXPECT_FALSE(parseJwks(R"({"keys":{}})", why));
  EXPECT_FALSE(parseJwks("not json", why));
}

TEST(Jwt, PkceChallengeIsRfc7636sExample) {
  // RFC 7636 Appendix B.
  EXPECT_EQ(pkceChallenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  EXPECT_EQ(randomToken().size(), 43u);
  EXPECT_NE(randomToken(), randomToken());
}

}  // namespace
}  // namespace sluice::auth
