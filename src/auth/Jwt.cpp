#include "auth/Jwt.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>

#include <fmt/format.h>
#include <boost/json/value.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "core/JsonText.hpp"
#include "redact/Base64Url.hpp"

namespace sluice::auth {

namespace json = boost::json;
using redact::detail::decodeB64Url;

namespace {

constexpr std::size_t kMaxTokenBytes = 64 * 1024;
constexpr std::size_t kMaxKeys = 64;

std::string strField(const json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

bool hasString(const json::value* v, std::string_view want) {
  if (!v || !v->is_array()) return false;
  for (const auto& e : v->as_array())
    if (e.is_string() && e.as_string() == want) return true;
  return false;
}

// An https URL (or http on loopback, as the config allows for a test IdP).
bool endpointUrl(const std::string& url) {
  auto loopback = [&](std::string_view rest) {
    return rest.starts_with("127.") || rest.starts_with("localhost") || rest.starts_with("[::1]");
  };
  if (url.size() > 2048 || !boost::urls::parse_uri(url)) return false;
  if (url.starts_with("https://")) return url.size() > 8;
  if (url.starts_with("http://")) return loopback(std::string_view(url).substr(7));
  return false;
}

struct BldFree {
  void operator()(OSSL_PARAM_BLD* b) const { OSSL_PARAM_BLD_free(b); }
};
struct ParamFree {
  void operator()(OSSL_PARAM* p) const { OSSL_PARAM_free(p); }
};
struct CtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
struct BnFree {
  void operator()(BIGNUM* b) const { BN_free(b); }
};

std::shared_ptr<EVP_PKEY> fromData(const char* type, OSSL_PARAM_BLD* bld) {
  std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(bld));
  if (!params) return nullptr;
  std::unique_ptr<EVP_PKEY_CTX, CtxFree> ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  if (!ctx || EVP_PKEY_fromdata_init(ctx.get()) <= 0) return nullptr;
  EVP_PKEY* pkey = nullptr;
  if (EVP_PKEY_fromdata(ctx.get(), &pkey, EVP_PKEY_PUBLIC_KEY, params.get()) <= 0) return nullptr;
  return {pkey, EVP_PKEY_free};
}

std::shared_ptr<EVP_PKEY> rsaKey(const json::object& k) {
  auto n = decodeB64Url(strField(k, "n"));
  auto e = decodeB64Url(strField(k, "e"));
  if (!n || !e || n->empty() || e->empty() || n->size() > 1024 || e->size() > 8) return nullptr;
  if (n->size() < 256) return nullptr;  // under 2048 bits
  std::unique_ptr<BIGNUM, BnFree> bn(
      BN_bin2bn(reinterpret_cast<const unsigned char*>(n->data()), static_cast<int>(n->size()), nullptr));
  std::unique_ptr<BIGNUM, BnFree> be(
      BN_bin2bn(reinterpret_cast<const unsigned char*>(e->data()), static_cast<int>(e->size()), nullptr));
  std::unique_ptr<OSSL_PARAM_BLD, BldFree> bld(OSSL_PARAM_BLD_new());
  if (!bn || !be || !bld) return nullptr;
  if (!OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn.get()) ||
      !OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, be.get()))
    return nullptr;
  return fromData("RSA", bld.get());
}

std::shared_ptr<EVP_PKEY> ecKey(const json::object& k) {
  const std::string crv = strField(k, "crv");
  const char* group = nullptr;
  std::size_t len = 0;
  if (crv == "P-256") {
    group = "prime256v1";
    len = 32;
  } else if (crv == "P-384") {
    group = "secp384r1";
    len = 48;
  } else {
    return nullptr;
  }
  auto x = decodeB64Url(strField(k, "x"));
  auto y = decodeB64Url(strField(k, "y"));
  if (!x || !y || x->size() != len || y->size() != len) return nullptr;
  std::string point = "\x04" + *x + *y;
  std::unique_ptr<OSSL_PARAM_BLD, BldFree> bld(OSSL_PARAM_BLD_new());
  if (!bld) return nullptr;
  if (!OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, 0) ||
      !OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()))
    return nullptr;
  return fromData("EC", bld.get());  // fails when the point is not on the curve
}

