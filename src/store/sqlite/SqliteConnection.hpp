// SqliteConnection: SqlConnection over the sqlite3 C API. WAL journal, synchronous=NORMAL,
// a busy timeout, foreign keys on; statements prepared once and cached per connection.
// Thread-safety: one thread at a time.
#pragma once
#include <memory>
#include <string>

#include "store/SqlConnection.hpp"

namespace sluice::store {

// `url` is "sqlite://PATH[?busy_timeout_ms=N]"; PATH may be relative, absolute
// ("sqlite:///var/lib/sluice.db") or ":memory:". Throws StoreError.
std::unique_ptr<SqlConnection> openSqliteConnection(const std::string& url);

}  // namespace sluice::store
