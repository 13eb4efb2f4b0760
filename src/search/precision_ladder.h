// The input precisions of tl.dot a compiled candidate is tried in, in order, until one is not
// wrong. Under the fp32 policy on a GPU the first try is three-pass TF32 (each operand split into
// a TF32 head and tail, the tail-by-tail product dropped): tensor cores at an error of fp32's
// order, judged by the evaluator at the fp32 tolerance like any candidate. Attention is where that
// error shows first (scores of order 1e5 on inputs scaled by 1000, whose rounding alone moves the
// probabilities), so the second try keeps the GEMMs in three-pass TF32 and runs only the attention
// kernels' dots in IEEE fp32; the last runs every dot in IEEE. The interpreter computes every dot
// exactly (one step); a declared tf32 policy has one step.
#pragma once

#include <string>
#include <vector>

#include "eval/precision.h"

namespace kforge {

struct DotPrecisionStep {
  std::string gemm;       // matmuls and convolutions ("tf32x3", "ieee", "tf32")
  std::string attention;  // the attention kernels' two dots
  // "tf32x3", "ieee", or "tf32x3, attention ieee" for a step that differs by kind.
  std::string Label() const;
  bool operator==(const DotPrecisionStep&) const = default;
};

std::vector<DotPrecisionStep> DotPrecisionLadder(Precision precision, bool on_cpu);

// Whether a candidate judged `wrong_output` with `step` is worth the next step: only a dot that
// lost accuracy can be mended by another precision (a source without tl.dot would fail again).
bool WorthTheNextStep(bool wrong_output, bool uses_dot);

}  // namespace kforge
