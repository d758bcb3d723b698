// Store: the control plane's persistent state (virtual keys, channels, upstream keys) and the
// request log, behind one interface with a SQLite and a PostgreSQL implementation.
// Thread-safety: a Store object holds one connection and is used from one thread at a time;
// give each thread (the LogWriter, the admin API) its own Store from Store::open().
// Errors: every method throws StoreError; its code() says whether retrying may help.
// Times are Unix milliseconds (UTC) throughout. JSON-valued fields are JSON text; the database
// checks that they parse (a bad one is StoreErrc::InvalidData).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::store {

enum class StoreErrc {
  BadUrl,       // the store URL cannot be used; fix the configuration
  Unavailable,  // cannot reach the database, or it is busy/full/shutting down: retry later
  Conflict,     // a unique or foreign-key constraint refused the change (e.g. duplicate name)
  InvalidData,  // a value was refused (malformed JSON, bad cursor, out-of-range value)
  Schema,       // the database schema is newer than this binary knows, or a migration failed
  Internal,     // anything else the database reported
};

class StoreError : public std::runtime_error {
 public:
  StoreError(StoreErrc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  StoreErrc code() const noexcept { return code_; }
  // True when the same operation may succeed later (database down, busy, restarting).
  bool transient() const noexcept { return code_ == StoreErrc::Unavailable; }

 private:
  StoreErrc code_;
};

// One proxied request, as the log writer stores it.
struct LogRecord {
  std::int64_t time_ms = 0;                    // when the request arrived
  std::string request_id;                      // x-request-id
  std::optional<std::int64_t> virtual_key_id;  // empty: master key or unauthenticated
  std::string channel;                         // channel name that served (or last failed)
  std::string upstream_key;                    // masked upstream key id, never the secret
  std::string model;
  int status = 0;               // HTTP status sent to the client
  std::string attempts = "[]";  // JSON array: each attempt with its error
  std::int64_t ttfb_ms = 0;
  std::int64_t duration_ms = 0;
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  std::int64_t cached_tokens = 0;       // of input_tokens, read from a prompt cache
  std::int64_t cache_write_tokens = 0;  // of input_tokens, written to a prompt cache
  std::int64_t reasoning_tokens = 0;    // of output_tokens, spent on reasoning
  double cost_usd = 0;
  std::string client_addr;
  std::string user_agent;
  bool stream = false;
  // The screening stage's verdicts, one per part scored, as the JSON array of the access line
  // ([{"part","path"?,"score","flagged"}]); empty when nothing was screened.
  std::string screening;
  std::optional<std::string> request_body;  // only when body logging is on; caller caps size
  std::optional<std::string> response_body;
};

// A stored log row: the record plus its database id.
struct LogEntry {
  std::int64_t id = 0;
  LogRecord record;
};

// Newest first. Every filter is optional; the time range is [from_ms, to_ms).
struct LogQuery {
  std::optional<std::int64_t> from_ms;
  std::optional<std::int64_t> to_ms;
  std::optional<std::int64_t> virtual_key_id;
  std::optional<std::string> model;
  std::optional<std::string> channel;
  std::optional<int> status;
  std::size_t limit = 100;      // clamped to [1, kMaxLogPage]
  std::string cursor;           // empty: first page; else LogPage::next_cursor of the previous page
  bool include_bodies = false;  // request/response bodies are left empty unless asked for
};
inline constexpr std::size_t kMaxLogPage = 1000;

struct LogPage {
  std::vector<LogEntry> entries;
  std::string next_cursor;  // empty when there are no more rows
};

// Usage summed over request_logs in [from_ms, to_ms), grouped by the dimensions asked for.
// Whole days and hours are read from the rollups (usage_daily, usage_hourly) where they cover
// them; the edges of a window that does not start or end on an hour, and hours the rollups do
// not hold yet (an upgraded database still being backfilled), from the rows: the answer is the
// same either way.
struct UsageQuery {
  std::int64_t from_ms = 0;
  std::int64_t to_ms = 0;
  bool by_day = false;  // UTC days
  bool by_virtual_key = false;
  bool by_model = false;
  bool by_channel = false;
  bool by_team = false;  // the team each key is in now (keys without a team, and the master key: none)
  std::optional<std::int64_t> virtual_key_id;  // filters
  std::optional<std::string> model;
  std::optional<std::string> channel;
  // Only the requests of keys in one of these teams (a member's view); empty: no such filter.
  std::vector<std::int64_t> team_ids;
  bool team_filter = false;  // apply team_ids even when it is empty (a member of no team sees nothing)
};

// A dimension not grouped by is left empty (day_ms = 0, strings empty, virtual_key_id empty).
struct UsageRow {
  std::int64_t day_ms = 0;  // start of the UTC day
  std::optional<std::int64_t> virtual_key_id;
  std::optional<std::int64_t> team_id;  // by_team only; empty: no team
  std::string model;
  std::string channel;
  std::int64_t requests = 0;
  std::int64_t errors = 0;  // status >= 400
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  std::int64_t cached_tokens = 0;
  std::int64_t cache_write_tokens = 0;
  std::int64_t reasoning_tokens = 0;
  double cost_usd = 0;
};

// The dashboard's time series over request_logs in [from_ms, to_ms): buckets of step_ms, aligned
// to multiples of step_ms since the Unix epoch (so the first and last may reach outside the
// window; only rows inside it count).
struct StatsQuery {
  std::int64_t from_ms = 0;
  std::int64_t to_ms = 0;
  std::int64_t step_ms = 60'000;
  std::size_t top = 20;  // rows kept in each of by_channel, by_model, by_key
  // Latency values read for the percentiles. A window with more requests reads 1 row in N
  // (by id: the same rows every time) and says so in StatsResult::sampled.
  std::size_t max_samples = 200'000;
};
// Most buckets a StatsQuery may ask for (the admin API asks for far fewer).
inline constexpr std::int64_t kMaxStatsBuckets = 10'000;

// Nearest-rank percentiles in ms; empty when there was no value to rank.
struct Percentiles {
  std::optional<std::int64_t> p50;
  std::optional<std::int64_t> p95;
  std::optional<std::int64_t> p99;
};

struct StatsCounts {
  std::int64_t requests = 0;
  std::int64_t errors = 0;  // status >= 400
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  double cost_usd = 0;
};

// Percentiles (ttfb_ms, latency_ms = duration_ms) are over the requests that succeeded
// (status < 400): a refused request answers in microseconds and would hide slow upstreams.
struct StatsBucket {
  std::int64_t t_ms = 0;  // start of the bucket
  StatsCounts counts;
  Percentiles ttfb_ms;
  Percentiles latency_ms;
};

struct StatsGroup {
  std::string name;  // the channel or model; by_key: the key's name (empty: master key or deleted key)
  std::optional<std::int64_t> virtual_key_id;  // by_key only; empty: master key or unauthenticated
  StatsCounts counts;
  Percentiles latency_ms;
};

struct StatsResult {
  std::vector<StatsBucket> series;  // every bucket overlapping the window, oldest first
  StatsCounts totals;
  Percentiles ttfb_ms;
  Percentiles latency_ms;
  std::vector<StatsGroup> by_channel;  // most requests first, at most StatsQuery::top each
  std::vector<StatsGroup> by_model;
  std::vector<StatsGroup> by_key;
  bool sampled = false;  // percentiles come from 1 row in sample_stride
  std::int64_t sample_stride = 1;
};

// One step of folding the rows that predate the rollups (an upgraded database) into them.
struct RollupBackfill {
  bool done = true;            // nothing is left to fold in
  std::int64_t before_ms = 0;  // not done: rows older than this are still to fold in
  std::int64_t oldest_ms = 0;  // not done: the oldest row's time (for progress)
  std::int64_t groups = 0;     // rollup rows this step wrote
};

struct VirtualKey {
  std::int64_t id = 0;  // assigned by the store
  std::string name;
  std::string key_hash;                 // SHA-256 hex of the secret; unique
  std::string key_prefix;               // first 8 characters, shown to users
  std::string allowed_models = "[]";    // JSON array; empty array = all
  std::string allowed_channels = "[]";  // JSON array; empty array = all
  std::optional<std::int64_t> rpm;
  std::optional<std::int64_t> tpm;
  std::optional<std::int64_t> max_concurrent;
  std::optional<double> budget_daily_usd;
  std::optional<double> budget_monthly_usd;
  std::optional<double> budget_total_usd;
  std::optional<std::int64_t> expires_at_ms;
  std::optional<std::int64_t> revoked_at_ms;
  std::string metadata = "{}";  // JSON object
  // JSON object of the key's overrides of the protect stages: {"screening": "off|log|warn|block",
  // "cache": true|false, "cache_ttl_ms": N}; absent members inherit the channel's and gateway's.
  std::string settings = "{}";
  std::optional<std::int64_t> team_id;  // the team whose limits and budgets also bound it
  std::int64_t created_at_ms = 0;  // set by the store
  std::int64_t updated_at_ms = 0;  // set by the store
};

// Who belongs to a team: an OIDC subject ("sub") or an e-mail address (compared without case).
struct TeamMember {
  std::string kind;  // "subject" | "email"
  std::string value;
  bool operator==(const TeamMember&) const = default;
};

// A team: limits and budgets that bound the sum of its virtual keys, and the people who manage
// those keys (role member on the admin API).
struct Team {
  std::int64_t id = 0;
  std::string name;  // unique
  std::optional<std::int64_t> rpm;
  std::optional<std::int64_t> tpm;
  std::optional<double> budget_daily_usd;
  std::optional<double> budget_monthly_usd;
  std::optional<double> budget_total_usd;
  std::vector<TeamMember> members;  // by kind, then value
  std::int64_t created_at_ms = 0;   // set by the store
  std::int64_t updated_at_ms = 0;   // set by the store
};

struct Channel {
  std::int64_t id = 0;
  std::string name;  // unique
  std::string type;  // openai | anthropic | gemini | azure | openai-compatible | mock
  std::string base_url;
  std::string models = "[]";  // JSON array of names or globs
  std::int64_t priority = 1;
  std::int64_t weight = 1;
  std::string headers = "{}";  // JSON object of extra upstream headers
  // JSON object of the remaining channel settings, as the YAML channel takes them:
  // model_map (object), api_version (string), rpm, tpm, max_concurrent, key_rpm, key_tpm (integers).
  std::string settings = "{}";
  bool enabled = true;
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;
};

enum class UpstreamKeyState { Active, Disabled };

struct UpstreamKey {
  std::int64_t id = 0;
  std::int64_t channel_id = 0;   // deleting the channel deletes its keys
  std::string secret_encrypted;  // opaque bytes (the caller encrypts); may hold any byte
  std::string label;
  UpstreamKeyState state = UpstreamKeyState::Active;
  std::string disabled_reason;
  std::optional<std::int64_t> cooldown_until_ms;
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;  // set by the store on every change (state changes included)
};

// An MCP server added through the admin API (config mcp.servers are the file's). Its headers
// are one sealed JSON object (the caller encrypts), so no header value is stored in the clear.
struct McpServer {
  std::int64_t id = 0;
  std::string name;               // unique
  std::string url;                // a Streamable HTTP server; "" for a stdio server
  std::string command = "[]";     // JSON array: the stdio server's argv; [] for a url
  std::string headers_encrypted;  // opaque bytes (sealed JSON object); "" when it has none
  std::int64_t timeout_ms = 30'000;
  std::int64_t created_at_ms = 0;  // set by the store
  std::int64_t updated_at_ms = 0;  // set by the store
};

// A subscription account's live credential (cloud/Subscription), one row per channel key, keyed
// by the key's ref. Refresh tokens are single-use and rotate, so the newest credential lives here
// where every instance reads it, and a refresh is done under a lease taken with a compare-and-swap
// on this row: one refresher at a time across workers and instances, the others re-read.
struct SubscriptionRow {
  std::string ref;
  std::string credential_encrypted;  // sealed stored-form JSON (the caller encrypts)
  std::int64_t version = 0;          // +1 at every refresh
  std::string lease_owner;           // who is refreshing; "" when nobody
  std::int64_t lease_until_ms = 0;   // the lease lapses then
  std::string error;                 // non-empty: the refresh token was refused; the key stays off
  std::int64_t updated_at_ms = 0;
};

// A Responses API answer the gateway keeps (store.responses), so that GET, DELETE,
// input_items and previous_response_id work on any channel. Owned by the virtual key that made
// it (owner_key_id 0: the master key); every read and delete names the owner, so a key never
// reaches another key's rows.
struct StoredResponse {
  std::string id;                 // the response id the client saw
  std::int64_t owner_key_id = 0;  // the virtual key's id; 0: the master key
  std::int64_t created_at_ms = 0;
  std::int64_t expires_at_ms = 0;  // rows past it are never returned, and swept in chunks
  std::string response;            // JSON object: the response as the client read it
  std::string input_items;         // JSON array: its whole input (a chain expanded)
};

// A scoped admin token: a secret for automation that works on the admin API within its role.
// The store keeps only the SHA-256 of the secret.
struct AdminToken {
  std::int64_t id = 0;
  std::string name;          // unique
  std::string role;          // admin | operator | viewer | member
  std::string token_hash;    // SHA-256 hex of the secret; unique
  std::string token_prefix;  // the first characters, shown to users
  std::optional<std::int64_t> expires_at_ms;
  std::optional<std::int64_t> revoked_at_ms;
  std::string created_by;          // the actor who created it
  std::int64_t created_at_ms = 0;  // set by the store
  std::optional<std::int64_t> team_id;  // a member token's team (empty when its team was deleted)
};

// One admin write, as the audit log keeps it (append-only: no update or delete exists).
struct AuditEntry {
  std::int64_t id = 0;
  std::int64_t time_ms = 0;
  std::string actor;    // "master key", "token:NAME"
  std::string role;     // the actor's role at the time
  std::string address;  // the client address the write came from
  std::string action;   // "create", "update", "delete", "revoke", "enable", "disable", "reload", ...
  std::string method;   // the HTTP method and path of the call
  std::string path;
  std::string target;           // what it acted on, as its admin path: "/keys/12", "/settings"
  int status = 0;               // the HTTP status answered
  std::string before = "null";  // JSON: the object before the change (secrets masked), or null
  std::string after = "null";   // JSON: the object after it (secrets masked), or null
};

// A console sign-in through OIDC (auth.oidc), kept in the store so every instance behind a load
// balancer knows it. Keyed by the SHA-256 of the random id the browser holds in a cookie: a row
// read from the database does not let anyone in. kind "login" is a sign-in under way (its state,
// nonce and PKCE verifier in `data`, JSON, single use, minutes long); kind "session" is a
// signed-in person.
struct OidcSession {
  std::string id_hash;  // SHA-256 hex of the cookie's value
  std::string kind;     // "login" | "session"
  std::string subject;  // the IdP's sub
  std::string email;
  std::string name;
  std::string role;        // admin | operator | viewer | member, from role_map at sign-in
  std::string csrf_token;  // sent back by the console in x-sluice-csrf on every write
  std::string data = "{}";
  std::int64_t created_at_ms = 0;
  std::int64_t seen_at_ms = 0;     // the last request (idle timeout)
  std::int64_t expires_at_ms = 0;  // absolute end
};

// Newest first; each filter optional; [from_ms, to_ms).
struct AuditQuery {
  std::optional<std::int64_t> from_ms;
  std::optional<std::int64_t> to_ms;
  std::optional<std::string> actor;
  std::optional<std::string> action;
  std::optional<std::string> target;
  std::size_t limit = 100;  // clamped to [1, kMaxLogPage]
  std::string cursor;       // empty: first page; else AuditPage::next_cursor
};

struct AuditPage {
  std::vector<AuditEntry> entries;
  std::string next_cursor;
};

// Money a virtual key has spent, from the request log.
struct KeySpend {
  double day_usd = 0;    // since the start of the UTC day asked for
  double month_usd = 0;  // since the start of the UTC month asked for
  double total_usd = 0;  // ever; kept on the key row, so log retention does not lower it
};

// Requests a virtual key made, from the request log.
struct KeyRequests {
  std::int64_t day = 0;    // since the start of the UTC day asked for
  std::int64_t month = 0;  // since the start of the UTC month asked for
  std::int64_t total = 0;  // ever; kept on the key row like KeySpend::total_usd
};

class Store {
 public:
  virtual ~Store() = default;

