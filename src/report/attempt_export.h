// Every stored attempt as a dataset, one JSON object per line (JSONL), for supervised or
// reinforcement-learning fine-tuning of kernel writers. Two kinds of line:
//   "llm":        one model call of an LLM stage: the prompt and reply, the candidate the reply
//                 held (null when none), its verdict and speedup, the feedback the writer got
//                 next, tokens and cost, from the stage folder each stored run names;
//   "evaluation": a stored evaluation of a candidate no LLM line covers (kforge eval, the
//                 evaluation service, the compiler): its origin, candidate, verdict and timings.
// Both carry the task (name, hash, source), verdict, verdict_kind, accepted, speedup and, where
// the store has them, evaluation_id, device, precision and mode.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/store.h"

namespace kforge {

struct ExportOptions {
  std::vector<std::string> runs;  // only these LLM runs (and no evaluation lines); empty: every run
  bool llm = true;                // write "llm" lines
  bool evaluations = true;        // write "evaluation" lines
  bool accepted_only = false;
};

struct ExportCounts {
  int64_t llm = 0;
  int64_t evaluations = 0;
  int64_t runs_without_folder = 0;  // stored runs whose stage folder is gone (their calls are not exported)
};

Result<ExportCounts> ExportAttempts(Store& store, const ExportOptions& options, std::ostream& out);

}  // namespace kforge
