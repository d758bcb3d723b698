// Migrations: the schema, one numbered step per change, per dialect. Versions are applied in
// order and recorded in schema_migrations; a step, once released, is never edited — add one.
// (One exception: migration 6's index builds moved to the deferred indexes below, which leaves
// the schema after start-up the same.) The two dialects keep the same versions, tables and
// columns. Times are Unix ms (BIGINT).
//
// Deferred indexes: indexes over the request log that a migration would otherwise build inside
// its transaction, holding the start-up for minutes on a large log (20 million rows: two minutes
// on PostgreSQL). The log writer builds the missing ones after start-up, one at a time and in
// the background (Store::buildDeferredIndex); queries work without them, only slower.
#pragma once
#include <span>

namespace sluice::store {

struct Migration {
  int version;
  const char* name;
  const char* sql;  // one or more statements, run inside the migration's transaction
};

struct DeferredIndex {
  const char* name;
  const char* on;  // "table (columns)"
};

std::span<const Migration> sqliteMigrations();
std::span<const Migration> postgresMigrations();
std::span<const DeferredIndex> sqliteDeferredIndexes();
std::span<const DeferredIndex> postgresDeferredIndexes();

}  // namespace sluice::store