  // "sqlite://./sluice.db", "sqlite:///abs/path.db", "sqlite://:memory:" (query: ?busy_timeout_ms=N),
  // or "postgres://user:pass@host:5432/db" / "postgresql://..." (any libpq URI parameter).
  // Connects; throws StoreError (BadUrl or Unavailable) with a message that names the problem
  // and never the password.
  static std::unique_ptr<Store> open(const std::string& url);

  // Brings the schema to the newest version this binary knows, each version in its own
  // transaction. Safe to run concurrently from several instances and to run again.
  virtual void migrate() = 0;
  // Highest applied migration (0 = none) and the newest this binary knows.
  virtual int schemaVersion() = 0;
  static int latestSchemaVersion();

  // ---- request logs ----
  // All rows in one transaction: either all are stored or none.
  virtual void insertLogs(std::span<const LogRecord> records) = 0;
  virtual LogPage listLogs(const LogQuery& query) = 0;
  virtual std::vector<UsageRow> usage(const UsageQuery& query) = 0;
  // getLog, stats and requestsByKey are not pure: a Store other than SqlStore (a test fake)
  // need not provide them; the defaults throw StoreError(Internal).
  // One row with its bodies (when they were stored); nullopt when there is no such id.
  virtual std::optional<LogEntry> getLog(std::int64_t id);
  // Gateway-wide switches set at run time (name -> value), shared by every instance.
  virtual std::map<std::string, std::string> gatewaySettings();
  virtual void putGatewaySetting(const std::string& name, const std::string& value);
  virtual void deleteGatewaySetting(const std::string& name);
  // The time series, totals and top groups of a window, read from one snapshot of the log
  // (totals are the sum of the series). Throws InvalidData for an empty or negative window,
  // a step <= 0, or more than kMaxStatsBuckets buckets.
  virtual StatsResult stats(const StatsQuery& query);
  // Retention: deletes rows with time_ms < unix_ms, in chunks (each its own transaction) so
  // writers are not held up, stopping after max_rows or so; returns how many were deleted
  // (fewer than max_rows: none older are left). The rollup hours that end at or before
  // unix_ms go with them (usage over a deleted period is empty, as it was without rollups);
  // the hour holding unix_ms is read from the remaining rows from then on.
  virtual std::int64_t deleteLogsBefore(std::int64_t unix_ms, std::int64_t max_rows) = 0;
  // Folds the next hour of rows that predate the rollups into them, in one short write
  // transaction (safe to run from several instances at once: each hour is folded once).
  // A store without rollups (a test fake) is always done.
  virtual RollupBackfill backfillRollups();
  // The deferred indexes (store/Migrations.hpp) this database lacks, in build order: absent,
  // or left invalid by a build that was cut off. A store without them (a test fake): none.
  virtual std::vector<std::string> missingDeferredIndexes();
  // Builds one of them; takes as long as the table is large (minutes at tens of millions of
  // rows). SQLite holds the write lock meanwhile (indexBuildsBlockWriters); PostgreSQL builds
  // CONCURRENTLY, beside inserts, and only one instance at a time: false when another holds
  // the build (try again later). Idempotent; a build cut off (canceller) is undone.
  virtual bool buildDeferredIndex(const std::string& name);
  // True when an index build keeps other connections from writing until it ends (SQLite).
  virtual bool indexBuildsBlockWriters() const;
  // See SqlConnection::canceller: interrupts this store's statement under way from another thread.
  virtual std::function<void()> canceller();
  // Spend per virtual key id (keys with no spend may be absent). insertLogs adds each row's
  // cost_usd to its key's total in the same transaction.
  virtual std::map<std::int64_t, KeySpend> spendByKey(std::int64_t day_start_ms, std::int64_t month_start_ms) = 0;
  // Requests per virtual key id, the same way (keys without requests may be absent). insertLogs
  // adds each row to its key's total in the same transaction.
  virtual std::map<std::int64_t, KeyRequests> requestsByKey(std::int64_t day_start_ms, std::int64_t month_start_ms);
  // ---- stored responses ---- (the defaults throw StoreError(Internal), as getLog's)
  // Inserts or replaces (same owner and id) the row.
  virtual void putResponse(const StoredResponse& response);
  // The owner's row with that id, unless it expired before now_ms.
  virtual std::optional<StoredResponse> getResponse(std::int64_t owner_key_id, const std::string& id,
                                                    std::int64_t now_ms);
  // False when the owner has no such row (or it expired).
  virtual bool deleteResponse(std::int64_t owner_key_id, const std::string& id, std::int64_t now_ms);
  // Deletes rows that expired before now_ms, in chunks (each its own transaction), stopping
  // after max_rows or so; returns how many (fewer than max_rows: none are left).
  virtual std::int64_t deleteExpiredResponses(std::int64_t now_ms, std::int64_t max_rows);

