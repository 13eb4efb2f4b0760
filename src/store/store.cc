#include "store/store.h"

#include <chrono>
#include <thread>

#include "core/hash.h"
#include "store/evaluation_table.h"
#include "store/schema.h"

namespace kforge {
namespace {

// Long enough to ride out another kforge process's write transaction on the same workspace.
constexpr int kBusyTimeoutMs = 10000;

// Puts the database in WAL mode and returns the journal mode it is in after. The switch needs the
// database to itself, and SQLite answers "locked" at once, without waiting out busy_timeout, when
// another connection is making the same switch (kforge processes started together on a new
// workspace): it is tried again until kBusyTimeoutMs has passed.
Result<std::string> SwitchToWal(SqliteDb& db) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  while (true) {
    Result<std::string> mode = [&]() -> Result<std::string> {
      ASSIGN_OR_RETURN(SqliteStatement statement, db.Prepare("PRAGMA journal_mode = WAL"));
      ASSIGN_OR_RETURN(bool has_row, statement.Step());
      return has_row ? statement.ColumnText(0) : "";
    }();
    if (mode.ok() || mode.status().code() != StatusCode::kUnavailable || std::chrono::steady_clock::now() > deadline) {
      return mode;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Status ConfigureConnection(SqliteDb& db, bool in_memory) {
  RETURN_IF_ERROR(db.Execute("PRAGMA busy_timeout = " + std::to_string(kBusyTimeoutMs)));
  RETURN_IF_ERROR(db.Execute("PRAGMA foreign_keys = ON"));
  if (in_memory) return Status::Ok();
  // WAL lets readers (a dashboard, `kforge report`) run while a search writes; FULL sync makes a
  // committed evaluation survive a power cut.
  ASSIGN_OR_RETURN(std::string mode, SwitchToWal(db));
  if (mode != "wal") {
    return Status::IoError("cannot put " + db.path() + " in WAL mode (journal mode is '" + mode +
                           "'); is it on a filesystem without shared-memory support?");
  }
  return db.Execute("PRAGMA synchronous = FULL");
}

Result<int64_t> SelectEnvironmentId(SqliteDb& db, const std::string& fingerprint_hash) {
  ASSIGN_OR_RETURN(SqliteStatement statement, db.Prepare("SELECT id FROM environments WHERE fingerprint_hash = ?"));
  RETURN_IF_ERROR(statement.BindAll(fingerprint_hash));
  ASSIGN_OR_RETURN(bool has_row, statement.Step());
  if (!has_row) return Status::Internal("environment " + fingerprint_hash + " is missing after being recorded");
  return statement.ColumnInt64(0);
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::filesystem::path& db_path, const Clock& clock) {
  std::error_code error;
  if (db_path.has_parent_path()) std::filesystem::create_directories(db_path.parent_path(), error);
  if (error) {
    return Status::IoError("cannot create " + db_path.parent_path().string() + " for the store: " + error.message());
  }
  return OpenConnection(db_path.string(), clock);
}

Result<std::unique_ptr<Store>> Store::OpenInMemory(const Clock& clock) { return OpenConnection(":memory:", clock); }

Result<std::unique_ptr<Store>> Store::OpenConnection(const std::string& path, const Clock& clock) {
  ASSIGN_OR_RETURN(SqliteDb db, SqliteDb::Open(path));
  RETURN_IF_ERROR(ConfigureConnection(db, path == ":memory:"));
  RETURN_IF_ERROR(MigrateSchema(db));
  return std::unique_ptr<Store>(new Store(std::move(db), clock));
}

// ---- environments, candidates, tasks ----

Result<int64_t> Store::RecordEnvironment(const Json& fingerprint) {
  if (!fingerprint.is_object()) return Status::InvalidArgument("an environment fingerprint must be a JSON object");
  std::string text = CanonicalJsonText(fingerprint);
  std::string hash = Sha256Hex(text);
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement insert,
                   db_.Prepare("INSERT INTO environments (fingerprint_hash, json, first_seen) VALUES (?, ?, ?) "
                               "ON CONFLICT (fingerprint_hash) DO NOTHING"));
  RETURN_IF_ERROR(insert.BindAll(hash, text, clock_.NowIso8601()));
  RETURN_IF_ERROR(insert.Run().WithContext("recording environment " + hash));
  // Rows are never deleted, so the id found now is the one just inserted or the earlier one.
  return SelectEnvironmentId(db_, hash);
}

Result<EnvironmentRecord> Store::GetEnvironment(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare("SELECT fingerprint_hash, json, first_seen FROM environments WHERE id = ?"));
  RETURN_IF_ERROR(statement.BindAll(id));
  ASSIGN_OR_RETURN(bool has_row, statement.Step());
  if (!has_row) return Status::NotFound("no environment with id " + std::to_string(id));
  EnvironmentRecord record;
  record.id = id;
  record.fingerprint_hash = statement.ColumnText(0);
  ASSIGN_OR_RETURN(record.json, ParseJson(statement.ColumnText(1), "environment " + std::to_string(id)));
  record.first_seen = statement.ColumnText(2);
  return record;
}

Result<std::string> Store::RecordCandidate(const std::string& source, const std::string& origin) {
  std::string hash = Sha256Hex(source);
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare("INSERT INTO candidates (hash, source, origin, first_seen) VALUES (?, ?, ?, ?) "
                               "ON CONFLICT (hash) DO NOTHING"));
  RETURN_IF_ERROR(statement.BindAll(hash, source, origin, clock_.NowIso8601()));
  RETURN_IF_ERROR(statement.Run().WithContext("recording candidate " + hash));
  return hash;
}

Result<CandidateRecord> Store::GetCandidate(const std::string& hash) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare("SELECT source, origin, first_seen FROM candidates WHERE hash = ?"));
  RETURN_IF_ERROR(statement.BindAll(hash));
  ASSIGN_OR_RETURN(bool has_row, statement.Step());
  if (!has_row) return Status::NotFound("no candidate with hash " + hash);
  return CandidateRecord{hash, statement.ColumnText(0), statement.ColumnText(1), statement.ColumnText(2)};
}

