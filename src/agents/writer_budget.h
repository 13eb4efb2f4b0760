// What kernel writers share to know when to stop: a stop flag with its reason, and the limits of
// a run (wall seconds, dollars, tokens, attempts, device seconds) with what has been spent so far. A limit is checked
// when an attempt starts, so calls already in flight may overshoot the dollar limit by one
// call each. A budget may sit inside another (a pool's inside its stage's, when pools run at
// once): what it spends is charged to both, a limit of either stops it, and stopping it leaves
// the outer one running. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "core/clock.h"

namespace kforge {

struct BudgetLimits {
  double max_seconds = 0;  // wall time since the budget was made; 0 = no limit
  double max_usd = 0;      // from Completion.cost_usd; 0 = no limit
  int64_t max_tokens = 0;  // prompt and completion tokens; 0 = no limit
  int max_attempts = 0;    // rounds started, over all writers; 0 = no limit
  double max_eval_seconds = 0;  // device time: seconds the evaluations took, over all writers; 0 = no limit
};

class WriterBudget {
 public:
  // `clock` must outlive the budget and be safe to read from every writer's thread.
  // `outer`, when given, must outlive this budget.
  explicit WriterBudget(BudgetLimits limits, const Clock& clock = RealClock(), WriterBudget* outer = nullptr);

  // Reserves one attempt. False when the budget was stopped or a limit is reached; the first
  // limit reached stops the budget with its reason.
  bool TryStartAttempt();
  void Charge(double cost_usd, int64_t tokens);
  // Adds an evaluation's duration to the device time spent.
  void ChargeEvaluation(double seconds);
  // Stops every writer at its next attempt; the first reason is kept.
  void Stop(const std::string& reason);
  // Whether no attempt may start any more: stopped, or a limit (its own or the outer one's) is
  // reached, which stops it. Reserves nothing.
  bool Spent();

  bool stopped() const;
  std::string stop_reason() const;  // "" while running
  double spent_usd() const;
  int64_t tokens() const;
  int attempts() const;
  double eval_seconds() const;
  double elapsed_seconds() const;

 private:
  void StopLocked(const std::string& reason);
  // The first of its own limits reached, in words; "" when none.
  std::string LimitReachedLocked() const;

  const BudgetLimits limits_;
  const Clock& clock_;
  WriterBudget* const outer_;
  const double started_;
  mutable std::mutex mutex_;
  std::string stop_reason_;  // guarded by mutex_
  bool stopped_ = false;     // guarded by mutex_
  double spent_usd_ = 0;     // guarded by mutex_
  int64_t tokens_ = 0;       // guarded by mutex_
  int attempts_ = 0;         // guarded by mutex_
  double eval_seconds_ = 0;  // guarded by mutex_
};

}  // namespace kforge
