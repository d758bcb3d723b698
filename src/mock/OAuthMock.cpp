#include "mock/OAuthMock.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "core/JsonText.hpp"
#include "providers/UpstreamPath.hpp"
#include "redact/Base64Url.hpp"

namespace sluice::mock {

namespace json = boost::json;

namespace {

constexpr std::string_view kJwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer";
constexpr std::string_view kCloudPlatform = "https://www.googleapis.com/auth/cloud-platform";
constexpr std::string_view kCognitiveScope = "https://cognitiveservices.azure.com/.default";
constexpr std::size_t kMaxTokens = 100'000;
// A token is taken this long past the lifetime it was announced with (as a real endpoint's tokens
// outlive their expires_in a little): a request that left just before its client refreshed is
// still served, so a test sees refreshes without racing the second boundary.
constexpr std::int64_t kGraceS = 30;

std::optional<json::object> parseObjectText(std::string_view text) {
  boost::system::error_code ec;
  json::value v = sluice::parseJson(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.get_object());
}

const json::string* claimString(const json::object& o, std::string_view k) {
  const json::value* v = o.if_contains(k);
  return v && v->is_string() ? &v->get_string() : nullptr;
}

std::optional<std::int64_t> claimInt(const json::object& o, std::string_view k) {
  const json::value* v = o.if_contains(k);
  if (!v) return std::nullopt;
  // Bounded so that exp - iat cannot overflow: a time this far out is no time at all.
  constexpr std::int64_t kMax = std::int64_t{1} << 62;
  if (v->is_int64() && v->get_int64() > -kMax && v->get_int64() < kMax) return v->get_int64();
  if (v->is_uint64() && v->get_uint64() < static_cast<std::uint64_t>(kMax)) return static_cast<std::int64_t>(v->get_uint64());
  return std::nullopt;
}

bool scopeHas(std::string_view scopes, std::string_view want) {
  while (!scopes.empty()) {
    const auto sp = scopes.find(' ');
    if (scopes.substr(0, sp) == want) return true;
    if (sp == std::string_view::npos) break;
    scopes.remove_prefix(sp + 1);
  }
  return false;
}

std::string oauthError(std::string_view error, std::string_view description) {
  return json::serialize(json::object{{"error", error}, {"error_description", description}});
}

bool verifyRs256(EVP_PKEY* key, std::string_view input, std::string_view sig) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx && EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                             reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

}  // namespace

std::optional<std::map<std::string, std::string>> parseForm(std::string_view body) {
  std::map<std::string, std::string> out;
  while (!body.empty()) {
    const auto amp = body.find('&');
    const std::string_view part = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view() : body.substr(amp + 1);
    if (part.empty()) continue;
    const auto eq = part.find('=');
    auto name = providers::percentDecode(part.substr(0, eq), true);
    auto value = providers::percentDecode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1), true);
    if (!name || !value) return std::nullopt;
    out[std::move(*name)] = std::move(*value);
  }
  return out;
}

