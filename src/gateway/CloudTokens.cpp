#include "gateway/CloudTokens.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include <atomic>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "cloud/OAuthToken.hpp"
#include "upstream/Post.hpp"

namespace sluice::gateway {

namespace net = boost::asio;

namespace {

// What a token endpoint may answer: a token JSON is small.
constexpr std::size_t kTokenAnswerLimit = 64 * 1024;

std::atomic<std::uint64_t> gExchanges{0};

std::int64_t epochSeconds() { return static_cast<std::int64_t>(std::time(nullptr)); }

struct Waiter {
  explicit Waiter(const net::any_io_executor& ex) : timer(ex) {}
  net::steady_timer timer;
};

}  // namespace

struct CloudTokens::Entry {
  std::mutex mu;
  // Set once when the entry is made; read without the lock after.
  std::optional<cloud::ServiceAccount> sa;  // vertex
  std::string form;                         // entra: the request body (holds the client secret)
  std::optional<upstream::PostTarget> target;
  std::string url;          // for messages (a token_uri is no secret)
  std::string setup_error;  // the credential cannot be used at all
  // Under mu:
  cloud::AccessToken tok;
  bool inflight = false;
  std::string last_error;
  bool last_refused = false;
  std::vector<std::shared_ptr<Waiter>> waiters;
};

namespace {

std::mutex gEntriesMu;
std::map<std::string, std::unique_ptr<CloudTokens::Entry>>& entries() {
  static std::map<std::string, std::unique_ptr<CloudTokens::Entry>> m;
  return m;
}

// The entry of `id`, made by `init` the first time (under the map's lock: once per credential).
template <class Init>
CloudTokens::Entry& entryFor(const std::string& id, Init&& init) {
  std::lock_guard lock(gEntriesMu);
  auto& slot = entries()[id];
  if (!slot) {
    slot = std::make_unique<CloudTokens::Entry>();
    init(*slot);
    if (slot->setup_error.empty()) {
      try {
        slot->target = upstream::makePostTarget(slot->url, {}, std::chrono::milliseconds(10'000), "token endpoint");
      } catch (const std::exception& ex) {
        slot->setup_error = ex.what();
      }
    }
  }
  return *slot;
}

// One exchange at the token endpoint.
net::awaitable<CloudToken> exchange(upstream::Pool& pool, CloudTokens::Entry& e, std::chrono::milliseconds timeout,
                                    cloud::AccessToken& got) {
  CloudToken out;
  const std::int64_t now = epochSeconds();
  std::string body =
      e.sa ? e.sa->tokenRequestBody(cloud::kCloudPlatformScope, now) : e.form;
  if (body.empty()) {
    out.error = "the service account's key could not sign its token request";
    out.refused = true;
    co_return out;
  }
  upstream::PostTarget target = *e.target;
  target.timeout = timeout;
  gExchanges.fetch_add(1, std::memory_order_relaxed);
  upstream::PostResult res =
      co_await upstream::post(pool, target, "application/x-www-form-urlencoded", body, kTokenAnswerLimit);
  if (res.status == 0) {
    out.error = fmt::format("the token endpoint {} {}: {}", e.url, res.timed_out ? "timed out" : "failed", res.error);
    co_return out;
  }
  std::string why;
  auto tok = cloud::parseTokenResponse(res.body, epochSeconds(), &why);
  if (res.status >= 200 && res.status < 300 && tok) {
    got = std::move(*tok);
    out.token = got.token;
    co_return out;
  }
  if (res.status >= 200 && res.status < 300) why = "its answer is not a token: " + why;
  out.error = fmt::format("the token endpoint {} answered {}: {}", e.url, res.status,
                          tok ? std::string("(no error given)") : why);
  out.refused = res.status == 400 || res.status == 401 || res.status == 403 || (res.status < 300);
  co_return out;
}

}  // namespace

CloudTokens& CloudTokens::instance() {
  static CloudTokens tokens;
  return tokens;
}

std::uint64_t CloudTokens::exchanges() const { return gExchanges.load(std::memory_order_relaxed); }

void CloudTokens::reject(const config::ChannelConfig& ch, std::string_view key_secret, std::string_view token) {
  const std::string id = ch.type == config::ChannelType::Vertex
                             ? "vertex\n" + std::string(key_secret)
                             : "entra\n" + ch.entraTokenUrl() + "\n" + ch.client_id + "\n" + ch.client_secret;
  Entry* e = nullptr;
  {
    std::lock_guard lock(gEntriesMu);
    auto it = entries().find(id);
    if (it == entries().end() || !it->second) return;
    e = it->second.get();  // entries are never removed
  }
  std::lock_guard lock(e->mu);
  if (!token.empty() && e->tok.token == token) e->tok = cloud::AccessToken{};
}

net::awaitable<CloudToken> CloudTokens::vertex(upstream::Pool& pool, const std::string& sa_json,
                                               std::chrono::milliseconds timeout) {
  Entry& e = entryFor("vertex\n" + sa_json, [&](Entry& n) {
    std::string why;
    n.sa = cloud::ServiceAccount::parse(sa_json, &why);
    if (!n.sa)
      n.setup_error = "the key is not a usable service account: " + why;
    else
      n.url = n.sa->tokenUri();
  });
  co_return co_await get(pool, e, timeout);
}

net::awaitable<CloudToken> CloudTokens::entra(upstream::Pool& pool, const config::ChannelConfig& ch,
                                              std::chrono::milliseconds timeout) {
  const std::string url = ch.entraTokenUrl();
  Entry& e = entryFor("entra\n" + url + "\n" + ch.client_id + "\n" + ch.client_secret, [&](Entry& n) {
    n.url = url;
    n.form = cloud::entraTokenRequestBody(ch.client_id, ch.client_secret);
  });
  co_return co_await get(pool, e, timeout);
}

net::awaitable<CloudToken> CloudTokens::get(upstream::Pool& pool, Entry& e, std::chrono::milliseconds timeout) {
  if (!e.setup_error.empty()) co_return CloudToken{{}, e.setup_error, true};
  std::shared_ptr<Waiter> waiter;
  const net::any_io_executor executor = co_await net::this_coro::executor;
  {
    std::unique_lock lock(e.mu);
    const std::int64_t now = epochSeconds();
    if (!cloud::needsRefresh(e.tok, now)) co_return CloudToken{e.tok.token, {}, false};
    if (e.inflight) {
      // Someone is refreshing: a token that is still valid goes meanwhile; else wait for it.
      if (!e.tok.token.empty() && now < e.tok.expires_at) co_return CloudToken{e.tok.token, {}, false};
      waiter = std::make_shared<Waiter>(executor);
      waiter->timer.expires_after(timeout);
      e.waiters.push_back(waiter);
    } else {
      e.inflight = true;
    }
  }
  if (waiter) {
    co_await waiter->timer.async_wait(net::as_tuple(net::use_awaitable));
    std::lock_guard lock(e.mu);
    if (!e.tok.token.empty() && epochSeconds() < e.tok.expires_at) co_return CloudToken{e.tok.token, {}, false};
    if (e.inflight) co_return CloudToken{{}, fmt::format("the token refresh at {} did not finish in time", e.url), false};
    co_return CloudToken{{}, e.last_error, e.last_refused};
  }
  cloud::AccessToken got;
  CloudToken out = co_await exchange(pool, e, timeout, got);
  std::vector<std::shared_ptr<Waiter>> wake;
  {
    std::lock_guard lock(e.mu);
    if (out.ok()) {
      e.tok = std::move(got);
      e.last_error.clear();
    } else {
      e.last_error = out.error;
      e.last_refused = out.refused;
    }
    e.inflight = false;
    wake.swap(e.waiters);
  }
  // Each waiter's timer belongs to its own worker: cancelled there.
  for (auto& w : wake) net::post(w->timer.get_executor(), [w] { w->timer.cancel(); });
  co_return out;
}

bool takesCloudToken(const config::ChannelConfig& ch, std::string_view key_secret) {
  return ch.type == config::ChannelType::Vertex || (ch.type == config::ChannelType::Azure && ch.entra() && key_secret.empty());
}

}  // namespace sluice::gateway
