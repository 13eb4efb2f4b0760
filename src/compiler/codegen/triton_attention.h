// Emits one Triton kernel per attention group (a kforge.attention node and the producers of its
// bias): flash attention over a grid of (query blocks, batch x heads). Each program holds a block
// of queries and walks the key blocks with an online softmax (a running row max and sum, the
// accumulator rescaled when the max grows), so the Tq x Tk scores never reach memory. q, k, v and
// the output are addressed through their strides; a head dim is taken in power-of-two parts
// (96 = 64 + 32: one dot per part, no padded columns), the last masked when the dim is not a
// multiple of 16; tails of any length are masked. The bias is computed per tile (tile_expression.h); a
// causal band bounds the key loop and masks the diagonal blocks; a bias that is a mask skips the
// key blocks it leaves empty. tl.dot runs with KernelOptions::dot_precision, and the block sizes
// come from the attention space of gemm_tiles.h (autotuned, baked in, or fixed).
#pragma once

#include <string>

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

// InvalidArgument naming what it cannot translate (a bias producer it cannot compute per tile).
Result<EmittedKernel> EmitAttentionKernel(const ir::Graph& graph, const passes::FusionGroup& group,
                                          const KernelOptions& options);

// Whether a generated source holds an attention kernel (whose dots take
// KernelOptions::attention_dot_precision).
bool HasAttentionKernel(const std::string& source);

}  // namespace kforge::codegen
