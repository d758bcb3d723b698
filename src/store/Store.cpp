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

std::unique_ptr<Store> Store::open(const std::string& url) {
  return std::make_unique<SqlStore>(openSqlConnection(url));
}

}  // namespace sluice::store