Result<std::string> Store::RecordTask(const std::string& path, const std::string& name, const std::string& source) {
  std::string hash = Sha256Hex(source);
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare("INSERT INTO tasks (hash, path, name, source, first_seen) VALUES (?, ?, ?, ?, ?) "
                               "ON CONFLICT (hash) DO NOTHING"));
  RETURN_IF_ERROR(statement.BindAll(hash, path, name, source, clock_.NowIso8601()));
  RETURN_IF_ERROR(statement.Run().WithContext("recording task " + name));
  return hash;
}

Result<TaskRecord> Store::GetTask(const std::string& hash) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare("SELECT path, name, source, first_seen FROM tasks WHERE hash = ?"));
  RETURN_IF_ERROR(statement.BindAll(hash));
  ASSIGN_OR_RETURN(bool has_row, statement.Step());
  if (!has_row) return Status::NotFound("no task with hash " + hash);
  return TaskRecord{hash, statement.ColumnText(0), statement.ColumnText(1), statement.ColumnText(2),
                    statement.ColumnText(3)};
}

// ---- runs ----

Status Store::StartRun(const std::string& run_id, const std::string& command, const Json& config) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare("INSERT INTO runs (id, command, started_at, status, config) "
                               "VALUES (?, ?, ?, 'running', ?)"));
  RETURN_IF_ERROR(statement.BindAll(run_id, command, clock_.NowIso8601(), CanonicalJsonText(config)));
  return statement.Run().WithContext("starting run " + run_id);
}

Status Store::FinishRun(const std::string& run_id, const std::string& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare("UPDATE runs SET finished_at = ?, status = ? WHERE id = ?"));
  RETURN_IF_ERROR(statement.BindAll(clock_.NowIso8601(), status, run_id));
  RETURN_IF_ERROR(statement.Run().WithContext("finishing run " + run_id));
  if (db_.Changes() == 0) return Status::NotFound("no run with id " + run_id);
  return Status::Ok();
}

Result<RunRecord> Store::GetRun(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare("SELECT command, started_at, finished_at, status, config FROM runs WHERE id = ?"));
  RETURN_IF_ERROR(statement.BindAll(run_id));
  ASSIGN_OR_RETURN(bool has_row, statement.Step());
  if (!has_row) return Status::NotFound("no run with id " + run_id);
  RunRecord record;
  record.id = run_id;
  record.command = statement.ColumnText(0);
  record.started_at = statement.ColumnText(1);
  record.finished_at = statement.ColumnOptionalText(2);
  record.status = statement.ColumnText(3);
  ASSIGN_OR_RETURN(record.config, ParseJson(statement.ColumnText(4), "config of run " + run_id));
  return record;
}

Result<std::vector<RunRecord>> Store::ListRuns(int limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare("SELECT id, command, started_at, finished_at, status, config FROM runs "
                               "ORDER BY started_at DESC, rowid DESC LIMIT ?"));
  RETURN_IF_ERROR(statement.BindAll(static_cast<int64_t>(limit > 0 ? limit : -1)));
  std::vector<RunRecord> runs;
  while (true) {
    ASSIGN_OR_RETURN(bool has_row, statement.Step());
    if (!has_row) break;
    RunRecord record;
    record.id = statement.ColumnText(0);
    record.command = statement.ColumnText(1);
    record.started_at = statement.ColumnText(2);
    record.finished_at = statement.ColumnOptionalText(3);
    record.status = statement.ColumnText(4);
    ASSIGN_OR_RETURN(record.config, ParseJson(statement.ColumnText(5), "config of run " + record.id));
    runs.push_back(std::move(record));
  }
  return runs;
}

