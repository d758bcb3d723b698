// What an OpenID Provider sends (auth/Jwt): the first byte picks the reader, the rest is its
// input: 0 the discovery document, 1 a JWKS, 2 an ID token checked against the seed JWKS (its
// signature, then its claims and the role they map to). A hostile or broken IdP controls all of it.
// Checks: no crash; an accepted discovery document names the issuer asked for and endpoints
// that are https (or http on loopback); an accepted JWT's alg is one Sluice verifies and its
// signing input is the token's first two parts; a mapped role is one of role_map's.
#include <string>
#include <string_view>

#include "FuzzUtil.hpp"
#include "auth/Jwt.hpp"

using namespace sluice;

namespace {

// The JWKS of corpus/oidc_tokens/jwks (one RSA and one P-256 key); the token seeds are signed by them.
const std::vector<auth::Jwk>& seedKeys() {
  static const std::vector<auth::Jwk> keys = [] {
    std::string why;
    auto k = auth::parseJwks(
        R"({"keys":[{"kty":"EC","x":"MEU0C1DGWyowKxrcNq0sGCVc2JerPmx-Ndq6uyBtMpE","y":"nGulGvqG56ke5BMZ7BCpHpKCYj-1ShRtp_NWbTVJ0zk","crv":"P-256","kid":"ec-1","use":"sig","alg":"ES256"},{"kty":"RSA","n":"uRIgTM0dCcIPdhB5KHSItHnrRIV1QJl7tQPNjY6BOpm_k_YLLwAAdjV7UZAsJtVBKDXjBAPp24lwxmPXvEFeyZWBjO7RR_LijZSoiCROEux2WqyY066SNiMAmvYmLBLtNsqqnIY3zC1-F9y08VZWTgDHWAfrZykqx8pKUgLvscTVot4du37n_VIFcOkX6kqLtwyOCV-U1W20oi7khU7IsvqFXzRG6eTILuZplhdXnfgGDWAZ_qb9r9LNwpfr0r2cxCbyjjOc59IkrCqE0e_WokBYAIRInHDZ6cpA7ItOyxVXyVz10xttVd4H3oEveJJsUzbUURPfRJG5zCearKmReQ","e":"AQAB","kid":"rsa-1","use":"sig","alg":"RS256"}]})",
        why);
    return k ? *k : std::vector<auth::Jwk>{};
  }();
  return keys;
}

bool goodEndpoint(const std::string& u) {
  return u.starts_with("https://") || u.starts_with("http://127.") || u.starts_with("http://localhost") ||
         u.starts_with("http://[::1]");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const unsigned mode = data[0] % 3;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string why;
  if (mode == 0) {
    const std::string issuer = "https://idp.example.com/realms/acme";
    if (auto d = auth::parseDiscovery(in, issuer, why)) {
      if (d->issuer != issuer) fuzz::fail("a discovery document of another issuer was accepted", in);
      for (const auto* u : {&d->authorization_endpoint, &d->token_endpoint, &d->jwks_uri})
        if (!goodEndpoint(*u)) fuzz::fail("a discovery endpoint that is not https was accepted", *u);
      if (!d->end_session_endpoint.empty() && !goodEndpoint(d->end_session_endpoint))
        fuzz::fail("an end_session_endpoint that is not https was kept", d->end_session_endpoint);
    } else if (why.empty()) {
      fuzz::fail("a refused discovery document has no reason", in);
    }
  } else if (mode == 1) {
    if (auto keys = auth::parseJwks(in, why)) {
      if (keys->size() > 64) fuzz::fail("more than 64 keys kept", in);
      for (const auto& k : *keys)
        if (!k.key || (k.kty != "RSA" && k.kty != "EC")) fuzz::fail("a JWK without a usable key was kept", in);
    }
  } else {
    auto jwt = auth::parseJwt(in, why);
    if (!jwt) return 0;
    if (jwt->alg != "RS256" && jwt->alg != "RS384" && jwt->alg != "RS512" && jwt->alg != "PS256" &&
        jwt->alg != "ES256" && jwt->alg != "ES384")
      fuzz::fail("a JWT with an alg Sluice does not verify was accepted", in);
    if (!in.starts_with(jwt->signing_input) || in.size() <= jwt->signing_input.size() ||
        in[jwt->signing_input.size()] != '.')
      fuzz::fail("the signing input is not the token's first two parts", in);
    for (const auto& k : seedKeys()) (void)auth::verifyJwt(*jwt, k);
    (void)auth::checkClaims(jwt->claims, auth::ClaimRules{"https://idp.example.com", "sluice", "n0nce", 1700000000, 60});
    const std::vector<std::pair<std::string, std::string>> map = {
        {"platform-admins", "admin"}, {"ml-platform", "operator"}, {"finance", "viewer"}, {"*", "member"}};
    if (auto role = auth::roleFromClaims(jwt->claims, "groups", map)) {
      if (*role != "admin" && *role != "operator" && *role != "viewer" && *role != "member")
        fuzz::fail("a role not in role_map", *role);
    }
  }
  return 0;
}
