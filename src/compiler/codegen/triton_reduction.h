// Emits one Triton kernel per reduction group: one program per element of the reduced (kept)
// shape folds its R elements. The group's pointwise ops run in the same kernel, before the
// reductions (prologue), between them (softmax's exp of x - max) and after them (a norm's scale).
// Rows of at most kMaxSingleBlock elements are held whole in registers and read once; longer rows
// are folded block by block, one pass per level of reductions that depend on each other (softmax's
// sum of exp(x - max) is folded online in its max's pass: two reads of a row, not three); a few
// very long rows are split over many programs (ReductionSpace::split). var_mean folds Welford
// summaries and merges them with Chan's formula.
#pragma once

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

inline constexpr int64_t kMaxSingleBlock = 16384;

// Where options.autotune is set, a row folded in one program (no column tiles) and a split row's
// partial kernel are autotuned over their R_BLOCK, warps and stages (a configuration
// options.tuned holds is baked in); rows held in registers, column tiles, and everything on the
// CPU interpreter launch with sizes fixed by rule.
// InvalidArgument naming what it cannot translate (an op, a dtype, an input shape that is in
// neither the full nor the reduced space, an argmax over rows longer than kMaxSingleBlock).
Result<EmittedKernel> EmitReductionKernel(const ir::Graph& graph, const passes::FusionGroup& group,
                                          const KernelOptions& options);

}  // namespace kforge::codegen
