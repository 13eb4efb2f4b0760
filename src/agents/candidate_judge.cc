#include "agents/candidate_judge.h"

#include <algorithm>
#include <exception>

namespace kforge {

JudgePool::JudgePool(std::vector<Evaluator*> evaluators, EvaluationObserver observer, const Clock& clock)
    : evaluators_(std::move(evaluators)), observer_(std::move(observer)), clock_(clock), busy_(evaluators_.size(), false) {}

Result<Evaluation> JudgePool::Judge(const TaskFile& task, const std::filesystem::path& candidate) {
  if (evaluators_.empty()) return Status::Internal("a judge with no evaluator");
  size_t slot = 0;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    slot_freed_.wait(lock, [&] { return std::find(busy_.begin(), busy_.end(), false) != busy_.end(); });
    slot = static_cast<size_t>(std::find(busy_.begin(), busy_.end(), false) - busy_.begin());
    busy_[slot] = true;
    peak_ = std::max(peak_, ++running_);
  }
  const double started = clock_.NowSeconds();
  Result<Evaluation> evaluation = Status::Internal("not evaluated");
  try {
    evaluation = evaluators_[slot]->Evaluate(task, candidate);
  } catch (const std::exception& error) {
    evaluation = Status::Internal("evaluating " + candidate.string() + " threw: " + error.what());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_[slot] = false;
    --running_;
    busy_seconds_ += clock_.NowSeconds() - started;
  }
  slot_freed_.notify_one();
  if (evaluation.ok() && observer_) {
    std::lock_guard<std::mutex> lock(observer_mutex_);
    try {
      observer_(task, candidate, *evaluation);
    } catch (const std::exception& error) {
      return Status::Internal("recording the evaluation of " + candidate.string() + " threw: " + error.what());
    }
  }
  return evaluation;
}

double JudgePool::busy_seconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_seconds_;
}

int JudgePool::peak_concurrency() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}

}  // namespace kforge
