// The live status of an LLM stage: model calls queued and in flight, retries sleeping (and why),
// attempts, accepted candidates, the best speedup so far, tokens and money spent, and an estimate
// of the time left. Kept in the store's run_status row (replaced every `period_s` while the stage
// runs and after every attempt) for a dashboard, and said in words on the console. Thread-safe.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agents/writer_pool.h"
#include "core/clock.h"
#include "core/json.h"
#include "llm/call_activity.h"
#include "store/store.h"

namespace kforge {

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
  // After each attempt of the current pool.
  void Attempted(const PoolProgress& progress);
  // The stage ended: "finished", "failed" or "stopped"; the last status is written.
  void Finish(const std::string& state);

  Json Current() const;
  // "2 call(s) in flight, 1 queued; a retry waits 12 s (rate_limited); about 3 min left"
  std::string Words() const;

 private:
  void Write() const;
  Json CurrentLocked() const;

  Store* store_;
  std::string run_id_;
  std::shared_ptr<CallActivity> activity_;
  double budget_s_;
  const Clock& clock_;
  double started_s_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::string state_ = "running";
  std::string scope_;
  int planned_ = 0;           // of the current pool
  PoolProgress pool_;         // of the current pool
  PoolProgress earlier_;      // of the pools before it, summed
  double pool_started_s_ = 0;
  bool stop_ = false;
  std::thread ticker_;
};

}  // namespace kforge
