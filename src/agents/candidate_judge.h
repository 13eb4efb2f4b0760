// Who decides on a candidate: an interface that many kernel writers share. SerialJudge runs one
// Evaluator (not thread-safe, and its device is a pool of depth 1) behind a mutex, so
// evaluations happen one at a time in the order writers arrive.
#pragma once

#include <filesystem>
#include <functional>
#include <mutex>

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
};

// Told about every evaluation as it finishes (the CLI records them in the store). Called under
// the judge's lock, so calls never overlap.
using EvaluationObserver =
    std::function<void(const TaskFile& task, const std::filesystem::path& candidate, const Evaluation& evaluation)>;

class SerialJudge : public CandidateJudge {
 public:
  // `evaluator` must outlive the judge and be used by nothing else meanwhile.
  explicit SerialJudge(Evaluator& evaluator, EvaluationObserver observer = {})
      : evaluator_(evaluator), observer_(std::move(observer)) {}

  // An exception from the evaluator or the observer becomes an Internal status.
  Result<Evaluation> Judge(const TaskFile& task, const std::filesystem::path& candidate) override;

 private:
  std::mutex mutex_;
  Evaluator& evaluator_;              // used only under mutex_
  const EvaluationObserver observer_;  // called only under mutex_
};

}  // namespace kforge
