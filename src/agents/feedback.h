// Turns an evaluation into what a kernel engineer wants to read before the next attempt: the
// error and the frames of their own program; which output and input set went wrong and by how
// much; which rule a rejected candidate broke and why the rule exists; how an accepted one
// compares with the reference. Deterministic text from the evaluation alone; pure functions.
#pragma once

#include <cstddef>
#include <string>

#include "core/json.h"
#include "eval/evaluation.h"

namespace kforge {

std::string FeedbackFor(const Evaluation& evaluation);
// The same from an evaluation's JSON (Evaluation::ToJson's shape, as reports and the store keep it).
std::string FeedbackFromJson(const Json& evaluation);

// The times a kernel writer has to beat, from the evaluation of the built-in compiler's candidate:
// its time and the reference's in eager mode and under torch.compile, and its fraction of the
// roofline. "" when its timings mean nothing (the CPU) or it was not accepted.
// Takes the evaluation as Evaluation::ToJson gives it.
std::string BaselineSummary(const Json& compiler_candidate);

// A Python traceback cut down to the frames in the candidate's own file ("candidate.py") and the
// exception lines; other frames become one "..." line. At most the last `max_lines` lines.
std::string CandidateTraceback(const std::string& traceback, size_t max_lines = 40);

// The last `max_lines` lines of `text`, at most `max_chars` characters, with a marker when cut.
std::string TailOf(const std::string& text, size_t max_lines, size_t max_chars);

}  // namespace kforge
