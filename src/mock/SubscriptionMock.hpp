// SubscriptionMock: the mock's side of subscription accounts. The two OAuth token endpoints the
// CLIs refresh at (Anthropic's POST /v1/oauth/token as console.anthropic.com serves it, OpenAI's
// POST /oauth/token as auth.openai.com does), which issue a new access and refresh token pair and
// refuse a refresh token that was already used (invalid_grant / refresh_token_reused), so a test
// proves a token was never spent twice; the checks the subscription endpoints make of an OAuth
// request (Anthropic Messages with a bearer token needs the oauth beta flag; ChatGPT's
// /backend-api/codex/responses needs a bearer token and chatgpt-account-id, and a body that
// streams (stream: true), stores nothing (store: false), has instructions and no
// max_output_tokens, refused with the endpoint's {"detail":...} as the real one does); and the usage
// windows they report in rate-limit headers, with an account that can be told to be used up
// (429 with the window's reset).
// Controls: POST /mock/subscription/config {"ttl_s"} (issued access tokens' lifetime),
// POST /mock/subscription/exhaust {"token", "reset_after_s"} (an access token or account id is
// used up until then), POST /mock/subscription/revoke {"refresh_token", "access_token"}, GET
// /mock/subscription/stats, POST /mock/subscription/reset.
// Thread-safety: every method may run on any worker (one mutex; refreshes are rare).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/Server.hpp"

namespace sluice::mock {

class SubscriptionMock {
 public:
  // The paths this serves whole (the token endpoints and the controls).
  static bool handles(std::string_view path);
  http::Response serve(const http::Request& req, std::string_view path);

  // An OAuth request to a subscription endpoint (claude: /v1/messages with a bearer token;
  // chatgpt: /backend-api/codex/responses): a refusal to send as it is, or nothing and the usage
  // headers to add to the answer.
  struct Verdict {
    std::optional<http::Response> refusal;
    std::vector<std::pair<std::string, std::string>> headers;
  };
  Verdict check(const http::Request& req, bool claude);

 private:
  http::Response refresh(const http::Request& req, bool claude);
  std::string statsJson();

  std::mutex mu_;
  std::int64_t ttl_s_ = 3600;
  std::uint64_t serial_ = 0;
  std::set<std::string> spent_;                        // refresh tokens already exchanged
  std::set<std::string> revoked_;                      // refresh tokens revoked by a control
  std::set<std::string> revoked_access_;               // access tokens revoked before their expiry
  std::map<std::string, std::int64_t> issued_access_;  // access token -> expiry (Unix s)
  std::map<std::string, std::int64_t> exhausted_;      // access token or account id -> reset (Unix s)
  std::uint64_t refreshes_ = 0, refused_ = 0, reused_ = 0, oauth_requests_ = 0, expired_ = 0, limited_ = 0,
                revoked_refusals_ = 0;
  std::uint64_t codex_refused_ = 0;  // Codex requests refused for their body (not streamed, stored...)
  std::string last_bearer_, last_account_;
};

}  // namespace sluice::mock
