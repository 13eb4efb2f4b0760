#include "store/schema.h"

#include "core/log.h"

namespace kforge {
namespace {

// Written to PRAGMA application_id ("kfrg") so that a foreign SQLite file is recognised.
constexpr int64_t kApplicationId = 0x6b667267;

// Schema conventions: STRICT tables; times are ISO-8601 UTC text from the store's Clock; JSON is
// stored as text; a REAL column is NULL where the C++ value is NaN or absent.
const char kSchemaV1[] = R"sql(
CREATE TABLE environments (
  id INTEGER PRIMARY KEY,
  fingerprint_hash TEXT NOT NULL UNIQUE,
  json TEXT NOT NULL,
  first_seen TEXT NOT NULL
) STRICT;

CREATE TABLE candidates (
  hash TEXT PRIMARY KEY,
  source TEXT NOT NULL,
  origin TEXT NOT NULL,
  first_seen TEXT NOT NULL
) STRICT;

CREATE TABLE tasks (
  hash TEXT PRIMARY KEY,
  path TEXT NOT NULL,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  first_seen TEXT NOT NULL
) STRICT;

CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  command TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL,
  config TEXT NOT NULL
) STRICT;

CREATE TABLE evaluations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL,
  run_id TEXT REFERENCES runs(id),
  task_hash TEXT NOT NULL REFERENCES tasks(hash),
  candidate_hash TEXT REFERENCES candidates(hash),
  environment_id INTEGER NOT NULL REFERENCES environments(id),
  kind TEXT NOT NULL CHECK (kind IN ('candidate', 'baseline')),
  device TEXT NOT NULL,
  precision TEXT NOT NULL,
  mode TEXT NOT NULL,
  verdict TEXT NOT NULL,
  verdict_kind TEXT NOT NULL,
  check_name TEXT,
  message TEXT NOT NULL,
  speedup REAL,
  candidate_ms REAL,
  reference_ms REAL,
  duration_s REAL,
  evidence TEXT NOT NULL,
  CHECK ((kind = 'baseline') = (candidate_hash IS NULL))
) STRICT;
CREATE INDEX evaluations_task_hash ON evaluations(task_hash);
CREATE INDEX evaluations_candidate_hash ON evaluations(candidate_hash);
CREATE INDEX evaluations_created_at ON evaluations(created_at);
CREATE INDEX evaluations_run_id ON evaluations(run_id);

CREATE TABLE measurements (
  id INTEGER PRIMARY KEY,
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  samples TEXT NOT NULL,
  median REAL,
  ci_low REAL,
  ci_high REAL,
  unit TEXT NOT NULL
) STRICT;
CREATE INDEX measurements_evaluation_id ON measurements(evaluation_id);

CREATE TABLE llm_calls (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL,
  run_id TEXT REFERENCES runs(id),
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  prompt TEXT NOT NULL,
  reply TEXT NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cost_usd REAL,
  latency_s REAL,
  status TEXT NOT NULL
) STRICT;
CREATE INDEX llm_calls_run_id ON llm_calls(run_id);
)sql";

// Configurations measured on a GPU for a generated kernel, so that a second compile bakes them in
// without tuning: the key is the sha256 of the kernel's source and configuration space.
const char kSchemaV2[] = R"sql(
CREATE TABLE tuning (
  kernel_key TEXT NOT NULL,
  gpu TEXT NOT NULL,
  config TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  PRIMARY KEY (kernel_key, gpu)
) STRICT;
)sql";

// A reference's timings (eager, torch.compile) measured on a machine, so that later benches and
// optimizes of the same task on the same machine reuse them: the key hashes the task's source, the
// GPU and software versions, the precision policy, the mode and the timing method's budget.
const char kSchemaV3[] = R"sql(
CREATE TABLE baselines (
  key TEXT PRIMARY KEY,
  task_hash TEXT NOT NULL,
  mode TEXT NOT NULL,
  timing TEXT NOT NULL,
  recorded_at TEXT NOT NULL
) STRICT;
CREATE INDEX baselines_task_hash ON baselines(task_hash);
)sql";

// Every HTTP attempt of a model call (retries, waits, timeouts), and what calls whose attempts
// reported no usage may have been billed (an estimate, kept apart from reported cost).
const char kSchemaV4[] = R"sql(
ALTER TABLE llm_calls ADD COLUMN estimated_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE llm_calls ADD COLUMN estimated_cost_usd REAL NOT NULL DEFAULT 0;
CREATE TABLE llm_attempts (
  call_id INTEGER NOT NULL REFERENCES llm_calls(id),
  attempt INTEGER NOT NULL,
  http_status INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  seconds REAL NOT NULL,
  waited_s REAL NOT NULL,
  maybe_billed INTEGER NOT NULL,
  error TEXT NOT NULL,
  PRIMARY KEY (call_id, attempt)
) STRICT;
)sql";

