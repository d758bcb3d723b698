#include "store/StoreProbe.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace sluice::store {

namespace {
std::int64_t steadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

StoreProbe::StoreProbe(Connect connect, Options options)
    : connect_(std::move(connect)), options_(options), thread_([this] { run(); }) {}

StoreProbe::StoreProbe(const std::string& url, Options options)
    : StoreProbe([url] { return openSqlConnection(url); }, options) {}

StoreProbe::~StoreProbe() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool StoreProbe::up() const {
  return ok_.load() && steadyMs() - last_ok_ms_.load() < options_.stale.count();
}

void StoreProbe::renderMetrics(std::string& out) const {
  out += "# HELP sluice_store_up Whether the store's database answers (probed every second, off the request path).\n";
  out += "# TYPE sluice_store_up gauge\n";
  out += fmt::format("sluice_store_up {}\n", up() ? 1 : 0);
}

void StoreProbe::run() {
  std::unique_ptr<SqlConnection> conn;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    std::string why;
    try {
      if (!conn) conn = connect_();
      // SQLite: sqlite_master is read from the file; PostgreSQL: a round trip to the server.
      const char* sql = conn->dialect() == Dialect::Sqlite ? "SELECT COUNT(*) FROM sqlite_master" : "SELECT 1";
      auto rows = conn->query(sql, {});
      if (!rows->next()) why = "the probe query returned no row";
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (why.empty()) {
      last_ok_ms_.store(steadyMs());
      if (!ok_.exchange(true)) spdlog::info("store: the database answers");
    } else {
      conn.reset();  // reconnect next time: the session may be gone
      if (ok_.exchange(false)) spdlog::warn("store: the database does not answer: {}", why);
    }
    lock.lock();
    cv_.wait_for(lock, options_.interval, [this] { return stopping_; });
  }
}

}  // namespace sluice::store