  // ---- subscription credentials ---- (the defaults throw StoreError(Internal), as getLog's)
  virtual std::optional<SubscriptionRow> getSubscription(const std::string& ref);
  // Inserts the row at version 1 unless one exists for `ref`; returns the row stored either way.
  virtual SubscriptionRow seedSubscription(const std::string& ref, const std::string& credential_encrypted,
                                           std::int64_t now_ms);
  // Takes the refresh lease until `until_ms`: true when the row is still at `version`, has no
  // error and no lease that is live at `now_ms`.
  virtual bool leaseSubscription(const std::string& ref, std::int64_t version, const std::string& owner,
                                 std::int64_t now_ms, std::int64_t until_ms);
  // Stores the refreshed credential (version + 1, lease cleared): true when `owner` still held the
  // lease on `version`.
  virtual bool commitSubscription(const std::string& ref, std::int64_t version, const std::string& owner,
                                  const std::string& credential_encrypted, std::int64_t now_ms);
  // Gives `owner`'s lease back without a change.
  virtual void releaseSubscription(const std::string& ref, const std::string& owner);
  // The refresh token was refused: records `error` (the lease cleared); the key stays off.
  virtual void failSubscription(const std::string& ref, const std::string& owner, const std::string& error,
                                std::int64_t now_ms);

