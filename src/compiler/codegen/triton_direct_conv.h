// A convolution with few output channels and few input channels x taps, computed directly: each
// program takes BLOCK_M output positions and every output channel of a group, and accumulates
// one fp32 FMA per input channel and tap. Such a convolution fills tensor-core tiles mostly with
// masked lanes (LeNet's 3 -> 6 channels over 5 x 5 taps: K = 75, N = 6), and its plain fp32 sums
// are also exact where tl.dot's three-pass TF32 is not.
#pragma once

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

// Whether the convolution `conv` (aten.convolution) is small enough in output channels per group
// and in input channels x taps to run directly; for a transposed one (undilated), in input
// channels x the taps reaching one output phase.
bool PrefersDirectConvolution(const ir::Graph& graph, const ir::OpNode& conv);

// The kernel of a convolution group (the anchor and its pointwise epilogue) in direct form.
Result<EmittedKernel> EmitDirectConvolution(const ir::Graph& graph, const passes::FusionGroup& group);

}  // namespace kforge::codegen
