// Jwt: what an OpenID Provider sends that Sluice checks itself: the discovery document, the
// JWKS and compact-serialized ID tokens (RFC 7515/7517/7518/7519, OpenID Connect Core §3.1.3.7).
// Signatures RS256/RS384/RS512, PS256 and ES256/ES384 through OpenSSL; "none" and HMAC are
// refused (an ID token from the token endpoint is checked against the IdP's public keys only).
// Thread-safety: pure functions; a Jwk's key is immutable and may be shared between threads.
#pragma once
#include <boost/json/object.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct evp_pkey_st;

namespace sluice::auth {

// What Sluice takes from /.well-known/openid-configuration.
struct Discovery {
  std::string issuer;
  std::string authorization_endpoint;
  std::string token_endpoint;
  std::string jwks_uri;
  std::string end_session_endpoint;  // empty: no RP-initiated logout
  bool client_secret_post = false;   // the token endpoint takes only client_secret_post
};
// nullopt (and `why`) when the document is not JSON, lacks an endpoint, names another issuer
// than `expected_issuer`, or does not offer the code flow with S256.
std::optional<Discovery> parseDiscovery(std::string_view body, const std::string& expected_issuer, std::string& why);

// One public key of a JWKS.
struct Jwk {
  std::string kid;  // may be empty
  std::string kty;  // "RSA" | "EC"
  std::string alg;  // may be empty
  std::shared_ptr<evp_pkey_st> key;
};
// The usable signing keys of a JWKS (others, e.g. "use":"enc" or unknown curves, are skipped);
// nullopt (and `why`) when the body is not a JWKS at all.
std::optional<std::vector<Jwk>> parseJwks(std::string_view body, std::string& why);

// A compact JWS split and decoded, not yet verified.
struct Jwt {
  boost::json::object header;
  boost::json::object claims;
  std::string signing_input;  // "b64(header).b64(payload)"
  std::string signature;      // raw bytes
  std::string alg;
  std::string kid;
};
std::optional<Jwt> parseJwt(std::string_view token, std::string& why);

// True when `key` fits the token's alg and the signature verifies.
bool verifyJwt(const Jwt& jwt, const Jwk& key);

// What the ID token's claims must say (OpenID Connect Core §3.1.3.7).
struct ClaimRules {
  std::string issuer;
  std::string client_id;
  std::string nonce;
  std::int64_t now_s = 0;
  std::int64_t leeway_s = 60;  // clock skew allowed on exp and iat
};
// Empty when the claims pass; else what is wrong, for the error page.
std::string checkClaims(const boost::json::object& claims, const ClaimRules& rules);

// Roles from a claim holding group or role names (an array of strings, or one string):
// the highest role any of them maps to, else the "*" entry's, else nullopt.
std::optional<std::string> roleFromClaims(const boost::json::object& claims, const std::string& claim,
                                          const std::vector<std::pair<std::string, std::string>>& role_map);

// Unpadded base64url of raw bytes, and a random value of `bytes` random bytes in it.
std::string base64Url(std::string_view raw);
std::string randomToken(std::size_t bytes = 32);
// base64url(SHA-256(verifier)): the PKCE S256 code_challenge (RFC 7636 §4.2).
std::string pkceChallenge(std::string_view verifier);

}  // namespace sluice::auth