  // ---- admin tokens and the audit log ---- (the defaults throw StoreError(Internal), as getLog's)
  virtual std::int64_t createAdminToken(const AdminToken& token);
  virtual std::optional<AdminToken> getAdminToken(std::int64_t id);
  virtual std::optional<AdminToken> findAdminTokenByHash(const std::string& token_hash);
  virtual std::vector<AdminToken> listAdminTokens();
  virtual bool revokeAdminToken(std::int64_t id, std::int64_t at_ms);  // false: no such id
  virtual bool deleteAdminToken(std::int64_t id);
  virtual std::int64_t appendAudit(const AuditEntry& entry);  // the new row's id
  virtual AuditPage listAudit(const AuditQuery& query);

  // ---- OIDC sign-ins ---- (the defaults throw StoreError(Internal), as getLog's)
  virtual void putOidcSession(const OidcSession& session);  // inserts; the id_hash is new
  virtual std::optional<OidcSession> findOidcSession(const std::string& id_hash);
  virtual bool touchOidcSession(const std::string& id_hash, std::int64_t seen_at_ms);  // false: no such row
  virtual bool deleteOidcSession(const std::string& id_hash);                          // false: no such row
  // Deletes rows whose absolute end or idle end (seen_at + idle_ms) is before now_ms; returns how many.
  virtual std::int64_t deleteExpiredOidcSessions(std::int64_t now_ms, std::int64_t idle_ms);

