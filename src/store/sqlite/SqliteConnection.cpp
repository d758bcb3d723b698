#include "store/sqlite/SqliteConnection.hpp"

#include <sqlite3.h>

#include <charconv>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace sluice::store {
namespace {

constexpr std::string_view kScheme = "sqlite://";
constexpr int kDefaultBusyTimeoutMs = 5000;

StoreErrc classify(int extended_rc) {
  switch (extended_rc) {
    case SQLITE_CONSTRAINT_UNIQUE:
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_FOREIGNKEY:
      return StoreErrc::Conflict;
    default:
      break;
  }
  switch (extended_rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
    case SQLITE_NOMEM:
    case SQLITE_READONLY:
      return StoreErrc::Unavailable;
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return StoreErrc::InvalidData;
    default:
      return StoreErrc::Internal;
  }
}

[[noreturn]] void fail(sqlite3* db, int rc, std::string_view what) {
  int ext = db ? sqlite3_extended_errcode(db) : rc;
  std::string msg = "sqlite: ";
  msg += what;
  msg += ": ";
  msg += db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  throw StoreError(classify(ext), msg);
}

class SqliteRows final : public SqlRows {
 public:
  SqliteRows(sqlite3* db, sqlite3_stmt* st) : db_(db), st_(st) {}
  ~SqliteRows() override {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }
  bool next() override {
    if (done_) return false;
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    done_ = true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, rc, "step");
  }
  bool isNull(int c) override { return sqlite3_column_type(st_, c) == SQLITE_NULL; }
  std::int64_t getInt(int c) override { return sqlite3_column_int64(st_, c); }
  double getReal(int c) override { return sqlite3_column_double(st_, c); }
  std::string getText(int c) override {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, c));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(st_, c))) : std::string();
  }
  std::string getBlob(int c) override {
    auto* p = static_cast<const char*>(sqlite3_column_blob(st_, c));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(st_, c))) : std::string();
  }
  bool getBool(int c) override { return sqlite3_column_int64(st_, c) != 0; }

 private:
  sqlite3* db_;
  sqlite3_stmt* st_;
  bool done_ = false;
};

