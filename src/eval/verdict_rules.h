// The evaluator's policy: how the facts the workers report become a verdict. Each function
// judges one stage and returns the verdict that ends the evaluation there, or nullopt to go on.
// Pure functions over the workers' JSON, so every rule is tested without a worker.
#pragma once

#include <optional>
#include <string>

#include "core/json.h"
#include "eval/verdict.h"

namespace kforge {

enum class ProvenanceMode { kStrict, kPartial };
const char* ToString(ProvenanceMode mode);
std::optional<ProvenanceMode> ParseProvenanceMode(const std::string& text);

// The trusted worker's static_check reply.
std::optional<Verdict> JudgeStaticChecks(const Json& static_report);
// The zygote's run_candidate reply: how the process ended, its error, its runtime findings.
std::optional<Verdict> JudgeCandidateProcess(const Json& run_report);
// The trusted worker's compare reply: memoization, wrong outputs, nondeterminism, timed outputs.
std::optional<Verdict> JudgeOutputs(const Json& comparison);
// The candidate's timing record: events longer than host time, work left running past the end mark.
std::optional<Verdict> JudgeTimingIntegrity(const Json& timing);
// A median below the roofline floor cannot be honest.
std::optional<Verdict> JudgeRoofline(double candidate_s, double floor_s);
// Library compute on the hot path, in strict mode.
std::optional<Verdict> JudgeProvenance(const Json& provenance, ProvenanceMode mode);

}  // namespace kforge
