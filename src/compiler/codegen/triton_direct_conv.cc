#include "compiler/codegen/triton_direct_conv.h"

#include <optional>

#include <fmt/format.h>

#include "compiler/codegen/convolution_node.h"
#include "compiler/codegen/epilogue.h"
#include "compiler/codegen/python_names.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::codegen {
namespace {

// The taps of a transposed convolution that reach one output phase (position modulo the stride)
// along dim d: ceil(kernel / stride).
int64_t PhaseTaps(int64_t kernel, int64_t stride) { return (kernel + stride - 1) / stride; }

}  // namespace

bool PrefersDirectConvolution(const ir::Graph& graph, const ir::OpNode& conv) {
  if (conv.op != "aten.convolution.default" || conv.args.size() != 9) return false;
  const ir::TensorType* w = graph.TypeOf(conv.args[1].As<ir::NodeRef>());
  if (w == nullptr) return false;
  const int64_t groups = conv.args[8].As<int64_t>();
  if (!conv.args[6].As<bool>()) {
    int64_t reduction = w->shape[1];
    for (size_t d = 2; d < w->shape.size(); ++d) reduction *= w->shape[d];
    return w->shape[0] / groups <= kMaxDirectOutputs && reduction <= kMaxDirectReduction;
  }
  // Transposed (weight [in, out per group, taps]): by output phase, undilated only (a dilated
  // tap's phase is not a fixed stride of taps).
  const auto& stride = conv.args[3].As<ir::IntList>();
  const auto& dilation = conv.args[5].As<ir::IntList>();
  int64_t reduction = w->shape[0] / groups;
  for (size_t d = 2; d < w->shape.size(); ++d) {
    if (dilation[d - 2] != 1) return false;
    reduction *= PhaseTaps(w->shape[d], stride[d - 2]);
  }
  return w->shape[1] <= kMaxDirectOutputs && reduction <= kMaxDirectReduction;
}

namespace {

// A direct kernel's head: its name, parameters and description, and kf_m, the output positions
// (of a phase, when transposed) of the program.
void OpenDirectKernel(SourceWriter& out, EmittedKernel& kernel, const ir::Graph& graph, const passes::FusionGroup& group,
                      const ConvolutionNode& conv, const std::string& description) {
  kernel.name = "conv_" + group.name;
  std::vector<std::string> params = ConvolutionParams(graph, conv);
  params.push_back("BLOCK_M: tl.constexpr");
  OpenKernel(out, kernel.name, params, graph, group);
  out.Line(description);
  out.Line("kf_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)");
}

// The rest of a direct kernel, inside its tap loops at kf_x_tap and kf_w_tap (the channel-0
// input and weight of the tap, kf_valid the positions it reaches): the tap's FMAs, the tap loops
// closed, the epilogue under `rows` and the channel mask, and the launch over (cdiv(m, block_m),
// grid_y). `w_channel_stride` steps the weight to the next input channel; `w_mask` adds to its mask.
Status FinishDirectKernel(SourceWriter& out, EmittedKernel& kernel, const ir::Graph& graph, const passes::FusionGroup& group,
                          const ConvolutionNode& conv, int64_t w_channel_stride, const std::string& w_mask,
                          const std::string& rows, int64_t m, int64_t block_m, int64_t grid_y) {
  EmitDirectChannels(out, conv, conv.x_type->stride[1], w_channel_stride, w_mask);
  for (size_t d = 0; d < conv.spatial; ++d) out.Close();
  out.Line(fmt::format("kf_mask = {} & (kf_n[None, :] < {})", rows, conv.co_g));
  RETURN_IF_ERROR(EmitConvolutionEpilogue(out, graph, group, conv, kernel));
  out.Close();
  kernel.source = out.text();

  std::vector<std::string> args = ConvolutionArgs(graph, conv, VarName(graph, conv.x), VarName(graph, conv.w));
  for (const ir::NodeRef& ref : conv.outputs) {
    kernel.launch.push_back(EmptyLike(VarName(graph, ref), *graph.TypeOf(ref)));
    args.push_back(VarName(graph, ref));
  }
  args.push_back(fmt::format("BLOCK_M={}, num_warps=4", block_m));
  kernel.launch.push_back(fmt::format("{}[({}, {})]({})", kernel.name, (m + block_m - 1) / block_m, grid_y, fmt::join(args, ", ")));
  return Status::Ok();
}

}  // namespace

