// The input precisions of tl.dot a compiled candidate is tried in, in order, until one is not
// wrong; each step at least as precise as the one before, for every dot. Under the fp32 policy on
// a GPU the first try is three-pass TF32 (each operand split into a TF32 head and tail, the
// tail-by-tail product dropped: 22 of fp32's 24 bits): tensor cores at an error of fp32's order,
// judged by the evaluator at the fp32 tolerance like any candidate. Attention is where that error
// shows first (scores of order 1e5 on inputs scaled by 1000, whose rounding alone moves the
// probabilities), so the second try keeps the GEMMs in three-pass TF32 and runs only the attention
// kernels' dots in IEEE fp32. The third runs every other dot in six-pass BF16 (each operand split
// into three BF16 parts, 24 bits in all, the three smallest cross products dropped: about a
// quarter of three-pass TF32's error, on tensor cores of twice TF32's rate). The fourth keeps the
// other GEMMs there and runs in IEEE the products attention reads q, k and v from, whose rounding
// moves the scores as the attention's own does (minGPT's qkv product: its output projection, 1.9
// of its 10 ms as an FMA kernel on the H200, needs no IEEE), first only those of q and k (the
// compiler's attention_products pass gives v its own product where one projection's split feeds
// all three; v's rounding reaches the output, not the scores), then v's too; the last runs every dot in IEEE
// (FMAs, several times slower). Six-pass BF16 is not offered for attention: on the H200 its
// kernel for minGPT's attention made an illegal memory access (level3/43, fourteenth session).
// On a GPU the IEEE dots of matmuls and attention are CUDA C++ FMA kernels (codegen's
// cuda_matmul.h, cuda_attention.h: Triton's IEEE dots run at about half of cuBLAS's FMA rate); a
// last step writes them as Triton kernels again, so a CUDA kernel that fails to build, run or
// match leaves the candidate where it was before they existed.
// A step that changes nothing in a candidate's source is skipped. The interpreter computes every
// dot exactly (one step); a declared tf32 policy has one step.
#pragma once

#include <string>
#include <vector>

#include "eval/precision.h"
#include "eval/verdict.h"

namespace kforge {

struct DotPrecisionStep {
  std::string gemm;       // matmuls and convolutions ("tf32x3", "bf16x6", "ieee", "tf32")
  std::string attention;  // the attention kernels' two dots
  bool cuda = true;       // IEEE dots as CUDA C++ kernels where the GPU can run them
  // The products whose outputs attention reads as q or k (empty: gemm's precision).
  std::string attention_inputs;
  // The products attention reads only v from (empty: gemm's precision).
  std::string attention_values;

  const std::string& inputs() const { return attention_inputs.empty() ? gemm : attention_inputs; }
  const std::string& values() const { return attention_values.empty() ? gemm : attention_values; }
  // "tf32x3", "ieee", "tf32x3, attention ieee", "bf16x6, attention and its q and k inputs ieee" or
  // "bf16x6, attention and its inputs ieee" for a step that differs by kind in a candidate with an
  // attention kernel; " (Triton)" after a step whose IEEE dots stay Triton's.
  std::string Label(bool with_attention = true) const;
  bool operator==(const DotPrecisionStep&) const = default;
};

std::vector<DotPrecisionStep> DotPrecisionLadder(Precision precision, bool on_cpu);

// Whether a candidate judged `verdict` with a step is worth the next step: only a dot can be
// mended by another precision, when it lost accuracy (wrong_output) or, past the first step, when
// the step's precision did not build or run (the first step's passing shows the kernels themselves
// build; a later precision's lowering may not, for some tile).
bool WorthTheNextStep(VerdictKind verdict, bool uses_dot, bool first_step);

}  // namespace kforge