std::optional<GoogleAccount> googleAccountFromJson(std::string_view text, std::string* why) {
  auto fail = [&](std::string w) {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  auto o = parseObjectText(text);
  if (!o) return fail("not a JSON object");
  const json::string* email = claimString(*o, "client_email");
  const json::string* pem = claimString(*o, "private_key");
  const json::string* uri = claimString(*o, "token_uri");
  if (!email || !pem || !uri) return fail("it lacks client_email, private_key or token_uri");
  BIO* bio = BIO_new_mem_buf(pem->data(), static_cast<int>(pem->size()));
  EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  if (!key) return fail("its private_key is not a PEM private key");
  // Keep only the public half: what a real token endpoint holds.
  BIO* mem = BIO_new(BIO_s_mem());
  EVP_PKEY* pub = nullptr;
  if (mem && PEM_write_bio_PUBKEY(mem, key) == 1) pub = PEM_read_bio_PUBKEY(mem, nullptr, nullptr, nullptr);
  BIO_free(mem);
  EVP_PKEY_free(key);
  if (!pub) return fail("its public key could not be derived");
  return GoogleAccount{std::string(*email), std::string(*uri),
                       std::shared_ptr<void>(pub, [](void* p) { EVP_PKEY_free(static_cast<EVP_PKEY*>(p)); })};
}

std::optional<std::string> verifyJwtBearer(std::string_view form_body, const std::vector<GoogleAccount>& accounts,
                                           std::int64_t now, std::string_view audience, std::string* email) {
  auto form = parseForm(form_body);
  if (!form) return "the form body has a bad escape";
  if (auto g = form->find("grant_type"); g == form->end() || g->second != kJwtBearer)
    return "grant_type must be " + std::string(kJwtBearer);
  auto a = form->find("assertion");
  if (a == form->end() || a->second.empty()) return std::string("no assertion");
  const std::string_view jwt = a->second;
  const auto d1 = jwt.find('.');
  const auto d2 = d1 == std::string_view::npos ? d1 : jwt.find('.', d1 + 1);
  if (d2 == std::string_view::npos || jwt.find('.', d2 + 1) != std::string_view::npos)
    return std::string("the assertion is not a JWS (header.claims.signature)");
  auto header = redact::detail::decodeB64Url(jwt.substr(0, d1));
  auto claims = redact::detail::decodeB64Url(jwt.substr(d1 + 1, d2 - d1 - 1));
  auto sig = redact::detail::decodeB64Url(jwt.substr(d2 + 1));
  if (!header || !claims || !sig) return std::string("the assertion is not base64url");
  auto h = parseObjectText(*header);
  auto c = parseObjectText(*claims);
  if (!h || !c) return std::string("the assertion's header or claims are not JSON objects");
  if (const json::string* alg = claimString(*h, "alg"); !alg || *alg != "RS256") return std::string("alg must be RS256");
  const json::string* iss = claimString(*c, "iss");
  if (!iss) return std::string("no iss");
  const GoogleAccount* acct = nullptr;
  for (const auto& ga : accounts)
    if (ga.client_email == *iss) acct = &ga;
  if (!acct) return fmt::format("no such service account: {}", std::string_view(*iss).substr(0, 200));
  if (!verifyRs256(static_cast<EVP_PKEY*>(acct->public_key.get()), jwt.substr(0, d2), *sig))
    return std::string("Invalid JWT Signature.");
  if (const json::string* aud = claimString(*c, "aud"); !aud || *aud != audience)
    return "aud must be this token endpoint, " + std::string(audience.substr(0, 200));
  if (const json::string* scope = claimString(*c, "scope"); !scope || !scopeHas(*scope, kCloudPlatform))
    return "scope must include " + std::string(kCloudPlatform);
  auto iat = claimInt(*c, "iat"), exp = claimInt(*c, "exp");
  if (!iat || !exp) return std::string("iat and exp are required");
  if (*iat > now + 60) return std::string("the assertion was issued in the future");
  if (*exp <= now) return std::string("the assertion has expired");
  if (*exp - *iat > 3600) return std::string("the assertion is valid for more than an hour");
  if (email) *email = acct->client_email;
  return std::nullopt;
}

OAuthMock::OAuthMock(std::vector<GoogleAccount> accounts, std::vector<std::string> entra_clients, int lifetime_s)
    : accounts_(std::move(accounts)), entra_clients_(std::move(entra_clients)), lifetime_s_(std::max(lifetime_s, 1)) {}

std::string OAuthMock::issue(std::string_view prefix, std::int64_t now) {
  unsigned char raw[24];
  RAND_bytes(raw, sizeof raw);
  std::string token(prefix);
  redact::detail::appendB64Url(token, raw, sizeof raw);
  std::lock_guard lock(mu_);
  // Bounded: the expired go first, then (a flood of live ones) an arbitrary one; a token just
  // issued is always kept.
  if (tokens_.size() >= kMaxTokens) std::erase_if(tokens_, [now](const auto& kv) { return kv.second <= now; });
  if (tokens_.size() >= kMaxTokens) tokens_.erase(tokens_.begin());
  if (!refuse_new_) tokens_[token] = now + lifetime_s_ + kGraceS;
  return token;
}

OAuthMock::Answer OAuthMock::google(std::string_view form_body, std::string_view audience, std::int64_t now) {
  if (auto why = verifyJwtBearer(form_body, accounts_, now, audience))
    return {400, oauthError("invalid_grant", *why)};
  const std::string token = issue("ya29.mock-", now);
  return {200, json::serialize(json::object{{"access_token", token}, {"expires_in", lifetime_s_}, {"token_type", "Bearer"}})};
}

OAuthMock::Answer OAuthMock::entra(std::string_view tenant, std::string_view form_body, std::int64_t now) {
  auto form = parseForm(form_body);
  if (!form) return {400, oauthError("invalid_request", "AADSTS900144: the request body is not a form")};
  auto get = [&](const char* k) {
    auto it = form->find(k);
    return it == form->end() ? std::string() : it->second;
  };
  if (tenant.empty()) return {400, oauthError("invalid_tenant", "AADSTS90002: Tenant not found.")};
  if (get("grant_type") != "client_credentials")
    return {400, oauthError("unsupported_grant_type", "AADSTS70003: grant_type must be client_credentials")};
  if (get("scope") != kCognitiveScope)
    return {400, oauthError("invalid_scope", "AADSTS70011: the scope must be " + std::string(kCognitiveScope))};
  const std::string id = get("client_id"), secret = get("client_secret");
  bool known = false, match = false;
  for (const auto& c : entra_clients_) {
    const auto colon = c.find(':');
    if (c.substr(0, colon) != id) continue;
    known = true;
    match = match || (colon != std::string::npos && c.substr(colon + 1) == secret);
  }
  if (!known) return {400, oauthError("unauthorized_client", "AADSTS700016: Application not found in the directory.")};
  if (!match) return {401, oauthError("invalid_client", "AADSTS7000215: Invalid client secret provided.")};
  const std::string token = issue("eyJ0.mock-entra-", now);
  return {200, json::serialize(json::object{{"token_type", "Bearer"},
                                            {"expires_in", lifetime_s_},
                                            {"ext_expires_in", lifetime_s_},
                                            {"access_token", token}})};
}

std::size_t OAuthMock::revokeAll(bool refuse_new) {
  std::lock_guard lock(mu_);
  refuse_new_ = refuse_new;
  const std::size_t n = tokens_.size();
  tokens_.clear();
  return n;
}

bool OAuthMock::validBearer(std::string_view authorization, std::int64_t now) const {
  if (authorization.size() <= 7 || authorization.substr(0, 7) != "Bearer ") return false;
  const std::string token(authorization.substr(7));
  std::lock_guard lock(mu_);
  auto it = tokens_.find(token);
  return it != tokens_.end() && it->second > now;
}

}  // namespace sluice::mock
