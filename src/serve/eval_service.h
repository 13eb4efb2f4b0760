// `kforge serve --eval`: the evaluator as an HTTP/JSON service. Clients register tasks, submit
// candidates one by one or in batches, and read typed verdicts with their evidence; a queue
// (eval_queue.h) deals the jobs to worker slots, one per GPU, each evaluating one candidate at a
// time. Every evaluation is stored like `kforge eval`'s. Bodies are parsed by eval_request.h.
//
//   POST /v1/tasks        {"source", "name"}                 -> 201 {"task_hash", "name"}
//   POST /v1/evaluations  one evaluation                     -> 202 {"id", "status"}
//   POST /v1/batch        several                            -> 202 {"ids"}
//   GET  /v1/evaluations/<id>?wait_s=S&evidence=0            -> 200 a job (below); 404 unknown id
//   POST /v1/results      {"ids", "wait_s", "evidence"}      -> 200 {"results": [job, ...]}
//   GET  /v1/queue        counts per client, evaluations per hour, latency percentiles
//   GET  /v1/health       {"ok", "workers", "device", "gpu"}
//
// Remote workers (`kforge worker --connect URL`, on any machine, or placed by Slurm) take jobs
// too, when enabled; with tokens, only a "worker" client may:
//   POST /v1/work/next         {"worker", "wait_s"}        -> 200 {"job": {"id", "client", "task":
//                              {"hash", "name", "source"}, "candidate", "options"}}; 204 none
//   POST /v1/work/<id>/result  {"evaluation" | "error", "fingerprint"} -> 200 {"evaluation_id"}
// A job taken by a remote worker is leased for its timeout plus a margin; a worker that does not
// answer by then loses it, and the job ends with an error (a result sent later is refused, 409).
// The service stores remote evaluations with the worker's environment fingerprint.
//
// A job: {"id", "client", "status": queued|running|done|error|expired, "task_hash", "queued_s",
// "run_s"} and, once done, "verdict", "verdict_kind", "check", "message", "accepted", "speedup",
// "timings_meaningful", "candidate_ms", "reference_ms", "evaluation_id", "candidate_hash" and
// "evaluation" (the full evidence); "error" when the task itself could not be run.
// Errors are {"error": "..."} with 400 (malformed), 401 (token), 404, 413 (too large), 429 (the
// client's share of the queue is full) or 503 (shutting down); a refused request queues nothing.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "eval/evaluation.h"
#include "serve/access_tokens.h"
#include "serve/eval_queue.h"
#include "serve/eval_request.h"
#include "serve/service_judge.h"
#include "store/store.h"
#include "tasks/task.h"

namespace httplib {
class Server;
}

namespace kforge {

// Runs one job on one worker slot and returns the job's result fields (see above); never throws.
using EvalJobRunner = std::function<Json(const EvalJob& job, const TaskFile& task)>;

struct EvalServiceOptions {
  ServiceLimits limits;
  EvalQueueLimits queue;
  EvalJobOptions defaults;
  std::filesystem::path task_folder;  // submitted tasks are written here, one folder per hash
  double max_wait_s = 60;             // the longest a request may wait for results
  Json info = Json::object();         // what /v1/health says besides "ok" and "workers" (device, gpu)
  bool remote_workers = false;        // serve /v1/work/* to remote workers
  double lease_margin_s = 300;        // a remote job's lease: its timeout plus this
  EvaluationRecorder record_remote;   // how remote evaluations are stored (none: not stored)
};

class EvalService {
 public:
  // `store` (may be null: tasks then live only as long as the service) and `tokens` (null: every
  // caller is the client "local") must outlive the service. One worker thread per runner.
  EvalService(Store* store, const AccessTokens* tokens, EvalServiceOptions options, std::vector<EvalJobRunner> slots);
  ~EvalService();  // Shutdown()

  // Adds the /v1 routes to `server` and, with tokens, makes every request to it carry one
  // (RequireTokens).
  void Install(httplib::Server& server);
  // Starts the worker threads.
  void Start();
  // Refuses new jobs, drops the waiting ones (returned), and waits for the running ones to end
  // (remote ones end with an error).
  size_t Shutdown();

  // What the routes do, callable directly.
  Result<TaskFile> AddTask(const TaskSubmission& task);
  Result<std::vector<int64_t>> Submit(const std::string& client, const std::vector<EvalSubmission>& submissions);
  Json JobJson(const EvalJobView& view, bool evidence) const;
  // A remote worker's side: the next job leased to `worker` (nullopt when none came within
  // `wait_s`), and its result (NotFound/InvalidArgument when the lease is gone or the body wrong).
  std::optional<Json> LeaseNext(const std::string& worker, double wait_s);
  Result<int64_t> CompleteLease(int64_t id, const Json& body);
  EvalQueue& queue() { return queue_; }

 private:
  struct Lease {
    EvalJob job;
    std::string worker;
    double deadline = 0;  // steady seconds
  };
  Result<TaskFile> TaskByHash(const std::string& hash);
  void Work(size_t slot);
  void ReapLeases();  // ends the jobs of leases past their deadline
  void InstallRemote(httplib::Server& server);

  Store* store_;
  const AccessTokens* tokens_;
  const EvalServiceOptions options_;
  std::vector<EvalJobRunner> slots_;
  EvalQueue queue_;
  std::vector<std::thread> threads_;
  std::mutex tasks_mutex_;
  std::map<std::string, TaskFile> tasks_;  // by hash; guarded by tasks_mutex_
  std::mutex leases_mutex_;
  std::condition_variable leases_changed_;
  bool stopping_ = false;              // guarded by leases_mutex_
  std::map<int64_t, Lease> leases_;    // remote jobs in flight; guarded by leases_mutex_
};

}  // namespace kforge
