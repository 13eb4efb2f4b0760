// The live status of an LLM stage: model calls queued and in flight, retries sleeping (and why),
// attempts, accepted candidates, the best speedup so far, tokens and money spent, and an estimate
// of the time left. Kept in the store's run_status row (replaced every `period_s` while the stage
// runs and after every attempt) for a dashboard, and said in words on the console. Pools may run
// at once (the parts of a decomposition): each is followed by its scope. Thread-safe.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agents/writer_pool.h"
#include "core/clock.h"
#include "core/json.h"
#include "llm/call_activity.h"
#include "store/store.h"

namespace kforge {

// The status as stored (ToJson) and read back (FromJson, which takes what it can: a missing or
// mistyped field keeps its default).
struct RunStatus {
  std::string state = "running";  // running, finished, failed or stopped
  std::string updated_at;         // set by the store
  std::vector<std::string> scopes;  // the pools running ("whole", a fusion group's name, ...)
  int planned_attempts = 0;       // of the running pools
  int attempts = 0, accepted = 0;
  std::optional<double> best_speedup;
  int64_t tokens = 0;
  double cost_usd = 0;
  double elapsed_s = 0;
  std::optional<double> eta_s;
  std::optional<ActivitySnapshot> calls;  // the provider's calls, when it reports them

  Json ToJson() const;
  static RunStatus FromJson(const Json& json);
  // "2 call(s) in flight, 1 queued; a retry waits 12 s (rate_limited); about 3 min left": what
  // the console adds to each attempt's line.
  std::string Brief() const;
  // Everything, in one paragraph, for `kforge show --llm --run RUN --status`.
  std::string Words() const;
};

class LiveStatus {
 public:
  // `store` may be null (nothing is written); `activity` may be null (no call counts).
  LiveStatus(Store* store, std::string run_id, std::shared_ptr<CallActivity> activity, double budget_s,
             const Clock& clock = RealClock());
  ~LiveStatus();  // stops the ticker; a status still "running" is written as "stopped"

  // Writes the status every `period_s` on a thread of its own until Finish or destruction.
  void StartTicking(double period_s);
  // A pool of `planned` attempts at most (writers x rounds) starts in `scope`.
  void PoolStarted(const std::string& scope, int planned);
  // After each attempt of the pool of `scope`.
  void Attempted(const std::string& scope, const PoolProgress& progress);
  // The pool of `scope` ended: its attempts still count, its planned ones no longer.
  void PoolEnded(const std::string& scope);
  // The stage ended: "finished", "failed" or "stopped"; the last status is written.
  void Finish(const std::string& state);

  RunStatus Current() const;

 private:
  struct Pool {
    int planned = 0;
    PoolProgress progress;
    bool running = true;
  };

  void Write() const;

  Store* store_;
  std::string run_id_;
  std::shared_ptr<CallActivity> activity_;
  double budget_s_;
  const Clock& clock_;
  double started_s_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::string state_ = "running";
  std::map<std::string, Pool> pools_;  // by scope
  bool stop_ = false;
  std::thread ticker_;
};

}  // namespace kforge
