#include "cloud/OAuthToken.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <boost/json.hpp>

#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include "core/JsonText.hpp"
#include "redact/Base64Url.hpp"

namespace sluice::cloud {

struct ServiceAccountKey {
  EVP_PKEY* pkey = nullptr;
  ~ServiceAccountKey() { EVP_PKEY_free(pkey); }
};

namespace {
namespace json = boost::json;
namespace urls = boost::urls;

std::string b64url(std::string_view bytes) {
  std::string out;
  redact::detail::appendB64Url(out, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  return out;
}

const json::string* stringField(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_string()) return nullptr;
  return &it->value().get_string();
}

bool headerSafe(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u < 0x7f;
  });
}

bool httpUrl(std::string_view s) {
  return (s.starts_with("https://") || s.starts_with("http://")) && headerSafe(s);
}

std::optional<json::object> parseObject(std::string_view text) {
  boost::system::error_code ec;
  json::value v = parseJson(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.get_object());
}

}  // namespace

std::optional<ServiceAccount> ServiceAccount::parse(std::string_view text, std::string* why) {
  auto fail = [&](std::string w) {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  auto o = parseObject(text);
  if (!o) return fail("a service-account key file is a JSON object; this is not one");
  const json::string* type = stringField(*o, "type");
  if (!type || *type != "service_account") return fail("its \"type\" is not \"service_account\"");
  const json::string* email = stringField(*o, "client_email");
  const json::string* pem = stringField(*o, "private_key");
  const json::string* token_uri = stringField(*o, "token_uri");
  if (!email || !headerSafe(*email)) return fail("it has no usable \"client_email\"");
  if (!pem || pem->empty()) return fail("it has no \"private_key\"");
  if (!token_uri || !httpUrl(*token_uri)) return fail("its \"token_uri\" is not an http(s) URL");
  BIO* bio = BIO_new_mem_buf(pem->data(), static_cast<int>(pem->size()));
  EVP_PKEY* pkey = bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  if (!pkey) return fail("its \"private_key\" is not a PEM private key");
  auto key = std::make_shared<ServiceAccountKey>();
  key->pkey = pkey;
  if (EVP_PKEY_get_base_id(pkey) != EVP_PKEY_RSA)
    return fail("its \"private_key\" is not an RSA key (RS256 needs one)");
  ServiceAccount sa;
  sa.client_email_ = std::string(*email);
  sa.token_uri_ = std::string(*token_uri);
  if (const json::string* p = stringField(*o, "project_id")) sa.project_id_ = std::string(*p);
  if (const json::string* k = stringField(*o, "private_key_id"); k && headerSafe(*k))
    sa.private_key_id_ = std::string(*k);
  sa.key_ = std::move(key);
  return sa;
}

std::string ServiceAccount::assertion(std::string_view scope, std::int64_t now) const {
  json::object header{{"alg", "RS256"}, {"typ", "JWT"}};
  if (!private_key_id_.empty()) header["kid"] = private_key_id_;
  json::object claims{{"iss", client_email_}, {"scope", scope}, {"aud", token_uri_}, {"iat", now}, {"exp", now + 3600}};
  std::string signing_input = b64url(json::serialize(header)) + "." + b64url(json::serialize(claims));
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::string sig;
  size_t len = 0;
  if (ctx && EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key_->pkey) == 1 &&
      EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(signing_input.data()),
                     signing_input.size()) == 1) {
    sig.resize(len);
    if (EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                       reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size()) == 1) {
      sig.resize(len);
    } else {
      sig.clear();
    }
  }
  EVP_MD_CTX_free(ctx);
  if (sig.empty()) return {};
  return signing_input + "." + b64url(sig);
}

std::string ServiceAccount::tokenRequestBody(std::string_view scope, std::int64_t now) const {
  std::string jwt = assertion(scope, now);
  if (jwt.empty()) return {};
  return "grant_type=" + formEncode("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion=" + jwt;
}

std::string entraTokenRequestBody(std::string_view client_id, std::string_view client_secret, std::string_view scope) {
  return "grant_type=client_credentials&client_id=" + formEncode(client_id) +
         "&client_secret=" + formEncode(client_secret) + "&scope=" + formEncode(scope);
}

std::optional<AccessToken> parseTokenResponse(std::string_view text, std::int64_t now, std::string* why) {
  auto fail = [&](std::string w) {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  auto o = parseObject(text);
  if (!o) return fail("the token endpoint did not answer with a JSON object");
  if (const json::string* err = stringField(*o, "error")) {
    std::string w = "the token endpoint refused: " + std::string(*err);
    if (const json::string* d = stringField(*o, "error_description")) w += " (" + std::string(*d) + ")";
    return fail(std::move(w));
  }
  const json::string* token = stringField(*o, "access_token");
  if (!token || !headerSafe(*token)) return fail("the token endpoint's answer has no usable \"access_token\"");
  std::int64_t lifetime = 0;
  if (auto it = o->find("expires_in"); it != o->end()) {
    const json::value& v = it->value();
    if (v.is_int64())
      lifetime = v.get_int64();
    else if (v.is_uint64())
      lifetime = static_cast<std::int64_t>(std::min<std::uint64_t>(v.get_uint64(), 1u << 30));
    else if (v.is_string()) {  // Entra's v1 endpoint sends it as a string
      const auto& s = v.get_string();
      if (!s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        lifetime = std::stoll(std::string(s));
    }
  }
  if (lifetime <= 0) return fail("the token endpoint's answer has no positive \"expires_in\"");
  lifetime = std::min<std::int64_t>(lifetime, 1 << 30);
  return AccessToken{std::string(*token), now + lifetime, lifetime};
}

bool needsRefresh(const AccessToken& token, std::int64_t now) {
  std::int64_t margin = std::min<std::int64_t>(300, token.lifetime / 10);
  return token.token.empty() || now >= token.expires_at - margin;
}

std::string compactJson(std::string_view text) {
  boost::system::error_code ec;
  json::value v = parseJson(text, ec);
  if (ec) return std::string(text);
  return json::serialize(v);
}

std::string serviceAccountLabel(std::string_view text) {
  auto o = parseObject(text);
  if (!o) return "***";
  const json::string* email = stringField(*o, "client_email");
  if (!email || !headerSafe(*email)) return "***";
  return "sa:" + std::string(*email);
}

std::string formEncode(std::string_view value) {
  std::string out;
  urls::encode(value, urls::unreserved_chars, {}, urls::string_token::append_to(out));
  return out;
}

}  // namespace sluice::cloud