// JOSE's ECDSA signature is r || s; OpenSSL verifies DER.
std::string ecdsaDer(std::string_view raw) {
  const std::size_t half = raw.size() / 2;
  ECDSA_SIG* sig = ECDSA_SIG_new();
  if (!sig) return {};
  BIGNUM* r = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()), static_cast<int>(half), nullptr);
  BIGNUM* s = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data() + half), static_cast<int>(half), nullptr);
  if (!r || !s || ECDSA_SIG_set0(sig, r, s) != 1) {
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return {};
  }
  unsigned char* der = nullptr;
  const int n = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);
  if (n <= 0) return {};
  std::string out(reinterpret_cast<char*>(der), static_cast<std::size_t>(n));
  OPENSSL_free(der);
  return out;
}

std::optional<json::object> decodeObject(std::string_view part, std::string& why, const char* what) {
  auto raw = decodeB64Url(part);
  if (!raw) {
    why = fmt::format("the token's {} is not base64url", what);
    return std::nullopt;
  }
  boost::system::error_code ec;
  json::value v = sluice::parseJson(*raw, ec);
  if (ec || !v.is_object()) {
    why = fmt::format("the token's {} is not a JSON object", what);
    return std::nullopt;
  }
  return std::move(v.as_object());
}

// A NumericDate claim (seconds; JSON number, integer or not).
std::optional<std::int64_t> numericDate(const json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  if (!v) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64() && v->as_uint64() < (1ull << 62)) return static_cast<std::int64_t>(v->as_uint64());
  if (v->is_double() && std::isfinite(v->as_double()) && std::abs(v->as_double()) < 1e15)
    return static_cast<std::int64_t>(v->as_double());
  return std::nullopt;
}

int roleRank(std::string_view r) {
  if (r == "admin") return 3;
  if (r == "operator") return 2;
  if (r == "viewer") return 1;
  if (r == "member") return 0;
  return -1;
}

}  // namespace

std::optional<Discovery> parseDiscovery(std::string_view body, const std::string& expected_issuer, std::string& why) {
  boost::system::error_code ec;
  json::value v = sluice::parseJson(body, ec);
  if (ec || !v.is_object()) {
    why = "the discovery document is not a JSON object";
    return std::nullopt;
  }
  const auto& o = v.as_object();
  Discovery d;
  d.issuer = strField(o, "issuer");
  if (d.issuer != expected_issuer) {
    why = fmt::format("the discovery document names the issuer \"{}\", not auth.oidc.issuer \"{}\"",
                      d.issuer.substr(0, 200), expected_issuer);
    return std::nullopt;
  }
  d.authorization_endpoint = strField(o, "authorization_endpoint");
  d.token_endpoint = strField(o, "token_endpoint");
  d.jwks_uri = strField(o, "jwks_uri");
  d.end_session_endpoint = strField(o, "end_session_endpoint");
  for (auto [name, url] : {std::pair{"authorization_endpoint", &d.authorization_endpoint},
                           std::pair{"token_endpoint", &d.token_endpoint}, std::pair{"jwks_uri", &d.jwks_uri}}) {
    if (!endpointUrl(*url) || url->find('#') != std::string::npos) {
      why = fmt::format("the discovery document's {} is missing or not an https URL", name);
      return std::nullopt;
    }
  }
  if (!d.end_session_endpoint.empty() && !endpointUrl(d.end_session_endpoint)) d.end_session_endpoint.clear();
  if (const auto* rt = o.if_contains("response_types_supported"); rt && !hasString(rt, "code")) {
    why = "the IdP does not offer the authorization code flow (response_types_supported has no \"code\")";
    return std::nullopt;
  }
  if (const auto* cc = o.if_contains("code_challenge_methods_supported"); cc && !hasString(cc, "S256")) {
    why = "the IdP does not offer PKCE with S256 (code_challenge_methods_supported)";
    return std::nullopt;
  }
  // client_secret_basic is the default (RFC 8414 §2); _post only when basic is not offered.
  if (const auto* am = o.if_contains("token_endpoint_auth_methods_supported"); am && am->is_array()) {
    d.client_secret_post = !hasString(am, "client_secret_basic") && hasString(am, "client_secret_post");
  }
  return d;
}

