// The trusted worker's replies about the reference (reference.py), parsed once at the boundary
// into types: "prepare" (the reference's measured facts every later check reads: its bytes and
// FLOPs for the roofline, its outputs' layout, the memory plan, the shared session the candidate
// fetches) and "time_reference" (its timed calls). A key renamed or missing on the worker's side is
// an error here (the evaluation's infra_error), never a check that silently reads a default (a
// roofline floor of zero bytes, an untimed-work check without the reference's iterations).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace kforge {

struct PreparedReference {
  int64_t input_bytes = 0;
  int64_t output_bytes = 0;
  int64_t parameter_bytes = 0;
  int64_t flops = 0;  // of one call, counted by torch's FlopCounterMode (0 when it counts none)
  Json outputs;                   // per output: shape, dtype, dense (for the evidence)
  std::vector<bool> outputs_dense;  // per output: whether the reference's output is dense
  Json mutated_buffers;           // the buffers its forward mutates (names)
  Json second_size;               // the second size it accepts ({"grown_inputs", "leading_dim"})
  Json sets;                      // the input sets made for the evaluation
  bool cpu_sizes_applied = false;
  // Only when a candidate is to run: the memory plan, and either why it does not fit or the
  // session the candidate's process joins (its parameters and the shared arenas).
  Json memory;                    // the plan, or null
  int64_t candidate_limit_bytes = 0;
  std::optional<std::string> does_not_fit;
  Json state;
  Json shared;
};

// `candidate`: whether the request asked for a candidate's session (the baseline command does not).
Result<PreparedReference> ParsePreparedReference(const Json& reply, bool candidate);

// The reference timed in one mode (eager, compile), measured now or as the store kept it.
struct ReferenceTiming {
  std::vector<double> samples_ms;    // per timed call
  std::vector<double> iteration_ms;  // per whole iteration of its loop (fresh inputs, flush, the call, a copy)
  Json compile_s;                    // torch.compile's compile time, where it compiled (for the evidence)
  Json compile_cache;                // {"hits", "misses"}: its graphs found in the compile cache or compiled anew
};

// `where` names the reply in errors ("the reference's eager timing").
Result<ReferenceTiming> ParseReferenceTiming(const Json& reply, const std::string& where);

}  // namespace kforge
