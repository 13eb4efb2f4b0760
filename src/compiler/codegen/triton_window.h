// Emits one Triton kernel per pooling group: each program computes BLOCK_SIZE output elements,
// each folding its input window (max, or average with PyTorch's divisor rules; adaptive windows
// by their floor/ceil bounds; a depthwise convolution as a weighted sum), then the pointwise
// epilogue of the group on the pooled values.
#pragma once

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

// InvalidArgument naming what it cannot translate (ceil_mode, a divisor override, indices that
// are read, an epilogue op).
Result<EmittedKernel> EmitWindowKernel(const ir::Graph& graph, const passes::FusionGroup& group, int block_size);

}  // namespace kforge::codegen