std::optional<std::vector<Jwk>> parseJwks(std::string_view body, std::string& why) {
  boost::system::error_code ec;
  json::value v = sluice::parseJson(body, ec);
  const json::value* keys = !ec && v.is_object() ? v.as_object().if_contains("keys") : nullptr;
  if (!keys || !keys->is_array()) {
    why = "the JWKS is not a JSON object with a \"keys\" array";
    return std::nullopt;
  }
  std::vector<Jwk> out;
  for (const auto& k : keys->as_array()) {
    if (out.size() >= kMaxKeys) break;
    if (!k.is_object()) continue;
    const auto& o = k.as_object();
    if (const std::string use = strField(o, "use"); !use.empty() && use != "sig") continue;
    Jwk j;
    j.kid = strField(o, "kid");
    j.kty = strField(o, "kty");
    j.alg = strField(o, "alg");
    if (j.kty == "RSA")
      j.key = rsaKey(o);
    else if (j.kty == "EC")
      j.key = ecKey(o);
    if (j.key) out.push_back(std::move(j));
  }
  return out;
}

std::optional<Jwt> parseJwt(std::string_view token, std::string& why) {
  if (token.size() > kMaxTokenBytes) {
    why = "the ID token is too large";
    return std::nullopt;
  }
  const auto d1 = token.find('.');
  const auto d2 = d1 == std::string_view::npos ? d1 : token.find('.', d1 + 1);
  if (d2 == std::string_view::npos || token.find('.', d2 + 1) != std::string_view::npos) {
    why = "the ID token is not a signed JWT (three dot-separated parts)";
    return std::nullopt;
  }
  Jwt jwt;
  auto header = decodeObject(token.substr(0, d1), why, "header");
  if (!header) return std::nullopt;
  auto claims = decodeObject(token.substr(d1 + 1, d2 - d1 - 1), why, "payload");
  if (!claims) return std::nullopt;
  jwt.header = std::move(*header);
  jwt.claims = std::move(*claims);
  jwt.signing_input = std::string(token.substr(0, d2));
  jwt.alg = strField(jwt.header, "alg");
  jwt.kid = strField(jwt.header, "kid");
  if (jwt.header.contains("crit")) {
    why = "the ID token has critical header parameters Sluice does not know";
    return std::nullopt;
  }
  static constexpr std::array<std::string_view, 6> kAlgs = {"RS256", "RS384", "RS512", "PS256", "ES256", "ES384"};
  if (std::find(kAlgs.begin(), kAlgs.end(), jwt.alg) == kAlgs.end()) {
    why = fmt::format("the ID token's alg \"{}\" is not accepted (RS256, RS384, RS512, PS256, ES256, ES384)",
                      jwt.alg.substr(0, 32));
    return std::nullopt;
  }
  auto sig = decodeB64Url(token.substr(d2 + 1));
  if (!sig || sig->empty()) {
    why = "the ID token's signature is missing or not base64url";
    return std::nullopt;
  }
  jwt.signature = std::move(*sig);
  return jwt;
}

bool verifyJwt(const Jwt& jwt, const Jwk& key) {
  if (!key.key) return false;
  if (!key.alg.empty() && key.alg != jwt.alg) return false;
  const bool ec = jwt.alg.starts_with("ES");
  if ((ec && key.kty != "EC") || (!ec && key.kty != "RSA")) return false;
  const EVP_MD* md = jwt.alg.ends_with("384") ? EVP_sha384() : jwt.alg.ends_with("512") ? EVP_sha512() : EVP_sha256();
  std::string sig = jwt.signature;
  if (ec) {
    const std::size_t want = jwt.alg == "ES256" ? 64 : 96;
    if (sig.size() != want) return false;
    // The curve must be the alg's.
    const int bits = EVP_PKEY_get_bits(key.key.get());
    if ((jwt.alg == "ES256" && bits != 256) || (jwt.alg == "ES384" && bits != 384)) return false;
    sig = ecdsaDer(sig);
    if (sig.empty()) return false;
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (!ctx) return false;
  EVP_PKEY_CTX* pctx = nullptr;
  bool ok = EVP_DigestVerifyInit(ctx, &pctx, md, nullptr, key.key.get()) == 1;
  if (ok && jwt.alg == "PS256") {
    ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) > 0 &&
         EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) > 0;
  }
  ok = ok && EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                              reinterpret_cast<const unsigned char*>(jwt.signing_input.data()),
                              jwt.signing_input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

