#include "llm/call_activity.h"

#include <algorithm>

namespace kforge {

CallActivity::CallActivity(const Clock& clock) : clock_(clock) {}

void CallActivity::Queued() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++queued_;
}

void CallActivity::Started() {
  std::lock_guard<std::mutex> lock(mutex_);
  queued_ = std::max(0, queued_ - 1);
  ++in_flight_;
}

void CallActivity::Finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  in_flight_ = std::max(0, in_flight_ - 1);
}

void CallActivity::RetryWait(double seconds, CallOutcome why) {
  double now = clock_.NowSeconds();
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(waits_, [now](const Wait& wait) { return wait.ends_at <= now; });
  waits_.push_back({now + std::max(0.0, seconds), why});
  ++waits_so_far_;
  waited_s_ += std::max(0.0, seconds);
}

ActivitySnapshot CallActivity::Snapshot() const {
  double now = clock_.NowSeconds();
  std::lock_guard<std::mutex> lock(mutex_);
  ActivitySnapshot snapshot;
  snapshot.queued = queued_;
  snapshot.in_flight = in_flight_;
  snapshot.waits_so_far = waits_so_far_;
  snapshot.waited_s = waited_s_;
  for (const Wait& wait : waits_) {
    if (wait.ends_at <= now) continue;
    ++snapshot.retry_waits;
    if (wait.ends_at - now > snapshot.wait_left_s) {
      snapshot.wait_left_s = wait.ends_at - now;
      snapshot.wait_reason = ToString(wait.why);
    }
  }
  return snapshot;
}

}  // namespace kforge
