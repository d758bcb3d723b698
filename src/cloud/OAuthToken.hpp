// OAuthToken: the pure parts of the short-lived credentials cloud channels use instead of static
// keys. A Google service account (the JSON file `gcloud iam service-accounts keys create`
// writes) signs an RS256 JWT assertion that its token_uri exchanges for an access token (RFC 7523);
// Azure's Entra ID takes a client-credentials form (RFC 6749 4.4). Both answer with the same token
// JSON, and a token is refreshed a margin before it expires. No I/O here: the channel's refresher
// posts what these build and keeps what they parse.
// Thread-safety: pure functions; a ServiceAccount is immutable once parsed.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::cloud {

struct ServiceAccountKey;  // the parsed private key (OpenSSL), opaque

class ServiceAccount {
 public:
  // The service-account JSON as Google writes it. nullopt with *why set when it is not JSON, is
  // not a service_account, lacks client_email, private_key or token_uri, its token_uri is not an
  // http(s) URL, or its private key is not an RSA key in PEM.
  static std::optional<ServiceAccount> parse(std::string_view json, std::string* why);

  const std::string& clientEmail() const { return client_email_; }
  const std::string& tokenUri() const { return token_uri_; }
  const std::string& projectId() const { return project_id_; }
  const std::string& privateKeyId() const { return private_key_id_; }

  // The signed JWT (header.claims.signature, base64url) asserting this account for `scope`, issued
  // at `now` (seconds since the epoch) and valid for an hour, for the token_uri audience.
  // Empty only if OpenSSL fails to sign.
  std::string assertion(std::string_view scope, std::int64_t now) const;
  // The form body that exchanges it at token_uri.
  std::string tokenRequestBody(std::string_view scope, std::int64_t now) const;

 private:
  std::string client_email_, token_uri_, project_id_, private_key_id_;
  std::shared_ptr<const ServiceAccountKey> key_;
};

// Azure Entra ID client credentials: the form body for
// https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token.
std::string entraTokenRequestBody(std::string_view client_id, std::string_view client_secret,
                                  std::string_view scope = "https://cognitiveservices.azure.com/.default");

struct AccessToken {
  std::string token;
  std::int64_t expires_at = 0;  // seconds since the epoch
  std::int64_t lifetime = 0;    // seconds it was issued for
};

// A token endpoint's answer ({"access_token", "expires_in", "token_type"}), received at `now`.
// nullopt with *why set on an OAuth error ({"error", "error_description"}, which *why quotes), a
// token with characters no header may carry, a missing or non-positive lifetime.
std::optional<AccessToken> parseTokenResponse(std::string_view json, std::int64_t now, std::string* why);

// Whether a token must be refreshed at `now`: within 5 minutes of its expiry (within a tenth of its
// lifetime when that is shorter), so a request never leaves with a token that lapses on the way.
bool needsRefresh(const AccessToken& token, std::int64_t now);

// `json` re-serialized without insignificant whitespace (a service-account file on one line);
// the input unchanged when it is not JSON.
std::string compactJson(std::string_view json);
// What may be shown of a service-account key: "sa:" + its client_email (not a secret), "***"
// when it has none.
std::string serviceAccountLabel(std::string_view json);

// The scope a Vertex AI access token is asked for.
inline constexpr std::string_view kCloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform";

// application/x-www-form-urlencoded encoding of one value.
std::string formEncode(std::string_view value);

}  // namespace sluice::cloud
