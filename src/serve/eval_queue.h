// The evaluation service's queue: jobs submitted by clients wait here until a worker slot (one
// per GPU) takes the next one. Clients are served round robin, so one client's large batch does
// not starve another's; each client may have at most `max_pending_per_client` jobs waiting or
// running, and a submission over that is refused whole. Finished jobs keep their result for
// `max_kept_results` jobs, after which only the stored evaluation's id is remembered.
// Thread-safe: one mutex guards everything; workers block in Next() and readers in WaitDone().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/status.h"

namespace kforge {

// What a client may choose for one evaluation; the service bounds each field.
struct EvalJobOptions {
  int seeds = 3;
  double timeout_s = 120;
  std::string mode = "strict";     // strict | partial
  std::string precision = "fp32";  // fp32 | tf32 | bf16
  bool timing = true;
};

struct EvalJobSpec {
  std::string task_hash;  // a task the store holds
  std::string candidate;  // the candidate's source (ModelNew)
  EvalJobOptions options;
};

enum class EvalJobState { kQueued, kRunning, kDone, kExpired };
const char* ToString(EvalJobState state);

// A job as a reader sees it. `result` is the worker's outcome (see eval_service.h) once done.
struct EvalJobView {
  int64_t id = 0;
  std::string client;
  EvalJobState state = EvalJobState::kQueued;
  std::string task_hash;
  double queued_s = 0;   // from submission until a worker took it (or until now)
  double run_s = 0;      // on the worker
  Json result;           // null until done; {"evaluation_id": N} only, once expired
};

struct EvalJob {
  int64_t id = 0;
  std::string client;
  EvalJobSpec spec;
};

struct EvalQueueLimits {
  int max_pending_per_client = 1000;  // waiting or running
  size_t max_kept_results = 100000;   // finished results kept in memory
};

struct QueueStats {
  struct Client {
    int64_t queued = 0;
    int64_t running = 0;
    int64_t done = 0;
  };
  int64_t queued = 0;
  int64_t running = 0;
  int64_t done = 0;
  std::map<std::string, Client> clients;
  std::vector<double> latencies_s;  // submission to result, of the finished jobs still kept
  double since_s = 0;               // seconds since the queue opened
  Json ToJson() const;
};

class EvalQueue {
 public:
  explicit EvalQueue(EvalQueueLimits limits, const Clock& clock = RealClock());

  // Queues every spec for `client` and returns their ids in order, or none of them:
  // ResourceExhausted when the client would exceed its limit, Unavailable once closed.
  Result<std::vector<int64_t>> Submit(const std::string& client, std::vector<EvalJobSpec> specs);
  // The next job, the client after the last one served first; blocks until there is one (or,
  // given `timeout_s`, at most that long). nullopt on timeout and once the queue is closed (jobs
  // still waiting are then dropped).
  std::optional<EvalJob> Next(std::optional<double> timeout_s = std::nullopt);
  // Records a job's result and wakes its waiters.
  void Finish(int64_t id, Json result);
  // nullopt for an id never issued.
  std::optional<EvalJobView> Get(int64_t id) const;
  // Waits until every one of `ids` is finished or `timeout_s` passed; returns how each stands
  // (ids never issued are left out).
  std::vector<EvalJobView> WaitDone(const std::vector<int64_t>& ids, double timeout_s) const;
  QueueStats Stats() const;
  // Refuses new jobs, drops the waiting ones and releases Next(); returns how many were dropped.
  size_t Close();

 private:
  struct Entry {
    EvalJob job;
    EvalJobState state = EvalJobState::kQueued;
    double submitted = 0;
    double started = 0;
    double finished = 0;
    Json result;
  };
  EvalJobView ViewOf(const Entry& entry) const;
  bool AllDone(const std::vector<int64_t>& ids) const;
  void Forget();

  const EvalQueueLimits limits_;
  const Clock& clock_;
  const double opened_;
  mutable std::mutex mutex_;
  mutable std::condition_variable work_;   // a job was queued, or the queue closed
  mutable std::condition_variable done_;   // a job finished
  bool closed_ = false;                                      // guarded by mutex_
  int64_t next_id_ = 1;                                      // guarded by mutex_
  std::map<int64_t, Entry> jobs_;                            // guarded by mutex_
  std::map<std::string, std::deque<int64_t>> waiting_;       // per client, guarded by mutex_
  std::map<std::string, int64_t> pending_;                   // waiting or running per client, guarded by mutex_
  std::map<std::string, int64_t> done_count_;                // guarded by mutex_
  std::string last_served_;                                  // guarded by mutex_
  std::deque<int64_t> finished_order_;                       // guarded by mutex_
};

}  // namespace kforge
