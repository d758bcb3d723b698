#include "store/Migrations.hpp"

namespace sluice::store {
namespace {

// AUTOINCREMENT on the control tables: an id is never reused, so a deleted key's logs never
// point at a new key. request_logs keeps the plain rowid (cheaper; ids only order rows).
constexpr Migration kSqliteMigrations[] = {
    {1, "control plane: virtual_keys, channels, upstream_keys", R"sql(
CREATE TABLE virtual_keys (
  id                 INTEGER PRIMARY KEY AUTOINCREMENT,
  name               TEXT    NOT NULL,
  key_hash           TEXT    NOT NULL UNIQUE,
  key_prefix         TEXT    NOT NULL,
  allowed_models     TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(allowed_models)),
  allowed_channels   TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(allowed_channels)),
  rpm                INTEGER,
  tpm                INTEGER,
  max_concurrent     INTEGER,
  budget_daily_usd   REAL,
  budget_monthly_usd REAL,
  budget_total_usd   REAL,
  expires_at         INTEGER,
  revoked_at         INTEGER,
  metadata           TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
  created_at         INTEGER NOT NULL,
  updated_at         INTEGER NOT NULL
);
CREATE TABLE channels (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  name       TEXT    NOT NULL UNIQUE,
  type       TEXT    NOT NULL,
  base_url   TEXT    NOT NULL DEFAULT '',
  models     TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(models)),
  priority   INTEGER NOT NULL DEFAULT 1,
  weight     INTEGER NOT NULL DEFAULT 1 CHECK (weight >= 0),
  headers    TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(headers)),
  enabled    INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE upstream_keys (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  channel_id       INTEGER NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
  secret_encrypted BLOB    NOT NULL,
  label            TEXT    NOT NULL DEFAULT '',
  state            TEXT    NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled')),
  disabled_reason  TEXT    NOT NULL DEFAULT '',
  cooldown_until   INTEGER,
  created_at       INTEGER NOT NULL
);
CREATE INDEX upstream_keys_channel ON upstream_keys (channel_id);
)sql"},
    {2, "request_logs", R"sql(
CREATE TABLE request_logs (
  id             INTEGER PRIMARY KEY,
  time_ms        INTEGER NOT NULL,
  request_id     TEXT    NOT NULL,
  virtual_key_id INTEGER,
  channel        TEXT    NOT NULL DEFAULT '',
  upstream_key   TEXT    NOT NULL DEFAULT '',
  model          TEXT    NOT NULL DEFAULT '',
  status         INTEGER NOT NULL,
  attempts       TEXT    NOT NULL DEFAULT '[]',
  ttfb_ms        INTEGER NOT NULL DEFAULT 0,
  duration_ms    INTEGER NOT NULL DEFAULT 0,
  input_tokens   INTEGER NOT NULL DEFAULT 0,
  output_tokens  INTEGER NOT NULL DEFAULT 0,
  cached_tokens  INTEGER NOT NULL DEFAULT 0,
  cost_usd       REAL    NOT NULL DEFAULT 0,
  client_addr    TEXT    NOT NULL DEFAULT '',
  user_agent     TEXT    NOT NULL DEFAULT '',
  stream         INTEGER NOT NULL DEFAULT 0,
  request_body   TEXT,
  response_body  TEXT
);
CREATE INDEX request_logs_time ON request_logs (time_ms, id);
CREATE INDEX request_logs_key_time ON request_logs (virtual_key_id, time_ms);
CREATE INDEX request_logs_model_time ON request_logs (model, time_ms);
CREATE INDEX request_logs_channel_time ON request_logs (channel, time_ms);
)sql"},
    // Triggers bump control_plane_version on every write to the control tables, whoever makes
    // it (another instance, a cascade, manual SQL), so polling one row sees every change,
    // deletes included. Updates that touch only spend_total_usd (every log batch) are left out.
    // request_logs_key_time becomes partial: rows without a virtual key (master key) are never
    // looked up by key, and skipping their index entry makes each such insert cheaper. It
    // also covers cost_usd, so spendByKey reads only the index, over each key's time range.
    // The model and channel indexes go: each cost about an eighth of a log row's insert, and
    // filters on model or channel come with a time range (or a page limit) that the time
    // index serves.
    {3, "channel settings, upstream key updated_at, key spend totals, control plane version", R"sql(
ALTER TABLE channels ADD COLUMN settings TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(settings));
ALTER TABLE upstream_keys ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
UPDATE upstream_keys SET updated_at = created_at;
ALTER TABLE virtual_keys ADD COLUMN spend_total_usd REAL NOT NULL DEFAULT 0;
UPDATE virtual_keys SET spend_total_usd =
  (SELECT COALESCE(SUM(cost_usd), 0) FROM request_logs WHERE virtual_key_id = virtual_keys.id);
