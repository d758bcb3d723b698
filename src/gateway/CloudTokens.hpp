// CloudTokens: the short-lived access tokens of vertex keys (a service account's RS256 assertion
// exchanged at its token_uri) and of azure channels with Entra ID (client credentials), one per
// credential for the whole process. A token is kept until needsRefresh() says it is near its end;
// then one request refreshes it (single-flight): the others that need it meanwhile wait for that
// refresh, on their own worker, instead of starting their own, and take its token or its failure.
// A still-valid token is used while its refresh is in flight. Every wait has a deadline.
// Thread-safety: any worker may call it; entries are locked one by one, no lock is held across
// I/O, and a waiter is woken on its own executor.
#pragma once
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/Config.hpp"
#include "upstream/Client.hpp"

namespace sluice::gateway {

struct CloudToken {
  std::string token;  // empty: failed, `error` says why
  std::string error;  // one line, no secret in it
  // The token endpoint refused the credential (an OAuth error, 400/401/403): the key is bad, not
  // merely unreachable.
  bool refused = false;
  bool ok() const { return !token.empty(); }
};

class CloudTokens {
 public:
  static CloudTokens& instance();

  // The Bearer token for a vertex key (service-account JSON).
  boost::asio::awaitable<CloudToken> vertex(upstream::Pool& pool, const std::string& sa_json,
                                            std::chrono::milliseconds timeout);
  // The Bearer token of an azure channel's Entra ID application.
  boost::asio::awaitable<CloudToken> entra(upstream::Pool& pool, const config::ChannelConfig& ch,
                                           std::chrono::milliseconds timeout);

  // The provider refused `token` (revoked before its expiry): it is dropped, so the next
  // vertex()/entra() for the same credential fetches a new one. A token already replaced is left.
  void reject(const config::ChannelConfig& ch, std::string_view key_secret, std::string_view token);

  // Token requests this process made (tests and /metrics).
  std::uint64_t exchanges() const;

  struct Entry;

 private:
  boost::asio::awaitable<CloudToken> get(upstream::Pool& pool, Entry& e, std::chrono::milliseconds timeout);
};

// The credential a pick's key stands for on a channel that takes tokens: a vertex key, or the
// Entra key of an azure channel (its secret is "").
bool takesCloudToken(const config::ChannelConfig& ch, std::string_view key_secret);

}  // namespace sluice::gateway
