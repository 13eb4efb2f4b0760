// The workspace's record of everything kforge did: environments, tasks, candidates, runs,
// evaluations with their measurements and evidence, and LLM calls, in one SQLite file (WAL mode,
// foreign keys on), so a run can be resumed, re-scored and reported without re-running anything.
// Thread-safe: one mutex serializes every call on the connection. Writes that belong together
// are one transaction; a failed write returns a Status and leaves earlier rows untouched.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/status.h"
#include "store/records.h"
#include "store/sqlite_db.h"

namespace kforge {

class Store {
 public:
  // Opens or creates the database at `db_path` (creating its folders) and migrates it to the
  // latest schema. InvalidArgument when the file was written by a newer kforge or is not a kforge
  // store. `clock` stamps every record and must outlive the Store.
  static Result<std::unique_ptr<Store>> Open(const std::filesystem::path& db_path,
                                             const Clock& clock = RealClock());
  // A private in-memory store, for tests.
  static Result<std::unique_ptr<Store>> OpenInMemory(const Clock& clock = RealClock());

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Returns the id of the environment whose fingerprint (a JSON object) equals `fingerprint`,
  // recording it first if it is new.
  Result<int64_t> RecordEnvironment(const Json& fingerprint);
  Result<EnvironmentRecord> GetEnvironment(int64_t id);

  // Records a candidate's source under its sha256 and returns the hash. Idempotent: the first
  // origin recorded for a source is kept.
  Result<std::string> RecordCandidate(const std::string& source, const std::string& origin);
  Result<CandidateRecord> GetCandidate(const std::string& hash);

  // Records a task's source under its sha256 and returns the hash. Idempotent: the first path and
  // name recorded for a source are kept.
  Result<std::string> RecordTask(const std::string& path, const std::string& name, const std::string& source);
  Result<TaskRecord> GetTask(const std::string& hash);

  // Starts run `run_id` (status "running"); InvalidArgument when that id already exists.
  Status StartRun(const std::string& run_id, const std::string& command, const Json& config);
  // Marks a run finished with `status` ("succeeded", "failed", "interrupted", ...).
  Status FinishRun(const std::string& run_id, const std::string& status);
  Result<RunRecord> GetRun(const std::string& run_id);
  // Newest first, at most `limit` (0 or less: all).
  Result<std::vector<RunRecord>> ListRuns(int limit);

  // Records an evaluation and its measurements in one transaction and returns its id. The task,
  // candidate, environment and run it names must already be recorded (InvalidArgument otherwise).
  Result<int64_t> RecordEvaluation(const EvaluationRecord& record);
  // NotFound when there is no evaluation `id`.
  Result<EvaluationRecord> GetEvaluation(int64_t id);
  // Newest first.
  Result<std::vector<EvaluationSummary>> ListEvaluations(const EvaluationFilter& filter = {});
  // The newest evaluation under `key` that can stand in for a fresh one: infra_error verdicts are
  // kforge's fault, never a candidate's, so they are skipped. nullopt when there is none.
  Result<std::optional<EvaluationRecord>> LatestEvaluation(const EvaluationKey& key);

  // The configuration (a JSON object) measured best for generated kernel `kernel_key` on `gpu`;
  // a later record for the same pair replaces it.
  Status RecordTuning(const std::string& kernel_key, const std::string& gpu, const Json& config);
  // nullopt when none is recorded.
  Result<std::optional<Json>> GetTuning(const std::string& kernel_key, const std::string& gpu);

  // A reference's timing (the trusted worker's time_reference reply, a JSON object) under `key`
  // (see eval/baseline_source.h); a later record under the same key replaces it.
  Status RecordBaseline(const std::string& key, const std::string& task_hash, const std::string& mode, const Json& timing);
  // nullopt when none is recorded.
  Result<std::optional<Json>> GetBaseline(const std::string& key);

  // The live status of a run (a JSON object), replacing the one before; read back with its
  // updated_at added, nullopt when the run has none.
  Status RecordRunStatus(const std::string& run_id, const Json& status);
  Result<std::optional<Json>> GetRunStatus(const std::string& run_id);

  Result<int64_t> RecordLlmCall(const LlmCallRecord& record);
  Result<LlmCallRecord> GetLlmCall(int64_t id);
  // Newest first, at most `limit`; only run `run_id`'s when given (an empty id: every run's).
  Result<std::vector<LlmCallRecord>> ListLlmCalls(const std::string& run_id, int limit);

 private:
  Store(SqliteDb db, const Clock& clock) : clock_(clock), db_(std::move(db)) {}
  static Result<std::unique_ptr<Store>> OpenConnection(const std::string& path, const Clock& clock);

  const Clock& clock_;
  std::mutex mutex_;
  SqliteDb db_;  // guarded by mutex_
};

}  // namespace kforge
