// SigV4: AWS Signature Version 4 for one HTTP request, as AWS specifies it for every service but
// S3 (the path normalized and URI-encoded once more, which is what makes a model id such as
// `anthropic.claude-3-5-sonnet-20241022-v2:0`, sent as `...v2%3A0`, sign as `...v2%253A0`).
// The signing key depends only on the secret, the day, the region and the service; SigV4Signer
// keeps the last one it derived so a channel's requests of one day pay four HMACs once.
// Thread-safety: the free functions are pure; a SigV4Signer is for one thread (one per worker).
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::cloud {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty for long-term keys
};

// A channel key "ACCESS_KEY_ID:SECRET[:SESSION_TOKEN]". nullopt when a part is missing or empty,
// or the id or secret holds characters no AWS credential has (so a key never smuggles a header).
std::optional<AwsCredentials> parseAwsKey(std::string_view key);

struct SigV4Request {
  std::string_view method;                                   // "POST"
  std::string_view path;                                     // as sent on the wire, e.g. /model/a%3A0/converse
  std::string_view query;                                    // as sent, without '?'; may be empty
  std::vector<std::pair<std::string, std::string>> headers;  // every header to sign; Host among them
  std::string_view payload_sha256_hex;                       // hex SHA-256 of the body
};

struct SigV4Scope {
  std::string region;    // us-east-1
  std::string service;   // bedrock
  std::string amz_date;  // 20150830T123600Z (the request's X-Amz-Date)
};

struct SigV4Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signed_headers;  // host;x-amz-date
  std::string authorization;   // the Authorization header's value
};

// The pieces, exposed for the tests that replay AWS's published vectors step by step.
std::string sigV4CanonicalUri(std::string_view wire_path);
std::string sigV4CanonicalQuery(std::string_view wire_query);
std::string sha256Hex(std::string_view data);
// "20150830T123600Z" for a time in seconds since the epoch (UTC).
std::string amzDate(long long epoch_seconds);

SigV4Signature signV4(const SigV4Request& request, const AwsCredentials& credentials, const SigV4Scope& scope);

// Caches the derived signing key of the last (secret, day, region, service) it signed for.
class SigV4Signer {
 public:
  SigV4Signature sign(const SigV4Request& request, const AwsCredentials& credentials, const SigV4Scope& scope);

 private:
  std::string cached_for_;  // secret + '\n' + day + '\n' + region + '\n' + service
  std::array<unsigned char, 32> key_{};
};

}  // namespace sluice::cloud
