#include "gateway/ResponseStoreService.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/Clock.hpp"

namespace sluice::gateway {

namespace net = boost::asio;

ResponseStoreService::ResponseStoreService(std::string url, Options o) : url_(std::move(url)), o_(o) {}

ResponseStoreService::~ResponseStoreService() {
  net::post(pool_, [this] {
    if (sweep_timer_) sweep_timer_->cancel();
  });
  pool_.join();
  sweep_timer_.reset();
  store_.reset();
}

store::Store& ResponseStoreService::db() {
  if (!store_) {
    auto s = store::Store::open(url_);
    s->migrate();
    store_ = std::move(s);
  }
  return *store_;
}

net::awaitable<ResponseStoreService::Lookup> ResponseStoreService::get(std::int64_t owner, const std::string& id) {
  // (The task is a named local: GCC 12 destroys non-trivial temporaries inside a co_await
  // expression twice.)
  auto task = [this, owner, id]() -> net::awaitable<Lookup> {
    Lookup out;
    try {
      out.row = db().getResponse(owner, id, unixNowMs());
    } catch (const std::exception& e) {
      spdlog::warn("stored responses: reading {} failed: {}", id, e.what());
      store_.reset();
      out.available = false;
    }
    co_return out;
  };
  Lookup found = co_await net::co_spawn(pool_, std::move(task), net::use_awaitable);
  co_return found;
}

net::awaitable<ResponseStoreService::Lookup> ResponseStoreService::remove(std::int64_t owner, const std::string& id) {
  auto task = [this, owner, id]() -> net::awaitable<Lookup> {
    Lookup out;
    try {
      if (db().deleteResponse(owner, id, unixNowMs())) {
        out.row.emplace();
        out.row->id = id;
        out.row->owner_key_id = owner;
      }
    } catch (const std::exception& e) {
      spdlog::warn("stored responses: deleting {} failed: {}", id, e.what());
      store_.reset();
      out.available = false;
    }
    co_return out;
  };
  Lookup done = co_await net::co_spawn(pool_, std::move(task), net::use_awaitable);
  co_return done;
}

net::awaitable<bool> ResponseStoreService::put(const store::StoredResponse& row) {
  auto task = [this, row]() -> net::awaitable<bool> {
    try {
      db().putResponse(row);
      stored_.fetch_add(1, std::memory_order_relaxed);
      co_return true;
    } catch (const std::exception& e) {
      spdlog::warn("stored responses: keeping {} failed: {}", row.id, e.what());
      store_.reset();
      co_return false;
    }
  };
  const bool ok = co_await net::co_spawn(pool_, std::move(task), net::use_awaitable);
  co_return ok;
}

void ResponseStoreService::startSweeping() {
  if (sweeping_.exchange(true)) return;
  net::post(pool_, [this] {
    sweep_timer_ = std::make_unique<net::steady_timer>(pool_.get_executor());
    armSweep(std::chrono::seconds(5));  // soon after start, then every sweep_interval
  });
}

void ResponseStoreService::armSweep(std::chrono::milliseconds after) {
  sweep_timer_->expires_after(after);
  sweep_timer_->async_wait([this](boost::system::error_code ec) {
    if (ec) return;  // cancelled: shutting down
    sweepStep();
  });
}

void ResponseStoreService::sweepStep() {
  std::int64_t n = 0;
  try {
    n = db().deleteExpiredResponses(unixNowMs(), o_.sweep_rows);
    expired_.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
    if (n > 0) spdlog::info("stored responses: deleted {} expired", n);
  } catch (const std::exception& e) {
    spdlog::warn("stored responses: sweeping expired rows failed: {}", e.what());
    store_.reset();
  }
  // A full step leaves more behind: the next one follows shortly, so requests never wait
  // behind one long sweep.
  armSweep(n >= o_.sweep_rows ? std::chrono::milliseconds(200) : o_.sweep_interval);
}

}  // namespace sluice::gateway
