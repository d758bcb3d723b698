#include "store/SqlStore.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <chrono>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "store/Migrations.hpp"
#include "store/Stats.hpp"

namespace sluice::store {
namespace {

using P = SqlParam;

std::int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::span<const Migration> migrationsFor(Dialect d) {
  return d == Dialect::Sqlite ? sqliteMigrations() : postgresMigrations();
}

// Any fixed 64-bit number: serializes migrations of instances sharing one PostgreSQL database.
constexpr std::int64_t kMigrationLockId = 0x51C3'0001;

#define SLUICE_LOG_COLUMNS_NO_BODIES                                                                            \
  "time_ms, request_id, virtual_key_id, channel, upstream_key, model, status, attempts, ttfb_ms, duration_ms, " \
  "input_tokens, output_tokens, cached_tokens, cost_usd, client_addr, user_agent, stream, cache_write_tokens, " \
  "reasoning_tokens, screening"
#define SLUICE_LOG_COLUMNS SLUICE_LOG_COLUMNS_NO_BODIES ", request_body, response_body"
constexpr std::size_t kLogColumnCount = 22;

// The rollup tables' columns after the period start (hour_ms or day_ms), and the upsert that
// adds to a row already there. Both dialects take it (SQLite >= 3.24, PostgreSQL >= 9.5).
#define SLUICE_ROLLUP_COLUMNS                                                                                \
  "virtual_key_id, model, channel, requests, errors, input_tokens, output_tokens, cached_tokens, cost_usd, " \
  "cache_write_tokens, reasoning_tokens"
#define SLUICE_ROLLUP_UPDATE                                                                                  \
  ", virtual_key_id, model, channel) DO UPDATE SET requests = cur.requests + excluded.requests, "             \
  "errors = cur.errors + excluded.errors, input_tokens = cur.input_tokens + excluded.input_tokens, "          \
  "output_tokens = cur.output_tokens + excluded.output_tokens, "                                              \
  "cached_tokens = cur.cached_tokens + excluded.cached_tokens, cost_usd = cur.cost_usd + excluded.cost_usd, " \
  "cache_write_tokens = cur.cache_write_tokens + excluded.cache_write_tokens, "                               \
  "reasoning_tokens = cur.reasoning_tokens + excluded.reasoning_tokens"

// The two rollup levels. usage() reads days for whole days, hours around them, rows for the rest.
struct RollupLevel {
  const char* table;
  const char* start;  // column of the period's start
  std::int64_t period_ms;
};
constexpr RollupLevel kHourly{"usage_hourly", "hour_ms", 3'600'000};
constexpr RollupLevel kDaily{"usage_daily", "day_ms", 86'400'000};

// "INSERT INTO <table> AS cur (<start>, ...) <values> ON CONFLICT (...) DO UPDATE ...".
std::string rollupUpsert(const RollupLevel& level, const std::string& values) {
  return std::string("INSERT INTO ") + level.table + " AS cur (" + level.start + ", " SLUICE_ROLLUP_COLUMNS ") " +
         values + " ON CONFLICT (" + level.start + SLUICE_ROLLUP_UPDATE;
}

void appendLogParams(std::vector<SqlParam>& out, const LogRecord& r) {
  out.insert(out.end(), {P::integer(r.time_ms),          P::text(r.request_id),
                         P::optInt(r.virtual_key_id),    P::text(r.channel),
                         P::text(r.upstream_key),        P::text(r.model),
                         P::integer(r.status),           P::text(r.attempts),
                         P::integer(r.ttfb_ms),          P::integer(r.duration_ms),
                         P::integer(r.input_tokens),     P::integer(r.output_tokens),
                         P::integer(r.cached_tokens),    P::real(r.cost_usd),
                         P::text(r.client_addr),         P::text(r.user_agent),
                         P::boolean(r.stream),           P::integer(r.cache_write_tokens),
                         P::integer(r.reasoning_tokens), P::text(r.screening),
                         P::optText(r.request_body),     P::optText(r.response_body)});
}

// SQLite: OR ROLLBACK, because a failed row fails the whole batch anyway (see insertLogs);
// a plain INSERT would make SQLite keep a statement journal (a copy of every page the
// statement touches, spilled to a temp file) just to undo that one statement.
std::string insertLogsSql(Dialect dialect, std::size_t rows) {
  std::string row = "(";
  for (std::size_t i = 0; i < kLogColumnCount; ++i) row += i ? ",?" : "?";
  row += ")";
  std::string sql = dialect == Dialect::Sqlite ? "INSERT OR ROLLBACK INTO" : "INSERT INTO";
  sql += " request_logs (" SLUICE_LOG_COLUMNS ") VALUES ";
  sql.reserve(sql.size() + rows * (row.size() + 1));
  for (std::size_t i = 0; i < rows; ++i) {
    if (i) sql += ',';
    sql += row;
  }
  return sql;
}

// ---- row mapping ----
// Column lists are macros so each query is one literal, assembled at compile time.

#define SLUICE_VK_COLUMNS                                                                                          \
  "id, name, key_hash, key_prefix, allowed_models, allowed_channels, rpm, tpm, max_concurrent, budget_daily_usd, " \
  "budget_monthly_usd, budget_total_usd, expires_at, revoked_at, metadata, created_at, updated_at, settings, team_id"

VirtualKey readVirtualKey(SqlRows& r) {
  VirtualKey k;
  k.id = r.getInt(0);
  k.name = r.getText(1);
  k.key_hash = r.getText(2);
  k.key_prefix = r.getText(3);
  k.allowed_models = r.getText(4);
  k.allowed_channels = r.getText(5);
  k.rpm = r.optInt(6);
  k.tpm = r.optInt(7);
  k.max_concurrent = r.optInt(8);
  k.budget_daily_usd = r.optReal(9);
  k.budget_monthly_usd = r.optReal(10);
  k.budget_total_usd = r.optReal(11);
  k.expires_at_ms = r.optInt(12);
  k.revoked_at_ms = r.optInt(13);
  k.metadata = r.getText(14);
  k.created_at_ms = r.getInt(15);
  k.updated_at_ms = r.getInt(16);
  k.settings = r.getText(17);
  k.team_id = r.optInt(18);
  return k;
}

#define SLUICE_CHANNEL_COLUMNS \
  "id, name, type, base_url, models, priority, weight, headers, enabled, created_at, updated_at, settings"

Channel readChannel(SqlRows& r) {
  Channel c;
  c.id = r.getInt(0);
  c.name = r.getText(1);
  c.type = r.getText(2);
  c.base_url = r.getText(3);
  c.models = r.getText(4);
  c.priority = r.getInt(5);
  c.weight = r.getInt(6);
  c.headers = r.getText(7);
  c.enabled = r.getBool(8);
  c.created_at_ms = r.getInt(9);
  c.updated_at_ms = r.getInt(10);
  c.settings = r.getText(11);
  return c;
}

#define SLUICE_UK_COLUMNS \
  "id, channel_id, secret_encrypted, label, state, disabled_reason, cooldown_until, created_at, updated_at"

const char* stateName(UpstreamKeyState s) {
  return s == UpstreamKeyState::Disabled ? "disabled" : "active";
}

UpstreamKey readUpstreamKey(SqlRows& r) {
  UpstreamKey k;
  k.id = r.getInt(0);
  k.channel_id = r.getInt(1);
  k.secret_encrypted = r.getBlob(2);
  k.label = r.getText(3);
  k.state = r.getText(4) == "disabled" ? UpstreamKeyState::Disabled : UpstreamKeyState::Active;
  k.disabled_reason = r.getText(5);
  k.cooldown_until_ms = r.optInt(6);
  k.created_at_ms = r.getInt(7);
  k.updated_at_ms = r.getInt(8);
  return k;
}

template <class T, class F>
std::optional<T> first(std::unique_ptr<SqlRows> rows, F read) {
  if (!rows->next()) return std::nullopt;
  return read(*rows);
}

template <class T, class F>
std::vector<T> all(std::unique_ptr<SqlRows> rows, F read) {
  std::vector<T> out;
  while (rows->next()) out.push_back(read(*rows));
  return out;
}

// Columns: id, then SLUICE_LOG_COLUMNS (bodies may be NULL).
LogEntry readLog(SqlRows& rows) {
  LogEntry e;
  e.id = rows.getInt(0);
  LogRecord& r = e.record;
  r.time_ms = rows.getInt(1);
  r.request_id = rows.getText(2);
  r.virtual_key_id = rows.optInt(3);
  r.channel = rows.getText(4);
  r.upstream_key = rows.getText(5);
  r.model = rows.getText(6);
  r.status = static_cast<int>(rows.getInt(7));
  r.attempts = rows.getText(8);
  r.ttfb_ms = rows.getInt(9);
  r.duration_ms = rows.getInt(10);
  r.input_tokens = rows.getInt(11);
  r.output_tokens = rows.getInt(12);
  r.cached_tokens = rows.getInt(13);
  r.cost_usd = rows.getReal(14);
  r.client_addr = rows.getText(15);
  r.user_agent = rows.getText(16);
  r.stream = rows.getBool(17);
  r.cache_write_tokens = rows.getInt(18);
  r.reasoning_tokens = rows.getInt(19);
  r.screening = rows.getText(20);
  r.request_body = rows.optText(21);
  r.response_body = rows.optText(22);
  return e;
}

// A read-only transaction, so the several queries of one answer see the same rows (SQLite: a
// deferred transaction holds one WAL snapshot; PostgreSQL: REPEATABLE READ). Always rolled
// back: there is nothing to commit.
class ReadSnapshot {
 public:
  explicit ReadSnapshot(SqlConnection& c) : c_(c) {
    c_.execScript(c_.dialect() == Dialect::Postgres ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN");
  }
  ~ReadSnapshot() {
    try {
      c_.execScript("ROLLBACK");
    } catch (...) {  // the connection may be what failed; the next statement reports it
    }
  }
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;

 private:
  SqlConnection& c_;
};

// COUNT, errors, tokens and cost of a group of rows: five columns, read back by readCounts().
#define SLUICE_STATS_SUMS                                                   \
  "COUNT(*), COALESCE(SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END), 0), " \
  "COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cost_usd), 0)"

StatsCounts readCounts(SqlRows& rows, int col) {
  StatsCounts c;
  c.requests = rows.getInt(col);
  c.errors = rows.getInt(col + 1);
  c.input_tokens = rows.getInt(col + 2);
  c.output_tokens = rows.getInt(col + 3);
  c.cost_usd = rows.getReal(col + 4);
  return c;
}

void addCounts(StatsCounts& to, const StatsCounts& c) {
  to.requests += c.requests;
  to.errors += c.errors;
  to.input_tokens += c.input_tokens;
  to.output_tokens += c.output_tokens;
  to.cost_usd += c.cost_usd;
}

// Period boundaries, clamped to what int64 holds; times before the epoch count as 0 (no row
// has one, and the window's rows before it are read from request_logs anyway).
std::int64_t floorTo(std::int64_t t, std::int64_t period) {
  return t <= 0 ? 0 : (t / period) * period;
}
std::int64_t ceilTo(std::int64_t t, std::int64_t period) {
  if (t <= 0) return 0;
  if (t > std::numeric_limits<std::int64_t>::max() - period) return std::numeric_limits<std::int64_t>::max();
  return ((t + period - 1) / period) * period;
}

}  // namespace

// ---- cursor ----

std::string encodeLogCursor(std::int64_t time_ms, std::int64_t id) {
  return "c1." + std::to_string(time_ms) + "." + std::to_string(id);
}

std::pair<std::int64_t, std::int64_t> decodeLogCursor(const std::string& cursor) {
  auto bad = [&] { return StoreError(StoreErrc::InvalidData, "invalid log cursor '" + cursor.substr(0, 64) + "'"); };
  if (cursor.rfind("c1.", 0) != 0) throw bad();
  std::string_view rest = std::string_view(cursor).substr(3);
  auto dot = rest.find('.');
  if (dot == std::string_view::npos) throw bad();
  std::int64_t t = 0, id = 0;
  auto parse = [](std::string_view s, std::int64_t& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return !s.empty() && ec == std::errc() && p == s.data() + s.size();
  };
  if (!parse(rest.substr(0, dot), t) || !parse(rest.substr(dot + 1), id)) throw bad();
  return {t, id};
}

// ---- store ----

SqlStore::SqlStore(std::unique_ptr<SqlConnection> conn) : conn_(std::move(conn)) {}

int Store::latestSchemaVersion() {
  auto s = sqliteMigrations();
  return s.empty() ? 0 : s.back().version;
}

int SqlStore::schemaVersion() {
  const char* exists = conn_->dialect() == Dialect::Sqlite
                           ? "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
                           : "SELECT COUNT(*) FROM pg_tables WHERE tablename = 'schema_migrations' "
                             "AND schemaname = current_schema()";
  {
    auto rows = conn_->query(exists, {});
    if (!rows->next() || rows->getInt(0) == 0) return 0;
  }
  auto rows = conn_->query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", {});
  return rows->next() ? static_cast<int>(rows->getInt(0)) : 0;
}

void SqlStore::migrate() {
  auto migrations = migrationsFor(conn_->dialect());
  SqlTransaction tx(*conn_);
  if (conn_->dialect() == Dialect::Postgres) {
    P lock[] = {P::integer(kMigrationLockId)};
    conn_->query("SELECT pg_advisory_xact_lock(?)", lock)->next();
  }
  conn_->execScript(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
      "applied_at BIGINT NOT NULL)");
  int current = schemaVersion();
  int latest = migrations.empty() ? 0 : migrations.back().version;
  if (current > latest)
    throw StoreError(StoreErrc::Schema, "database schema is at version " + std::to_string(current) +
                                            " but this Sluice knows versions up to " + std::to_string(latest) +
                                            "; run a newer Sluice against this database");
  for (const Migration& m : migrations) {
    if (m.version <= current) continue;
    try {
      conn_->execScript(m.sql);
    } catch (const StoreError& e) {
      if (e.transient()) throw;
      throw StoreError(StoreErrc::Schema,
                       "migration " + std::to_string(m.version) + " (" + m.name + ") failed: " + e.what());
    }
    P params[] = {P::integer(m.version), P::text(m.name), P::integer(nowMs())};
    conn_->execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", params);
  }
  tx.commit();
}

// ---- deferred indexes ----

namespace {
// Any fixed 64-bit number, apart from kMigrationLockId: one instance at a time builds the
// deferred indexes of a PostgreSQL database (held for the session, across the build).
constexpr std::int64_t kIndexBuildLockId = 0x51C3'0002;

std::span<const DeferredIndex> deferredIndexesFor(Dialect d) {
  return d == Dialect::Sqlite ? sqliteDeferredIndexes() : postgresDeferredIndexes();
}
}  // namespace

bool SqlStore::deferredIndexMissing(const char* name) {
  const bool pg = conn_->dialect() == Dialect::Postgres;
  P p[] = {P::text(name)};
  // PostgreSQL: an index that a cut-off CONCURRENTLY build left behind is there but invalid
  // (never used by queries); so is one another instance is building right now.
  auto rows = conn_->query(pg ? "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
                                "WHERE c.relname = ? AND c.relnamespace = current_schema()::regnamespace"
                              : "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?",
                           p);
  return !rows->next() || (pg && !rows->getBool(0));
}

std::vector<std::string> SqlStore::missingDeferredIndexes() {
  std::vector<std::string> out;
  for (const DeferredIndex& ix : deferredIndexesFor(conn_->dialect()))
    if (deferredIndexMissing(ix.name)) out.emplace_back(ix.name);
  return out;
}

bool SqlStore::buildDeferredIndex(const std::string& name) {
  const auto all = deferredIndexesFor(conn_->dialect());
  const auto ix = std::find_if(all.begin(), all.end(), [&](const DeferredIndex& d) { return name == d.name; });
  if (ix == all.end()) throw StoreError(StoreErrc::InvalidData, "no deferred index named '" + name + "'");
  if (conn_->dialect() == Dialect::Sqlite) {
    conn_->execScript(std::string("CREATE INDEX IF NOT EXISTS ") + ix->name + " ON " + ix->on);
    return true;
  }
  {
    P lock[] = {P::integer(kIndexBuildLockId)};
    auto rows = conn_->query("SELECT pg_try_advisory_lock(?)", lock);
    if (!rows->next() || !rows->getBool(0)) return false;
  }
  auto unlock = [&] {
    P lock[] = {P::integer(kIndexBuildLockId)};
    conn_->query("SELECT pg_advisory_unlock(?)", lock)->next();
  };
  try {
    // Holding the lock, an invalid index is no other instance's build under way: it is what a
    // cut-off build left, and IF NOT EXISTS would keep it.
    if (deferredIndexMissing(ix->name)) {
      conn_->execScript("DROP INDEX CONCURRENTLY IF EXISTS " + name);
      conn_->execScript(std::string("CREATE INDEX CONCURRENTLY IF NOT EXISTS ") + ix->name + " ON " + ix->on);
    }
    unlock();
  } catch (...) {
    try {
      unlock();
    } catch (...) {  // a lost session released it
    }
    throw;
  }
  return true;
}

bool SqlStore::indexBuildsBlockWriters() const {
  return conn_->dialect() == Dialect::Sqlite;
}

std::function<void()> SqlStore::canceller() {
  return conn_->canceller();
}

// ---- subscription credentials ----

namespace {
constexpr const char* kSubscriptionColumns =
    "ref, credential_encrypted, version, lease_owner, lease_until, error, updated_at";

SubscriptionRow subscriptionRow(SqlRows& r) {
  SubscriptionRow s;
  s.ref = r.getText(0);
  s.credential_encrypted = r.getBlob(1);
  s.version = r.getInt(2);
  s.lease_owner = r.getText(3);
  s.lease_until_ms = r.getInt(4);
  s.error = r.getText(5);
  s.updated_at_ms = r.getInt(6);
  return s;
}
}  // namespace

std::optional<SubscriptionRow> SqlStore::getSubscription(const std::string& ref) {
  P params[] = {P::text(ref)};
  auto rows = conn_->query(std::string("SELECT ") + kSubscriptionColumns + " FROM subscription_credentials WHERE ref = ?",
                           params);
  if (!rows->next()) return std::nullopt;
  return subscriptionRow(*rows);
}

SubscriptionRow SqlStore::seedSubscription(const std::string& ref, const std::string& credential_encrypted,
                                           std::int64_t now_ms) {
  P params[] = {P::text(ref), P::blob(credential_encrypted), P::integer(now_ms)};
  conn_->execute(
      "INSERT INTO subscription_credentials (ref, credential_encrypted, version, lease_owner, lease_until, error, "
      "updated_at) VALUES (?, ?, 1, '', 0, '', ?) ON CONFLICT (ref) DO NOTHING",
      params);
  auto row = getSubscription(ref);
  if (!row) throw StoreError(StoreErrc::Internal, "a subscription credential row vanished after its insert");
  return *row;
}

bool SqlStore::leaseSubscription(const std::string& ref, std::int64_t version, const std::string& owner,
                                 std::int64_t now_ms, std::int64_t until_ms) {
  P params[] = {P::text(owner), P::integer(until_ms), P::text(ref), P::integer(version), P::integer(now_ms)};
  return conn_->execute(
             "UPDATE subscription_credentials SET lease_owner = ?, lease_until = ? WHERE ref = ? AND version = ? AND "
             "error = '' AND lease_until <= ?",
             params) == 1;
}

bool SqlStore::commitSubscription(const std::string& ref, std::int64_t version, const std::string& owner,
                                  const std::string& credential_encrypted, std::int64_t now_ms) {
  P params[] = {P::blob(credential_encrypted), P::integer(now_ms), P::text(ref), P::integer(version), P::text(owner)};
  return conn_->execute(
             "UPDATE subscription_credentials SET credential_encrypted = ?, version = version + 1, lease_owner = '', "
             "lease_until = 0, updated_at = ? WHERE ref = ? AND version = ? AND lease_owner = ?",
             params) == 1;
}

void SqlStore::releaseSubscription(const std::string& ref, const std::string& owner) {
  P params[] = {P::text(ref), P::text(owner)};
  conn_->execute(
      "UPDATE subscription_credentials SET lease_owner = '', lease_until = 0 WHERE ref = ? AND lease_owner = ?", params);
}

void SqlStore::failSubscription(const std::string& ref, const std::string& owner, const std::string& error,
                                std::int64_t now_ms) {
  P params[] = {P::text(error), P::integer(now_ms), P::text(ref), P::text(owner)};
  conn_->execute(
      "UPDATE subscription_credentials SET error = ?, lease_owner = '', lease_until = 0, updated_at = ? WHERE ref = ? "
      "AND lease_owner = ?",
      params);
}

// ---- request logs ----

void SqlStore::insertLogs(std::span<const LogRecord> records) {
  if (records.empty()) return;
  SqlTransaction tx(*conn_);
  log_params_.reserve(std::min(records.size(), kInsertChunk) * kLogColumnCount);
  // Statements of kInsertChunk rows, then the rest as power-of-two row counts: each batch is
  // a few statements (PostgreSQL: a few round trips), and the connection prepares at most
  // log2(kInsertChunk) + 1 of them, once.
  std::size_t off = 0;
  for (std::size_t n = kInsertChunk; n > 0; n /= 2) {
    while (records.size() - off >= n) {
      log_params_.clear();
      for (std::size_t i = 0; i < n; ++i) appendLogParams(log_params_, records[off + i]);
      conn_->execute(insertSqlFor(n), log_params_);
      off += n;
    }
  }
  // One UPDATE per key, in id order so concurrent writers lock key rows in the same order.
  std::map<std::int64_t, std::pair<double, std::int64_t>> per_key;  // id -> (spend, requests)
  for (const LogRecord& r : records) {
    if (!r.virtual_key_id) continue;
    auto& [usd, n] = per_key[*r.virtual_key_id];
    usd += r.cost_usd;
    ++n;
  }
  for (const auto& [id, sums] : per_key) {
    P p[] = {P::real(sums.first), P::integer(sums.second), P::integer(id)};
    conn_->execute(
        "UPDATE virtual_keys SET spend_total_usd = spend_total_usd + ?, requests_total = requests_total + ? "
        "WHERE id = ?",
        p);
  }
  addToRollups(records);
  tx.commit();
}

void SqlStore::addToRollups(std::span<const LogRecord> records) {
  struct Sums {
    std::int64_t requests = 0, errors = 0, input = 0, output = 0, cached = 0, cache_write = 0, reasoning = 0;
    double cost = 0;
  };
  // Ordered, so concurrent writers (PostgreSQL) take the rollup rows' locks in the same order.
  using Group = std::tuple<std::int64_t, std::int64_t, std::string_view, std::string_view>;
  std::map<Group, Sums> hours, days;
  for (const LogRecord& r : records) {
    Sums& g = hours[Group{(r.time_ms / kHourly.period_ms) * kHourly.period_ms, r.virtual_key_id.value_or(0), r.model,
                          r.channel}];
    ++g.requests;
    g.errors += r.status >= 400 ? 1 : 0;
    g.input += r.input_tokens;
    g.output += r.output_tokens;
    g.cached += r.cached_tokens;
    g.cache_write += r.cache_write_tokens;
    g.reasoning += r.reasoning_tokens;
    g.cost += r.cost_usd;
  }
  for (const auto& [k, g] : hours) {
    Sums& d = days[Group{(std::get<0>(k) / kDaily.period_ms) * kDaily.period_ms, std::get<1>(k), std::get<2>(k),
                         std::get<3>(k)}];
    d.requests += g.requests;
    d.errors += g.errors;
    d.input += g.input;
    d.output += g.output;
    d.cached += g.cached;
    d.cache_write += g.cache_write;
    d.reasoning += g.reasoning;
    d.cost += g.cost;
  }
  static const std::string kHourlySql = rollupUpsert(kHourly, "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  static const std::string kDailySql = rollupUpsert(kDaily, "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const auto* level : {&hours, &days}) {
    for (const auto& [k, g] : *level) {
      P p[] = {P::integer(std::get<0>(k)), P::integer(std::get<1>(k)),
               P::text(std::get<2>(k)),    P::text(std::get<3>(k)),
               P::integer(g.requests),     P::integer(g.errors),
               P::integer(g.input),        P::integer(g.output),
               P::integer(g.cached),       P::real(g.cost),
               P::integer(g.cache_write),  P::integer(g.reasoning)};
      conn_->execute(level == &hours ? kHourlySql : kDailySql, p);
    }
  }
}

SqlStore::RollupCover SqlStore::rollupCover() {
  auto rows = conn_->query("SELECT backfill_before_ms, retained_from_ms FROM rollup_state WHERE id = 1", {});
  constexpr auto kNever = std::numeric_limits<std::int64_t>::max();
  if (!rows->next()) return {kNever, kNever};                 // no state: trust only the rows
  const std::int64_t backfill = rows->optInt(0).value_or(0);  // an hour boundary
  const std::int64_t retained = rows->getInt(1);
  // The hour and the day holding the retention cutoff have lost some of their rows, not their
  // rollups; a day reaching into hours not yet backfilled lacks those hours' old rows.
  return {std::max(backfill, ceilTo(retained, kHourly.period_ms)),
          std::max(ceilTo(backfill, kDaily.period_ms), ceilTo(retained, kDaily.period_ms))};
}

RollupBackfill SqlStore::backfillRollups() {
  SqlTransaction tx(*conn_);
  // PostgreSQL: the row lock makes instances fold hours one at a time (SQLite's write
  // transaction already does).
  auto state = conn_->query(conn_->dialect() == Dialect::Postgres
                                ? "SELECT backfill_max_id, backfill_before_ms FROM rollup_state WHERE id = 1 FOR UPDATE"
                                : "SELECT backfill_max_id, backfill_before_ms FROM rollup_state WHERE id = 1",
                            {});
  if (!state->next() || state->isNull(1)) return {};
  const std::int64_t max_id = state->getInt(0);
  const std::int64_t before = state->getInt(1);
  RollupBackfill out;
  // The newest hour left: one step down the time index (rows written since, with larger ids,
  // are already in the rollups and only skipped). ORDER BY + LIMIT, not MAX(): with the id
  // condition SQLite would compute MAX() by reading the whole range.
  std::optional<std::int64_t> newest;
  {
    P p[] = {P::integer(before), P::integer(max_id)};
    auto rows =
        conn_->query("SELECT time_ms FROM request_logs WHERE time_ms < ? AND id <= ? ORDER BY time_ms DESC LIMIT 1", p);
    if (rows->next()) newest = rows->getInt(0);
  }
  if (!newest) {
    conn_->execute("UPDATE rollup_state SET backfill_before_ms = NULL WHERE id = 1", {});
    tx.commit();
    return out;
  }
  const std::int64_t hour = (*newest / kHourly.period_ms) * kHourly.period_ms;
  for (const RollupLevel& level : {kHourly, kDaily}) {
    const std::string period = std::to_string(level.period_ms);
    std::string select = "SELECT (time_ms / ";
    select += period;
    select += ") * ";
    select += period;
    select +=
        ", COALESCE(virtual_key_id, 0), model, channel, COUNT(*), SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END), "
        "SUM(input_tokens), SUM(output_tokens), SUM(cached_tokens), SUM(cost_usd), SUM(cache_write_tokens), "
        "SUM(reasoning_tokens) FROM request_logs "
        "WHERE time_ms >= ? AND time_ms < ? AND id <= ? GROUP BY 1, 2, 3, 4";
    P p[] = {P::integer(hour), P::integer(before), P::integer(max_id)};
    out.groups += conn_->execute(rollupUpsert(level, select), p);
  }
  {
    P p[] = {P::integer(hour)};
    conn_->execute("UPDATE rollup_state SET backfill_before_ms = ? WHERE id = 1", p);
  }
  {
    auto rows = conn_->query("SELECT MIN(time_ms) FROM request_logs", {});
    out.oldest_ms = rows->next() ? rows->optInt(0).value_or(hour) : hour;
  }
  tx.commit();
  out.done = false;
  out.before_ms = hour;
  return out;
}

LogPage SqlStore::listLogs(const LogQuery& q) {
  std::size_t limit = std::clamp<std::size_t>(q.limit, 1, kMaxLogPage);
  std::string sql = q.include_bodies ? "SELECT id, " SLUICE_LOG_COLUMNS " FROM request_logs WHERE 1 = 1"
                                     : "SELECT id, " SLUICE_LOG_COLUMNS_NO_BODIES
                                       ", NULL, NULL FROM request_logs WHERE 1 = 1";
  std::vector<SqlParam> params;
  std::int64_t cursor_time = 0, cursor_id = 0;
  if (q.from_ms) {
    sql += " AND time_ms >= ?";
    params.push_back(P::integer(*q.from_ms));
  }
  if (q.to_ms) {
    sql += " AND time_ms < ?";
    params.push_back(P::integer(*q.to_ms));
  }
  if (q.virtual_key_id) {
    sql += " AND virtual_key_id = ?";
    params.push_back(P::integer(*q.virtual_key_id));
  }
  if (q.model) {
    sql += " AND model = ?";
    params.push_back(P::text(*q.model));
  }
  if (q.channel) {
    sql += " AND channel = ?";
    params.push_back(P::text(*q.channel));
  }
  if (q.status) {
    sql += " AND status = ?";
    params.push_back(P::integer(*q.status));
  }
  if (!q.cursor.empty()) {
    std::tie(cursor_time, cursor_id) = decodeLogCursor(q.cursor);
    sql += " AND (time_ms < ? OR (time_ms = ? AND id < ?))";
    params.push_back(P::integer(cursor_time));
    params.push_back(P::integer(cursor_time));
    params.push_back(P::integer(cursor_id));
  }
  sql += " ORDER BY time_ms DESC, id DESC LIMIT ?";
  params.push_back(P::integer(static_cast<std::int64_t>(limit + 1)));  // one more: is there a next page?

  LogPage page;
  auto rows = conn_->query(sql, params);
  while (rows->next()) {
    if (page.entries.size() == limit) {
      const LogEntry& last = page.entries.back();
      page.next_cursor = encodeLogCursor(last.record.time_ms, last.id);
      break;
    }
    page.entries.push_back(readLog(*rows));
  }
  return page;
}

std::vector<UsageRow> SqlStore::usage(const UsageQuery& q) {
  // The rollup state and the rows and rollups it vouches for come from one snapshot.
  ReadSnapshot snapshot(*conn_);
  // The window in segments: rows [from, h0), hours [h0, d0), days [d0, d1), hours [d1, h1),
  // rows [h1, to), each bound clamped to what the rollups hold (days are covered only where
  // hours are, so h0 <= d0 and d1 <= h1 when there are days at all). Key id 0 stands for "no
  // key" in the rollups, so a filter on it (or below) is left to the rows.
  const RollupCover cover = rollupCover();
  const std::int64_t h0 = std::max(ceilTo(q.from_ms, kHourly.period_ms), cover.hourly);
  const std::int64_t h1 = floorTo(q.to_ms, kHourly.period_ms);
  std::int64_t d0 = std::max(ceilTo(q.from_ms, kDaily.period_ms), cover.daily);
  std::int64_t d1 = floorTo(q.to_ms, kDaily.period_ms);
  if (d0 >= d1) d0 = d1 = h1;  // no whole day: hours only
  const bool use_rollups = h0 < h1 && !(q.virtual_key_id && *q.virtual_key_id <= 0);

  // Group-by expressions come from this fixed list, never from the caller's text. Over the
  // union of rows and rollups the dimensions are the columns t, k, m, c.
  std::string select, group;
  auto dim = [&](bool on, const char* expr, const char* absent) {
    select += on ? expr : absent;
    select += ", ";
    if (on) {
      if (!group.empty()) group += ", ";
      group += expr;
    }
  };
  std::vector<SqlParam> params;
  std::string filters;
  if (q.virtual_key_id) filters += " AND virtual_key_id = ?";
  if (q.model) filters += " AND model = ?";
  if (q.channel) filters += " AND channel = ?";
  // A team filter reads the keys' current teams (the rollups keep keys, not teams).
  if (q.team_filter || !q.team_ids.empty()) {
    if (q.team_ids.empty()) {
      filters += " AND 1 = 0";
    } else {
      filters += " AND virtual_key_id IN (SELECT id FROM virtual_keys WHERE team_id IN (";
      for (std::size_t i = 0; i < q.team_ids.size(); ++i) filters += i ? ", ?" : "?";
      filters += "))";
    }
  }
  auto addFilterParams = [&] {
    if (q.virtual_key_id) params.push_back(P::integer(*q.virtual_key_id));
    if (q.model) params.push_back(P::text(*q.model));
    if (q.channel) params.push_back(P::text(*q.channel));
    for (const auto id : q.team_ids) params.push_back(P::integer(id));
  };
  // By team: each key's team now, joined on the key column of the rows or of the rollups.
  const char* teamJoin = " LEFT JOIN virtual_keys tk ON tk.id = ";
  std::string sql;
  if (!use_rollups) {
    dim(q.by_day, "(time_ms / 86400000) * 86400000", "0");
    dim(q.by_virtual_key, "virtual_key_id", "NULL");
    dim(q.by_model, "model", "''");
    dim(q.by_channel, "channel", "''");
    dim(q.by_team, "tk.team_id", "NULL");
    sql = "SELECT " + select +
          "COUNT(*), COALESCE(SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END), 0), "
          "COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
          "COALESCE(SUM(cached_tokens), 0), COALESCE(SUM(cost_usd), 0), "
          "COALESCE(SUM(cache_write_tokens), 0), COALESCE(SUM(reasoning_tokens), 0) "
          "FROM request_logs" +
          (q.by_team ? std::string(teamJoin) + "request_logs.virtual_key_id" : std::string()) +
          " WHERE time_ms >= ? AND time_ms < ?" + filters;
    params = {P::integer(q.from_ms), P::integer(q.to_ms)};
    addFilterParams();
  } else {
    dim(q.by_day, "(t / 86400000) * 86400000", "0");
    dim(q.by_virtual_key, "k", "NULL");
    dim(q.by_model, "m", "''");
    dim(q.by_channel, "c", "''");
    dim(q.by_team, "tk.team_id", "NULL");
    std::string parts;
    auto part = [&](std::int64_t from, std::int64_t to, const std::string& text) {
      if (from >= to) return;
      if (!parts.empty()) parts += " UNION ALL ";
      parts += text + filters;
      params.push_back(P::integer(from));
      params.push_back(P::integer(to));
      addFilterParams();
    };
    // Rows of an edge, summed per hour first so the outer grouping sees few of them.
    auto rows = [&](std::int64_t from, std::int64_t to) {
      part(from, to,
           "SELECT (time_ms / 3600000) * 3600000 AS t, virtual_key_id AS k, model AS m, channel AS c, "
           "COUNT(*) AS n, SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END) AS e, SUM(input_tokens) AS i, "
           "SUM(output_tokens) AS o, SUM(cached_tokens) AS ct, SUM(cost_usd) AS u, SUM(cache_write_tokens) AS cw, "
           "SUM(reasoning_tokens) AS rt FROM request_logs "
           "WHERE time_ms >= ? AND time_ms < ?");
      if (from < to) parts += " GROUP BY 1, 2, 3, 4";
    };
    auto rollups = [&](const RollupLevel& level, std::int64_t from, std::int64_t to) {
      part(from, to,
           std::string("SELECT ") + level.start +
               " AS t, NULLIF(virtual_key_id, 0) AS k, model AS m, channel AS c, requests AS n, errors AS e, "
               "input_tokens AS i, output_tokens AS o, cached_tokens AS ct, cost_usd AS u, cache_write_tokens AS cw, "
               "reasoning_tokens AS rt FROM " +
               level.table + " WHERE " + level.start + " >= ? AND " + level.start + " < ?");
    };
    rows(q.from_ms, h0);
    rollups(kHourly, h0, d0);
    rollups(kDaily, d0, d1);
    rollups(kHourly, d1, h1);
    rows(h1, q.to_ms);
    sql = "SELECT " + select +
          "COALESCE(SUM(n), 0), COALESCE(SUM(e), 0), COALESCE(SUM(i), 0), COALESCE(SUM(o), 0), "
          "COALESCE(SUM(ct), 0), COALESCE(SUM(u), 0), COALESCE(SUM(cw), 0), COALESCE(SUM(rt), 0) FROM (" +
          parts + ") usage_parts" + (q.by_team ? std::string(teamJoin) + "usage_parts.k" : std::string());
  }
  if (!group.empty()) sql += " GROUP BY " + group + " ORDER BY " + group;

  std::vector<UsageRow> out;
  auto rows = conn_->query(sql, params);
  while (rows->next()) {
    UsageRow u;
    u.day_ms = rows->getInt(0);
    u.virtual_key_id = rows->optInt(1);
    u.model = rows->getText(2);
    u.channel = rows->getText(3);
    u.team_id = rows->optInt(4);
    u.requests = rows->getInt(5);
    u.errors = rows->getInt(6);
    u.input_tokens = rows->getInt(7);
    u.output_tokens = rows->getInt(8);
    u.cached_tokens = rows->getInt(9);
    u.cost_usd = rows->getReal(10);
    u.cache_write_tokens = rows->getInt(11);
    u.reasoning_tokens = rows->getInt(12);
    out.push_back(std::move(u));
  }
  return out;
}

std::optional<LogEntry> SqlStore::getLog(std::int64_t id) {
  P params[] = {P::integer(id)};
  return first<LogEntry>(conn_->query("SELECT id, " SLUICE_LOG_COLUMNS " FROM request_logs WHERE id = ?", params),
                         readLog);
}

StatsResult SqlStore::stats(const StatsQuery& q) {
  const std::int64_t buckets = statsBucketCount(q.from_ms, q.to_ms, q.step_ms);
  if (buckets <= 0)
    throw StoreError(StoreErrc::InvalidData, "stats: the window [" + std::to_string(q.from_ms) + ", " +
                                                 std::to_string(q.to_ms) + ") or the step " +
                                                 std::to_string(q.step_ms) + " ms is empty or negative");
  if (buckets > kMaxStatsBuckets)
    throw StoreError(StoreErrc::InvalidData, "stats: " + std::to_string(buckets) + " buckets asked for; the most is " +
                                                 std::to_string(kMaxStatsBuckets));
  const std::int64_t first_bucket = q.from_ms / q.step_ms;
  const auto top = static_cast<std::int64_t>(q.top);

  StatsResult out;
  out.series.resize(static_cast<std::size_t>(buckets));
  for (std::int64_t i = 0; i < buckets; ++i)
    out.series[static_cast<std::size_t>(i)].t_ms = (first_bucket + i) * q.step_ms;

  ReadSnapshot snapshot(*conn_);
  // Counts and sums in SQL, one row per bucket that has requests. GROUP BY 1, not the
  // expression again: PostgreSQL would see `time_ms / $1` and `time_ms / $4` as different.
  {
    P params[] = {P::integer(q.step_ms), P::integer(q.from_ms), P::integer(q.to_ms)};
    auto rows = conn_->query("SELECT time_ms / ?, " SLUICE_STATS_SUMS
                             " FROM request_logs WHERE time_ms >= ? AND time_ms < ? GROUP BY 1",
                             params);
    while (rows->next()) {
      const std::int64_t i = rows->getInt(0) - first_bucket;
      if (i < 0 || i >= buckets) continue;  // cannot happen for rows inside the window
      StatsBucket& b = out.series[static_cast<std::size_t>(i)];
      b.counts = readCounts(*rows, 1);
      addCounts(out.totals, b.counts);
    }
  }
  // The top groups, largest first; ties in name (key id) order so both dialects agree.
  P group_params[] = {P::integer(q.from_ms), P::integer(q.to_ms), P::integer(top)};
  auto readGroups = [&](const char* sql, std::vector<StatsGroup>& into) {
    auto rows = conn_->query(sql, group_params);
    while (rows->next()) {
      StatsGroup g;
      g.name = rows->getText(0);
      g.counts = readCounts(*rows, 1);
      into.push_back(std::move(g));
    }
  };
  readGroups("SELECT channel, " SLUICE_STATS_SUMS
             " FROM request_logs WHERE time_ms >= ? AND time_ms < ? GROUP BY channel "
             "ORDER BY COUNT(*) DESC, channel LIMIT ?",
             out.by_channel);
  readGroups("SELECT model, " SLUICE_STATS_SUMS
             " FROM request_logs WHERE time_ms >= ? AND time_ms < ? GROUP BY model "
             "ORDER BY COUNT(*) DESC, model LIMIT ?",
             out.by_model);
  {
    // Grouped first, then joined: the join touches at most `top` key rows.
    auto rows = conn_->query(
        "SELECT g.virtual_key_id, k.name, g.n, g.e, g.i, g.o, g.c FROM ("
        "SELECT virtual_key_id, COUNT(*) AS n, COALESCE(SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END), 0) AS e, "
        "COALESCE(SUM(input_tokens), 0) AS i, COALESCE(SUM(output_tokens), 0) AS o, COALESCE(SUM(cost_usd), 0) AS c "
        "FROM request_logs WHERE time_ms >= ? AND time_ms < ? GROUP BY virtual_key_id "
        "ORDER BY COUNT(*) DESC, COALESCE(virtual_key_id, 0) LIMIT ?) g "
        "LEFT JOIN virtual_keys k ON k.id = g.virtual_key_id ORDER BY g.n DESC, COALESCE(g.virtual_key_id, 0)",
        group_params);
    while (rows->next()) {
      StatsGroup g;
      g.virtual_key_id = rows->optInt(0);
      if (!rows->isNull(1)) g.name = rows->getText(1);
      g.counts = readCounts(*rows, 2);
      out.by_key.push_back(std::move(g));
    }
  }

  // Percentiles need the values themselves: read the successful rows' timings (1 in N by id
  // when the window holds more than max_samples requests, so memory stays bounded and the
  // answer is the same on every call).
  out.sample_stride = statsSampleStride(out.totals.requests, q.max_samples);
  out.sampled = out.sample_stride > 1;
  std::unordered_map<std::string, std::size_t> channel_at, model_at;
  std::map<std::int64_t, std::size_t> key_at;  // 0: no key
  for (std::size_t i = 0; i < out.by_channel.size(); ++i) channel_at.emplace(out.by_channel[i].name, i);
  for (std::size_t i = 0; i < out.by_model.size(); ++i) model_at.emplace(out.by_model[i].name, i);
  for (std::size_t i = 0; i < out.by_key.size(); ++i) key_at.emplace(out.by_key[i].virtual_key_id.value_or(0), i);
  std::vector<std::vector<std::int64_t>> bucket_ttfb(out.series.size()), bucket_latency(out.series.size());
  std::vector<std::vector<std::int64_t>> channel_latency(out.by_channel.size()), model_latency(out.by_model.size()),
      key_latency(out.by_key.size());
  std::vector<std::int64_t> all_ttfb, all_latency;
  if (out.totals.requests > 0) {
    std::vector<SqlParam> params{P::integer(q.from_ms), P::integer(q.to_ms)};
    std::string sql =
        "SELECT time_ms, ttfb_ms, duration_ms, channel, model, virtual_key_id FROM request_logs "
        "WHERE time_ms >= ? AND time_ms < ? AND status < 400";
    if (out.sampled) {
      sql += " AND id % ? = 0";
      params.push_back(P::integer(out.sample_stride));
    }
    auto rows = conn_->query(sql, params);
    while (rows->next()) {
      const std::int64_t i = rows->getInt(0) / q.step_ms - first_bucket;
      if (i < 0 || i >= buckets) continue;
      const std::int64_t ttfb = rows->getInt(1), latency = rows->getInt(2);
      bucket_ttfb[static_cast<std::size_t>(i)].push_back(ttfb);
      bucket_latency[static_cast<std::size_t>(i)].push_back(latency);
      all_ttfb.push_back(ttfb);
      all_latency.push_back(latency);
      if (auto it = channel_at.find(rows->getText(3)); it != channel_at.end())
        channel_latency[it->second].push_back(latency);
      if (auto it = model_at.find(rows->getText(4)); it != model_at.end()) model_latency[it->second].push_back(latency);
      if (auto it = key_at.find(rows->optInt(5).value_or(0)); it != key_at.end())
        key_latency[it->second].push_back(latency);
    }
  }
  for (std::size_t i = 0; i < out.series.size(); ++i) {
    out.series[i].ttfb_ms = percentilesOf(bucket_ttfb[i]);
    out.series[i].latency_ms = percentilesOf(bucket_latency[i]);
  }
  out.ttfb_ms = percentilesOf(all_ttfb);
  out.latency_ms = percentilesOf(all_latency);
  for (std::size_t i = 0; i < out.by_channel.size(); ++i)
    out.by_channel[i].latency_ms = percentilesOf(channel_latency[i]);
  for (std::size_t i = 0; i < out.by_model.size(); ++i) out.by_model[i].latency_ms = percentilesOf(model_latency[i]);
  for (std::size_t i = 0; i < out.by_key.size(); ++i) out.by_key[i].latency_ms = percentilesOf(key_latency[i]);
  return out;
}

std::int64_t SqlStore::deleteLogsBefore(std::int64_t unix_ms, std::int64_t max_rows) {
  // Chunks: each DELETE is its own short transaction, so the log writer is never held up
  // behind one long retention sweep.
  // First, the rollups stop vouching for the hours this sweep touches (their rows go now,
  // their rollups below): from here on usage() reads them from whatever rows are left.
  {
    P p[] = {P::integer(unix_ms), P::integer(unix_ms)};
    conn_->execute("UPDATE rollup_state SET retained_from_ms = ? WHERE id = 1 AND retained_from_ms < ?", p);
  }
  std::int64_t total = 0;
  while (total < max_rows) {
    std::int64_t want = std::min(kDeleteChunk, max_rows - total);
    P params[] = {P::integer(unix_ms), P::integer(want)};
    std::int64_t n = conn_->execute(
        "DELETE FROM request_logs WHERE id IN (SELECT id FROM request_logs WHERE time_ms < ? LIMIT ?)", params);
    total += n;
    if (n < want) break;
  }
  // The rollup periods that end at or before the cutoff, 24 periods per statement. Kept going
  // even when max_rows stopped the rows: a rollup period is a few rows, not thousands.
  for (const RollupLevel& level : {kHourly, kDaily}) {
    const std::string sql = std::string("DELETE FROM ") + level.table + " WHERE " + level.start +
                            " IN (SELECT DISTINCT " + level.start + " FROM " + level.table + " WHERE " + level.start +
                            " <= ? ORDER BY " + level.start + " LIMIT 24)";
    for (;;) {
      P p[] = {P::integer(unix_ms - level.period_ms)};
      if (conn_->execute(sql, p) == 0) break;
    }
  }
  return total;
}

std::map<std::int64_t, KeySpend> SqlStore::spendByKey(std::int64_t day_start_ms, std::int64_t month_start_ms) {
  // Per key, two ranges of the covering (virtual_key_id, time_ms, cost_usd) index: the work is
  // the day's and the month's rows of existing keys, never a scan of the whole log.
  P params[] = {P::integer(day_start_ms), P::integer(month_start_ms)};
  auto rows = conn_->query(
      "SELECT k.id, "
      "COALESCE((SELECT SUM(cost_usd) FROM request_logs WHERE virtual_key_id = k.id AND time_ms >= ?), 0), "
      "COALESCE((SELECT SUM(cost_usd) FROM request_logs WHERE virtual_key_id = k.id AND time_ms >= ?), 0), "
      "k.spend_total_usd FROM virtual_keys k",
      params);
  std::map<std::int64_t, KeySpend> out;
  while (rows->next()) out[rows->getInt(0)] = KeySpend{rows->getReal(1), rows->getReal(2), rows->getReal(3)};
  return out;
}

std::map<std::int64_t, KeyRequests> SqlStore::requestsByKey(std::int64_t day_start_ms, std::int64_t month_start_ms) {
  // The same index ranges as spendByKey (the index covers virtual_key_id and time_ms).
  P params[] = {P::integer(day_start_ms), P::integer(month_start_ms)};
  auto rows = conn_->query(
      "SELECT k.id, "
      "(SELECT COUNT(*) FROM request_logs WHERE virtual_key_id = k.id AND time_ms >= ?), "
      "(SELECT COUNT(*) FROM request_logs WHERE virtual_key_id = k.id AND time_ms >= ?), "
      "k.requests_total FROM virtual_keys k",
      params);
  std::map<std::int64_t, KeyRequests> out;
  while (rows->next()) out[rows->getInt(0)] = KeyRequests{rows->getInt(1), rows->getInt(2), rows->getInt(3)};
  return out;
}

std::map<std::string, std::string> SqlStore::gatewaySettings() {
  auto rows = conn_->query("SELECT name, value FROM gateway_settings ORDER BY name", {});
  std::map<std::string, std::string> out;
  while (rows->next()) out[rows->getText(0)] = rows->getText(1);
  return out;
}

void SqlStore::putGatewaySetting(const std::string& name, const std::string& value) {
  P params[] = {P::text(name), P::text(value), P::integer(nowMs())};
  // Both dialects take this upsert (SQLite >= 3.24, PostgreSQL >= 9.5).
  conn_->execute(
      "INSERT INTO gateway_settings (name, value, updated_at) VALUES (?, ?, ?) "
      "ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
      params);
}

void SqlStore::deleteGatewaySetting(const std::string& name) {
  P params[] = {P::text(name)};
  conn_->execute("DELETE FROM gateway_settings WHERE name = ?", params);
}

void SqlStore::putResponse(const StoredResponse& r) {
  P params[] = {
      P::text(r.id),       P::integer(r.owner_key_id), P::integer(r.created_at_ms), P::integer(r.expires_at_ms),
      P::text(r.response), P::text(r.input_items)};
  // Both dialects take this upsert (SQLite >= 3.24, PostgreSQL >= 9.5).
  conn_->execute(
      "INSERT INTO stored_responses (id, owner_key_id, created_at_ms, expires_at_ms, response, input_items) "
      "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (owner_key_id, id) DO UPDATE SET created_at_ms = excluded.created_at_ms, "
      "expires_at_ms = excluded.expires_at_ms, response = excluded.response, input_items = excluded.input_items",
      params);
}

std::optional<StoredResponse> SqlStore::getResponse(std::int64_t owner_key_id, const std::string& id,
                                                    std::int64_t now_ms) {
  P params[] = {P::integer(owner_key_id), P::text(id), P::integer(now_ms)};
  auto rows = conn_->query(
      "SELECT created_at_ms, expires_at_ms, response, input_items FROM stored_responses "
      "WHERE owner_key_id = ? AND id = ? AND expires_at_ms > ?",
      params);
  if (!rows->next()) return std::nullopt;
  StoredResponse r;
  r.id = id;
  r.owner_key_id = owner_key_id;
  r.created_at_ms = rows->getInt(0);
  r.expires_at_ms = rows->getInt(1);
  r.response = rows->getText(2);
  r.input_items = rows->getText(3);
  return r;
}

bool SqlStore::deleteResponse(std::int64_t owner_key_id, const std::string& id, std::int64_t now_ms) {
  P params[] = {P::integer(owner_key_id), P::text(id), P::integer(now_ms)};
  return conn_->execute("DELETE FROM stored_responses WHERE owner_key_id = ? AND id = ? AND expires_at_ms > ?",
                        params) > 0;
}

std::int64_t SqlStore::deleteExpiredResponses(std::int64_t now_ms, std::int64_t max_rows) {
  // Chunks, each its own short transaction, as deleteLogsBefore: writers are never held up
  // behind one long sweep. A response row may be megabytes, hence smaller chunks.
  constexpr std::int64_t kChunk = 500;
  std::int64_t total = 0;
  while (total < max_rows) {
    std::int64_t want = std::min(kChunk, max_rows - total);
    P params[] = {P::integer(now_ms), P::integer(want)};
    std::int64_t n = conn_->execute(
        "DELETE FROM stored_responses WHERE (owner_key_id, id) IN "
        "(SELECT owner_key_id, id FROM stored_responses WHERE expires_at_ms <= ? LIMIT ?)",
        params);
    total += n;
    if (n < want) break;
  }
  return total;
}

std::string SqlStore::controlPlaneStamp() {
  auto rows = conn_->query("SELECT version FROM control_plane_version WHERE id = 1", {});
  if (!rows->next()) throw StoreError(StoreErrc::Schema, "control_plane_version is empty; run migrate()");
  return std::to_string(rows->getInt(0));
}

const std::string& SqlStore::insertSqlFor(std::size_t rows) {
  std::size_t slot = static_cast<std::size_t>(std::countr_zero(rows));
  if (insert_sql_.size() <= slot) insert_sql_.resize(slot + 1);
  if (insert_sql_[slot].empty()) insert_sql_[slot] = insertLogsSql(conn_->dialect(), rows);
  return insert_sql_[slot];
}

// ---- admin tokens and the audit log ----

namespace {

#define SLUICE_TOKEN_COLUMNS \
  "id, name, role, token_hash, token_prefix, expires_at, revoked_at, created_by, created_at, team_id"

AdminToken readAdminToken(SqlRows& r) {
  AdminToken t;
  t.id = r.getInt(0);
  t.name = r.getText(1);
  t.role = r.getText(2);
  t.token_hash = r.getText(3);
  t.token_prefix = r.getText(4);
  t.expires_at_ms = r.optInt(5);
  t.revoked_at_ms = r.optInt(6);
  t.created_by = r.getText(7);
  t.created_at_ms = r.getInt(8);
  t.team_id = r.optInt(9);
  return t;
}

#define SLUICE_AUDIT_COLUMNS \
  "id, time_ms, actor, role, address, action, method, path, target, status, before_json, after_json"

AuditEntry readAudit(SqlRows& r) {
  AuditEntry e;
  e.id = r.getInt(0);
  e.time_ms = r.getInt(1);
  e.actor = r.getText(2);
  e.role = r.getText(3);
  e.address = r.getText(4);
  e.action = r.getText(5);
  e.method = r.getText(6);
  e.path = r.getText(7);
  e.target = r.getText(8);
  e.status = static_cast<int>(r.getInt(9));
  e.before = r.getText(10);
  e.after = r.getText(11);
  return e;
}

std::int64_t decodeAuditCursor(const std::string& cursor) {
  std::int64_t id = 0;
  const std::string_view rest = std::string_view(cursor).substr(std::min<std::size_t>(cursor.size(), 3));
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), id);
  if (cursor.rfind("a1.", 0) != 0 || rest.empty() || ec != std::errc() || p != rest.data() + rest.size() || id <= 0)
    throw StoreError(StoreErrc::InvalidData, "invalid audit cursor '" + cursor.substr(0, 64) + "'");
  return id;
}

}  // namespace