  // An opaque value that changes whenever a virtual key, channel or upstream key is created,
  // changed, revoked or deleted (by any instance): cheap enough to poll every second.
  virtual std::string controlPlaneStamp() = 0;

  // ---- virtual keys ----  create* return the new id; update*/delete* return false if no such id.
  virtual std::int64_t createVirtualKey(const VirtualKey& key) = 0;
  virtual std::optional<VirtualKey> getVirtualKey(std::int64_t id) = 0;
  virtual std::optional<VirtualKey> findVirtualKeyByHash(const std::string& key_hash) = 0;
  virtual std::vector<VirtualKey> listVirtualKeys() = 0;
  virtual bool updateVirtualKey(const VirtualKey& key) = 0;  // all fields but id/key_hash/created_at
  virtual bool revokeVirtualKey(std::int64_t id, std::int64_t at_ms) = 0;
  virtual bool deleteVirtualKey(std::int64_t id) = 0;

  // ---- teams ---- (the defaults throw StoreError(Internal), as getLog's)
  // create/update write the members too (update replaces them), in one transaction.
  virtual std::int64_t createTeam(const Team& team);
  virtual std::optional<Team> getTeam(std::int64_t id);
  virtual std::optional<Team> findTeamByName(const std::string& name);
  virtual std::vector<Team> listTeams();  // by id
  virtual bool updateTeam(const Team& team);  // all fields but id/created_at
  // Its keys and member tokens are left without a team.
  virtual bool deleteTeam(std::int64_t id);

