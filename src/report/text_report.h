// Human-readable reports: an evaluation's verdict and evidence, a baseline, lists of stored
// evaluations. Plain text for a terminal; JSON output goes through Evaluation::ToJson.
#pragma once

#include <string>

#include "core/json.h"
#include "eval/evaluation.h"

namespace kforge {

std::string FormatEvaluation(const Evaluation& evaluation);
// The same from a stored evaluation's JSON (Evaluation::ToJson's shape).
std::string FormatEvaluationJson(const Json& evaluation);
std::string FormatBaseline(const Json& baseline);

}  // namespace kforge
