// What one round of one kernel writer did, as plain values: which prompt it sent, what came back,
// how the candidate was judged and what it cost. Kept in memory, written to the run folder and
// handed to progress callbacks; the best accepted candidate travels as an AcceptedCandidate.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "core/json.h"
#include "eval/evaluation.h"
#include "llm/completion.h"

namespace kforge {

enum class PromptKind {
  kWrite,    // first attempt: the task alone
  kRepair,   // the last attempt failed: its program and the evaluator's feedback
  kSpeedup,  // an accepted candidate exists: make it faster
  kRecombine,  // evolve: combine the strengths of two accepted candidates of different islands
};

enum class AttemptOutcome {
  kJudged,            // a candidate was extracted and evaluated (see `verdict`)
  kCallFailed,        // the model call gave no usable reply (see `call_outcome`)
  kExtractionFailed,  // the reply held no complete program defining ModelNew
  kJudgeFailed,       // the judge returned an error: the task is broken or kforge failed
};

const char* ToString(PromptKind kind);
const char* ToString(AttemptOutcome outcome);

struct AttemptRecord {
  int writer = 0;  // 1-based
  int round = 0;   // 1-based
  PromptKind prompt = PromptKind::kWrite;
  AttemptOutcome outcome = AttemptOutcome::kCallFailed;
  CallOutcome call_outcome = CallOutcome::kOk;
  std::optional<VerdictKind> verdict_kind;   // when judged
  std::string verdict;                       // "accepted", "rejected_hack(memoization)", "no_code_block", ...
  std::string message;                       // the verdict's, the call's or the extraction's words
  std::optional<double> speedup;             // the evaluator's speedup over the reference, when timings mean something
  bool improved = false;                     // became the writer's best candidate
  bool reused_reply = false;                 // the reply an interrupted run had already paid for
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double cost_usd = 0;
  double llm_seconds = 0;
  double judge_seconds = 0;
  double seconds = 0;                        // the whole round
  std::filesystem::path folder;              // <run>/writer<i>/round<r>
  std::filesystem::path candidate;           // empty when no program was extracted

  bool accepted() const { return verdict_kind == VerdictKind::kAccepted; }
  Json ToJson() const;
};

struct AcceptedCandidate {
  std::filesystem::path path;
  std::string source;
  Evaluation evaluation;
  int writer = 0;
  int round = 0;

  // The evaluator's speedup, or 0 when the candidate was not timed.
  double speedup() const { return evaluation.speedup ? evaluation.speedup->speedup : 0; }
  Json ToJson() const;  // path, writer, round, speedup and the evaluation; not the source
};

// Whether `candidate` should replace `best`: faster by more than `min_gain` (a fraction) when both
// were timed; an untimed candidate never replaces an existing best.
bool IsBetter(const AcceptedCandidate& candidate, const std::optional<AcceptedCandidate>& best, double min_gain);

}  // namespace kforge
