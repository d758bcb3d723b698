// The mock's OAuth token endpoints and the bearers they issue: Google's jwt-bearer grant (RFC
// 7523; an RS256 assertion of a service account whose key the mock was given, checked for its
// signature, iss, aud, scope and lifetime) and Entra ID's client credentials (RFC 6749 4.4;
// client id and secret checked). Tokens are announced with `lifetime_s` seconds (short, so tests
// see refreshes) and taken 30 s longer.
// Vertex and Entra-authenticated Azure requests must carry a bearer it issued.
// Thread-safety: verifyJwtBearer and parseForm are pure; OAuthMock locks its token table.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::mock {

// An application/x-www-form-urlencoded body as name -> value (the last of a repeated name);
// nullopt for a bad escape.
std::optional<std::map<std::string, std::string>> parseForm(std::string_view body);

struct GoogleAccount {
  std::string client_email;
  std::string token_uri;  // the file's (the mock checks aud against the URL it was reached at)
  std::shared_ptr<void> public_key;  // EVP_PKEY*, freed with it
};

// The service account of a service-account JSON (its private key's public half); nullopt and
// *why when it is not one.
std::optional<GoogleAccount> googleAccountFromJson(std::string_view json, std::string* why);

// Checks a jwt-bearer token request: the grant type, the assertion's RS256 signature by one of
// `accounts`, its iss (that account), aud (`audience`: the URL the endpoint was reached at), scope (names
// https://www.googleapis.com/auth/cloud-platform), iat and exp (issued no later than a minute
// past `now`, not expired, valid for at most an hour). Returns why it is refused, or nullopt
// (then *email names the account).
std::optional<std::string> verifyJwtBearer(std::string_view form_body, const std::vector<GoogleAccount>& accounts,
                                           std::int64_t now, std::string_view audience, std::string* email = nullptr);

class OAuthMock {
 public:
  struct Answer {
    int status = 200;
    std::string body;  // JSON
  };
  OAuthMock(std::vector<GoogleAccount> accounts, std::vector<std::string> entra_clients, int lifetime_s);

  // `audience`: http://HOST/token, the Host the request named.
  Answer google(std::string_view form_body, std::string_view audience, std::int64_t now);
  // `tenant`: the path's; a GUID or a domain name.
  Answer entra(std::string_view tenant, std::string_view form_body, std::int64_t now);
  // Whether `authorization` ("Bearer TOKEN") carries a token this mock issued that has not expired.
  bool validBearer(std::string_view authorization, std::int64_t now) const;
  // Revokes every token issued so far (a provider revoking them before their expiry); how many.
  // `refuse_new`: tokens issued from now on are refused too (a credential that gets tokens the
  // API will not take), until a revokeAll(false).
  std::size_t revokeAll(bool refuse_new);

 private:
  std::string issue(std::string_view prefix, std::int64_t now);
  std::vector<GoogleAccount> accounts_;
  std::vector<std::string> entra_clients_;  // "CLIENT_ID:SECRET"
  int lifetime_s_;
  mutable std::mutex mu_;
  std::map<std::string, std::int64_t> tokens_;  // token -> expiry
  bool refuse_new_ = false;
};

}  // namespace sluice::mock