std::int64_t SqlStore::createAdminToken(const AdminToken& t) {
  P params[] = {P::text(t.name),
                P::text(t.role),
                P::text(t.token_hash),
                P::text(t.token_prefix),
                P::optInt(t.expires_at_ms),
                P::optInt(t.revoked_at_ms),
                P::text(t.created_by),
                P::integer(nowMs()),
                P::optInt(t.team_id)};
  return insertReturningId(
      "INSERT INTO admin_tokens (name, role, token_hash, token_prefix, expires_at, revoked_at, created_by, "
      "created_at, team_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      params);
}

std::optional<AdminToken> SqlStore::getAdminToken(std::int64_t id) {
  P params[] = {P::integer(id)};
  return first<AdminToken>(conn_->query("SELECT " SLUICE_TOKEN_COLUMNS " FROM admin_tokens WHERE id = ?", params),
                           readAdminToken);
}

std::optional<AdminToken> SqlStore::findAdminTokenByHash(const std::string& token_hash) {
  P params[] = {P::text(token_hash)};
  return first<AdminToken>(
      conn_->query("SELECT " SLUICE_TOKEN_COLUMNS " FROM admin_tokens WHERE token_hash = ?", params), readAdminToken);
}

std::vector<AdminToken> SqlStore::listAdminTokens() {
  return all<AdminToken>(conn_->query("SELECT " SLUICE_TOKEN_COLUMNS " FROM admin_tokens ORDER BY id", {}),
                         readAdminToken);
}

bool SqlStore::revokeAdminToken(std::int64_t id, std::int64_t at_ms) {
  P params[] = {P::integer(at_ms), P::integer(id)};
  // A revoked token keeps the time it was first revoked.
  return conn_->execute("UPDATE admin_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", params) > 0;
}

bool SqlStore::deleteAdminToken(std::int64_t id) {
  P params[] = {P::integer(id)};
  return conn_->execute("DELETE FROM admin_tokens WHERE id = ?", params) > 0;
}

std::int64_t SqlStore::appendAudit(const AuditEntry& e) {
  P params[] = {P::integer(e.time_ms ? e.time_ms : nowMs()),
                P::text(e.actor),
                P::text(e.role),
                P::text(e.address),
                P::text(e.action),
                P::text(e.method),
                P::text(e.path),
                P::text(e.target),
                P::integer(e.status),
                P::text(e.before),
                P::text(e.after)};
  return insertReturningId(
      "INSERT INTO audit_log (time_ms, actor, role, address, action, method, path, target, status, before_json, "
      "after_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      params);
}

AuditPage SqlStore::listAudit(const AuditQuery& q) {
  const std::size_t limit = std::clamp<std::size_t>(q.limit, 1, kMaxLogPage);
  std::string sql = "SELECT " SLUICE_AUDIT_COLUMNS " FROM audit_log WHERE 1 = 1";
  std::vector<SqlParam> params;
  if (q.from_ms) {
    sql += " AND time_ms >= ?";
    params.push_back(P::integer(*q.from_ms));
  }
  if (q.to_ms) {
    sql += " AND time_ms < ?";
    params.push_back(P::integer(*q.to_ms));
  }
  if (q.actor) {
    sql += " AND actor = ?";
    params.push_back(P::text(*q.actor));
  }
  if (q.action) {
    sql += " AND action = ?";
    params.push_back(P::text(*q.action));
  }
  if (q.target) {
    sql += " AND target = ?";
    params.push_back(P::text(*q.target));
  }
  if (!q.cursor.empty()) {
    sql += " AND id < ?";
    params.push_back(P::integer(decodeAuditCursor(q.cursor)));
  }
  // Ids grow with time (one insert per write): newest first is id order.
  sql += " ORDER BY id DESC LIMIT ?";
  params.push_back(P::integer(static_cast<std::int64_t>(limit + 1)));
  AuditPage page;
  auto rows = conn_->query(sql, params);
  while (rows->next()) {
    if (page.entries.size() == limit) {
      page.next_cursor = "a1." + std::to_string(page.entries.back().id);
      break;
    }
    page.entries.push_back(readAudit(*rows));
  }
  return page;
}

// ---- virtual keys ----

std::int64_t SqlStore::insertReturningId(const std::string& sql, std::span<const SqlParam> params) {
  auto rows = conn_->query(sql + " RETURNING id", params);
  if (!rows->next()) throw StoreError(StoreErrc::Internal, "insert returned no id");
  return rows->getInt(0);
}

std::int64_t SqlStore::createVirtualKey(const VirtualKey& k) {
  std::int64_t now = nowMs();
  P params[] = {P::text(k.name),
                P::text(k.key_hash),
                P::text(k.key_prefix),
                P::text(k.allowed_models),
                P::text(k.allowed_channels),
                P::optInt(k.rpm),
                P::optInt(k.tpm),
                P::optInt(k.max_concurrent),
                P::optReal(k.budget_daily_usd),
                P::optReal(k.budget_monthly_usd),
                P::optReal(k.budget_total_usd),
                P::optInt(k.expires_at_ms),
                P::optInt(k.revoked_at_ms),
                P::text(k.metadata),
                P::integer(now),
                P::integer(now),
                P::text(k.settings),
                P::optInt(k.team_id)};
  return insertReturningId(
      "INSERT INTO virtual_keys (name, key_hash, key_prefix, allowed_models, allowed_channels, rpm, tpm, "
      "max_concurrent, budget_daily_usd, budget_monthly_usd, budget_total_usd, expires_at, revoked_at, metadata, "
      "created_at, updated_at, settings, team_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      params);
}

std::optional<VirtualKey> SqlStore::getVirtualKey(std::int64_t id) {
  P params[] = {P::integer(id)};
  return first<VirtualKey>(conn_->query("SELECT " SLUICE_VK_COLUMNS " FROM virtual_keys WHERE id = ?", params),
                           readVirtualKey);
}

std::optional<VirtualKey> SqlStore::findVirtualKeyByHash(const std::string& key_hash) {
  P params[] = {P::text(key_hash)};
  return first<VirtualKey>(conn_->query("SELECT " SLUICE_VK_COLUMNS " FROM virtual_keys WHERE key_hash = ?", params),
                           readVirtualKey);
}

std::vector<VirtualKey> SqlStore::listVirtualKeys() {
  return all<VirtualKey>(conn_->query("SELECT " SLUICE_VK_COLUMNS " FROM virtual_keys ORDER BY id", {}),
                         readVirtualKey);
}

bool SqlStore::updateVirtualKey(const VirtualKey& k) {
  P params[] = {P::text(k.name),
                P::text(k.key_prefix),
                P::text(k.allowed_models),
                P::text(k.allowed_channels),
                P::optInt(k.rpm),
                P::optInt(k.tpm),
                P::optInt(k.max_concurrent),
                P::optReal(k.budget_daily_usd),
                P::optReal(k.budget_monthly_usd),
                P::optReal(k.budget_total_usd),
                P::optInt(k.expires_at_ms),
                P::optInt(k.revoked_at_ms),
                P::text(k.metadata),
                P::text(k.settings),
                P::optInt(k.team_id),
                P::integer(nowMs()),
                P::integer(k.id)};
  return conn_->execute(
             "UPDATE virtual_keys SET name = ?, key_prefix = ?, allowed_models = ?, allowed_channels = ?, rpm = ?, "
             "tpm = ?, max_concurrent = ?, budget_daily_usd = ?, budget_monthly_usd = ?, budget_total_usd = ?, "
             "expires_at = ?, revoked_at = ?, metadata = ?, settings = ?, team_id = ?, updated_at = ? WHERE id = ?",
             params) > 0;
}

bool SqlStore::revokeVirtualKey(std::int64_t id, std::int64_t at_ms) {
  P params[] = {P::integer(at_ms), P::integer(nowMs()), P::integer(id)};
  return conn_->execute("UPDATE virtual_keys SET revoked_at = ?, updated_at = ? WHERE id = ?", params) > 0;
}

bool SqlStore::deleteVirtualKey(std::int64_t id) {
  P params[] = {P::integer(id)};
  return conn_->execute("DELETE FROM virtual_keys WHERE id = ?", params) > 0;
}

// ---- teams ----

#define SLUICE_TEAM_COLUMNS \
  "id, name, rpm, tpm, budget_daily_usd, budget_monthly_usd, budget_total_usd, created_at, updated_at"

std::vector<Team> SqlStore::readTeams(const std::string& where, std::span<const SqlParam> params) {
  std::vector<Team> teams;
  {
    auto rows = conn_->query("SELECT " SLUICE_TEAM_COLUMNS " FROM teams " + where + " ORDER BY id", params);
    while (rows->next()) {
      Team t;
      t.id = rows->getInt(0);
      t.name = rows->getText(1);
      t.rpm = rows->optInt(2);
      t.tpm = rows->optInt(3);
      t.budget_daily_usd = rows->optReal(4);
      t.budget_monthly_usd = rows->optReal(5);
      t.budget_total_usd = rows->optReal(6);
      t.created_at_ms = rows->getInt(7);
      t.updated_at_ms = rows->getInt(8);
      teams.push_back(std::move(t));
    }
  }
  if (teams.empty()) return teams;
  std::map<std::int64_t, Team*> byId;
  for (auto& t : teams) byId[t.id] = &t;
  // One read of the members for all of them (a team list is short; members a few each).
  auto rows = conn_->query("SELECT team_id, kind, value FROM team_members ORDER BY team_id, kind, value", {});
  while (rows->next()) {
    const auto it = byId.find(rows->getInt(0));
    if (it != byId.end()) it->second->members.push_back(TeamMember{rows->getText(1), rows->getText(2)});
  }
  return teams;
}

void SqlStore::writeTeamMembers(std::int64_t team_id, const std::vector<TeamMember>& members) {
  P del[] = {P::integer(team_id)};
  conn_->execute("DELETE FROM team_members WHERE team_id = ?", del);
  for (const auto& m : members) {
    P params[] = {P::integer(team_id), P::text(m.kind), P::text(m.value)};
    conn_->execute("INSERT INTO team_members (team_id, kind, value) VALUES (?, ?, ?)", params);
  }
}

std::int64_t SqlStore::createTeam(const Team& t) {
  const std::int64_t now = nowMs();
  P params[] = {P::text(t.name),
                P::optInt(t.rpm),
                P::optInt(t.tpm),
                P::optReal(t.budget_daily_usd),
                P::optReal(t.budget_monthly_usd),
                P::optReal(t.budget_total_usd),
                P::integer(now),
                P::integer(now)};
  SqlTransaction tx(*conn_);
  const std::int64_t id = insertReturningId(
      "INSERT INTO teams (name, rpm, tpm, budget_daily_usd, budget_monthly_usd, budget_total_usd, created_at, "
      "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      params);
  writeTeamMembers(id, t.members);
  tx.commit();
  return id;
}

std::optional<Team> SqlStore::getTeam(std::int64_t id) {
  P params[] = {P::integer(id)};
  auto teams = readTeams("WHERE id = ?", params);
  if (teams.empty()) return std::nullopt;
  return std::move(teams.front());
}

std::optional<Team> SqlStore::findTeamByName(const std::string& name) {
  P params[] = {P::text(name)};
  auto teams = readTeams("WHERE name = ?", params);
  if (teams.empty()) return std::nullopt;
  return std::move(teams.front());
}

std::vector<Team> SqlStore::listTeams() {
  return readTeams("", {});
}

bool SqlStore::updateTeam(const Team& t) {
  P params[] = {P::text(t.name),
                P::optInt(t.rpm),
                P::optInt(t.tpm),
                P::optReal(t.budget_daily_usd),
                P::optReal(t.budget_monthly_usd),
                P::optReal(t.budget_total_usd),
                P::integer(nowMs()),
                P::integer(t.id)};
  SqlTransaction tx(*conn_);
  if (conn_->execute("UPDATE teams SET name = ?, rpm = ?, tpm = ?, budget_daily_usd = ?, budget_monthly_usd = ?, "
                     "budget_total_usd = ?, updated_at = ? WHERE id = ?",
                     params) == 0)
    return false;
  writeTeamMembers(t.id, t.members);
  tx.commit();
  return true;
}

bool SqlStore::deleteTeam(std::int64_t id) {
  P params[] = {P::integer(id)};
  return conn_->execute("DELETE FROM teams WHERE id = ?", params) > 0;
}

// ---- channels ----

std::int64_t SqlStore::createChannel(const Channel& c) {
  std::int64_t now = nowMs();
  P params[] = {P::text(c.name),        P::text(c.type),      P::text(c.base_url), P::text(c.models),
                P::integer(c.priority), P::integer(c.weight), P::text(c.headers),  P::text(c.settings),
                P::boolean(c.enabled),  P::integer(now),      P::integer(now)};
  return insertReturningId(
      "INSERT INTO channels (name, type, base_url, models, priority, weight, headers, settings, enabled, created_at, "
      "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      params);
}

std::optional<Channel> SqlStore::getChannel(std::int64_t id) {
  P params[] = {P::integer(id)};
  return first<Channel>(conn_->query("SELECT " SLUICE_CHANNEL_COLUMNS " FROM channels WHERE id = ?", params),
                        readChannel);
}

std::optional<Channel> SqlStore::findChannelByName(const std::string& name) {
  P params[] = {P::text(name)};
  return first<Channel>(conn_->query("SELECT " SLUICE_CHANNEL_COLUMNS " FROM channels WHERE name = ?", params),
                        readChannel);
}

std::vector<Channel> SqlStore::listChannels() {
  return all<Channel>(conn_->query("SELECT " SLUICE_CHANNEL_COLUMNS " FROM channels ORDER BY priority, name", {}),
                      readChannel);
}

bool SqlStore::updateChannel(const Channel& c) {
  P params[] = {P::text(c.name),        P::text(c.type),      P::text(c.base_url), P::text(c.models),
                P::integer(c.priority), P::integer(c.weight), P::text(c.headers),  P::text(c.settings),
                P::boolean(c.enabled),  P::integer(nowMs()),  P::integer(c.id)};
  return conn_->execute(
             "UPDATE channels SET name = ?, type = ?, base_url = ?, models = ?, priority = ?, weight = ?, "
             "headers = ?, settings = ?, enabled = ?, updated_at = ? WHERE id = ?",
             params) > 0;
}

bool SqlStore::deleteChannel(std::int64_t id) {
  P params[] = {P::integer(id)};
  return conn_->execute("DELETE FROM channels WHERE id = ?", params) > 0;
}

// ---- upstream keys ----

std::int64_t SqlStore::createUpstreamKey(const UpstreamKey& k) {
  std::int64_t now = nowMs();
  P params[] = {
      P::integer(k.channel_id),   P::blob(k.secret_encrypted),    P::text(k.label), P::text(stateName(k.state)),
      P::text(k.disabled_reason), P::optInt(k.cooldown_until_ms), P::integer(now),  P::integer(now)};
  return insertReturningId(
      "INSERT INTO upstream_keys (channel_id, secret_encrypted, label, state, disabled_reason, cooldown_until, "
      "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      params);
}

std::optional<UpstreamKey> SqlStore::getUpstreamKey(std::int64_t id) {
  P params[] = {P::integer(id)};
  return first<UpstreamKey>(conn_->query("SELECT " SLUICE_UK_COLUMNS " FROM upstream_keys WHERE id = ?", params),
                            readUpstreamKey);
}

std::vector<UpstreamKey> SqlStore::listUpstreamKeys(std::optional<std::int64_t> channel_id) {
  if (!channel_id)
    return all<UpstreamKey>(conn_->query("SELECT " SLUICE_UK_COLUMNS " FROM upstream_keys ORDER BY id", {}),
                            readUpstreamKey);
  P params[] = {P::integer(*channel_id)};
  return all<UpstreamKey>(
      conn_->query("SELECT " SLUICE_UK_COLUMNS " FROM upstream_keys WHERE channel_id = ? ORDER BY id", params),
      readUpstreamKey);
}

bool SqlStore::updateUpstreamKey(const UpstreamKey& k) {
  P params[] = {
      P::integer(k.channel_id),   P::blob(k.secret_encrypted),    P::text(k.label),    P::text(stateName(k.state)),
      P::text(k.disabled_reason), P::optInt(k.cooldown_until_ms), P::integer(nowMs()), P::integer(k.id)};
  return conn_->execute(
             "UPDATE upstream_keys SET channel_id = ?, secret_encrypted = ?, label = ?, state = ?, "
             "disabled_reason = ?, cooldown_until = ?, updated_at = ? WHERE id = ?",
             params) > 0;
}

bool SqlStore::setUpstreamKeyState(std::int64_t id, UpstreamKeyState state, const std::string& reason,
                                   std::optional<std::int64_t> cooldown_until_ms) {
  P params[] = {P::text(stateName(state)), P::text(reason), P::optInt(cooldown_until_ms), P::integer(nowMs()),
                P::integer(id)};
  return conn_->execute(
             "UPDATE upstream_keys SET state = ?, disabled_reason = ?, cooldown_until = ?, updated_at = ? WHERE id = ?",
             params) > 0;
}

bool SqlStore::deleteUpstreamKey(std::int64_t id) {
  P params[] = {P::integer(id)};
  return conn_->execute("DELETE FROM upstream_keys WHERE id = ?", params) > 0;
}

// ---- MCP servers ----

namespace {

#define SLUICE_MCP_COLUMNS "id, name, url, command, headers_encrypted, timeout_ms, created_at, updated_at"

McpServer readMcpServer(SqlRows& r) {
  McpServer m;
  m.id = r.getInt(0);
  m.name = r.getText(1);
  m.url = r.getText(2);
  m.command = r.getText(3);
  m.headers_encrypted = r.getBlob(4);
  m.timeout_ms = r.getInt(5);
  m.created_at_ms = r.getInt(6);
  m.updated_at_ms = r.getInt(7);
  return m;
}

}  // namespace

std::int64_t SqlStore::createMcpServer(const McpServer& m) {
  const std::int64_t now = nowMs();
  P params[] = {P::text(m.name),          P::text(m.url),  P::text(m.command), P::blob(m.headers_encrypted),
                P::integer(m.timeout_ms), P::integer(now), P::integer(now)};
  return insertReturningId(
      "INSERT INTO mcp_servers (name, url, command, headers_encrypted, timeout_ms, created_at, updated_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?)",
      params);
}

std::optional<McpServer> SqlStore::getMcpServer(std::int64_t id) {
  P params[] = {P::integer(id)};
  return first<McpServer>(conn_->query("SELECT " SLUICE_MCP_COLUMNS " FROM mcp_servers WHERE id = ?", params),
                          readMcpServer);
}

std::optional<McpServer> SqlStore::findMcpServerByName(const std::string& name) {
  P params[] = {P::text(name)};
  return first<McpServer>(conn_->query("SELECT " SLUICE_MCP_COLUMNS " FROM mcp_servers WHERE name = ?", params),
                          readMcpServer);
}

std::vector<McpServer> SqlStore::listMcpServers() {
  return all<McpServer>(conn_->query("SELECT " SLUICE_MCP_COLUMNS " FROM mcp_servers ORDER BY id", {}),
                        readMcpServer);
}

bool SqlStore::updateMcpServer(const McpServer& m) {
  P params[] = {P::text(m.name),          P::text(m.url),      P::text(m.command), P::blob(m.headers_encrypted),
                P::integer(m.timeout_ms), P::integer(nowMs()), P::integer(m.id)};
  return conn_->execute(
             "UPDATE mcp_servers SET name = ?, url = ?, command = ?, headers_encrypted = ?, timeout_ms = ?, "
             "updated_at = ? WHERE id = ?",
             params) > 0;
}

bool SqlStore::deleteMcpServer(std::int64_t id) {
  P params[] = {P::integer(id)};
  return conn_->execute("DELETE FROM mcp_servers WHERE id = ?", params) > 0;
}

// ---- OIDC sign-ins ----

#define SLUICE_OIDC_COLUMNS \
  "id_hash, kind, subject, email, name, role, csrf_token, data, created_at, seen_at, expires_at"

void SqlStore::putOidcSession(const OidcSession& o) {
  P params[] = {P::text(o.id_hash), P::text(o.kind),    P::text(o.subject),          P::text(o.email),
                P::text(o.name),    P::text(o.role),    P::text(o.csrf_token),       P::text(o.data),
                P::integer(o.created_at_ms ? o.created_at_ms : nowMs()), P::integer(o.seen_at_ms),
                P::integer(o.expires_at_ms)};
  conn_->execute("INSERT INTO oidc_sessions (" SLUICE_OIDC_COLUMNS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 params);
}

std::optional<OidcSession> SqlStore::findOidcSession(const std::string& id_hash) {
  P params[] = {P::text(id_hash)};
  return first<OidcSession>(
      conn_->query("SELECT " SLUICE_OIDC_COLUMNS " FROM oidc_sessions WHERE id_hash = ?", params), [](SqlRows& r) {
        OidcSession o;
        o.id_hash = r.getText(0);
        o.kind = r.getText(1);
        o.subject = r.getText(2);
        o.email = r.getText(3);
        o.name = r.getText(4);
        o.role = r.getText(5);
        o.csrf_token = r.getText(6);
        o.data = r.getText(7);
        o.created_at_ms = r.getInt(8);
        o.seen_at_ms = r.getInt(9);
        o.expires_at_ms = r.getInt(10);
        return o;
      });
}

bool SqlStore::touchOidcSession(const std::string& id_hash, std::int64_t seen_at_ms) {
  P params[] = {P::integer(seen_at_ms), P::text(id_hash)};
  return conn_->execute("UPDATE oidc_sessions SET seen_at = ? WHERE id_hash = ?", params) > 0;
}

bool SqlStore::deleteOidcSession(const std::string& id_hash) {
  P params[] = {P::text(id_hash)};
  return conn_->execute("DELETE FROM oidc_sessions WHERE id_hash = ?", params) > 0;
}

std::int64_t SqlStore::deleteExpiredOidcSessions(std::int64_t now_ms, std::int64_t idle_ms) {
  P params[] = {P::integer(now_ms), P::integer(now_ms - idle_ms)};
  return conn_->execute("DELETE FROM oidc_sessions WHERE expires_at <= ? OR (kind = 'session' AND seen_at <= ?)",
                        params);
}

}  // namespace sluice::store