// ---- evaluations ----

Result<int64_t> Store::RecordEvaluation(const EvaluationRecord& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  return InsertEvaluation(db_, record, clock_.NowIso8601());
}

Result<EvaluationRecord> Store::GetEvaluation(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return SelectEvaluation(db_, id);
}

Result<std::vector<EvaluationSummary>> Store::ListEvaluations(const EvaluationFilter& filter) {
  std::lock_guard<std::mutex> lock(mutex_);
  return SelectEvaluationSummaries(db_, filter);
}

Result<std::optional<EvaluationRecord>> Store::LatestEvaluation(const EvaluationKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return SelectLatestEvaluation(db_, key);
}

// ---- LLM calls ----

Status Store::RecordTuning(const std::string& kernel_key, const std::string& gpu, const Json& config) {
  if (!config.is_object()) return Status::InvalidArgument("a tuning record's configuration must be a JSON object");
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare("INSERT INTO tuning (kernel_key, gpu, config, recorded_at) VALUES (?, ?, ?, ?) "
                               "ON CONFLICT (kernel_key, gpu) DO UPDATE SET config = excluded.config, "
                               "recorded_at = excluded.recorded_at"));
  RETURN_IF_ERROR(statement.BindAll(kernel_key, gpu, config.dump(), clock_.NowIso8601()));
  return statement.Run().WithContext("recording the tuning of kernel " + kernel_key);
}

Result<std::optional<Json>> Store::GetTuning(const std::string& kernel_key, const std::string& gpu) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement, db_.Prepare("SELECT config FROM tuning WHERE kernel_key = ? AND gpu = ?"));
  RETURN_IF_ERROR(statement.BindAll(kernel_key, gpu));
  ASSIGN_OR_RETURN(bool has_row, statement.Step());
  if (!has_row) return std::optional<Json>();
  ASSIGN_OR_RETURN(Json config, ParseJson(statement.ColumnText(0), "tuning of kernel " + kernel_key));
  return std::optional<Json>(std::move(config));
}

Status Store::RecordBaseline(const std::string& key, const std::string& task_hash, const std::string& mode,
                             const Json& timing) {
  if (!timing.is_object()) return Status::InvalidArgument("a baseline's timing must be a JSON object");
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare("INSERT INTO baselines (key, task_hash, mode, timing, recorded_at) VALUES (?, ?, ?, ?, ?) "
                               "ON CONFLICT (key) DO UPDATE SET timing = excluded.timing, recorded_at = excluded.recorded_at"));
  RETURN_IF_ERROR(statement.BindAll(key, task_hash, mode, timing.dump(), clock_.NowIso8601()));
  return statement.Run().WithContext("recording a baseline of task " + task_hash);
}

Result<std::optional<Json>> Store::GetBaseline(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement, db_.Prepare("SELECT timing, recorded_at FROM baselines WHERE key = ?"));
  RETURN_IF_ERROR(statement.BindAll(key));
  ASSIGN_OR_RETURN(bool has_row, statement.Step());
  if (!has_row) return std::optional<Json>();
  ASSIGN_OR_RETURN(Json timing, ParseJson(statement.ColumnText(0), "baseline " + key));
  timing["recorded_at"] = statement.ColumnText(1);
  return std::optional<Json>(std::move(timing));
}

Status Store::RecordRunStatus(const std::string& run_id, const Json& status) {
  if (!status.is_object()) return Status::InvalidArgument("a run's status must be a JSON object");
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare("INSERT INTO run_status (run_id, updated_at, status) VALUES (?, ?, ?) "
                               "ON CONFLICT (run_id) DO UPDATE SET updated_at = excluded.updated_at, status = excluded.status"));
  RETURN_IF_ERROR(statement.BindAll(run_id, clock_.NowIso8601(), status.dump()));
  return statement.Run().WithContext("recording the status of run " + run_id);
}

Result<std::optional<Json>> Store::GetRunStatus(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement, db_.Prepare("SELECT status, updated_at FROM run_status WHERE run_id = ?"));
  RETURN_IF_ERROR(statement.BindAll(run_id));
  ASSIGN_OR_RETURN(bool has_row, statement.Step());
  if (!has_row) return std::optional<Json>();
  ASSIGN_OR_RETURN(Json status, ParseJson(statement.ColumnText(0), "the status of run " + run_id));
  status["updated_at"] = statement.ColumnText(1);
  return std::optional<Json>(std::move(status));
}

