// A convolution node (aten.convolution) read once for the emitters that translate it: its
// operands and arguments, and the kernel parameters and launch arguments every form shares.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

struct ConvolutionNode {
  ir::NodeRef result;  // the convolution's own value
  ir::NodeRef x, w;
  std::optional<ir::NodeRef> bias;
  const ir::TensorType* x_type = nullptr;
  const ir::TensorType* w_type = nullptr;  // transposed: [input channels, output channels, taps...]
  ir::Shape out_shape;
  size_t spatial = 0;
  ir::IntList stride, padding, dilation;
  int64_t groups = 1;
  bool transposed = false;
  int64_t images = 0, co_g = 0, ci_g = 0;  // channels per group
  int64_t positions = 1, taps = 1;         // output positions per image; kernel taps
  // The group's inputs its pointwise epilogue reads (beyond x, w and bias) and its outputs.
  std::vector<ir::NodeRef> inputs, outputs;
};

// The convolution anchoring `group` (InvalidArgument naming an epilogue input that does not
// broadcast to the output).
Result<ConvolutionNode> ReadConvolution(const ir::Graph& graph, const passes::FusionGroup& group);

// The kernel's pointer parameters: kf_x_ptr, kf_w_ptr, [kf_bias_ptr], then each epilogue input's
// and output's.
std::vector<std::string> ConvolutionParams(const ir::Graph& graph, const ConvolutionNode& conv);

// The launch arguments matching everything but the outputs: `x_arg` and `w_arg` (the operands or
// buffers holding them rewritten), the bias, the epilogue inputs.
std::vector<std::string> ConvolutionArgs(const ir::Graph& graph, const ConvolutionNode& conv, const std::string& x_arg,
                                         const std::string& w_arg);

// The output phases of an undilated transposed convolution: positions congruent to r modulo the
// stride along each dim. Output o of phase r takes taps t = (r + padding) % stride + j * stride
// (j < reach), from input (o + padding - t) / stride, so every output of a phase takes the same taps.
struct OutputPhases {
  int64_t count = 1;               // stride^d phases
  std::vector<int64_t> tile_dims;  // a phase's positions along each dim (rounded up)
  std::vector<int64_t> reach;      // taps reaching a phase along each dim: ceil(kernel / stride)
  int64_t positions = 1;           // a phase's positions per image (the product of tile_dims)
  int64_t taps = 1;                // taps reaching a phase (the product of reach)
};
OutputPhases PhasesOf(const ConvolutionNode& conv);

// The phase's kf_r* from `phase` (an expression of the phase index, its dims row-major); then,
// after the caller has set kf_q* (the position within the phase), EmitPhasePositions: kf_o*, the
// output position, and kf_first*, the phase's first tap.
void EmitPhase(SourceWriter& out, const ConvolutionNode& conv, const std::string& phase);
void EmitPhasePositions(SourceWriter& out, const ConvolutionNode& conv);

// For the tap kf_t<d> of the phase along dim d: kf_span<d> and kf_in<d>, the input it reads; returns
// the validity terms (" & ..."): the input inside and the tap inside the kernel.
std::string EmitPhaseTap(SourceWriter& out, const ConvolutionNode& conv, size_t d);

// The bias, the pointwise epilogue and the stores, on the accumulator kf_acc (output positions
// kf_img, kf_o* by output channels kf_co, kf_n < channels per group) under the tile mask kf_mask.
Status EmitConvolutionEpilogue(SourceWriter& out, const ir::Graph& graph, const passes::FusionGroup& group,
                               const ConvolutionNode& conv, EmittedKernel& kernel);

}  // namespace kforge::codegen