// A transposed convolution directly, by output phase: axis 1 of the grid is (group, phase), where
// a phase is the output positions congruent to r modulo the stride; every output of a phase takes
// the same taps, t = (r + padding) % stride + j * stride, from input (o + padding - t) / stride, so
// a program loads one weight vector per tap and input channel and no tap is masked away for its
// phase (in place, stride^d - 1 of every d-dimensional tap set would be).
Result<EmittedKernel> EmitDirectTransposedConvolution(const ir::Graph& graph, const passes::FusionGroup& group) {
  ASSIGN_OR_RETURN(const ConvolutionNode conv, ReadConvolution(graph, group));
  if (!conv.transposed) return Status::InvalidArgument("a direct transposed convolution of a plain one");
  const ir::TensorType &x_type = *conv.x_type, &w_type = *conv.w_type;
  const ir::Shape& out_shape = conv.out_shape;
  const size_t spatial = conv.spatial;
  const int64_t co_g = conv.co_g, ci_g = conv.ci_g, columns = NextPowerOfTwo(co_g);
  const int64_t block_m = columns <= 8 ? 256 : 128;
  const std::vector<int64_t>& sx = x_type.stride;
  const std::vector<int64_t>& sw = w_type.stride;
  const OutputPhases phase_of = PhasesOf(conv);
  const int64_t phases = phase_of.count, m = conv.images * phase_of.positions;

  EmittedKernel kernel;
  SourceWriter out;
  OpenDirectKernel(out, kernel, graph, group, conv,
                   fmt::format("# Direct transposed convolution by output phase ({} phases, axis 1 with the {} group(s)): "
                               "BLOCK_M of {} positions of a phase x {} output channels per program; one fp32 FMA per input "
                               "channel ({}) and tap reaching the phase.", phases, conv.groups, m, co_g, ci_g));
  out.Line(fmt::format("kf_group = tl.program_id(1) // {}", phases));
  EmitPhase(out, conv, fmt::format("tl.program_id(1) % {}", phases));
  out.Line(fmt::format("kf_n = tl.arange(0, {})", columns));
  out.Line(fmt::format("kf_co = kf_group * {} + kf_n", co_g));
  out.Line("kf_rem = kf_m");
  for (size_t d = spatial; d-- > 0;) {
    out.Line(fmt::format("kf_q{} = kf_rem % {}", d, phase_of.tile_dims[d]));
    out.Line(fmt::format("kf_rem = kf_rem // {}", phase_of.tile_dims[d]));
  }
  out.Line("kf_img = kf_rem");
  EmitPhasePositions(out, conv);
  std::string inside = fmt::format("(kf_m < {})", m);
  for (size_t d = 0; d < spatial; ++d) inside += fmt::format(" & (kf_o{0} < {1})", d, out_shape[2 + d]);
  out.Line(fmt::format("kf_inside = {}", inside));
  out.Line(fmt::format("kf_acc = tl.zeros((BLOCK_M, {}), dtype=tl.float32)", columns));
  for (size_t d = 0; d < spatial; ++d) out.Open(fmt::format("for kf_j{} in tl.static_range({}):", d, phase_of.reach[d]));
  std::string valid = "kf_inside", tap_valid;
  std::vector<std::string> x_terms = {Term("kf_img", sx[0]), Term("kf_group", ci_g * sx[1])};
  std::vector<std::string> w_terms = {Term("kf_n", sw[1]), Term("kf_group", ci_g * sw[0])};
  for (size_t d = 0; d < spatial; ++d) {
    out.Line(fmt::format("kf_t{0} = kf_first{0} + kf_j{0} * {1}", d, conv.stride[d]));
    valid += EmitPhaseTap(out, conv, d);
    tap_valid += fmt::format(" & (kf_t{} < {})", d, w_type.shape[2 + d]);
    x_terms.push_back(Term(fmt::format("kf_in{}", d), sx[2 + d]));
    w_terms.push_back(Term(fmt::format("kf_t{}", d), sw[2 + d]));
  }
  out.Line(fmt::format("kf_valid = {}", valid));
  out.Line(fmt::format("kf_x_tap = kf_x_ptr + {}", Sum(x_terms)));
  out.Line(fmt::format("kf_w_tap = kf_w_ptr + {}", Sum(w_terms)));
  RETURN_IF_ERROR(FinishDirectKernel(out, kernel, graph, group, conv, sw[0], tap_valid, "kf_inside[:, None]", m, block_m,
                                     conv.groups * phases));
  return kernel;
}

void EmitDirectChannels(SourceWriter& out, const ConvolutionNode& conv, int64_t x_channel_stride, int64_t w_channel_stride,
                        const std::string& w_mask) {
  out.Open(fmt::format("for kf_ci in tl.static_range({}):", conv.ci_g));
  out.Line(fmt::format("kf_xv = tl.load(kf_x_tap + {}, mask=kf_valid, other=0.0)", Term("kf_ci", x_channel_stride)));
  out.Line(fmt::format("kf_wv = tl.load(kf_w_tap + {}, mask=(kf_n < {}){}, other=0.0)", Term("kf_ci", w_channel_stride),
                       conv.co_g, w_mask));
  out.Line("kf_acc += kf_xv[:, None] * kf_wv[None, :]");
  out.Close();
}

}  // namespace kforge::codegen
