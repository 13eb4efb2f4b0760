// A convolution with few output channels and few input channels x taps, computed directly: each
// program takes BLOCK_M output positions and every output channel of a group, and accumulates
// one fp32 FMA per input channel and tap. Such a convolution fills tensor-core tiles mostly with
// masked lanes (LeNet's 3 -> 6 channels over 5 x 5 taps: K = 75, N = 6), and its plain fp32 sums
// are also exact where tl.dot's three-pass TF32 is not.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/codegen/convolution_node.h"
#include "compiler/codegen/emitted_kernel.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

// At most this many output channels per group (the accumulator's columns) run only directly...
constexpr int64_t kMaxDirectOutputs = 16;
// ... and input channels x taps per output (the FMAs each accumulator element takes, every one an
// unrolled body) at most this many.
constexpr int64_t kMaxDirectReduction = 256;

// Whether the convolution `conv` (aten.convolution) is small enough in output channels per group
// and in input channels x taps to run only directly; for a transposed one (undilated), in input
// channels x the taps reaching one output phase. (A plain one runs as the implicit-GEMM kernel
// in its direct form, triton_conv.h.)
bool PrefersDirectConvolution(const ir::Graph& graph, const ir::OpNode& conv);

// The kernel of a transposed convolution group (the anchor and its pointwise epilogue) in direct
// form, by output phase.
Result<EmittedKernel> EmitDirectTransposedConvolution(const ir::Graph& graph, const passes::FusionGroup& group);

// The FMAs of one tap, inside its tap loops: for each input channel (unrolled), the input at
// kf_x_tap (kf_valid the positions the tap reaches) times the weight row at kf_w_tap into kf_acc
// [BLOCK_M, BLOCK_N] (kf_n < channels per group; `w_mask` adds to the weight's mask). Unrolled
// like the taps: level2/8's 8 channels x 27 taps in a runtime channel loop ran 90x slower per FMA
// than 3 channels x 27 taps.
void EmitDirectChannels(SourceWriter& out, const ConvolutionNode& conv, int64_t x_channel_stride, int64_t w_channel_stride,
                        const std::string& w_mask);

}  // namespace kforge::codegen
