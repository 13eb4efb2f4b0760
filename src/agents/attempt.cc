#include "agents/attempt.h"

namespace kforge {

const char* ToString(PromptKind kind) {
  switch (kind) {
    case PromptKind::kWrite: return "write";
    case PromptKind::kRepair: return "repair";
    case PromptKind::kSpeedup: return "speedup";
    case PromptKind::kRecombine: return "recombine";
  }
  return "unknown";
}

const char* ToString(AttemptOutcome outcome) {
  switch (outcome) {
    case AttemptOutcome::kJudged: return "judged";
    case AttemptOutcome::kCallFailed: return "call_failed";
    case AttemptOutcome::kExtractionFailed: return "extraction_failed";
    case AttemptOutcome::kJudgeFailed: return "judge_failed";
  }
  return "unknown";
}

Json AttemptRecord::ToJson() const {
  return {{"writer", writer},
          {"round", round},
          {"prompt", ToString(prompt)},
          {"outcome", ToString(outcome)},
          {"call_outcome", ToString(call_outcome)},
          {"verdict", verdict},
          {"message", message},
          {"speedup", speedup ? Json(*speedup) : Json()},
          {"improved", improved},
          {"reused_reply", reused_reply},
          {"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"cost_usd", cost_usd},
          {"llm_s", llm_seconds},
          {"judge_s", judge_seconds},
          {"seconds", seconds},
          {"folder", folder.string()},
          {"candidate", candidate.empty() ? Json() : Json(candidate.string())}};
}

Json AcceptedCandidate::ToJson() const {
  return {{"path", path.string()},
          {"writer", writer},
          {"round", round},
          {"speedup", evaluation.speedup ? Json(evaluation.speedup->speedup) : Json()},
          {"evaluation", evaluation.ToJson()}};
}

bool IsBetter(const AcceptedCandidate& candidate, const std::optional<AcceptedCandidate>& best, double min_gain) {
  if (!best) return true;
  if (!candidate.evaluation.speedup || !candidate.evaluation.timings_meaningful) return false;
  if (!best->evaluation.speedup || !best->evaluation.timings_meaningful) return true;
  return MeasurablyFaster(candidate.evaluation, best->evaluation, min_gain);
}

}  // namespace kforge