  // ---- channels ----
  virtual std::int64_t createChannel(const Channel& channel) = 0;
  virtual std::optional<Channel> getChannel(std::int64_t id) = 0;
  virtual std::optional<Channel> findChannelByName(const std::string& name) = 0;
  virtual std::vector<Channel> listChannels() = 0;  // by priority, then name
  virtual bool updateChannel(const Channel& channel) = 0;
  virtual bool deleteChannel(std::int64_t id) = 0;

  // ---- upstream keys ----
  virtual std::int64_t createUpstreamKey(const UpstreamKey& key) = 0;
  virtual std::optional<UpstreamKey> getUpstreamKey(std::int64_t id) = 0;
  virtual std::vector<UpstreamKey> listUpstreamKeys(std::optional<std::int64_t> channel_id) = 0;
  virtual bool updateUpstreamKey(const UpstreamKey& key) = 0;  // all fields but id/created_at
  virtual bool setUpstreamKeyState(std::int64_t id, UpstreamKeyState state, const std::string& reason,
                                   std::optional<std::int64_t> cooldown_until_ms) = 0;
  virtual bool deleteUpstreamKey(std::int64_t id) = 0;

  // ---- MCP servers ---- (the defaults throw StoreError(Internal), as getLog's)
  virtual std::int64_t createMcpServer(const McpServer& server);
  virtual std::optional<McpServer> getMcpServer(std::int64_t id);
  virtual std::optional<McpServer> findMcpServerByName(const std::string& name);
  virtual std::vector<McpServer> listMcpServers();  // by id
  virtual bool updateMcpServer(const McpServer& server);  // all fields but id/created_at
  virtual bool deleteMcpServer(std::int64_t id);
};

}  // namespace sluice::store
