// What one worker slot of the evaluation service does with a job: writes the candidate into the
// slot's folder, evaluates it with the job's options on the slot's workers, records the
// evaluation (through the recorder the caller wires to its store), and returns the job's result
// fields (eval_service.h). A broken task is an "error" result; a failing candidate is a verdict.
// One judge per slot; not thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "core/json.h"
#include "eval/evaluator.h"
#include "serve/eval_queue.h"
#include "serve/eval_request.h"
#include "tasks/task.h"

namespace kforge {

// Stores an evaluation: (task, candidate source, origin, evaluation, precision, mode, the
// environment fingerprint of the machine that judged it, null for this one's) -> its id.
using EvaluationRecorder =
    std::function<Result<int64_t>(const TaskFile&, const std::string&, const std::string&, const Evaluation&,
                                  const std::string&, const std::string&, const Json&)>;

class ServiceJudge {
 public:
  ServiceJudge(WorkerSource& workers, EvalOptions base, std::filesystem::path candidate_folder, EvaluationRecorder record);

  Json Run(const EvalJob& job, const TaskFile& task);

 private:
  WorkerSource& workers_;
  EvalOptions base_;
  std::filesystem::path candidate_folder_;
  EvaluationRecorder record_;
};

// Writes a submitted task as `folder`/<sha256>/<name>.py (once) and reads it back as a task
// named `name`: how the service and its remote workers hold tasks.
Result<TaskFile> WriteServiceTask(const std::filesystem::path& folder, const TaskSubmission& task);

// The headline fields of a job's result from an evaluation (and its stored id, 0 when not stored).
Json JobResultFields(const Evaluation& evaluation, int64_t evaluation_id, const std::string& candidate_hash);

}  // namespace kforge
