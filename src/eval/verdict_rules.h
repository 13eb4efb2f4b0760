// The evaluator's policy: how the facts the workers report become a verdict. Each function
// judges one stage and returns the verdict that ends the evaluation there, or nullopt to go on.
// Pure functions over the workers' replies, so every rule is tested without a worker.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "eval/candidate_run.h"
#include "eval/comparison.h"
#include "eval/static_report.h"
#include "eval/verdict.h"

namespace kforge {

enum class ProvenanceMode { kStrict, kPartial };
const char* ToString(ProvenanceMode mode);
std::optional<ProvenanceMode> ParseProvenanceMode(const std::string& text);

// The trusted worker's static_check reply.
std::optional<Verdict> JudgeStaticChecks(const StaticReport& report);
// The zygote's run_candidate reply: how the process ended, what the sandbox refused, its error,
// its runtime findings. `timeout_s` is the limit it ran under.
std::optional<Verdict> JudgeCandidateProcess(const CandidateRun& run, double timeout_s);
// The trusted worker's compare reply: memoization, wrong outputs, nondeterminism, timed outputs.
std::optional<Verdict> JudgeOutputs(const Comparison& comparison);
// The candidate's timing record: events longer than host time, work left running past the end mark.
std::optional<Verdict> JudgeTimingIntegrity(const CandidateTiming& timing);
// Work between the end of a timed call and the hand-over of its outputs escapes timing: the
// trusted worker clocks the intervals between a candidate's hand-overs (`handoff_gaps_ms[i]` ends
// at timed call i + 1), and the reference's own loop, which does the same steps (fresh inputs, L2
// flush, the call, a copy of its outputs), is clocked per iteration. A candidate that spends much
// more outside its timed calls than the reference is hiding work there.
std::optional<Verdict> JudgeUntimedWork(const std::vector<double>& candidate_ms, const std::vector<double>& handoff_gaps_ms,
                                        const std::vector<double>& reference_ms,
                                        const std::vector<double>& reference_iteration_ms);
// A median below the roofline floor cannot be honest.
std::optional<Verdict> JudgeRoofline(double candidate_s, double floor_s);
// Library compute on the hot path, in strict mode.
std::optional<Verdict> JudgeProvenance(const CandidateProvenance& provenance, ProvenanceMode mode);

}  // namespace kforge