// What a running stage is doing now (calls in flight, waits, best so far, spend, ETA), one row per
// run, replaced as it changes: what a dashboard reads while the run goes on.
const char kSchemaV5[] = R"sql(
CREATE TABLE run_status (
  run_id TEXT PRIMARY KEY REFERENCES runs(id),
  updated_at TEXT NOT NULL,
  status TEXT NOT NULL
) STRICT;
)sql";

// Refuses a file that holds some other program's tables, before any migration touches it.
Status CheckIsKforgeDatabase(SqliteDb& db, int version) {
  ASSIGN_OR_RETURN(int64_t application_id, db.QueryInt64("PRAGMA application_id"));
  if (application_id == kApplicationId) return Status::Ok();
  ASSIGN_OR_RETURN(int64_t tables, db.QueryInt64("SELECT count(*) FROM sqlite_schema"));
  if (version == 0 && application_id == 0 && tables == 0) return Status::Ok();
  return Status::InvalidArgument(db.path() +
                                 " is an SQLite database but not a kforge store; point kforge at its own "
                                 "workspace database (.kforge/kforge.db)");
}

// The schema version, once CheckIsKforgeDatabase has passed, all read in one snapshot: another
// process creating the store meanwhile commits its tables and version together, and reads made
// apart could see the version before its commit and the tables after (a new kforge store taken
// for someone else's database).
Result<int> CheckedSchemaVersion(SqliteDb& db) {
  ASSIGN_OR_RETURN(SqliteTransaction snapshot, SqliteTransaction::BeginRead(db));
  ASSIGN_OR_RETURN(int version, SchemaVersion(db));
  RETURN_IF_ERROR(CheckIsKforgeDatabase(db, version));
  return version;  // the snapshot only read: rolled back
}

Status ApplyMigration(SqliteDb& db, const Migration& migration) {
  ASSIGN_OR_RETURN(SqliteTransaction transaction, SqliteTransaction::Begin(db));
  // Another process may have applied it while this one waited for the write lock.
  ASSIGN_OR_RETURN(int version, SchemaVersion(db));
  if (version >= migration.version) return Status::Ok();
  const std::string context = "migrating " + db.path() + " to schema version " +
                              std::to_string(migration.version) + " (" + migration.description + ")";
  RETURN_IF_ERROR(db.Execute(migration.sql).WithContext(context));
  // PRAGMA takes no bound parameters; both values are compile-time integers, not user input.
  RETURN_IF_ERROR(db.Execute("PRAGMA application_id = " + std::to_string(kApplicationId)));
  RETURN_IF_ERROR(db.Execute("PRAGMA user_version = " + std::to_string(migration.version)));
  RETURN_IF_ERROR(transaction.Commit().WithContext(context));
  LogDebug("store: {} is now at schema version {}", db.path(), migration.version);
  return Status::Ok();
}

}  // namespace

const std::vector<Migration>& StoreMigrations() {
  static const std::vector<Migration> migrations = {
      {1, "environments, candidates, tasks, runs, evaluations, measurements, llm_calls", kSchemaV1},
      {2, "tuning", kSchemaV2},
      {3, "baselines", kSchemaV3},
      {4, "llm_attempts, estimated use of llm_calls", kSchemaV4},
      {5, "run_status", kSchemaV5},
  };
  return migrations;
}

int LatestSchemaVersion() { return StoreMigrations().back().version; }

Result<int> SchemaVersion(SqliteDb& db) {
  ASSIGN_OR_RETURN(int64_t version, db.QueryInt64("PRAGMA user_version"));
  return static_cast<int>(version);
}

Status MigrateSchema(SqliteDb& db, const std::vector<Migration>& migrations) {
  ASSIGN_OR_RETURN(int version, CheckedSchemaVersion(db));
  int latest = migrations.empty() ? 0 : migrations.back().version;
  if (version > latest) {
    return Status::InvalidArgument(db.path() + " has schema version " + std::to_string(version) +
                                   " but this kforge knows only up to version " + std::to_string(latest) +
                                   "; it was written by a newer kforge: upgrade kforge to use it");
  }
  for (const Migration& migration : migrations) {
    if (migration.version > version) RETURN_IF_ERROR(ApplyMigration(db, migration));
  }
  return Status::Ok();
}

}  // namespace kforge
