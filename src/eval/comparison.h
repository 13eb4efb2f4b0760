// The trusted worker's reply to "compare" (reference.py, evaluation_session.py): what its live
// session judged of every call the candidate made, parsed once at the boundary into types. Every
// "passed" that decides a verdict is required: a key renamed or missing on the worker's side is an
// error here (the evaluation's infra_error), never a check that reads a default and passes.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace kforge {

// One output (or buffer) judged against the reference's (compare.py's compare_tensor).
struct OutputCheck {
  bool passed = false;
  std::string problem;  // what was wrong, where the worker says ("" when it passed)
};

// The buffers a forward mutates, judged after a call.
struct BufferCheck {
  bool passed = false;
  std::string problem;  // a problem of them all (their count), or ""
  std::vector<std::string> names;
  std::vector<OutputCheck> buffers;
  // The first buffer left different, as words.
  std::string FirstProblem() const;
};

// One call judged (compare.py's compare_outputs).
struct CallCheck {
  bool passed = false;
  std::string problem;  // a problem of the call as a whole (its output count), or ""
  std::vector<OutputCheck> outputs;
  std::optional<BufferCheck> buffers;  // when the forward mutates buffers
  // The first failing output, as words.
  std::string FirstProblem() const;
};

// A call after seed0's input tensors were rewritten in place (memoization).
struct ProbeCheck {
  CallCheck call;
  std::string target;  // the set whose tensors were rewritten
  bool unchanged_from_before_rewrite = false;  // bit for bit the output before the rewrite
  bool reference_changed = false;              // the right answer moved
};

// The call at the second size.
struct ResizedCheck {
  bool checked = false;  // false: the reference runs at no second size
  bool refused = false;  // the candidate raised (allowed)
  CallCheck call;        // when checked and not refused
};

// A sampled timed call (or the profiled one) against the reference on the same inputs.
struct TimedCheck {
  std::string call;  // "3", or "profiled"
  CallCheck check;
};

struct InputMutation {
  std::string call;
  Json inputs;  // the changed input slots
};

struct Comparison {
  std::optional<std::string> tampered;  // the process broke the session's protocol: nothing else is set
  std::vector<InputMutation> input_mutations;
  std::vector<std::pair<std::string, CallCheck>> sets;  // in call order: the task's seeds, then the distributions
  std::vector<std::pair<std::string, ProbeCheck>> probes;
  std::optional<CallCheck> repeat;      // absent when the run ended before it
  std::optional<ResizedCheck> resized;  // absent when the run ended before it
  std::vector<TimedCheck> timed;
  // The intervals between the candidate's hand-overs of its timed calls' outputs, as the trusted
  // worker clocked them (verdict_rules.h's JudgeUntimedWork).
  std::vector<double> handoff_gaps_ms;
};

Result<Comparison> ParseComparison(const Json& reply);

}  // namespace kforge
