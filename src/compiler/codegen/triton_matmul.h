// Emits one Triton kernel per matmul group: a tiled mm or bmm (tl.dot over BLOCK_K slices,
// programs grouped along M for L2 reuse) whose pointwise epilogue (bias, activation, scale,
// residual, clamp) runs on the accumulator before the one store, or a convolution (direct, or an
// implicit GEMM: triton_direct_conv.h, triton_conv.h). fp32 operands go through tl.dot with the
// precision KernelOptions names ("ieee" under the fp32 policy).
#pragma once

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

// InvalidArgument naming what it cannot translate (an epilogue op, an input that does not
// broadcast to the product's shape).
Result<EmittedKernel> EmitMatmulKernel(const ir::Graph& graph, const passes::FusionGroup& group,
                                       const KernelOptions& options);

}  // namespace kforge::codegen
