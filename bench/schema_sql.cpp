// sluice_schema_sql: prints the store's schema as it stood after migration N, as SQL for one
// dialect: each migration's statements up to N, then the schema_migrations rows that say so. For
// bench/store_scale.sh, which measures an upgrade: it makes an old store from this (the rows go in
// at that version) and lets the gateway migrate it, however many migrations were added since.
//   sluice_schema_sql --dialect sqlite|postgres --upto N
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "store/Migrations.hpp"

int main(int argc, char** argv) {
  std::string_view dialect;
  int upto = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--dialect") == 0) dialect = argv[i + 1];
    else if (std::strcmp(argv[i], "--upto") == 0) upto = std::atoi(argv[i + 1]);
  }
  if ((dialect != "sqlite" && dialect != "postgres") || upto < 1) {
    std::fprintf(stderr, "usage: sluice_schema_sql --dialect sqlite|postgres --upto N\n");
    return 2;
  }
  const std::span<const sluice::store::Migration> all =
      dialect == "sqlite" ? sluice::store::sqliteMigrations() : sluice::store::postgresMigrations();
  int last = 0;
  std::printf(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
      "applied_at BIGINT NOT NULL);\n");
  for (const auto& m : all) {
    if (m.version > upto) break;
    std::printf("%s\n", m.sql);
    std::string name;  // an SQL string literal: quotes doubled
    for (const char* c = m.name; *c != 0; ++c) name += *c == '\'' ? std::string("''") : std::string(1, *c);
    std::printf("INSERT INTO schema_migrations (version, name, applied_at) VALUES (%d, '%s', 0);\n", m.version,
                name.c_str());
    last = m.version;
  }
  if (last != upto) {
    std::fprintf(stderr, "sluice_schema_sql: no migration %d\n", upto);
    return 1;
  }
  return 0;
}
