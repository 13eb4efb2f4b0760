// The outcome of one evaluation: the verdict, headline numbers and the full evidence as JSON
// (what the report prints and the store keeps).
#pragma once

#include <optional>
#include <string>

#include "core/json.h"
#include "eval/statistics.h"
#include "eval/verdict.h"

namespace kforge {

struct Evaluation {
  Verdict verdict;
  std::string device;
  bool timings_meaningful = false;        // false on the CPU (Triton interpreter)
  std::optional<SampleSummary> candidate_ms;
  std::optional<SampleSummary> reference_ms;
  std::optional<SpeedupEstimate> speedup;
  std::optional<double> authored_share;   // share of device time (or launches, on CPU) in authored kernels
  double duration_s = 0;
  // Of duration_s, the time spent timing the reference (eager and torch.compile, their compiles
  // included): a task pays it once, whatever its candidates are.
  double reference_timing_s = 0;
  Json evidence = Json::object();

  Json ToJson() const;
};

// The inverse of Evaluation::ToJson, for evaluations made by another process (a remote worker of
// the evaluation service). InvalidArgument when a field is missing or of the wrong type.
Result<Evaluation> EvaluationFromJson(const Json& json);

// Whether both were timed meaningfully and `candidate` is faster than `incumbent` by more than
// `min_gain` (a fraction of the incumbent's speedup).
bool MeasurablyFaster(const Evaluation& candidate, const Evaluation& incumbent, double min_gain);

Json SummaryToJson(const SampleSummary& summary);
Json SpeedupToJson(const SpeedupEstimate& speedup);

}  // namespace kforge
