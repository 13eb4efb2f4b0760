#include "compiler/codegen/triton_matmul.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compiler/codegen/convolution_node.h"
#include "compiler/codegen/epilogue.h"
#include "compiler/codegen/python_names.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/codegen/triton_direct_conv.h"
#include "compiler/codegen/triton_pointwise.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/fusion_rules.h"
#include "core/hash.h"

namespace kforge::codegen {
namespace {

using TileConfig = TileChoice;

// The configuration space @triton.autotune measures on the GPU (fp32 tiles: register-bound).
const std::vector<TileConfig> kTileConfigs = {
    {128, 128, 32, 8, 8, 3}, {128, 64, 32, 8, 4, 4}, {64, 128, 32, 8, 4, 4}, {64, 64, 32, 8, 4, 4}, {32, 32, 32, 8, 4, 2}};
// The space of convolutions with at most 32 output channels per group, where a wider tile would
// compute masked columns (the H200 chose 64 x 32 x 16 for 32-channel convolutions).
const std::vector<TileConfig> kNarrowTileConfigs = {
    {64, 32, 16, 8, 4, 4}, {128, 32, 32, 8, 4, 4}, {64, 32, 32, 8, 4, 4}, {32, 32, 32, 8, 4, 2}};
constexpr int64_t kMaxNarrowN = 32;
// How a convolution's K dimension (input channels x kernel taps) is walked.
enum class ConvLoop {
  kUnrolledTaps,  // taps unrolled (static_range), a channel loop inside each: index math folds per tap
  kFlatTaps,      // one loop over (tap, channel block): long enough for Triton to pipeline its loads
  kFlatK,         // one loop over channels*taps, the tap of each element divided out
};
// From this many input channels per group a convolution loops over taps; below it, channels and
// taps form one K dimension (a tap loop would mask most of BLOCK_K).
constexpr int64_t kMinChannelsForTapLoop = 16;
// Taps are unrolled while each holds at most this many channels and there are at most this many
// taps; beyond, the flat tap loop. Measured on the H200 (fp32, tf32x3): unrolled 2.5x faster for
// 32 channels x 9 taps, the flat loop 1.3x faster for 64 x 9; 16 channels x 27 taps fare best flat in K.
constexpr int64_t kMaxChannelsForUnrolledTaps = 32;
constexpr int64_t kMaxUnrolledTaps = 9;

ConvLoop ChooseConvLoop(int64_t ci_g, int64_t taps, bool transposed) {
  if (transposed) return ConvLoop::kFlatTaps;  // its input index needs a divisibility test per tap
  if (ci_g < kMinChannelsForTapLoop) return ConvLoop::kFlatK;
  if (ci_g <= kMaxChannelsForUnrolledTaps) return taps <= kMaxUnrolledTaps ? ConvLoop::kUnrolledTaps : ConvLoop::kFlatK;
  return ConvLoop::kFlatTaps;
}
// Where a convolution's operands are read from.
enum class ConvLayout {
  kAsGiven,       // the input and weight in place (NCHW: a tap's channel slice is strided)
  kChannelsLast,  // the input rewritten channels-last and the weight [out, taps, in] first, so that
                  // every [positions, channels] and [channels, outputs] tile is contiguous along K
  kSubpixel,      // a strided transposed convolution: the input channels-last, one GEMM per output
                  // phase over only the taps that reach it (the in-place form masks stride^d - 1 of
                  // every d-dimensional tap set away)
};

ConvLayout ChooseConvLayout(const ir::TensorType& x, const ir::TensorType& w, int64_t ci_g, int64_t taps, bool transposed,
                            const ir::IntList& stride, const ir::IntList& dilation, double flops, const KernelOptions& options) {
  // The relayout kernels read the input's positions densely and the weight contiguously.
  const size_t spatial = x.shape.size() - 2;
  int64_t dense = 1;
  for (size_t d = spatial; d-- > 0;) {
    if (x.shape[2 + d] != 1 && x.stride[2 + d] != dense) return ConvLayout::kAsGiven;
    dense *= x.shape[2 + d];
  }
  if (ci_g < kMinChannelsForTapLoop || flops < options.relayout_min_flops) return ConvLayout::kAsGiven;
  // Unrolled taps in place were as fast (32 channels x 9 taps, 9.4 GFLOP, on the H200) and launch
  // no relayout kernels.
  if (!transposed && ChooseConvLoop(ci_g, taps, false) == ConvLoop::kUnrolledTaps) return ConvLayout::kAsGiven;
  if (transposed) {
    const bool strided = std::any_of(stride.begin(), stride.end(), [](int64_t s) { return s > 1; });
    const bool dilated = std::any_of(dilation.begin(), dilation.end(), [](int64_t d) { return d != 1; });
    return strided && !dilated ? ConvLayout::kSubpixel : ConvLayout::kAsGiven;
  }
  return w.stride == ir::ContiguousStrides(w.shape) ? ConvLayout::kChannelsLast : ConvLayout::kAsGiven;
}

// Strides of `shape` ([images, channels, spatial...]) stored channels-last: [images, spatial..., channels].
std::vector<int64_t> ChannelsLastStrides(const ir::Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t inner = shape[1];
  strides[1] = 1;
  for (size_t d = shape.size(); d-- > 2;) {
    strides[d] = inner;
    inner *= shape[d];
  }
  strides[0] = inner;
  return strides;
}

// The one configuration used without autotuning.
constexpr TileConfig kFixedConfig = {32, 32, 32, 8, 4, 2};

// Writes "@triton.jit", the signature with the tile meta-parameters, and the comment.
void OpenGemmKernel(SourceWriter& out, const std::string& name, const std::vector<std::string>& params,
                    const ir::Graph& graph, const passes::FusionGroup& group) {
  std::vector<std::string> all = params;
  for (const char* meta : {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"}) all.push_back(fmt::format("{}: tl.constexpr", meta));
  OpenKernel(out, name, all, graph, group);
}

// Sets the kernel's source from its `body` and returns the configuration its launch uses:
// without autotuning the fixed one; under autotuning the one options.tuned holds for the kernel's
// tuning key (stated in a comment), else nullopt and a @triton.autotune decorator over `space`.
std::optional<TileConfig> FinishGemmKernel(EmittedKernel& kernel, const std::string& body, const std::vector<TileConfig>& space,
                                           const KernelOptions& options) {
  if (!options.autotune) {
    kernel.source = body;
    return kFixedConfig;
  }
  SourceWriter decorator;
  decorator.Open("@triton.autotune(");
  decorator.Open("configs=[");
  for (const TileConfig& c : space) {
    decorator.Line(fmt::format("triton.Config({{\"BLOCK_M\": {}, \"BLOCK_N\": {}, \"BLOCK_K\": {}, \"GROUP_M\": {}}}, "
                               "num_warps={}, num_stages={}),", c.block_m, c.block_n, c.block_k, c.group_m, c.warps, c.stages));
  }
  decorator.Close();
  decorator.Line("],");
  decorator.Line("key=[],");
  // The kernel is specialized to its shapes, so Triton's on-disk cache of the measured
  // configurations also spares a second run in the same workspace its tuning.
  decorator.Line("cache_results=True,");
  decorator.Close();
  decorator.Line(")");
  const std::string key = Sha256Hex(decorator.text() + body);
  if (auto tuned = options.tuned.find(key); tuned != options.tuned.end()) {
    kernel.source = fmt::format("# {}: tile configuration measured on this GPU (tuning key {}).\n", kernel.name, key) + body;
    return tuned->second;
  }
  kernel.source = fmt::format("# Tuning key of {}: {} (the configuration measured best is stored under it).\n", kernel.name, key) +
                  decorator.text() + body;
  return std::nullopt;
}

// The program's tile: rows kf_m and columns kf_n, programs grouped along M so that consecutive
// ones share B's column tiles.
void EmitTilePosition(SourceWriter& out, int64_t m, int64_t n) {
  out.Line("kf_pid = tl.program_id(0)");
  out.Line(fmt::format("kf_grid_m = tl.cdiv({}, BLOCK_M)", m));
  out.Line(fmt::format("kf_grid_n = tl.cdiv({}, BLOCK_N)", n));
  out.Line("# Consecutive programs share B's column tiles and walk GROUP_M row tiles (L2 reuse).");
  out.Line("kf_width = GROUP_M * kf_grid_n");
  out.Line("kf_first_m = (kf_pid // kf_width) * GROUP_M");
  out.Line("kf_size_m = tl.minimum(kf_grid_m - kf_first_m, GROUP_M)");
  out.Line("kf_pid_m = kf_first_m + (kf_pid % kf_width) % kf_size_m");
  out.Line("kf_pid_n = (kf_pid % kf_width) // kf_size_m");
  out.Line("kf_m = kf_pid_m * BLOCK_M + tl.arange(0, BLOCK_M)");
  out.Line("kf_n = kf_pid_n * BLOCK_N + tl.arange(0, BLOCK_N)");
}

// Output allocations and the launch over (tiles of M x N, `extra` programs along axis 1), with
// `config`, or the autotuner's choice when there is none.
void EmitGemmLaunch(EmittedKernel& kernel, const ir::Graph& graph, std::vector<std::string> args,
                    const std::vector<ir::NodeRef>& outputs, const std::optional<TileConfig>& config, int64_t m, int64_t n,
                    int64_t extra) {
  for (const ir::NodeRef& ref : outputs) {
    kernel.launch.push_back(EmptyLike(VarName(graph, ref), *graph.TypeOf(ref)));
    args.push_back(VarName(graph, ref));
  }
  if (!config) {
    kernel.launch.push_back(fmt::format("{}[lambda meta: (triton.cdiv({}, meta[\"BLOCK_M\"]) * triton.cdiv({}, meta[\"BLOCK_N\"]), {})]({})",
                                        kernel.name, m, n, extra, fmt::join(args, ", ")));
    return;
  }
  const TileConfig& c = *config;
  args.push_back(fmt::format("BLOCK_M={}, BLOCK_N={}, BLOCK_K={}, GROUP_M={}, num_warps={}, num_stages={}", c.block_m,
                             c.block_n, c.block_k, c.group_m, c.warps, c.stages));
  int64_t programs = ((m + c.block_m - 1) / c.block_m) * ((n + c.block_n - 1) / c.block_n);
  kernel.launch.push_back(fmt::format("{}[({}, {})]({})", kernel.name, programs, extra, fmt::join(args, ", ")));
}

// Forward lines that rewrite the input channels-last (and, for kChannelsLast, the weight
// [out, taps, in]) into buffers named after the kernel; the buffers the kernel then reads.
std::pair<std::string, std::string> EmitRelayout(EmittedKernel& kernel, const ir::Graph& graph, ir::NodeRef x, ir::NodeRef w,
                                                 ConvLayout layout) {
  const ir::TensorType &x_type = *graph.TypeOf(x), &w_type = *graph.TypeOf(w);
  const int64_t images = x_type.shape[0], channels = x_type.shape[1];
  int64_t positions = 1;
  for (size_t d = 2; d < x_type.shape.size(); ++d) positions *= x_type.shape[d];
  const std::string x_cl = kernel.name + "_x", x_name = VarName(graph, x);
  kernel.helpers.insert("_kf_channels_last");
  kernel.launch.push_back(fmt::format("{} = torch.empty(({}, {}, {}), dtype={}, device=device)", x_cl, images, positions,
                                      channels, TorchDType(x_type.dtype)));
  kernel.launch.push_back(fmt::format("_kf_channels_last[(triton.cdiv({0}, 64), triton.cdiv({1}, 32), {2})]({3}, {4}, {5}, {6}, {1}, {0}, "
                                      "BLOCK_P=64, BLOCK_C=32)", positions, channels, images, x_name, x_cl, x_type.stride[0],
                                      x_type.stride[1]));
  if (layout != ConvLayout::kChannelsLast) return {x_cl, VarName(graph, w)};
  const int64_t co = w_type.shape[0], ci_g = w_type.shape[1], total = w_type.numel();
  const std::string w_taps = kernel.name + "_w";
  kernel.helpers.insert("_kf_taps_outside");
  kernel.launch.push_back(fmt::format("{} = torch.empty(({},), dtype={}, device=device)", w_taps, total,
                                      TorchDType(w_type.dtype)));
  kernel.launch.push_back(fmt::format("_kf_taps_outside[(triton.cdiv({}, 1024),)]({}, {}, {}, {}, {}, BLOCK=1024)", total,
                                      VarName(graph, w), w_taps, co, ci_g, total / (co * ci_g)));
  return {x_cl, w_taps};
}

Result<EmittedKernel> EmitMm(const ir::Graph& graph, const passes::FusionGroup& group, const KernelOptions& options) {
  const auto& anchor = graph.value(group.nodes.front()).As<ir::OpNode>();
  const bool batched = anchor.op == "aten.bmm.default";
  const ir::NodeRef a = anchor.args[0].As<ir::NodeRef>(), b = anchor.args[1].As<ir::NodeRef>();
  const ir::TensorType &a_type = *graph.TypeOf(a), &b_type = *graph.TypeOf(b);
  const ir::Shape& out_shape = anchor.type().shape;
  const size_t rank = out_shape.size();
  const int64_t m = out_shape[rank - 2], n = out_shape[rank - 1], k = a_type.shape[rank - 1];
  const int64_t batch = batched ? out_shape[0] : 1;
  const std::vector<int64_t>& sa = a_type.stride;
  const std::vector<int64_t>& sb = b_type.stride;

  EmittedKernel kernel;
  kernel.name = "matmul_" + group.name;
  ASSIGN_OR_RETURN(std::vector<ir::NodeRef> inputs, EpilogueInputs(graph, group, {a, b}, out_shape));
  std::vector<ir::NodeRef> outputs = passes::GroupOutputs(graph, group);
  std::vector<std::string> params = {"kf_a_ptr", "kf_b_ptr"};
  for (const ir::NodeRef& ref : inputs) params.push_back(VarName(graph, ref) + "_ptr");
  for (const ir::NodeRef& ref : outputs) params.push_back(VarName(graph, ref) + "_ptr");

  SourceWriter out;
  OpenGemmKernel(out, kernel.name, params, graph, group);
  out.Line(fmt::format("# {}{} x {} x {} (M x N x K); tl.dot with input_precision=\"{}\".",
                       batched ? fmt::format("{} batches of ", batch) : "", m, n, k, options.dot_precision));
  EmitTilePosition(out, m, n);
  out.Line(batched ? "kf_batch = tl.program_id(1).to(tl.int64)" : "kf_batch = 0");
  out.Line("kf_kk = tl.arange(0, BLOCK_K)");
  const size_t r = rank - 2;  // the first matrix dim
  // An operand whose rows are contiguous along K (a transposed view: B = W.T of a linear layer)
  // is loaded K-fastest and transposed in registers, so each load is coalesced.
  const bool a_k_major = sa[r] == 1 && sa[r + 1] != 1, b_k_major = sb[r] == 1 && sb[r + 1] != 1;
  out.Line(fmt::format("kf_a = kf_a_ptr + {}", Sum({batched ? Term("kf_batch", sa[0]) : "",
                                                    Term(a_k_major ? "kf_m[None, :]" : "kf_m[:, None]", sa[r]),
                                                    Term(a_k_major ? "kf_kk[:, None]" : "kf_kk[None, :]", sa[r + 1])})));
  out.Line(fmt::format("kf_b = kf_b_ptr + {}", Sum({batched ? Term("kf_batch", sb[0]) : "",
                                                    Term(b_k_major ? "kf_kk[None, :]" : "kf_kk[:, None]", sb[r]),
                                                    Term(b_k_major ? "kf_n[:, None]" : "kf_n[None, :]", sb[r + 1])})));
  out.Line("kf_acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)");
  out.Open(fmt::format("for kf_k0 in range(0, {}, BLOCK_K):", k));
  if (a_k_major) {
    out.Line(fmt::format("kf_a_tile = tl.trans(tl.load(kf_a, mask=(kf_m[None, :] < {}) & (kf_kk[:, None] < {} - kf_k0), other=0.0))", m, k));
  } else {
    out.Line(fmt::format("kf_a_tile = tl.load(kf_a, mask=(kf_m[:, None] < {}) & (kf_kk[None, :] < {} - kf_k0), other=0.0)", m, k));
  }
  if (b_k_major) {
    out.Line(fmt::format("kf_b_tile = tl.trans(tl.load(kf_b, mask=(kf_kk[None, :] < {} - kf_k0) & (kf_n[:, None] < {}), other=0.0))", k, n));
  } else {
    out.Line(fmt::format("kf_b_tile = tl.load(kf_b, mask=(kf_kk[:, None] < {} - kf_k0) & (kf_n[None, :] < {}), other=0.0)", k, n));
  }
  out.Line(fmt::format("kf_acc = tl.dot(kf_a_tile, kf_b_tile, kf_acc, input_precision=\"{}\")", options.dot_precision));
  out.Line(fmt::format("kf_a += BLOCK_K * {}", sa[r + 1]));
  out.Line(fmt::format("kf_b += BLOCK_K * {}", sb[r]));
  out.Close();
  out.Line(fmt::format("kf_mask = (kf_m[:, None] < {}) & (kf_n[None, :] < {})", m, n));
  out.Line(fmt::format("{} = kf_acc", VarName(graph, anchor.ref())));
  std::vector<std::string> index = {"kf_m[:, None]", "kf_n[None, :]"};
  if (batched) index.insert(index.begin(), "kf_batch");
  RETURN_IF_ERROR(EmitEpilogue(out, graph, group, inputs, outputs, out_shape, index, kernel));
  out.Close();
  const std::optional<TileConfig> config = FinishGemmKernel(kernel, out.text(), kTileConfigs, options);

  std::vector<std::string> args = {VarName(graph, a), VarName(graph, b)};
  for (const ir::NodeRef& ref : inputs) args.push_back(VarName(graph, ref));
  EmitGemmLaunch(kernel, graph, args, outputs, config, m, n, batch);
  return kernel;
}

// Convolution as an implicit GEMM: M = images x output positions, N = output channels of one
// group, K = input channels of the group x kernel taps; the input tile is gathered per K slice.
// A strided transposed convolution in the subpixel layout runs one GEMM per output phase (axis 1
// of the grid): M = images x the phase's positions, K = input channels x the taps reaching it.
Result<EmittedKernel> EmitConvolution(const ir::Graph& graph, const passes::FusionGroup& group, const KernelOptions& options) {
  ASSIGN_OR_RETURN(const ConvolutionNode conv, ReadConvolution(graph, group));
  const ir::TensorType &x_type = *conv.x_type, &w_type = *conv.w_type;
  const ir::Shape& out_shape = conv.out_shape;
  const size_t spatial = conv.spatial;
  const ir::IntList &stride = conv.stride, &padding = conv.padding, &dilation = conv.dilation;
  const int64_t groups = conv.groups, images = conv.images, co_g = conv.co_g, ci_g = conv.ci_g, taps = conv.taps;
  // Fusion admits a transposed convolution with one group only.
  const bool transposed = conv.transposed;
  int64_t phases = 1;
  for (size_t d = 0; d < spatial && transposed; ++d) phases *= stride[d];
  const double flops = 2.0 * static_cast<double>(images * conv.positions) * static_cast<double>(co_g * ci_g * taps) *
                       static_cast<double>(groups) / static_cast<double>(phases);
  const ConvLayout layout = ChooseConvLayout(x_type, w_type, ci_g, taps, transposed, stride, dilation, flops, options);
  // The output positions one program tile walks: all of them, or one phase's (rounded up).
  std::vector<int64_t> tile_dims(out_shape.begin() + 2, out_shape.end());
  if (layout == ConvLayout::kSubpixel) {
    for (size_t d = 0; d < spatial; ++d) tile_dims[d] = (out_shape[2 + d] + stride[d] - 1) / stride[d];
  }
  int64_t tile_positions = 1;
  for (int64_t size : tile_dims) tile_positions *= size;
  const int64_t m = images * tile_positions, n = co_g, k = ci_g * taps;
  // The strides the kernel reads its operands with: in place, or those of the relayout buffers.
  const std::vector<int64_t> sx = layout == ConvLayout::kAsGiven ? x_type.stride : ChannelsLastStrides(x_type.shape);
  const std::vector<int64_t> sw = layout == ConvLayout::kChannelsLast ? ChannelsLastStrides(w_type.shape) : w_type.stride;
  const int64_t sw_co = transposed ? sw[1] : sw[0], sw_ci = transposed ? sw[0] : sw[1];

  EmittedKernel kernel;
  kernel.name = "conv_" + group.name;
  SourceWriter out;
  OpenGemmKernel(out, kernel.name, ConvolutionParams(graph, conv), graph, group);
  out.Line(fmt::format("# Implicit GEMM{}: {} x {} x {} (images*positions x channels per group x inputs*taps), {} group(s); "
                       "tl.dot with input_precision=\"{}\".", transposed ? " of a transposed convolution" : "", m, n, k,
                       groups, options.dot_precision));
  if (layout == ConvLayout::kChannelsLast) {
    out.Line("# The input is read channels-last and the weight [out, taps, in]: each K slice is contiguous.");
  } else if (layout == ConvLayout::kSubpixel) {
    out.Line(fmt::format("# Subpixel form: axis 1 is the output phase (position modulo the stride, {} of them); the input "
                         "is read channels-last.", phases));
  }
  EmitTilePosition(out, m, n);
  const std::string position = layout == ConvLayout::kSubpixel ? "kf_q" : "kf_o";
  if (layout == ConvLayout::kSubpixel) {
    out.Line("kf_group = 0");
    out.Line("kf_prem = tl.program_id(1)");
    for (size_t d = spatial; d-- > 0;) {
      out.Line(fmt::format("kf_r{} = kf_prem % {}", d, stride[d]));
      if (d > 0) out.Line(fmt::format("kf_prem = kf_prem // {}", stride[d]));
    }
  } else {
    out.Line("kf_group = tl.program_id(1)");
  }
  out.Line(fmt::format("kf_co = kf_group * {} + kf_n", co_g));
  // Output position of each row of the tile.
  out.Line("kf_rem = kf_m");
  for (size_t d = spatial; d-- > 0;) {
    out.Line(fmt::format("{}{} = kf_rem % {}", position, d, tile_dims[d]));
    out.Line(fmt::format("kf_rem = kf_rem // {}", tile_dims[d]));
  }
  out.Line("kf_img = kf_rem");
  if (layout == ConvLayout::kSubpixel) {
    for (size_t d = 0; d < spatial; ++d) out.Line(fmt::format("kf_o{0} = kf_q{0} * {1} + kf_r{0}", d, stride[d]));
  }
  out.Line("kf_acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)");
  // One BLOCK_K slice (kf_ci) of the tap's input channels into the accumulator; `tap_valid` masks
  // the weight too (a subpixel phase's last tap may lie past the kernel).
  auto channel_block = [&](const std::string& tap_valid) {
    out.Line(fmt::format("kf_a_tile = tl.load(kf_x_row[:, None] + {}, mask=kf_valid[:, None] & (kf_ci[None, :] < {}), other=0.0)",
                         Term("kf_ci[None, :]", sx[1]), ci_g));
    out.Line(fmt::format("kf_b_tile = tl.load(kf_w_tap + {}, mask=(kf_ci[:, None] < {}) & (kf_n[None, :] < {}){}, other=0.0)",
                         Term("kf_ci[:, None]", sw_ci), ci_g, n, tap_valid));
    out.Line(fmt::format("kf_acc = tl.dot(kf_a_tile, kf_b_tile, kf_acc, input_precision=\"{}\")", options.dot_precision));
  };
  // The input row of the tap kf_t* for every output position of the tile (kf_in*, kf_valid), and the weight column.
  auto tap_rows = [&](const std::string& valid) {
    std::vector<std::string> x_terms = {Term("kf_img", sx[0])};
    for (size_t d = 0; d < spatial; ++d) x_terms.push_back(Term(fmt::format("kf_in{}", d), sx[2 + d]));
    out.Line(fmt::format("kf_valid = {}", valid));
    out.Line(fmt::format("kf_x_row = kf_x_ptr + {} + kf_group * {}", Sum(x_terms), ci_g * sx[1]));
    std::vector<std::string> w_terms = {Term("kf_co[None, :]", sw_co)};
    for (size_t d = 0; d < spatial; ++d) w_terms.push_back(Term(fmt::format("kf_t{}", d), sw[2 + d]));
    out.Line(fmt::format("kf_w_tap = kf_w_ptr + {}", Sum(w_terms)));
  };
  const ConvLoop loop = layout == ConvLayout::kAsGiven ? ChooseConvLoop(ci_g, taps, transposed) : ConvLoop::kFlatTaps;
  if (layout == ConvLayout::kSubpixel) {
    // Output o of phase r takes taps t = (r + padding) % stride + j * stride, from input (o + padding - t) / stride.
    int64_t phase_taps = 1;
    std::vector<int64_t> reach(spatial);
    for (size_t d = 0; d < spatial; ++d) {
      reach[d] = (w_type.shape[2 + d] + stride[d] - 1) / stride[d];
      phase_taps *= reach[d];
      out.Line(fmt::format("kf_first{0} = (kf_r{0} + {1}) % {2}", d, padding[d], stride[d]));
    }
    out.Line(fmt::format("kf_ci_blocks = ({} + BLOCK_K - 1) // BLOCK_K", ci_g));
    out.Open(fmt::format("for kf_kk in range(0, {} * kf_ci_blocks):", phase_taps));
    out.Line("kf_jrem = kf_kk // kf_ci_blocks");
    out.Line("kf_ci = (kf_kk % kf_ci_blocks) * BLOCK_K + tl.arange(0, BLOCK_K)");
    std::string valid = fmt::format("(kf_m < {})", m), tap_valid;
    for (size_t d = spatial; d-- > 0;) {
      out.Line(fmt::format("kf_t{0} = kf_first{0} + (kf_jrem % {1}) * {2}", d, reach[d], stride[d]));
      if (d > 0) out.Line(fmt::format("kf_jrem = kf_jrem // {}", reach[d]));
    }
    for (size_t d = 0; d < spatial; ++d) {
      out.Line(fmt::format("kf_span{0} = kf_o{0} + {1} - kf_t{0}", d, padding[d]));
      out.Line(fmt::format("kf_in{0} = kf_span{0} // {1}", d, stride[d]));
      valid += fmt::format(" & (kf_o{0} < {1}) & (kf_span{0} >= 0) & (kf_in{0} < {2}) & (kf_t{0} < {3})", d, out_shape[2 + d],
                           x_type.shape[2 + d], w_type.shape[2 + d]);
      tap_valid += fmt::format(" & (kf_t{} < {})", d, w_type.shape[2 + d]);
    }
    tap_rows(valid);
    channel_block(tap_valid);
    out.Close();
  } else if (loop != ConvLoop::kFlatK) {
    // The input row and weight column of a kernel tap kf_t*, for every output position of the tile.
    auto tap_operands = [&] {
      std::string valid = fmt::format("(kf_m < {})", m);
      for (size_t d = 0; d < spatial; ++d) {
        if (!transposed) {
          out.Line(fmt::format("kf_in{0} = kf_o{0} * {1} - {2} + kf_t{0} * {3}", d, stride[d], padding[d], dilation[d]));
          valid += fmt::format(" & (kf_in{0} >= 0) & (kf_in{0} < {1})", d, x_type.shape[2 + d]);
        } else if (stride[d] == 1) {
          out.Line(fmt::format("kf_in{0} = kf_o{0} + {1} - kf_t{0} * {2}", d, padding[d], dilation[d]));
          valid += fmt::format(" & (kf_in{0} >= 0) & (kf_in{0} < {1})", d, x_type.shape[2 + d]);
        } else {
          // Output o gathers input i through tap t where i * stride = o + padding - t * dilation.
          out.Line(fmt::format("kf_span{0} = kf_o{0} + {1} - kf_t{0} * {2}", d, padding[d], dilation[d]));
          out.Line(fmt::format("kf_in{0} = kf_span{0} // {1}", d, stride[d]));
          valid += fmt::format(" & (kf_span{0} >= 0) & (kf_span{0} % {1} == 0) & (kf_in{0} < {2})", d, stride[d],
                               x_type.shape[2 + d]);
        }
      }
      tap_rows(valid);
    };
    if (loop == ConvLoop::kUnrolledTaps) {
      for (size_t d = 0; d < spatial; ++d) out.Open(fmt::format("for kf_t{} in tl.static_range({}):", d, w_type.shape[2 + d]));
      tap_operands();
      out.Open(fmt::format("for kf_c0 in range(0, {}, BLOCK_K):", ci_g));
      out.Line("kf_ci = kf_c0 + tl.arange(0, BLOCK_K)");
      channel_block("");
      out.Close();
      for (size_t d = 0; d < spatial; ++d) out.Close();
    } else {
      out.Line(fmt::format("kf_ci_blocks = ({} + BLOCK_K - 1) // BLOCK_K", ci_g));
      out.Open(fmt::format("for kf_kk in range(0, {} * kf_ci_blocks):", taps));
      out.Line("kf_trem = kf_kk // kf_ci_blocks");
      out.Line("kf_ci = (kf_kk % kf_ci_blocks) * BLOCK_K + tl.arange(0, BLOCK_K)");
      for (size_t d = spatial; d-- > 0;) {
        out.Line(fmt::format("kf_t{} = kf_trem % {}", d, w_type.shape[2 + d]));
        if (d > 0) out.Line(fmt::format("kf_trem = kf_trem // {}", w_type.shape[2 + d]));
      }
      tap_operands();
      channel_block("");
      out.Close();
    }
  } else {
    out.Open(fmt::format("for kf_k0 in range(0, {}, BLOCK_K):", k));
    out.Line("kf_k = kf_k0 + tl.arange(0, BLOCK_K)");
    out.Line("kf_krem = kf_k");
    for (size_t d = spatial; d-- > 0;) {
      out.Line(fmt::format("kf_t{} = kf_krem % {}", d, w_type.shape[2 + d]));
      out.Line(fmt::format("kf_krem = kf_krem // {}", w_type.shape[2 + d]));
    }
    out.Line("kf_ci = kf_krem");
    std::vector<std::string> x_terms = {Term("kf_img[:, None]", sx[0]),
                                        Term(fmt::format("(kf_group * {} + kf_ci[None, :])", ci_g), sx[1])};
    std::string valid = fmt::format("(kf_m[:, None] < {}) & (kf_k[None, :] < {})", m, k);
    for (size_t d = 0; d < spatial; ++d) {
      out.Line(fmt::format("kf_in{0} = kf_o{0}[:, None] * {1} - {2} + kf_t{0}[None, :] * {3}", d, stride[d], padding[d],
                           dilation[d]));
      valid += fmt::format(" & (kf_in{0} >= 0) & (kf_in{0} < {1})", d, x_type.shape[2 + d]);
      x_terms.push_back(Term(fmt::format("kf_in{}", d), sx[2 + d]));
    }
    out.Line(fmt::format("kf_a_tile = tl.load(kf_x_ptr + {}, mask={}, other=0.0)", Sum(x_terms), valid));
    std::vector<std::string> w_terms = {Term("kf_co[None, :]", sw[0]), Term("kf_ci[:, None]", sw[1])};
    for (size_t d = 0; d < spatial; ++d) w_terms.push_back(Term(fmt::format("kf_t{}[:, None]", d), sw[2 + d]));
    out.Line(fmt::format("kf_b_tile = tl.load(kf_w_ptr + {}, mask=(kf_k[:, None] < {}) & (kf_n[None, :] < {}), other=0.0)",
                         Sum(w_terms), k, n));
    out.Line(fmt::format("kf_acc = tl.dot(kf_a_tile, kf_b_tile, kf_acc, input_precision=\"{}\")", options.dot_precision));
    out.Close();
  }
  std::string mask = fmt::format("(kf_m[:, None] < {}) & (kf_n[None, :] < {})", m, n);
  if (layout == ConvLayout::kSubpixel) {
    for (size_t d = 0; d < spatial; ++d) mask += fmt::format(" & (kf_o{0}[:, None] < {1})", d, out_shape[2 + d]);
  }
  out.Line("kf_mask = " + mask);
  RETURN_IF_ERROR(EmitConvolutionEpilogue(out, graph, group, conv, kernel));
  out.Close();
  const std::optional<TileConfig> config =
      FinishGemmKernel(kernel, out.text(), n <= kMaxNarrowN ? kNarrowTileConfigs : kTileConfigs, options);

  auto [x_arg, w_arg] = layout == ConvLayout::kAsGiven ? std::pair(VarName(graph, conv.x), VarName(graph, conv.w))
                                                       : EmitRelayout(kernel, graph, conv.x, conv.w, layout);
  EmitGemmLaunch(kernel, graph, ConvolutionArgs(graph, conv, x_arg, w_arg), conv.outputs, config, m, n,
                 layout == ConvLayout::kSubpixel ? phases : groups);
  return kernel;
}

}  // namespace

void EmitLayoutHelpers(const std::set<std::string>& helpers, SourceWriter& out) {
  if (helpers.count("_kf_channels_last")) {
    out.Line("@triton.jit");
    out.Open("def _kf_channels_last(x_ptr, y_ptr, stride_image, stride_channel, C: tl.constexpr, P: tl.constexpr, "
             "BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):");
    out.Line("# y[image, p, c] = x[image, c, p] (positions dense in x): a [positions, channels] tile, read along");
    out.Line("# positions and written along channels.");
    out.Line("image = tl.program_id(2).to(tl.int64)");
    out.Line("p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)");
    out.Line("c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)");
    out.Line("mask = (p[:, None] < P) & (c[None, :] < C)");
    out.Line("tile = tl.load(x_ptr + image * stride_image + c[None, :] * stride_channel + p[:, None], mask=mask)");
    out.Line("tl.store(y_ptr + image * (P * C) + p[:, None] * C + c[None, :], tile, mask=mask)");
    out.Close();
    out.Blank();
    out.Blank();
  }
  if (helpers.count("_kf_taps_outside")) {
    out.Line("@triton.jit");
    out.Open("def _kf_taps_outside(w_ptr, y_ptr, CO: tl.constexpr, C: tl.constexpr, T: tl.constexpr, BLOCK: tl.constexpr):");
    out.Line("# y[co, t, c] = w[co, c, t] for a contiguous weight: each tap's input channels become contiguous.");
    out.Line("i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)");
    out.Line("mask = i < CO * C * T");
    out.Line("c = i % C");
    out.Line("t = (i // C) % T");
    out.Line("co = i // (C * T)");
    out.Line("tl.store(y_ptr + i, tl.load(w_ptr + co * (C * T) + c * T + t, mask=mask), mask=mask)");
    out.Close();
    out.Blank();
    out.Blank();
  }
}

Result<EmittedKernel> EmitMatmulKernel(const ir::Graph& graph, const passes::FusionGroup& group,
                                       const KernelOptions& options) {
  const ir::Value& anchor = graph.value(group.nodes.front());
  if (!passes::IsFusableMatmul(graph, anchor)) return Status::InvalidArgument(fmt::format("%{}: not a matmul", anchor.name));
  if (anchor.As<ir::OpNode>().op == "aten.convolution.default") {
    if (PrefersDirectConvolution(graph, anchor.As<ir::OpNode>())) return EmitDirectConvolution(graph, group);
    return EmitConvolution(graph, group, options);
  }
  return EmitMm(graph, group, options);
}

}  // namespace kforge::codegen
