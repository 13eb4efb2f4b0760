// What the model calls of one stage are doing now: how many wait for a concurrency slot, how many
// are in flight, and which retries are sleeping (a Retry-After, a backoff) and until when. The
// provider wrappers report into it; the stage's status line and the store's run status read
// snapshots. Thread-safe.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "core/clock.h"
#include "llm/completion.h"

namespace kforge {

struct ActivitySnapshot {
  int queued = 0;        // waiting for a slot of the provider's concurrency limit
  int in_flight = 0;     // sent (retries and their waits included), not yet answered
  int retry_waits = 0;   // of those, sleeping before a retry
  double wait_left_s = 0;     // the longest remaining retry wait
  std::string wait_reason;    // its cause: "rate_limited", "server_error", ...
  int64_t waits_so_far = 0;   // retry waits since the start
  double waited_s = 0;        // their seconds, in all
};

class CallActivity {
 public:
  explicit CallActivity(const Clock& clock = RealClock());

  void Queued();
  void Started();   // after Queued: the call got its slot
  void Finished();  // after Started
  // A retry of a call in flight will sleep `seconds` because of `why`.
  void RetryWait(double seconds, CallOutcome why);

  ActivitySnapshot Snapshot() const;

 private:
  struct Wait {
    double ends_at = 0;
    CallOutcome why = CallOutcome::kOk;
  };

  const Clock& clock_;
  mutable std::mutex mutex_;
  int queued_ = 0;
  int in_flight_ = 0;
  std::vector<Wait> waits_;  // those not yet over, pruned on each change
  int64_t waits_so_far_ = 0;
  double waited_s_ = 0;
};

}  // namespace kforge
