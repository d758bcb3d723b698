// Subscription accounts (cloud/Subscription.hpp): a pasted credential file (an operator's or an
// admin API caller's bytes), a token endpoint's answer to a refresh and a subscription endpoint's
// usage-window headers (an upstream's bytes). Input: [kind byte] [status byte] [payload...]; the
// kind byte's low bit picks Claude or ChatGPT. Checks: no crash; an accepted credential's tokens
// and account id can go in a header as they are, and its stored form reads back the same; a
// refused one says why; a refresh answer is either a new credential whose token works from now
// on, or a refusal with a reason (a refused grant never carries a credential); a window's reset is
// never in the past.
#include <string>
#include <utility>
#include <vector>

#include "FuzzUtil.hpp"
#include "cloud/Subscription.hpp"

using namespace sluice;

namespace {

void checkHeaderSafe(const std::string& s, const char* what) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) fuzz::fail(what, s);
  }
}

void checkCredential(const cloud::SubscriptionCredential& c) {
  checkHeaderSafe(c.access_token, "an access token that cannot go in a header");
  checkHeaderSafe(c.refresh_token, "a refresh token that cannot go in a request");
  checkHeaderSafe(c.account_id, "an account id that cannot go in a header");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto kind = (data[0] & 1) ? cloud::SubscriptionKind::ChatGPT : cloud::SubscriptionKind::Claude;
  const int status = 200 + (data[1] % 4) * 100 + (data[1] / 4) % 30;  // 2xx..5xx
  const std::string_view in(reinterpret_cast<const char*>(data + 2), size - 2);
  constexpr std::int64_t kNow = 1'700'000'000'000;

  std::string why;
  if (auto c = cloud::parseCredential(kind, in, &why)) {
    checkCredential(*c);
    const std::string stored = cloud::serializeCredential(*c);
    std::string why2;
    auto back = cloud::parseCredential(kind, stored, &why2);
    if (!back) fuzz::fail("a credential's stored form does not read back", why2);
    if (back->access_token != c->access_token || back->refresh_token != c->refresh_token ||
        back->account_id != c->account_id || back->expires_at_ms != c->expires_at_ms)
      fuzz::fail("a credential's stored form reads back different", stored);
    if (cloud::stillValid(*c, kNow) && cloud::needsRefresh(*c, kNow) && c->lifetime_ms == 0 &&
        c->expires_at_ms - kNow > 6 * 60 * 1000)
      fuzz::fail("a credential far from expiry refreshed");
    if (why.find(c->refresh_token.empty() ? "\x01" : c->refresh_token) != std::string::npos)
      fuzz::fail("a refusal quotes a token");
  } else {
    if (why.empty()) fuzz::fail("a credential refused without a reason");
  }

  cloud::SubscriptionCredential old;
  old.access_token = "old-access";
  old.refresh_token = "old-refresh";
  old.account_id = "acct";
  auto r = cloud::parseRefreshAnswer(kind, status, in, old, kNow);
  if (r.credential) {
    if (r.invalid_grant) fuzz::fail("a refused grant with a credential");
    checkCredential(*r.credential);
    if (r.credential->access_token.empty()) fuzz::fail("a refresh with no access token accepted");
    if (r.credential->expires_at_ms <= kNow) fuzz::fail("a refreshed token that expired before it arrived");
    if (cloud::needsRefresh(*r.credential, kNow)) fuzz::fail("a token that needs a refresh the moment it arrives");
  } else if (r.why.empty()) {
    fuzz::fail("a refresh refused without a reason");
  }
  for (char c : r.why)
    if (static_cast<unsigned char>(c) < 0x20) fuzz::fail("a refresh reason with a control character", r.why);

  // Usage windows: the payload as header lines "name: value\n".
  std::vector<std::pair<std::string, std::string>> headers;
  std::string_view rest = in;
  while (!rest.empty() && headers.size() < 64) {
    const auto nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  const cloud::UsageWindows w = cloud::readUsageWindows(kind, headers, kNow);
  if (w.reset_at_ms != 0 && w.reset_at_ms <= kNow) fuzz::fail("a window that resets in the past");
  if (w.reset_at_ms != 0 && !w.exhausted) fuzz::fail("a reset for a window that is not used up");
  return 0;
}
