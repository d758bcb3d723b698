// Subscription: the pure parts of subscription accounts, a channel key that is the OAuth credential
// a vendor's own CLI signs in with instead of an API key: Claude Code's ~/.claude/.credentials.json
// (Claude Pro/Max) and Codex's ~/.codex/auth.json (ChatGPT). What a credential file holds, the
// form Sluice keeps the live credential in (refresh tokens rotate: the newest is in the store),
// the refresh request each token endpoint takes and its answer, and the usage windows the
// providers report in their rate-limit headers. No I/O here.
// Thread-safety: pure functions.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::cloud {

enum class SubscriptionKind { None, Claude, ChatGPT };

std::string_view subscriptionName(SubscriptionKind k);  // "claude", "chatgpt", ""
std::optional<SubscriptionKind> parseSubscriptionKind(std::string_view name);

// The endpoints and the public OAuth client each CLI uses.
std::string_view defaultTokenUrl(SubscriptionKind k);
std::string_view defaultSubscriptionBaseUrl(SubscriptionKind k);
std::string_view oauthClientId(SubscriptionKind k);

struct SubscriptionCredential {
  std::string access_token;
  std::string refresh_token;
  std::string account_id;          // ChatGPT: sent as chatgpt-account-id; Claude: unused
  std::int64_t expires_at_ms = 0;  // Unix ms; 0: unknown (refreshed before first use)
  std::int64_t lifetime_ms = 0;    // what the last refresh was issued for; 0: unknown
};

// A credential as pasted: the CLI's file (Claude: {"claudeAiOauth":{"accessToken","refreshToken",
// "expiresAt"}}; ChatGPT: {"tokens":{"access_token","refresh_token","account_id"}}), or the
// stored form serializeCredential writes. nullopt with *why set when it is not JSON, not of that
// kind, or a token or account id holds bytes no header may carry. *why never quotes a token.
std::optional<SubscriptionCredential> parseCredential(SubscriptionKind k, std::string_view text, std::string* why);
// The stored form: {"access_token","refresh_token","account_id","expires_at_ms","lifetime_ms"}.
std::string serializeCredential(const SubscriptionCredential& c);

// Whether the access token must be refreshed before use at `now_ms`: unknown expiry, or within
// 5 minutes of it (within half its lifetime when that is shorter, so short-lived tokens are not
// refreshed on every request).
bool needsRefresh(const SubscriptionCredential& c, std::int64_t now_ms);
// Whether the access token still works at `now_ms` (a few seconds of margin for the trip).
bool stillValid(const SubscriptionCredential& c, std::int64_t now_ms);

// The JSON body of a refresh_token grant as the CLI sends it.
std::string refreshRequestBody(SubscriptionKind k, std::string_view refresh_token);

struct RefreshOutcome {
  std::optional<SubscriptionCredential> credential;  // set: the new credential
  bool invalid_grant = false;                        // the refresh token was refused: revoked or already used
  std::string why;                                   // when not refreshed (never quotes a token)
};
// The token endpoint's answer (`status`, `body`) to a refresh of `old`, received at `now_ms`.
// A refresh answer without a refresh_token keeps the old one (ChatGPT may omit it).
RefreshOutcome parseRefreshAnswer(SubscriptionKind k, int status, std::string_view body,
                                  const SubscriptionCredential& old, std::int64_t now_ms);

// What the key's health says when a refresh token is refused.
std::string signInAgainReason(SubscriptionKind k, std::string_view detail);

// A usage window as a response's headers report it.
struct UsageWindows {
  bool exhausted = false;        // a window is used up (status rejected, or 100% used)
  std::int64_t reset_at_ms = 0;  // Unix ms when the exhausted window resets (0: unknown)
  double used_fraction = -1;     // the highest utilization reported, 0..1; < 0: none reported
};
// Anthropic: anthropic-ratelimit-unified-{status,reset,5h-utilization,7d-utilization,...};
// ChatGPT: x-codex-{primary,secondary}-{used-percent,reset-after-seconds,reset-at}.
UsageWindows readUsageWindows(SubscriptionKind k, const std::vector<std::pair<std::string, std::string>>& headers,
                              std::int64_t now_ms);

}  // namespace sluice::cloud
