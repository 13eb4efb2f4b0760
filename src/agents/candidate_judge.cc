#include "agents/candidate_judge.h"

#include <exception>

namespace kforge {

Result<Evaluation> SerialJudge::Judge(const TaskFile& task, const std::filesystem::path& candidate) {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    Result<Evaluation> evaluation = evaluator_.Evaluate(task, candidate);
    if (evaluation.ok() && observer_) observer_(task, candidate, *evaluation);
    return evaluation;
  } catch (const std::exception& error) {
    return Status::Internal("evaluating " + candidate.string() + " threw: " + error.what());
  }
}

}  // namespace kforge