class SqliteConnection final : public SqlConnection {
 public:
  SqliteConnection(const std::string& path, int busy_timeout_ms) {
    int rc =
        sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg =
          "sqlite: cannot open database file '" + path + "': " + (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
      sqlite3_close(db_);
      db_ = nullptr;
      throw StoreError(StoreErrc::Unavailable, msg);
    }
    interrupt_->db = db_;
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, busy_timeout_ms);
    try {
      // WAL lets readers (admin API, usage queries) run beside the log writer; NORMAL is
      // durable across process crashes in WAL mode, which is what kill -9 needs. Checkpoints
      // every 4000 pages (16 MB of WAL) instead of 1000: each checkpoint syncs and rewrites
      // the pages every log batch touches again, about 5% of the writer's CPU at the default.
      execScript(
          "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
          "PRAGMA wal_autocheckpoint=4000;");
    } catch (...) {
      detachInterrupt();
      sqlite3_close(db_);
      db_ = nullptr;
      throw;
    }
  }
  ~SqliteConnection() override {
    detachInterrupt();
    for (auto& [sql, st] : cache_) sqlite3_finalize(st);
    sqlite3_close(db_);
  }

  Dialect dialect() const override { return Dialect::Sqlite; }

  void execScript(const std::string& sql) override {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
      sqlite3_free(err);
      fail(db_, rc, "exec");
    }
  }

  std::unique_ptr<SqlRows> query(const std::string& sql, std::span<const SqlParam> params) override {
    sqlite3_stmt* st = prepare(sql);
    // The rows are stepped after this returns, possibly past the parameters' lifetime: copy.
    bind(st, params, SQLITE_TRANSIENT);
    return std::make_unique<SqliteRows>(db_, st);
  }

  std::int64_t execute(const std::string& sql, std::span<const SqlParam> params) override {
    sqlite3_stmt* st = prepare(sql);
    // Stepped to the end before returning, while the parameters are alive: no copies (a log
    // batch binds thousands of strings).
    bind(st, params, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    }
    // Reset without clearing: the bindings are not copies, there is nothing to free.
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) fail(db_, rc, "step");
    return sqlite3_changes64(db_);
  }

  void beginWrite() override { execScript("BEGIN IMMEDIATE"); }

  std::function<void()> canceller() override {
    return [i = interrupt_] {
      std::lock_guard lk(i->mu);
      if (i->db) sqlite3_interrupt(i->db);
    };
  }

 private:
  // sqlite3_interrupt is thread-safe while the handle is open; the lock keeps it open.
  struct Interrupt {
    std::mutex mu;
    sqlite3* db = nullptr;
  };
  void detachInterrupt() {
    std::lock_guard lk(interrupt_->mu);
    interrupt_->db = nullptr;
  }

  sqlite3_stmt* prepare(const std::string& sql) {
    auto it = cache_.find(sql);
    if (it != cache_.end()) return it->second;
    sqlite3_stmt* st = nullptr;
    int rc =
        sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &st, nullptr);
    if (rc != SQLITE_OK) fail(db_, rc, "prepare");
    cache_.emplace(sql, st);
    return st;
  }

  void bind(sqlite3_stmt* st, std::span<const SqlParam> params, sqlite3_destructor_type text_lifetime) {
    sqlite3_reset(st);
    // Every parameter is bound on every use, so no earlier value (or dangling SQLITE_STATIC
    // pointer) can be read: no need to clear bindings first.
    if (static_cast<std::size_t>(sqlite3_bind_parameter_count(st)) != params.size())
      throw StoreError(StoreErrc::Internal, "sqlite: statement takes " +
                                                std::to_string(sqlite3_bind_parameter_count(st)) + " parameters, " +
                                                std::to_string(params.size()) + " given");
    for (std::size_t k = 0; k < params.size(); ++k) {
      const SqlParam& p = params[k];
      int i = static_cast<int>(k) + 1;
      int rc = SQLITE_OK;
      switch (p.kind) {
        case SqlParam::Kind::Null:
          rc = sqlite3_bind_null(st, i);
          break;
        case SqlParam::Kind::Int:
        case SqlParam::Kind::Bool:
          rc = sqlite3_bind_int64(st, i, p.i);
          break;
        case SqlParam::Kind::Real:
          rc = sqlite3_bind_double(st, i, p.d);
          break;
        case SqlParam::Kind::Text:
          rc = sqlite3_bind_text64(st, i, p.s.data(), p.s.size(), text_lifetime, SQLITE_UTF8);
          break;
        case SqlParam::Kind::Blob:
          rc = sqlite3_bind_blob64(st, i, p.s.data(), p.s.size(), text_lifetime);
          break;
      }
      if (rc != SQLITE_OK) fail(db_, rc, "bind");
    }
  }

  sqlite3* db_ = nullptr;
  std::shared_ptr<Interrupt> interrupt_ = std::make_shared<Interrupt>();
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

}  // namespace

std::unique_ptr<SqlConnection> openSqliteConnection(const std::string& url) {
  if (url.rfind(kScheme, 0) != 0) throw StoreError(StoreErrc::BadUrl, "store url '" + url + "' is not sqlite://PATH");
  std::string_view rest = std::string_view(url).substr(kScheme.size());
  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (rest.empty())
    throw StoreError(StoreErrc::BadUrl,
                     "store url '" + url + "' has no file path; write sqlite://./sluice.db or sqlite:///abs/path.db");
  int busy_timeout_ms = kDefaultBusyTimeoutMs;
  while (!query.empty()) {
    std::string_view kv = query.substr(0, query.find('&'));
    query = kv.size() < query.size() ? query.substr(kv.size() + 1) : std::string_view();
    auto eq = kv.find('=');
    std::string_view key = kv.substr(0, eq);
    std::string_view val = eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1);
    if (key == "busy_timeout_ms") {
      auto [p, ec] = std::from_chars(val.data(), val.data() + val.size(), busy_timeout_ms);
      if (ec != std::errc() || p != val.data() + val.size() || busy_timeout_ms < 0)
        throw StoreError(StoreErrc::BadUrl, "store url '" + url + "': busy_timeout_ms must be a non-negative integer");
    } else {
      throw StoreError(StoreErrc::BadUrl, "store url '" + url + "': unknown parameter '" + std::string(key) +
                                              "' (sqlite URLs take busy_timeout_ms)");
    }
  }
  return std::make_unique<SqliteConnection>(std::string(rest), busy_timeout_ms);
}

}  // namespace sluice::store
