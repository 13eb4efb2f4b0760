// The store's schema as an ordered list of migrations. A database records the number of
// migrations applied in PRAGMA user_version; opening one brings it up to date, each migration in
// its own transaction. A database written by a newer kforge is refused, never downgraded.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "store/sqlite_db.h"

namespace kforge {

struct Migration {
  int version;              // the user_version once applied: 1, 2, 3, ...
  std::string description;  // one line, for logs
  std::string sql;          // the script; no values, only DDL
};

// Every migration, in order. Append new ones; never edit one that has shipped.
const std::vector<Migration>& StoreMigrations();

// The version a database has after all of StoreMigrations().
int LatestSchemaVersion();

// The database's current version (0 for a fresh file).
Result<int> SchemaVersion(SqliteDb& db);

// Applies the migrations in `migrations` that `db` lacks. InvalidArgument when the database's
// version is newer than the last migration (written by a newer kforge).
Status MigrateSchema(SqliteDb& db, const std::vector<Migration>& migrations);
inline Status MigrateSchema(SqliteDb& db) { return MigrateSchema(db, StoreMigrations()); }

}  // namespace kforge
