// The evaluation service's request bodies, parsed once into typed values at the boundary. Every
// field is checked for its type and bounds, and an unknown field is refused (a misspelt option
// must not be silently ignored); the message names the field.
//
//   task:        {"source": "...", "name": "my_task"}                      (POST /v1/tasks)
//   evaluation:  {"task_hash": H | "task": {...}, "candidate": "...", "options": {...}}
//   batch:       {"task_hash": H | "task": {...}, "candidates": ["...", ...], "options": {...}}
//                or {"jobs": [evaluation, ...]}                             (POST /v1/batch)
//   options:     {"seeds": 3, "timeout_s": 120, "mode": "strict", "precision": "fp32", "timing": true}
//
// And the exchange with remote workers, written by one side and read by the other:
//   leased job:  {"id": 7, "client": "alice", "task": {"hash": H, "name": "...", "source": "..."},
//                 "candidate": "...", "options": {...}}                      (POST /v1/work/next)
//   its result:  {"evaluation": {...}, "fingerprint": {...}} or {"error": "..."}
//                                                                            (POST /v1/work/<id>/result)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "eval/evaluation.h"
#include "serve/eval_queue.h"

namespace kforge {

struct ServiceLimits {
  int max_seeds = 16;
  double max_timeout_s = 600;
  size_t max_batch = 1000;
  size_t max_source_bytes = 1 << 20;  // a task's or a candidate's source
  size_t max_body_bytes = 64 << 20;   // a whole request (larger: 413)
};

struct TaskSubmission {
  std::string name;  // letters, digits, '_' and '-' only (it names a file); "task" when not given
  std::string source;
};

struct EvalSubmission {
  std::optional<TaskSubmission> task;  // given inline
  std::string task_hash;               // or by the hash of a task the service holds
  std::string candidate;
  EvalJobOptions options;
};

// An "options" object over `defaults` (null: the defaults), and back.
Result<EvalJobOptions> ParseJobOptions(const Json& options, const ServiceLimits& limits, EvalJobOptions defaults);
Json JobOptionsToJson(const EvalJobOptions& options);

// Whether `name` may name a task's file: 1 to 100 letters, digits, '_' or '-'.
bool IsTaskName(const std::string& name);

Result<TaskSubmission> ParseTaskSubmission(const Json& body, const ServiceLimits& limits);
// One evaluation (`batch` false) or a batch of them.
Result<std::vector<EvalSubmission>> ParseEvalSubmissions(const Json& body, bool batch, const ServiceLimits& limits,
                                                         const EvalJobOptions& defaults);
// {"ids": [1, 2], "wait_s": 30, "evidence": false} (POST /v1/results): the ids, how long to wait
// for them, and whether to include each full evaluation.
struct ResultsQuery {
  std::vector<int64_t> ids;
  double wait_s = 0;
  bool evidence = true;
};
Result<ResultsQuery> ParseResultsQuery(const Json& body, size_t max_ids, double max_wait_s);

// A job the service leases to a remote worker.
struct LeasedJob {
  int64_t id = 0;
  std::string client;
  std::string task_hash;  // of the task's source, as the service holds it
  TaskSubmission task;
  std::string candidate;
  EvalJobOptions options;
};
Json LeasedJobToJson(const LeasedJob& job);
// Refuses a missing or mistyped field (naming it) and options out of `limits`.
Result<LeasedJob> ParseLeasedJob(const Json& body, const ServiceLimits& limits);

// What a worker answers for a leased job: an evaluation and the worker machine's fingerprint, or
// why it could not judge it.
struct LeaseResult {
  std::optional<Evaluation> evaluation;
  Json fingerprint;  // an object, or null when the worker sent none
  std::string error;
};
Json LeaseResultToJson(const LeaseResult& result);
// Exactly one of "evaluation" and "error"; the evaluation is parsed whole.
Result<LeaseResult> ParseLeaseResult(const Json& body);

}  // namespace kforge