DROP INDEX request_logs_key_time;
DROP INDEX request_logs_model_time;
DROP INDEX request_logs_channel_time;
CREATE INDEX request_logs_key_time ON request_logs (virtual_key_id, time_ms, cost_usd)
  WHERE virtual_key_id IS NOT NULL;
CREATE TABLE control_plane_version (
  id      INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL
);
INSERT INTO control_plane_version (id, version) VALUES (1, 1);
CREATE TRIGGER virtual_keys_cp_insert AFTER INSERT ON virtual_keys
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER virtual_keys_cp_update AFTER UPDATE OF name, key_hash, key_prefix, allowed_models, allowed_channels,
  rpm, tpm, max_concurrent, budget_daily_usd, budget_monthly_usd, budget_total_usd, expires_at, revoked_at, metadata,
  created_at, updated_at ON virtual_keys
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER virtual_keys_cp_delete AFTER DELETE ON virtual_keys
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER channels_cp_insert AFTER INSERT ON channels
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER channels_cp_update AFTER UPDATE ON channels
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER channels_cp_delete AFTER DELETE ON channels
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER upstream_keys_cp_insert AFTER INSERT ON upstream_keys
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER upstream_keys_cp_update AFTER UPDATE ON upstream_keys
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER upstream_keys_cp_delete AFTER DELETE ON upstream_keys
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
)sql"},
    // The admin API shows each key's requests beside its spend; like spend_total_usd, the total
    // lives on the key row (insertLogs adds to it), so log retention does not lower it. Not in
    // the update trigger's column list: log batches must not look like control-plane changes.
    {4, "virtual key request totals", R"sql(
ALTER TABLE virtual_keys ADD COLUMN requests_total INTEGER NOT NULL DEFAULT 0;
UPDATE virtual_keys SET requests_total =
  (SELECT COUNT(*) FROM request_logs WHERE virtual_key_id = virtual_keys.id);
)sql"},
    // Per-key overrides of the protect stages (screening action, cache) and the gateway-wide
    // switches the admin API sets at run time (shared by every instance through the store).
    // A key's settings change with its updated_at, which the control-plane trigger watches.
    {5, "key protect settings, gateway settings", R"sql(
ALTER TABLE virtual_keys ADD COLUMN settings TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(settings));
CREATE TABLE gateway_settings (
  name       TEXT PRIMARY KEY,
  value      TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TRIGGER gateway_settings_cp_insert AFTER INSERT ON gateway_settings
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER gateway_settings_cp_update AFTER UPDATE ON gateway_settings
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER gateway_settings_cp_delete AFTER DELETE ON gateway_settings
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
)sql"},
    // Usage rollups: one row per hour (usage_hourly) and per UTC day (usage_daily), virtual
    // key (0: none), model and channel, kept by insertLogs in the same transaction as the
    // rows, so usage() reads a few thousand rollup rows where it summed millions of log rows
    // (days for whole days, hours for the whole hours around them, rows for the rest).
    // Rows already in the log (an upgrade) predate the rollups: rollup_state records the
    // newest of them (backfill_max_id), and the writer folds them in an hour at a time, newest
    // first, in the background; hours before backfill_before_ms (NULL: none left) are read
    // from the rows until then, and days reaching before it from the hours. Retention raises
    // retained_from_ms before it deletes rows: the hour and the day holding it are read from
    // the finer level from then on.
    // The model, channel and status indexes for the log search (a filter that matches nothing
    // otherwise walks the whole time index: 0.7 s at 5 million rows) were built here until
    // they moved to kSqliteDeferredIndexes below: over an existing log that build held the
    // start-up for half a minute. A database already past version 6 has them; the schema after
    // start-up is the same either way.
    {6, "usage rollups per hour and day, log search indexes", R"sql(
CREATE TABLE usage_hourly (
  hour_ms        INTEGER NOT NULL,
  virtual_key_id INTEGER NOT NULL,
  model          TEXT    NOT NULL,
  channel        TEXT    NOT NULL,
  requests       INTEGER NOT NULL,
  errors         INTEGER NOT NULL,
  input_tokens   INTEGER NOT NULL,
  output_tokens  INTEGER NOT NULL,
  cached_tokens  INTEGER NOT NULL,
  cost_usd       REAL    NOT NULL,
  PRIMARY KEY (hour_ms, virtual_key_id, model, channel)
) WITHOUT ROWID;
CREATE TABLE usage_daily (
  day_ms         INTEGER NOT NULL,
  virtual_key_id INTEGER NOT NULL,
  model          TEXT    NOT NULL,
  channel        TEXT    NOT NULL,
  requests       INTEGER NOT NULL,
  errors         INTEGER NOT NULL,
  input_tokens   INTEGER NOT NULL,
  output_tokens  INTEGER NOT NULL,
  cached_tokens  INTEGER NOT NULL,
  cost_usd       REAL    NOT NULL,
  PRIMARY KEY (day_ms, virtual_key_id, model, channel)
) WITHOUT ROWID;
CREATE TABLE rollup_state (
  id                 INTEGER PRIMARY KEY CHECK (id = 1),
  backfill_max_id    INTEGER NOT NULL,
  backfill_before_ms INTEGER,
  retained_from_ms   INTEGER NOT NULL DEFAULT 0
);
INSERT INTO rollup_state (id, backfill_max_id, backfill_before_ms) VALUES (1,
  COALESCE((SELECT MAX(id) FROM request_logs), 0),
  ((SELECT MAX(time_ms) FROM request_logs) / 3600000 + 1) * 3600000);
)sql"},
    // Cache writes and reasoning tokens, which are priced apart (pricing cache_write and
    // reasoning). Rows and rollups from before count 0 of each: their usage did not tell them
    // apart (cache writes were inside input_tokens, reasoning inside output_tokens), so the
    // rollups stay equal to the rows' sums.
    {7, "cache write and reasoning token counts", R"sql(
ALTER TABLE request_logs ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE request_logs ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_daily ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_daily ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
)sql"},
    // Stored Responses API answers (store.responses): keyed by their owner first, so every
    // read names the virtual key (0: the master key) and a key never reaches another's rows.
    // Expired rows are swept by expires_at_ms.
    {8, "stored responses", R"sql(
CREATE TABLE stored_responses (
  id            TEXT    NOT NULL,
  owner_key_id  INTEGER NOT NULL,
  created_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  response      TEXT    NOT NULL,
  input_items   TEXT    NOT NULL,
  PRIMARY KEY (owner_key_id, id)
) WITHOUT ROWID;
CREATE INDEX stored_responses_expiry ON stored_responses (expires_at_ms);
)sql"},
    // MCP servers added through the admin API. The headers (secrets) are one sealed blob, as
    // upstream keys are; the control-plane triggers make every instance pick a change up.
    {9, "mcp servers", R"sql(
CREATE TABLE mcp_servers (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  name              TEXT    NOT NULL UNIQUE,
  url               TEXT    NOT NULL DEFAULT '',
  command           TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(command)),
  headers_encrypted BLOB    NOT NULL DEFAULT X'',
  timeout_ms        INTEGER NOT NULL DEFAULT 30000 CHECK (timeout_ms > 0),
  created_at        INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL
);
CREATE TRIGGER mcp_servers_cp_insert AFTER INSERT ON mcp_servers
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER mcp_servers_cp_update AFTER UPDATE ON mcp_servers
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER mcp_servers_cp_delete AFTER DELETE ON mcp_servers
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
)sql"},
    {10, "admin tokens, audit log", R"sql(
CREATE TABLE admin_tokens (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  name         TEXT    NOT NULL UNIQUE,
  role         TEXT    NOT NULL,
  token_hash   TEXT    NOT NULL UNIQUE,
  token_prefix TEXT    NOT NULL,
  expires_at   INTEGER,
  revoked_at   INTEGER,
  created_by   TEXT    NOT NULL,
  created_at   INTEGER NOT NULL
);
CREATE TABLE audit_log (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  time_ms     INTEGER NOT NULL,
  actor       TEXT    NOT NULL,
  role        TEXT    NOT NULL,
  address     TEXT    NOT NULL,
  action      TEXT    NOT NULL,
  method      TEXT    NOT NULL,
  path        TEXT    NOT NULL,
  target      TEXT    NOT NULL,
  status      INTEGER NOT NULL,
  before_json TEXT NOT NULL DEFAULT 'null' CHECK (json_valid(before_json)),
  after_json  TEXT NOT NULL DEFAULT 'null' CHECK (json_valid(after_json))
);
CREATE INDEX audit_log_time ON audit_log (time_ms);
CREATE INDEX audit_log_actor ON audit_log (actor, id);
)sql"},
    // Teams: limits and budgets over the sum of their keys, members by OIDC subject or e-mail.
    // A team deleted leaves its keys and member tokens without a team (not deleted with it). The
    // control-plane triggers bring a team's limits to every instance.
    {11, "teams, team members, team of a virtual key and of an admin token", R"sql(
CREATE TABLE teams (
  id                 INTEGER PRIMARY KEY AUTOINCREMENT,
  name               TEXT    NOT NULL UNIQUE,
  rpm                INTEGER CHECK (rpm IS NULL OR rpm > 0),
  tpm                INTEGER CHECK (tpm IS NULL OR tpm > 0),
  budget_daily_usd   REAL    CHECK (budget_daily_usd IS NULL OR budget_daily_usd >= 0),
  budget_monthly_usd REAL    CHECK (budget_monthly_usd IS NULL OR budget_monthly_usd >= 0),
  budget_total_usd   REAL    CHECK (budget_total_usd IS NULL OR budget_total_usd >= 0),
  created_at         INTEGER NOT NULL,
  updated_at         INTEGER NOT NULL
);
CREATE TABLE team_members (
  team_id INTEGER NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  kind    TEXT    NOT NULL CHECK (kind IN ('subject', 'email')),
  value   TEXT    NOT NULL,
  PRIMARY KEY (team_id, kind, value)
);
CREATE INDEX team_members_value ON team_members (kind, value);
ALTER TABLE virtual_keys ADD COLUMN team_id INTEGER REFERENCES teams(id) ON DELETE SET NULL;
CREATE INDEX virtual_keys_team ON virtual_keys (team_id);
ALTER TABLE admin_tokens ADD COLUMN team_id INTEGER REFERENCES teams(id) ON DELETE SET NULL;
CREATE TRIGGER teams_cp_insert AFTER INSERT ON teams
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER teams_cp_update AFTER UPDATE ON teams
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
CREATE TRIGGER teams_cp_delete AFTER DELETE ON teams
  BEGIN UPDATE control_plane_version SET version = version + 1; END;
)sql"},
    // OIDC sign-ins: one row per console session (and per sign-in under way), keyed by the
    // SHA-256 of its cookie, so that instances behind one load balancer share them.
    {12, "oidc sessions", R"sql(
CREATE TABLE oidc_sessions (
  id_hash    TEXT   NOT NULL PRIMARY KEY,
  kind       TEXT   NOT NULL,
  subject    TEXT   NOT NULL DEFAULT '',
  email      TEXT   NOT NULL DEFAULT '',
  name       TEXT   NOT NULL DEFAULT '',
  role       TEXT   NOT NULL DEFAULT '',
  csrf_token TEXT   NOT NULL DEFAULT '',
  data       TEXT   NOT NULL DEFAULT '{}',
  created_at BIGINT NOT NULL,
  seen_at    BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX oidc_sessions_expires ON oidc_sessions (expires_at);
)sql"},
    // Subscription accounts (channel `subscription`): the live OAuth credential of each key,
    // sealed as upstream keys are. Refresh tokens rotate and are single-use: the newest is kept
    // here for every instance, and a refresh holds the row's lease (a compare-and-swap on
    // version and lease_until), so a token is never spent twice.
    {13, "subscription credentials", R"sql(
CREATE TABLE subscription_credentials (
  ref                  TEXT    PRIMARY KEY,
  credential_encrypted BLOB    NOT NULL,
  version              INTEGER NOT NULL DEFAULT 1,
  lease_owner          TEXT    NOT NULL DEFAULT '',
  lease_until          INTEGER NOT NULL DEFAULT 0,
  error                TEXT    NOT NULL DEFAULT '',
  updated_at           INTEGER NOT NULL
);
)sql"},
    // The screening stage's per-part verdicts of a
    // request, the access line's "screening" array, '' when nothing was screened.
    {14, "request log screening verdicts", R"sql(
ALTER TABLE request_logs ADD COLUMN screening TEXT NOT NULL DEFAULT '';
)sql"},
};

// Built after start-up (LogWriter), one at a time: see the migration 6.
constexpr DeferredIndex kSqliteDeferredIndexes[] = {
    {"request_logs_model_time", "request_logs (model, time_ms)"},
    {"request_logs_channel_time", "request_logs (channel, time_ms)"},
    {"request_logs_status_time", "request_logs (status, time_ms)"},
};

}  // namespace

std::span<const Migration> sqliteMigrations() {
  return kSqliteMigrations;
}

std::span<const DeferredIndex> sqliteDeferredIndexes() {
  return kSqliteDeferredIndexes;
}

}  // namespace sluice::store