std::string checkClaims(const json::object& c, const ClaimRules& r) {
  if (const std::string iss = strField(c, "iss"); iss != r.issuer)
    return fmt::format("the ID token's issuer \"{}\" is not \"{}\"", iss.substr(0, 200), r.issuer);
  const json::value* aud = c.if_contains("aud");
  std::size_t audiences = 0;
  bool ours = false;
  if (aud && aud->is_string()) {
    audiences = 1;
    ours = aud->as_string() == r.client_id;
  } else if (aud && aud->is_array()) {
    for (const auto& a : aud->as_array()) {
      ++audiences;
      if (a.is_string() && a.as_string() == r.client_id) ours = true;
    }
  }
  if (!ours) return fmt::format("the ID token is not for this client (aud does not hold \"{}\")", r.client_id);
  const std::string azp = strField(c, "azp");
  if (audiences > 1 && azp.empty()) return "the ID token has several audiences and no azp";
  if (c.contains("azp") && azp != r.client_id)
    return fmt::format("the ID token was issued to another client (azp \"{}\")", azp.substr(0, 200));
  const auto exp = numericDate(c, "exp");
  if (!exp) return "the ID token has no exp";
  if (*exp + r.leeway_s <= r.now_s) return "the ID token has expired (exp)";
  const auto iat = numericDate(c, "iat");
  if (!iat) return "the ID token has no iat";
  if (*iat - r.leeway_s > r.now_s) return "the ID token was issued in the future (iat): check the clocks";
  if (const auto nbf = numericDate(c, "nbf"); nbf && *nbf - r.leeway_s > r.now_s)
    return "the ID token is not valid yet (nbf)";
  const std::string nonce = strField(c, "nonce");
  if (nonce.empty() || nonce.size() != r.nonce.size() || CRYPTO_memcmp(nonce.data(), r.nonce.data(), nonce.size()) != 0)
    return "the ID token's nonce is not the one this sign-in sent";
  if (strField(c, "sub").empty()) return "the ID token has no sub";
  return {};
}

std::optional<std::string> roleFromClaims(const json::object& claims, const std::string& claim,
                                          const std::vector<std::pair<std::string, std::string>>& role_map) {
  std::vector<std::string_view> names;
  if (const auto* v = claims.if_contains(claim)) {
    if (v->is_string()) names.emplace_back(v->as_string());
    if (v->is_array())
      for (const auto& e : v->as_array())
        if (e.is_string()) names.emplace_back(e.as_string());
  }
  int best = -1;
  std::string bestRole;
  std::optional<std::string> fallback;
  for (const auto& [group, role] : role_map) {
    if (group == "*") {
      if (!fallback) fallback = role;
      continue;
    }
    if (std::find(names.begin(), names.end(), group) != names.end() && roleRank(role) > best) {
      best = roleRank(role);
      bestRole = role;
    }
  }
  if (best >= 0) return bestRole;
  return fallback;
}

std::string base64Url(std::string_view raw) {
  std::string out;
  out.reserve(redact::detail::b64UrlEncodedLen(raw.size()));
  redact::detail::appendB64Url(out, reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
  return out;
}

std::string randomToken(std::size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1)
    throw std::runtime_error("no randomness from OpenSSL");
  return base64Url(raw);
}

std::string pkceChallenge(std::string_view verifier) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(verifier.data()), verifier.size(), digest);
  return base64Url(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

}  // namespace sluice::auth
