#include "store/Store.hpp"

#include "store/SqlStore.hpp"
#include "store/postgres/PostgresConnection.hpp"
#include "store/sqlite/SqliteConnection.hpp"

namespace sluice::store {

std::unique_ptr<SqlConnection> openSqlConnection(const std::string& url) {
  if (url.rfind("sqlite:", 0) == 0) return openSqliteConnection(url);
  if (url.rfind("postgres://", 0) == 0 || url.rfind("postgresql://", 0) == 0) return openPostgresConnection(url);
  throw StoreError(StoreErrc::BadUrl, "store url '" + redactUrlPassword(url) +
                                          "' has an unknown scheme; use sqlite://PATH or "
                                          "postgres://user:pass@host:5432/db");
}

namespace {
[[noreturn]] void unsupported(const char* what) {
  throw StoreError(StoreErrc::Internal, std::string("this store does not implement ") + what);
}
}  // namespace

std::optional<LogEntry> Store::getLog(std::int64_t) {
  unsupported("getLog");
}

std::map<std::string, std::string> Store::gatewaySettings() {
  unsupported("gatewaySettings");
}
void Store::putGatewaySetting(const std::string&, const std::string&) {
  unsupported("putGatewaySetting");
}
void Store::deleteGatewaySetting(const std::string&) {
  unsupported("deleteGatewaySetting");
}

StatsResult Store::stats(const StatsQuery&) {
  unsupported("stats");
}

RollupBackfill Store::backfillRollups() {
  return {};
}

std::vector<std::string> Store::missingDeferredIndexes() {
  return {};
}
bool Store::buildDeferredIndex(const std::string&) {
  return true;
}
bool Store::indexBuildsBlockWriters() const {
  return false;
}
std::function<void()> Store::canceller() {
  return [] {};
}

std::map<std::int64_t, KeyRequests> Store::requestsByKey(std::int64_t, std::int64_t) {
  unsupported("requestsByKey");
}

void Store::putResponse(const StoredResponse&) {
  unsupported("putResponse");
}
std::optional<StoredResponse> Store::getResponse(std::int64_t, const std::string&, std::int64_t) {
  unsupported("getResponse");
}
bool Store::deleteResponse(std::int64_t, const std::string&, std::int64_t) {
  unsupported("deleteResponse");
}
std::int64_t Store::deleteExpiredResponses(std::int64_t, std::int64_t) {
  unsupported("deleteExpiredResponses");
}

std::int64_t Store::createMcpServer(const McpServer&) {
  unsupported("createMcpServer");
}
std::optional<McpServer> Store::getMcpServer(std::int64_t) {
  unsupported("getMcpServer");
}
std::optional<McpServer> Store::findMcpServerByName(const std::string&) {
  unsupported("findMcpServerByName");
}
std::vector<McpServer> Store::listMcpServers() {
  unsupported("listMcpServers");
}
bool Store::updateMcpServer(const McpServer&) {
  unsupported("updateMcpServer");
}
bool Store::deleteMcpServer(std::int64_t) {
  unsupported("deleteMcpServer");
}
std::int64_t Store::createTeam(const Team&) {
  unsupported("createTeam");
}
std::optional<Team> Store::getTeam(std::int64_t) {
  unsupported("getTeam");
}
std::optional<Team> Store::findTeamByName(const std::string&) {
  unsupported("findTeamByName");
}
// A store without teams (a test fake) has none: the gateway reads them on every refresh.
std::vector<Team> Store::listTeams() {
  return {};
}
bool Store::updateTeam(const Team&) {
  unsupported("updateTeam");
}
bool Store::deleteTeam(std::int64_t) {
  unsupported("deleteTeam");
}
std::optional<SubscriptionRow> Store::getSubscription(const std::string&) {
  unsupported("getSubscription");
}
SubscriptionRow Store::seedSubscription(const std::string&, const std::string&, std::int64_t) {
  unsupported("seedSubscription");
}
bool Store::leaseSubscription(const std::string&, std::int64_t, const std::string&, std::int64_t, std::int64_t) {
  unsupported("leaseSubscription");
}
bool Store::commitSubscription(const std::string&, std::int64_t, const std::string&, const std::string&, std::int64_t) {
  unsupported("commitSubscription");
}
void Store::releaseSubscription(const std::string&, const std::string&) {
  unsupported("releaseSubscription");
}
void Store::failSubscription(const std::string&, const std::string&, const std::string&, std::int64_t) {
  unsupported("failSubscription");
}
std::int64_t Store::createAdminToken(const AdminToken&) {
  unsupported("createAdminToken");
}
std::optional<AdminToken> Store::getAdminToken(std::int64_t) {
  unsupported("getAdminToken");
}
std::optional<AdminToken> Store::findAdminTokenByHash(const std::string&) {
  unsupported("findAdminTokenByHash");
}
std::vector<AdminToken> Store::listAdminTokens() {
  unsupported("listAdminTokens");
}
bool Store::revokeAdminToken(std::int64_t, std::int64_t) {
  unsupported("revokeAdminToken");
}
bool Store::deleteAdminToken(std::int64_t) {
  unsupported("deleteAdminToken");
}
std::int64_t Store::appendAudit(const AuditEntry&) {
  unsupported("appendAudit");
}
AuditPage Store::listAudit(const AuditQuery&) {
  unsupported("listAudit");
}
void Store::putOidcSession(const OidcSession&) {
  unsupported("putOidcSession");
}
std::optional<OidcSession> Store::findOidcSession(const std::string&) {
  unsupported("findOidcSession");
}
bool Store::touchOidcSession(const std::string&, std::int64_t) {
  unsupported("touchOidcSession");
}
bool Store::deleteOidcSession(const std::string&) {
  unsupported("deleteOidcSession");
}
std::int64_t Store::deleteExpiredOidcSessions(std::int64_t, std::int64_t) {
  unsupported("deleteExpiredOidcSessions");
}

std::unique_ptr<Store> Store::open(const std::string& url) {
  return std::make_unique<SqlStore>(openSqlConnection(url));
}

}  // namespace sluice::store
