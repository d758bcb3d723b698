// SubscriptionService: the live credentials of subscription channels (channel `subscription`:
// claude | chatgpt) for the request path. A key's newest credential is kept in the store, sealed
// (refresh tokens rotate and are single-use, so every instance must read the newest), and cached
// here until it nears expiry. A refresh runs under the row's lease, taken with a compare-and-swap
// in the store, so one worker of one instance spends a refresh token and every other one waits
// for (or, while the old access token still works, does not even wait for) the new credential.
// A refresh token the provider refuses (invalid_grant: revoked or already used) marks the row,
// and every instance turns the key off with a reason telling the user to sign in again.
// The database work runs on a thread of its own with its own Store connection (as stored
// responses do); the refresh itself is an upstream POST on the calling worker.
// Thread-safety: access() may be started from any worker.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cloud/Subscription.hpp"

namespace sluice {
class SecretBox;
}
namespace sluice::store {
class Store;
}
namespace sluice::upstream {
class Pool;
}
namespace sluice::routing {
struct Channel;
struct UpstreamKey;
}  // namespace sluice::routing

namespace sluice::gateway {

struct SubscriptionAccess {
  std::string access_token;  // empty: no credential (see error)
  std::string account_id;
  std::string error;     // why there is none; never quotes a token
  bool disable = false;  // the refresh token was refused: the key is off until signed in again
};

class SubscriptionService {
 public:
  // `secret_key`: store.secret_key (the live credentials are sealed with it); empty: subscription
  // channels cannot serve (the config refuses that).
  SubscriptionService(std::string store_url, const std::string& secret_key);
  ~SubscriptionService();
  SubscriptionService(const SubscriptionService&) = delete;
  SubscriptionService& operator=(const SubscriptionService&) = delete;

  // The access token (and account id) to send for `key` of subscription channel `ch`, refreshed
  // first when it nears expiry. `pool` is the calling worker's upstream pool.
  // `rejected`: an access token the provider just answered 401 to (revoked before its expiry):
  // it is not handed out again; the credential is refreshed (or another worker's newer one taken).
  boost::asio::awaitable<SubscriptionAccess> access(const routing::Channel& ch, const routing::UpstreamKey& key,
                                                    upstream::Pool& pool, std::string rejected = {});

  // For /metrics and tests: refreshes this process made, and those refused.
  std::uint64_t refreshes() const { return refreshes_.load(std::memory_order_relaxed); }
  std::uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  struct Claim;
  // The db thread only:
  Claim claim(const std::string& ref, const std::string& seed, std::int64_t now_ms, const std::string& rejected);
  store::Store& db();

  std::string url_;
  std::unique_ptr<SecretBox> box_;
  std::string owner_;  // this process's name in a lease
  std::unique_ptr<store::Store> store_;
  boost::asio::thread_pool pool_{1};

  struct Cached {
    cloud::SubscriptionCredential cred;
    std::string error;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Cached> cache_;  // by key ref
  std::atomic<std::uint64_t> refreshes_{0}, refused_{0};
};

}  // namespace sluice::gateway
