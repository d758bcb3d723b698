// Migrations: the schema, one numbered step per change, per dialect. Versions are applied in
// order and recorded in schema_migrations; a step, once released, is never edited — add one.
// The two dialects keep the same versions, tables and columns. Times are Unix ms (BIGINT).
#pragma once
#include <span>

namespace sluice::store {

struct Migration {
  int version;
  const char* name;
  const char* sql;  // one or more statements, run inside the migration's transaction
};

std::span<const Migration> sqliteMigrations();
std::span<const Migration> postgresMigrations();

}  // namespace sluice::store
