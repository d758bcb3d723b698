#include "gateway/SubscriptionService.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <random>

#include "core/Clock.hpp"
#include "core/SecretBox.hpp"
#include "routing/Router.hpp"
#include "store/Store.hpp"
#include "upstream/Post.hpp"

namespace sluice::gateway {

namespace net = boost::asio;

namespace {
// How long a refresh may hold the lease: well past the refresh's own timeout, so a lease never
// lapses while its refresh token may still be in flight.
constexpr std::int64_t kLeaseMs = 60'000;
constexpr auto kRefreshTimeout = std::chrono::seconds(20);
// How long a request waits for another's refresh when its own token no longer works.
constexpr std::int64_t kWaitMs = 25'000;
}  // namespace

struct SubscriptionService::Claim {
  enum class Kind { Fresh, Lease, Busy, Disabled, Unavailable } kind = Kind::Unavailable;
  cloud::SubscriptionCredential cred;
  std::int64_t version = 0;
  std::string error;
};

SubscriptionService::SubscriptionService(std::string store_url, const std::string& secret_key)
    : url_(std::move(store_url)) {
  if (!secret_key.empty()) box_ = std::make_unique<SecretBox>(secret_key);
  std::random_device rd;
  owner_ = fmt::format("{:08x}{:08x}", rd(), rd());
}

SubscriptionService::~SubscriptionService() {
  pool_.join();
  store_.reset();
}

store::Store& SubscriptionService::db() {
  if (!store_) {
    auto s = store::Store::open(url_);
    s->migrate();
    store_ = std::move(s);
  }
  return *store_;
}

SubscriptionService::Claim SubscriptionService::claim(const std::string& ref, const std::string& seed,
                                                      std::int64_t now_ms, const std::string& rejected) {
  Claim c;
  if (!box_) {
    c.error = "store.secret_key is not set: subscription credentials cannot be kept";
    return c;
  }
  try {
    auto row = db().getSubscription(ref);
    if (!row) row = db().seedSubscription(ref, box_->seal(seed), now_ms);
    c.version = row->version;
    auto plain = box_->open(row->credential_encrypted);
    std::string why;
    std::optional<cloud::SubscriptionCredential> cred;
    if (plain) cred = cloud::parseCredential(cloud::SubscriptionKind::Claude, *plain, &why);  // the stored form
    if (!cred) {
      c.error = plain
                    ? "the stored subscription credential is unreadable: " + why
                    : "the stored subscription credential cannot be decrypted with store.secret_key (was it changed?)";
      return c;
    }
    c.cred = std::move(*cred);
    if (!row->error.empty()) {
      c.kind = Claim::Kind::Disabled;
      c.error = row->error;
    } else if (!cloud::needsRefresh(c.cred, now_ms) && (rejected.empty() || c.cred.access_token != rejected)) {
      c.kind = Claim::Kind::Fresh;
    } else if (db().leaseSubscription(ref, row->version, owner_, now_ms, now_ms + kLeaseMs)) {
      c.kind = Claim::Kind::Lease;
    } else {
      c.kind = Claim::Kind::Busy;
    }
  } catch (const std::exception& e) {
    spdlog::warn("subscription credentials: the store failed: {}", e.what());
    store_.reset();
    c.kind = Claim::Kind::Unavailable;
    c.error = "the store holding the subscription credential is unavailable";
  }
  return c;
}

net::awaitable<SubscriptionAccess> SubscriptionService::access(const routing::Channel& ch,
                                                               const routing::UpstreamKey& key, upstream::Pool& pool,
                                                               std::string rejected) {
  const auto kind = cloud::parseSubscriptionKind(ch.cfg.subscription).value_or(cloud::SubscriptionKind::Claude);
  auto ok = [](const cloud::SubscriptionCredential& c) {
    SubscriptionAccess a;
    a.access_token = c.access_token;
    a.account_id = c.account_id;
    return a;
  };
  // A token the provider refused counts as expired, wherever it is kept.
  auto usable = [&rejected](const cloud::SubscriptionCredential& c, std::int64_t now) {
    return cloud::stillValid(c, now) && (rejected.empty() || c.access_token != rejected);
  };
  auto failed = [](std::string why, bool disable) {
    SubscriptionAccess a;
    a.error = std::move(why);
    a.disable = disable;
    return a;
  };
  {
    std::lock_guard lock(mu_);
    if (auto it = cache_.find(key.ref); it != cache_.end()) {
      if (!it->second.error.empty()) co_return failed(it->second.error, true);
      if (!cloud::needsRefresh(it->second.cred, unixNowMs()) && usable(it->second.cred, unixNowMs()))
        co_return ok(it->second.cred);
    }
  }
  const std::int64_t give_up = unixNowMs() + kWaitMs;
  const std::string ref = key.ref, seed = key.secret;
  for (;;) {
    const std::int64_t now = unixNowMs();
    auto task = [this, ref, seed, now, rejected]() -> net::awaitable<Claim> {
      co_return claim(ref, seed, now, rejected);
    };
    Claim c = co_await net::co_spawn(pool_, std::move(task), net::use_awaitable);
    if (c.kind == Claim::Kind::Unavailable) {
      // The store cannot be asked: a token known to still work is used; nothing is refreshed.
      std::lock_guard lock(mu_);
      if (auto it = cache_.find(ref); it != cache_.end() && usable(it->second.cred, now)) co_return ok(it->second.cred);
      co_return failed(c.error, false);
    }
    {
      std::lock_guard lock(mu_);
      cache_[ref] = Cached{c.cred, c.kind == Claim::Kind::Disabled ? c.error : std::string()};
    }
    switch (c.kind) {
      case Claim::Kind::Disabled:
        co_return failed(c.error, true);
      case Claim::Kind::Fresh:
        co_return ok(c.cred);
      case Claim::Kind::Busy:
        // Another worker or instance is refreshing: while the current token works it is used;
        // once it lapsed, wait for the new one.
        if (usable(c.cred, now)) co_return ok(c.cred);
        if (now >= give_up)
          co_return failed("the subscription's access token expired and its refresh did not finish in time", false);
        {
          net::steady_timer t(co_await net::this_coro::executor, std::chrono::milliseconds(100));
          co_await t.async_wait(net::use_awaitable);
        }
        continue;
      case Claim::Kind::Lease:
      case Claim::Kind::Unavailable:
        break;
    }
    // This process holds the lease on version c.version: it spends the refresh token, once.
    SubscriptionAccess out;
    std::string stored_error;
    std::optional<cloud::SubscriptionCredential> fresh;
    if (c.cred.refresh_token.empty()) {
      stored_error = cloud::signInAgainReason(kind, "the credential has no refresh token and its access token expired");
    } else {
      upstream::PostResult res;
      try {
        const auto target = upstream::makePostTarget(ch.cfg.token_url, {}, kRefreshTimeout, "token_url");
        const std::string body = cloud::refreshRequestBody(kind, c.cred.refresh_token);
        res = co_await upstream::post(pool, target, "application/json", body, 64 * 1024);
      } catch (const std::exception& e) {
        res.failure = upstream::PostResult::Failure::Connect;
        res.error = e.what();
      }
      refreshes_.fetch_add(1, std::memory_order_relaxed);
      if (res.failure != upstream::PostResult::Failure::None) {
        out.error = fmt::format("the subscription's token refresh at {} failed: {}", ch.cfg.token_url, res.error);
      } else {
        auto r = cloud::parseRefreshAnswer(kind, res.status, res.body, c.cred, unixNowMs());
        if (r.credential) {
          fresh = std::move(r.credential);
        } else if (r.invalid_grant) {
          refused_.fetch_add(1, std::memory_order_relaxed);
          stored_error = cloud::signInAgainReason(kind, r.why);
        } else {
          out.error = "the subscription's token refresh failed: " + r.why;
        }
      }
    }
    const std::string sealed = fresh ? box_->seal(cloud::serializeCredential(*fresh)) : std::string();
    const std::int64_t version = c.version;
    auto finish = [this, ref, version, sealed, stored_error, refreshed = fresh.has_value()]() -> net::awaitable<bool> {
      try {
        if (refreshed) co_return db().commitSubscription(ref, version, owner_, sealed, unixNowMs());
        if (!stored_error.empty())
          db().failSubscription(ref, owner_, stored_error, unixNowMs());
        else
          db().releaseSubscription(ref, owner_);
        co_return true;
      } catch (const std::exception& e) {
        spdlog::error("subscription credentials: storing the outcome of a refresh failed: {}", e.what());
        store_.reset();
        co_return false;
      }
    };
    const bool stored = co_await net::co_spawn(pool_, std::move(finish), net::use_awaitable);
    if (fresh) {
      if (!stored)
        spdlog::error(
            "subscription key {} of channel {}: the refreshed credential could not be stored; its new refresh "
            "token lives in this process only",
            key.id, ch.cfg.name);
      std::lock_guard lock(mu_);
      cache_[ref] = Cached{*fresh, {}};
      spdlog::info("subscription key {} of channel {}: access token refreshed", key.id, ch.cfg.name);
      co_return ok(*fresh);
    }
    if (!stored_error.empty()) {
      spdlog::warn("subscription key {} of channel {}: {}", key.id, ch.cfg.name, stored_error);
      std::lock_guard lock(mu_);
      cache_[ref] = Cached{c.cred, stored_error};
      co_return failed(stored_error, true);
    }
    spdlog::warn("subscription key {} of channel {}: {}", key.id, ch.cfg.name, out.error);
    if (usable(c.cred, unixNowMs())) co_return ok(c.cred);
    co_return out;
  }
}

}  // namespace sluice::gateway
