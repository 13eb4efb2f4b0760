// Who decides on a candidate: an interface that many kernel writers share. A JudgePool holds one
// Evaluator per device slot (an Evaluator is not thread-safe, and its device is a pool of depth
// 1): each candidate goes to a free slot, so with one slot evaluations take turns in the order
// writers arrive, and with one slot per GPU that many run at once.
#pragma once

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "eval/evaluation.h"
#include "eval/evaluator.h"
#include "tasks/task.h"

namespace kforge {

class CandidateJudge {
 public:
  virtual ~CandidateJudge() = default;
  // The candidate's evaluation; a non-OK Status only when the task itself is broken or kforge
  // failed outside the evaluation. Thread-safe.
  virtual Result<Evaluation> Judge(const TaskFile& task, const std::filesystem::path& candidate) = 0;
  // Seconds the judge's devices have spent evaluating so far, over every slot (what a GPU-time
  // budget counts); 0 for a judge that does not keep it.
  virtual double busy_seconds() const { return 0; }
};

// Told about every evaluation as it finishes (the CLI records them in the store). Called under
// the judge's own lock, so calls never overlap, whichever slot evaluated.
using EvaluationObserver =
    std::function<void(const TaskFile& task, const std::filesystem::path& candidate, const Evaluation& evaluation)>;

class JudgePool : public CandidateJudge {
 public:
  // Every evaluator must outlive the pool and be used by nothing else meanwhile; at least one.
  explicit JudgePool(std::vector<Evaluator*> evaluators, EvaluationObserver observer = {},
                     const Clock& clock = RealClock());

  // Waits for a free slot, evaluates there; an exception from the evaluator or the observer
  // becomes an Internal status.
  Result<Evaluation> Judge(const TaskFile& task, const std::filesystem::path& candidate) override;
  double busy_seconds() const override;

  size_t slots() const { return evaluators_.size(); }
  // The most evaluations that ran at the same time so far.
  int peak_concurrency() const;

 private:
  const std::vector<Evaluator*> evaluators_;
  const EvaluationObserver observer_;  // called only under observer_mutex_
  const Clock& clock_;
  mutable std::mutex mutex_;
  std::condition_variable slot_freed_;
  std::vector<bool> busy_;     // guarded by mutex_
  int running_ = 0;            // guarded by mutex_
  int peak_ = 0;               // guarded by mutex_
  double busy_seconds_ = 0;    // guarded by mutex_
  std::mutex observer_mutex_;
};

}  // namespace kforge