Result<int64_t> Store::RecordLlmCall(const LlmCallRecord& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteTransaction transaction, SqliteTransaction::Begin(db_));
  ASSIGN_OR_RETURN(SqliteStatement statement, db_.Prepare(R"sql(
INSERT INTO llm_calls (created_at, run_id, provider, model, prompt, reply, prompt_tokens,
                       completion_tokens, cost_usd, latency_s, status, estimated_tokens, estimated_cost_usd)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
)sql"));
  RETURN_IF_ERROR(statement.BindAll(clock_.NowIso8601(), record.run_id, record.provider, record.model, record.prompt,
                                    record.reply, record.prompt_tokens, record.completion_tokens, record.cost_usd,
                                    record.latency_s, record.status, record.estimated_tokens, record.estimated_cost_usd));
  RETURN_IF_ERROR(statement.Run().WithContext("recording an LLM call to " + record.model));
  const int64_t id = db_.LastInsertRowId();
  for (const LlmAttemptRecord& attempt : record.attempts) {
    ASSIGN_OR_RETURN(SqliteStatement insert, db_.Prepare(R"sql(
INSERT INTO llm_attempts (call_id, attempt, http_status, outcome, seconds, waited_s, maybe_billed, error)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
)sql"));
    RETURN_IF_ERROR(insert.BindAll(id, static_cast<int64_t>(attempt.attempt), static_cast<int64_t>(attempt.http_status),
                                   attempt.outcome, attempt.seconds, attempt.waited_s,
                                   static_cast<int64_t>(attempt.maybe_billed ? 1 : 0), attempt.error));
    RETURN_IF_ERROR(insert.Run().WithContext("recording an attempt of an LLM call to " + record.model));
  }
  RETURN_IF_ERROR(transaction.Commit());
  return id;
}

namespace {

constexpr char kLlmCallColumns[] =
    "id, created_at, run_id, provider, model, prompt, reply, prompt_tokens, completion_tokens, cost_usd, latency_s, "
    "status, estimated_tokens, estimated_cost_usd";

LlmCallRecord ReadLlmCall(const SqliteStatement& statement) {
  LlmCallRecord record;
  record.id = statement.ColumnInt64(0);
  record.created_at = statement.ColumnText(1);
  record.run_id = statement.ColumnOptionalText(2);
  record.provider = statement.ColumnText(3);
  record.model = statement.ColumnText(4);
  record.prompt = statement.ColumnText(5);
  record.reply = statement.ColumnText(6);
  record.prompt_tokens = statement.ColumnInt64(7);
  record.completion_tokens = statement.ColumnInt64(8);
  record.cost_usd = statement.ColumnDouble(9);
  record.latency_s = statement.ColumnDouble(10);
  record.status = statement.ColumnText(11);
  record.estimated_tokens = statement.ColumnInt64(12);
  record.estimated_cost_usd = statement.ColumnDouble(13);
  return record;
}

LlmAttemptRecord ReadLlmAttempt(const SqliteStatement& statement) {
  LlmAttemptRecord attempt;
  attempt.attempt = static_cast<int>(statement.ColumnInt64(0));
  attempt.http_status = static_cast<int>(statement.ColumnInt64(1));
  attempt.outcome = statement.ColumnText(2);
  attempt.seconds = statement.ColumnDouble(3);
  attempt.waited_s = statement.ColumnDouble(4);
  attempt.maybe_billed = statement.ColumnInt64(5) != 0;
  attempt.error = statement.ColumnText(6);
  return attempt;
}

}  // namespace

Result<LlmCallRecord> Store::GetLlmCall(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare(std::string("SELECT ") + kLlmCallColumns + " FROM llm_calls WHERE id = ?"));
  RETURN_IF_ERROR(statement.BindAll(id));
  ASSIGN_OR_RETURN(bool has_row, statement.Step());
  if (!has_row) return Status::NotFound("no LLM call with id " + std::to_string(id));
  LlmCallRecord call = ReadLlmCall(statement);
  ASSIGN_OR_RETURN(SqliteStatement attempts, db_.Prepare(R"sql(
SELECT attempt, http_status, outcome, seconds, waited_s, maybe_billed, error FROM llm_attempts
WHERE call_id = ? ORDER BY attempt
)sql"));
  RETURN_IF_ERROR(attempts.BindAll(id));
  ASSIGN_OR_RETURN(call.attempts, attempts.ReadAll(ReadLlmAttempt));
  return call;
}

Result<std::vector<LlmCallRecord>> Store::ListLlmCalls(const std::string& run_id, int limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db_.Prepare(std::string("SELECT ") + kLlmCallColumns +
                               " FROM llm_calls WHERE (?1 = '' OR run_id = ?1) ORDER BY id DESC LIMIT ?2"));
  RETURN_IF_ERROR(statement.BindAll(run_id, static_cast<int64_t>(limit)));
  return statement.ReadAll(ReadLlmCall);
}

}  // namespace kforge
