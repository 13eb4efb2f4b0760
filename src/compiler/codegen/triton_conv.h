// Convolutions as implicit GEMMs: M = images x output positions, N = output channels of one
// group, K = input channels of the group x kernel taps, with their pointwise epilogue. Large ones
// read their operands from relayout buffers (channels-last input, taps-outside weight); strided
// transposed ones run one GEMM per output phase (subpixel).
#pragma once

#include <set>
#include <string>

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

Result<EmittedKernel> EmitImplicitGemmConvolution(const ir::Graph& graph, const passes::FusionGroup& group,
                                                  const KernelOptions& options);

// The relayout kernels convolutions launch before their GEMM (_kf_channels_last,
// _kf_padded_channels_last, _kf_taps_outside), those of `helpers` only.
void EmitLayoutHelpers(const std::set<std::string>& helpers, SourceWriter& out);

}  // namespace kforge::codegen
