// SqlStore: the Store, written once over SqlConnection; the dialects differ only in their
// connection and their migrations. Thread-safety: one thread at a time (see Store).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "store/SqlConnection.hpp"
#include "store/Store.hpp"

namespace sluice::store {

class SqlStore final : public Store {
 public:
  explicit SqlStore(std::unique_ptr<SqlConnection> conn);

  void migrate() override;
  int schemaVersion() override;

  void insertLogs(std::span<const LogRecord> records) override;
  LogPage listLogs(const LogQuery& query) override;
  std::vector<UsageRow> usage(const UsageQuery& query) override;
  std::optional<LogEntry> getLog(std::int64_t id) override;
  StatsResult stats(const StatsQuery& query) override;
  std::int64_t deleteLogsBefore(std::int64_t unix_ms, std::int64_t max_rows) override;
  RollupBackfill backfillRollups() override;
  std::vector<std::string> missingDeferredIndexes() override;
  bool buildDeferredIndex(const std::string& name) override;
  bool indexBuildsBlockWriters() const override;
  std::function<void()> canceller() override;
  std::map<std::int64_t, KeySpend> spendByKey(std::int64_t day_start_ms, std::int64_t month_start_ms) override;
  std::map<std::int64_t, KeyRequests> requestsByKey(std::int64_t day_start_ms, std::int64_t month_start_ms) override;
  std::string controlPlaneStamp() override;
  void putResponse(const StoredResponse& response) override;
  std::optional<StoredResponse> getResponse(std::int64_t owner_key_id, const std::string& id,
                                            std::int64_t now_ms) override;
  bool deleteResponse(std::int64_t owner_key_id, const std::string& id, std::int64_t now_ms) override;
  std::int64_t deleteExpiredResponses(std::int64_t now_ms, std::int64_t max_rows) override;
  std::map<std::string, std::string> gatewaySettings() override;
  void putGatewaySetting(const std::string& name, const std::string& value) override;
  std::optional<SubscriptionRow> getSubscription(const std::string& ref) override;
  SubscriptionRow seedSubscription(const std::string& ref, const std::string& credential_encrypted,
                                   std::int64_t now_ms) override;
  bool leaseSubscription(const std::string& ref, std::int64_t version, const std::string& owner, std::int64_t now_ms,
                         std::int64_t until_ms) override;
  bool commitSubscription(const std::string& ref, std::int64_t version, const std::string& owner,
                          const std::string& credential_encrypted, std::int64_t now_ms) override;
  void releaseSubscription(const std::string& ref, const std::string& owner) override;
  void failSubscription(const std::string& ref, const std::string& owner, const std::string& error,
                        std::int64_t now_ms) override;
  std::int64_t createAdminToken(const AdminToken& token) override;
  std::optional<AdminToken> getAdminToken(std::int64_t id) override;
  std::optional<AdminToken> findAdminTokenByHash(const std::string& token_hash) override;
  std::vector<AdminToken> listAdminTokens() override;
  bool revokeAdminToken(std::int64_t id, std::int64_t at_ms) override;
  bool deleteAdminToken(std::int64_t id) override;
  std::int64_t appendAudit(const AuditEntry& entry) override;
  AuditPage listAudit(const AuditQuery& query) override;
  void putOidcSession(const OidcSession& session) override;
  std::optional<OidcSession> findOidcSession(const std::string& id_hash) override;
  bool touchOidcSession(const std::string& id_hash, std::int64_t seen_at_ms) override;
  bool deleteOidcSession(const std::string& id_hash) override;
  std::int64_t deleteExpiredOidcSessions(std::int64_t now_ms, std::int64_t idle_ms) override;
  void deleteGatewaySetting(const std::string& name) override;

  std::int64_t createVirtualKey(const VirtualKey& key) override;
  std::optional<VirtualKey> getVirtualKey(std::int64_t id) override;
  std::optional<VirtualKey> findVirtualKeyByHash(const std::string& key_hash) override;
  std::vector<VirtualKey> listVirtualKeys() override;
  bool updateVirtualKey(const VirtualKey& key) override;
  bool revokeVirtualKey(std::int64_t id, std::int64_t at_ms) override;
  bool deleteVirtualKey(std::int64_t id) override;

  std::int64_t createTeam(const Team& team) override;
  std::optional<Team> getTeam(std::int64_t id) override;
  std::optional<Team> findTeamByName(const std::string& name) override;
  std::vector<Team> listTeams() override;
  bool updateTeam(const Team& team) override;
  bool deleteTeam(std::int64_t id) override;

  std::int64_t createChannel(const Channel& channel) override;
  std::optional<Channel> getChannel(std::int64_t id) override;
  std::optional<Channel> findChannelByName(const std::string& name) override;
  std::vector<Channel> listChannels() override;
  bool updateChannel(const Channel& channel) override;
  bool deleteChannel(std::int64_t id) override;

  std::int64_t createUpstreamKey(const UpstreamKey& key) override;
  std::optional<UpstreamKey> getUpstreamKey(std::int64_t id) override;
  std::vector<UpstreamKey> listUpstreamKeys(std::optional<std::int64_t> channel_id) override;
  bool updateUpstreamKey(const UpstreamKey& key) override;
  bool setUpstreamKeyState(std::int64_t id, UpstreamKeyState state, const std::string& reason,
                           std::optional<std::int64_t> cooldown_until_ms) override;
  bool deleteUpstreamKey(std::int64_t id) override;

  std::int64_t createMcpServer(const McpServer& server) override;
  std::optional<McpServer> getMcpServer(std::int64_t id) override;
  std::optional<McpServer> findMcpServerByName(const std::string& name) override;
  std::vector<McpServer> listMcpServers() override;
  bool updateMcpServer(const McpServer& server) override;
  bool deleteMcpServer(std::int64_t id) override;

  // Most rows per multi-row INSERT statement in insertLogs (21 parameters each; SQLite takes
  // up to 32766 per statement, PostgreSQL 65535). A power of two.
  static constexpr std::size_t kInsertChunk = 512;
  // Rows per DELETE statement in deleteLogsBefore.
  static constexpr std::int64_t kDeleteChunk = 5000;

 private:
  // A deferred index this database lacks (absent, or left invalid: see missingDeferredIndexes).
  bool deferredIndexMissing(const char* name);
  std::int64_t insertReturningId(const std::string& sql, std::span<const SqlParam> params);
  // The INSERT for a power-of-two number of log rows, built once per row count.
  const std::string& insertSqlFor(std::size_t rows);
  // Adds the batch's sums to usage_hourly (inside insertLogs' transaction).
  void addToRollups(std::span<const LogRecord> records);
  // Hours at or after `hourly` are fully in usage_hourly, days at or after `daily` in
  // usage_daily; earlier ones are read from the finer level.
  struct RollupCover {
    std::int64_t hourly;
    std::int64_t daily;
  };
  RollupCover rollupCover();
  void writeTeamMembers(std::int64_t team_id, const std::vector<TeamMember>& members);
  std::vector<Team> readTeams(const std::string& where, std::span<const SqlParam> params);

  std::unique_ptr<SqlConnection> conn_;
  std::vector<std::string> insert_sql_;  // by log2(rows)
  std::vector<SqlParam> log_params_;     // reused across batches
};

// Opaque log cursor for a (time_ms, id) position; decodeLogCursor throws InvalidData.
std::string encodeLogCursor(std::int64_t time_ms, std::int64_t id);
std::pair<std::int64_t, std::int64_t> decodeLogCursor(const std::string& cursor);

}  // namespace sluice::store
