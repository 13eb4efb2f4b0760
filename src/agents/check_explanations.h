// Why each of the evaluator's anti-hack checks exists, in words for whoever wrote the rejected
// candidate: what the rule protects and what to do instead. Pure functions.
#pragma once

#include <string>

namespace kforge {

// The explanation for `check` (a Verdict's check, e.g. "memoization"); a general one for a check
// this table does not know.
std::string WhyNotAllowed(const std::string& check);

}  // namespace kforge
