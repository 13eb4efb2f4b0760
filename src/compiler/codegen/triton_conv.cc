#include "compiler/codegen/triton_conv.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compiler/codegen/convolution_node.h"
#include "compiler/codegen/epilogue.h"
#include "compiler/codegen/gemm_tiles.h"
#include "compiler/codegen/python_names.h"
#include "compiler/codegen/triton_direct_conv.h"

namespace kforge::codegen {
namespace {

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

// Where a convolution's operands are read from.
enum class ConvLayout {
  kAsGiven,       // the input and weight in place (NCHW: a tap's channel slice is strided)
  kChannelsLast,  // the input rewritten channels-last and the weight [out, taps, in] first, so that
                  // every [positions, channels] and [channels, outputs] tile is contiguous along K
  kSubpixel,      // an undilated transposed convolution: the input channels-last, one GEMM per
                  // output phase over only the taps that reach it (the in-place form masks
                  // stride^d - 1 of every d-dimensional tap set away)
  kPaddedRows,    // fewer than kMinChannelsForTapLoop channels (an image's 3): the input rewritten
                  // channels-last with its padding written out and its channels padded to a
                  // multiple of 4, the weight [out, taps, channels padded]; a kernel row's taps x
                  // channels are then one contiguous, 16-byte-aligned span of both
};

// How a convolution kernel computes its accumulator: tl.dot over K slices, one fp32 FMA per input
// channel and tap (direct), or either, the tuner choosing by DIRECT.
struct ConvForms {
  bool dot = true, direct = false;
};
// Beside the GEMM, the direct form is offered to convolutions with at most this many output
// channels per group (N padded to a tensor-core tile wastes most on few) and input channels x
// taps (each an unrolled body: the compile time every configuration pays).
constexpr int64_t kMaxDirectOutputsBesideDot = 32;
constexpr int64_t kMaxDirectReductionBesideDot = 128;

// `direct_only`: a plain convolution PrefersDirectConvolution takes.
ConvForms ChooseConvForms(const ConvolutionNode& conv, bool direct_only, ConvLayout layout, int64_t m,
                          const KernelOptions& options) {
  if (direct_only) return {.dot = false, .direct = true};
  if (conv.transposed || layout != ConvLayout::kAsGiven) return {};
  const bool offered = conv.ci_g * conv.taps <= kMaxDirectReductionBesideDot && conv.co_g <= kMaxDirectOutputsBesideDot &&
                       m >= options.direct_min_positions;
  return {.dot = true, .direct = offered};
}

// The padded rows' geometry (ConvLayout::kPaddedRows): the buffer's channels and dims, its strides
// by the input's dims ([images, channels, spatial...]), and the kernel rows a K loop walks.
struct PaddedRows {
  int64_t channels = 4;          // the input channels rounded up to a multiple of 4
  std::vector<int64_t> dims;     // each spatial dim with its padding on both sides
  std::vector<int64_t> strides;  // of the buffer [images, dims..., channels], by [images, channels, dims...]
  int64_t span = 1;              // a kernel row's elements: the last dim's taps x channels
  int64_t rows = 1;              // kernel rows: the taps of every other spatial dim
};

PaddedRows PaddedRowsOf(const ConvolutionNode& conv) {
  PaddedRows p;
  p.channels = (conv.ci_g + 3) / 4 * 4;
  ir::Shape shape = {conv.images, p.channels};
  for (size_t d = 0; d < conv.spatial; ++d) {
    p.dims.push_back(conv.x_type->shape[2 + d] + 2 * conv.padding[d]);
    shape.push_back(p.dims.back());
  }
  p.strides = ChannelsLastStrides(shape);
  const ir::Shape& kernel = conv.w_type->shape;
  p.span = kernel.back() * p.channels;
  p.rows = conv.taps / kernel.back();
  return p;
}

// Whether the padded rows serve a convolution of few input channels: a plain one of one group, its
// last dim undilated (its taps are then adjacent), its weight contiguous, not one the direct form
// is offered to (which reads the input in place), and its buffer indexable in int32 as the input
// is (the kernel's offsets are int32 products).
bool PaddedRowsFit(const ConvolutionNode& conv, const KernelOptions& options) {
  if (conv.transposed || conv.groups != 1 || conv.dilation.back() != 1 ||
      conv.w_type->stride != ir::ContiguousStrides(conv.w_type->shape)) {
    return false;
  }
  const PaddedRows rows = PaddedRowsOf(conv);
  if (conv.images * rows.strides[0] > std::numeric_limits<int32_t>::max()) return false;
  // A row of one quad (one tap along the last dim) reads no wider than the gather in place and
  // pays the relayout: level1/59 (3 channels, a 3 x 3 x 1 kernel) ran at 0.73x of torch.compile as
  // padded rows on the H100 (thirty-eighth session), 2.35x in place on the H200 (thirteenth).
  if (rows.span <= 4) return false;
  return !ChooseConvForms(conv, false, ConvLayout::kAsGiven, conv.images * conv.positions, options).direct;
}

ConvLayout ChooseConvLayout(const ConvolutionNode& conv, double flops, const KernelOptions& options) {
  // The relayout kernels read the input's positions densely and the weight contiguously.
  const ir::TensorType &x = *conv.x_type, &w = *conv.w_type;
  int64_t dense = 1;
  for (size_t d = conv.spatial; d-- > 0;) {
    if (x.shape[2 + d] != 1 && x.stride[2 + d] != dense) return ConvLayout::kAsGiven;
    dense *= x.shape[2 + d];
  }
  if (flops < options.relayout_min_flops) return ConvLayout::kAsGiven;
  // An image's 3 channels gathered in place run at a fifth of the channels-last convolutions'
  // speed (AlexNet's and SqueezeNet's first layers at 11-13 TFLOP/s on the H100, against 75 for
  // their others): every K element a 4-byte copy from an offset divided out of its index.
  if (conv.ci_g < kMinChannelsForTapLoop) return PaddedRowsFit(conv, options) ? ConvLayout::kPaddedRows : ConvLayout::kAsGiven;
  if (conv.transposed) {
    // The subpixel grid's axis 1 walks phases, not groups. With a stride of 1 there is one phase,
    // and the form is the in-place one with the input channels-last (level2/10: 36.9 ms in place).
    if (conv.groups != 1) return ConvLayout::kAsGiven;
    const bool dilated = std::any_of(conv.dilation.begin(), conv.dilation.end(), [](int64_t d) { return d != 1; });
    return dilated ? ConvLayout::kAsGiven : ConvLayout::kSubpixel;
  }
  // Unrolled taps in place were as fast (32 channels x 9 taps, 9.4 GFLOP, on the H200) and launch
  // no relayout kernels.
  if (ChooseConvLoop(conv.ci_g, conv.taps, false) == ConvLoop::kUnrolledTaps) return ConvLayout::kAsGiven;
  return w.stride == ir::ContiguousStrides(w.shape) ? ConvLayout::kChannelsLast : ConvLayout::kAsGiven;
}

// The direct form's configurations: the whole group's output channels (a power of two) per
// program; BLOCK_K and the stages are unused.
std::vector<TileChoice> DirectTileConfigs(int64_t co_g, bool only) {
  const int columns = static_cast<int>(NextPowerOfTwo(co_g));
  auto direct = [&](int block_m, int warps) {
    TileChoice c{block_m, columns, 16, 8, warps, 1};
    c.direct = true;
    return c;
  };
  // 16 accumulators per thread (the form's measured default), or as many again over 8 warps.
  const int block_m = columns <= 8 ? 256 : 128;
  if (only) return {direct(block_m, 4), direct(2 * block_m, 8)};
  return {direct(block_m, 4), direct(2 * block_m, 8), direct(block_m / 2, 4)};
}

// Whether the weight is rewritten [out, taps, in] too: always for kChannelsLast (which requires a
// contiguous weight); for kSubpixel when the transposed weight [in, out, taps] is contiguous. In
// place, a K slice of a transposed weight is strided by out x taps and its N row by taps: level2/10's
// 64 -> 64 channels ran at 18 TFLOP/s either way with the input channels-last.
bool RelayoutWeight(const ConvolutionNode& conv, ConvLayout layout) {
  const ir::TensorType& w = *conv.w_type;
  return layout == ConvLayout::kChannelsLast || (layout == ConvLayout::kSubpixel && w.stride == ir::ContiguousStrides(w.shape));
}

// The strides the kernel reads a rewritten weight with, by the weight's own dims ([out, in, taps],
// or [in, out, taps] when transposed): the input channel innermost, then the taps, then the output.
std::vector<int64_t> RelayoutWeightStrides(const ConvolutionNode& conv) {
  if (!conv.transposed) return ChannelsLastStrides(conv.w_type->shape);
  ir::Shape swapped = conv.w_type->shape;
  std::swap(swapped[0], swapped[1]);
  std::vector<int64_t> strides = ChannelsLastStrides(swapped);
  std::swap(strides[0], strides[1]);
  return strides;
}

// A forward line that rewrites a contiguous weight [out, in, taps] (or a transposed [in, out,
// taps] one) [out, taps, `channels`] into a buffer named after the kernel: the input channels
// innermost, zero past the weight's own; the buffer's name.
std::string EmitTapsOutside(EmittedKernel& kernel, const ir::Graph& graph, const ConvolutionNode& conv, int64_t channels) {
  const ir::TensorType& w_type = *conv.w_type;
  const int64_t co = w_type.shape[conv.transposed ? 1 : 0], ci = w_type.shape[conv.transposed ? 0 : 1];
  const int64_t taps = w_type.numel() / (co * ci), total = co * taps * channels;
  const int64_t stride_co = conv.transposed ? taps : ci * taps, stride_ci = conv.transposed ? co * taps : taps;
  const std::string w_taps = kernel.name + "_w";
  kernel.helpers.insert("_kf_taps_outside");
  kernel.launch.push_back(fmt::format("{} = torch.empty(({},), dtype={}, device=device)", w_taps, total,
                                      TorchDType(w_type.dtype)));
  kernel.launch.push_back(fmt::format("_kf_taps_outside[(triton.cdiv({}, 1024),)]({}, {}, {}, {}, {}, {}, {}, {}, BLOCK=1024)", total,
                                      VarName(graph, conv.w), w_taps, co, ci, channels, taps, stride_co, stride_ci));
  return w_taps;
}

// Forward lines that rewrite the input channels-last (and, where RelayoutWeight, the weight
// [out, taps, in]) into buffers named after the kernel; the buffers the kernel then reads.
std::pair<std::string, std::string> EmitRelayout(EmittedKernel& kernel, const ir::Graph& graph, const ConvolutionNode& conv,
                                                 ConvLayout layout) {
  const ir::NodeRef x = conv.x, w = conv.w;
  const ir::TensorType &x_type = *conv.x_type, &w_type = *conv.w_type;
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
  if (!RelayoutWeight(conv, layout)) return {x_cl, VarName(graph, w)};
  return {x_cl, EmitTapsOutside(kernel, graph, conv, w_type.shape[conv.transposed ? 0 : 1])};
}

// Forward lines that rewrite the input into the padded rows' buffer and the weight [out, taps,
// channels padded]; the buffers the kernel then reads.
std::pair<std::string, std::string> EmitPaddedRows(EmittedKernel& kernel, const ir::Graph& graph, const ConvolutionNode& conv,
                                                   const PaddedRows& rows) {
  const ir::TensorType& x_type = *conv.x_type;
  // The spatial dims as three (depth, height, width), missing leading ones of size 1 and no padding.
  std::vector<int64_t> dims(3, 1), pads(3, 0);
  for (size_t d = 0; d < conv.spatial; ++d) {
    dims[3 - conv.spatial + d] = x_type.shape[2 + d];
    pads[3 - conv.spatial + d] = conv.padding[d];
  }
  int64_t total = conv.images * rows.channels;
  for (int64_t size : rows.dims) total *= size;
  const std::string x_rows = kernel.name + "_x";
  kernel.helpers.insert("_kf_padded_channels_last");
  kernel.launch.push_back(fmt::format("{} = torch.empty(({},), dtype={}, device=device)", x_rows, total, TorchDType(x_type.dtype)));
  kernel.launch.push_back(fmt::format("_kf_padded_channels_last[(triton.cdiv({}, 1024),)]({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                                      "{}, BLOCK=1024)", total, VarName(graph, conv.x), x_rows, x_type.stride[0], x_type.stride[1],
                                      conv.ci_g, rows.channels, dims[0], dims[1], dims[2], pads[0], pads[1], pads[2], conv.images));
  return {x_rows, EmitTapsOutside(kernel, graph, conv, rows.channels)};
}

}  // namespace

// Convolution as an implicit GEMM: M = images x output positions, N = output channels of one
// group, K = input channels of the group x kernel taps; the input tile is gathered per K slice.
// A strided transposed convolution in the subpixel layout runs one GEMM per output phase (axis 1
// of the grid): M = images x the phase's positions, K = input channels x the taps reaching it.
Result<EmittedKernel> EmitImplicitGemmConvolution(const ir::Graph& graph, const passes::FusionGroup& group, const KernelOptions& options) {
  ASSIGN_OR_RETURN(const ConvolutionNode conv, ReadConvolution(graph, group));
  const ir::TensorType &x_type = *conv.x_type, &w_type = *conv.w_type;
  const ir::Shape& out_shape = conv.out_shape;
  const size_t spatial = conv.spatial;
  const ir::IntList &stride = conv.stride, &padding = conv.padding, &dilation = conv.dilation;
  const int64_t groups = conv.groups, images = conv.images, co_g = conv.co_g, ci_g = conv.ci_g, taps = conv.taps;
  const bool transposed = conv.transposed;
  const OutputPhases phase_of = PhasesOf(conv);  // of a transposed convolution
  const int64_t phases = transposed ? phase_of.count : 1;
  const double flops = 2.0 * static_cast<double>(images * conv.positions) * static_cast<double>(co_g * ci_g * taps) *
                       static_cast<double>(groups) / static_cast<double>(phases);
  const bool direct_only = !transposed && PrefersDirectConvolution(graph, graph.value(group.nodes.front()).As<ir::OpNode>());
  const ConvLayout layout = direct_only ? ConvLayout::kAsGiven : ChooseConvLayout(conv, flops, options);
  // The output positions one program tile walks: all of them, or one phase's (rounded up).
  std::vector<int64_t> tile_dims(out_shape.begin() + 2, out_shape.end());
  if (layout == ConvLayout::kSubpixel) tile_dims = phase_of.tile_dims;
  int64_t tile_positions = 1;
  for (int64_t size : tile_dims) tile_positions *= size;
  const int64_t m = images * tile_positions, n = co_g, k = ci_g * taps;
  const ConvForms forms = ChooseConvForms(conv, direct_only, layout, m, options);
  const PaddedRows rows = PaddedRowsOf(conv);  // read where layout is kPaddedRows
  const ConvLoop loop = layout == ConvLayout::kAsGiven ? ChooseConvLoop(ci_g, taps, transposed) : ConvLoop::kFlatTaps;
  std::vector<TileChoice> space;
  if (forms.dot) space = n <= kMaxNarrowN ? kNarrowTileConfigs : kTileConfigs;
  if (layout == ConvLayout::kPaddedRows && (rows.span + 15) / 16 * 16 < (rows.span + 31) / 32 * 32) {
    // Each row's span is rounded up to BLOCK_K: a 3x3 kernel's 12 to 16 rather than 32 (and
    // AlexNet's 44 to 48 rather than 64) with K slices of 16, offered beside the space's 32s.
    const std::vector<TileChoice> wide(space);
    for (TileChoice c : wide) {
      if (c.block_k != 32 || c.block_m < 128) continue;
      c.block_k = 16;
      if (std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
    }
  }
  if (forms.direct) {
    const std::vector<TileChoice> direct = DirectTileConfigs(co_g, !forms.dot);
    // The direct form first: it is also the one run without autotuning (the interpreter computes
    // either exactly).
    space.insert(space.begin(), direct.begin(), direct.end());
  } else if (layout != ConvLayout::kSubpixel && loop != ConvLoop::kUnrolledTaps) {
    // A K loop of one flat range may be split over programs.
    space = WithSplitK(std::move(space), m, n, groups,
                       [&](int block_k) {
                         if (layout == ConvLayout::kPaddedRows) return rows.rows * ((rows.span + block_k - 1) / block_k);
                         return loop == ConvLoop::kFlatK ? (k + block_k - 1) / block_k : taps * ((ci_g + block_k - 1) / block_k);
                       },
                       options);
  }
  const TileParameters parameters{.direct = forms.dot && forms.direct, .split_k = HasSplitK(space)};
  const bool split = parameters.split_k;
  // The strides the kernel reads its operands with: in place, or those of the relayout buffers.
  const std::vector<int64_t> sx = layout == ConvLayout::kAsGiven      ? x_type.stride
                                  : layout == ConvLayout::kPaddedRows ? rows.strides
                                                                      : ChannelsLastStrides(x_type.shape);
  const std::vector<int64_t> sw = RelayoutWeight(conv, layout) ? RelayoutWeightStrides(conv) : w_type.stride;
  const int64_t sw_co = transposed ? sw[1] : sw[0], sw_ci = transposed ? sw[0] : sw[1];
  // The weight's output-channel term: a plain convolution's weight is [out, in per group, taps], a
  // transposed one's [in, out per group, taps] (a group's rows start at its first input channel).
  const std::string w_channel = transposed ? Sum({Term("kf_n[None, :]", sw_co), Term("kf_group", ci_g * sw_ci)})
                                           : Term("kf_co[None, :]", sw_co);

  EmittedKernel kernel;
  kernel.name = "conv_" + group.name;
  SourceWriter out;
  OpenGemmKernel(out, kernel.name, ConvolutionParams(graph, conv), graph, group, parameters);
  if (!forms.dot) {
    out.Line(fmt::format("# Direct convolution: BLOCK_M of {} positions x {} output channels per program, {} group(s); "
                         "one fp32 FMA per input channel ({}) and tap.", m, co_g, groups, ci_g));
  } else {
    out.Line(fmt::format("# Implicit GEMM{}: {} x {} x {} (images*positions x channels per group x inputs*taps), {} group(s); "
                         "tl.dot with input_precision=\"{}\"{}.", transposed ? " of a transposed convolution" : "", m, n, k,
                         groups, options.dot_precision,
                         forms.direct ? ", or with DIRECT one fp32 FMA per input channel and tap" : ""));
  }
  if (layout == ConvLayout::kChannelsLast) {
    out.Line("# The input is read channels-last and the weight [out, taps, in]: each K slice is contiguous.");
  } else if (layout == ConvLayout::kPaddedRows) {
    out.Line(fmt::format("# Padded rows: the input is read channels-last, padded in space and to {} channels, and the weight "
                         "[out, taps, {}]: each of the {} kernel rows is one contiguous span of {} taps x channels.",
                         rows.channels, rows.channels, rows.rows, rows.span));
  } else if (layout == ConvLayout::kSubpixel) {
    out.Line(fmt::format("# Subpixel form: axis 1 is the output phase (position modulo the stride, {} of them); the input "
                         "is read channels-last.", phases));
  }
  EmitTilePosition(out, m, n);
  const std::string position = layout == ConvLayout::kSubpixel ? "kf_q" : "kf_o";
  if (layout == ConvLayout::kSubpixel) {
    out.Line("kf_group = 0");
    EmitPhase(out, conv, "tl.program_id(1)");
  } else {
    // One group: a constant the compiler folds into the operands' offsets (level2/71: 10% faster).
    out.Line(groups == 1 ? "kf_group = 0" : "kf_group = tl.program_id(1)");
  }
  out.Line(fmt::format("kf_co = kf_group * {} + kf_n", co_g));
  // Output position of each row of the tile.
  out.Line("kf_rem = kf_m");
  for (size_t d = spatial; d-- > 0;) {
    out.Line(fmt::format("{}{} = kf_rem % {}", position, d, tile_dims[d]));
    out.Line(fmt::format("kf_rem = kf_rem // {}", tile_dims[d]));
  }
  out.Line("kf_img = kf_rem");
  if (layout == ConvLayout::kSubpixel) EmitPhasePositions(out, conv);
  out.Line("kf_acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)");
  OpenAccumulation(out, split, m, n);
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
    std::vector<std::string> w_terms = {w_channel};
    for (size_t d = 0; d < spatial; ++d) w_terms.push_back(Term(fmt::format("kf_t{}", d), sw[2 + d]));
    out.Line(fmt::format("kf_w_tap = kf_w_ptr + {}", Sum(w_terms)));
  };
  // The taps kf_t0 .. kf_t<dims - 1> of the flat tap index in kf_trem (row-major over the kernel's dims).
  auto split_taps = [&](size_t dims) {
    for (size_t d = dims; d-- > 0;) {
      out.Line(fmt::format("kf_t{} = kf_trem % {}", d, w_type.shape[2 + d]));
      if (d > 0) out.Line(fmt::format("kf_trem = kf_trem // {}", w_type.shape[2 + d]));
    }
  };
  // The accumulator by tl.dot over K slices.
  auto dot_loop = [&] {
    if (layout == ConvLayout::kPaddedRows) {
      // The window corner of each position in the padded buffer, then one loop over (kernel row,
      // span block): a row's span starts at the corner moved by the row's taps, and no element
      // needs a bounds check (the padding is in the buffer; the span's tail is masked, as the
      // weight's is, so that what lies past it, a neighbour's values, never enters a product).
      std::vector<std::string> corner = {Term("kf_img", sx[0])};
      for (size_t d = 0; d < spatial; ++d) corner.push_back(Term(fmt::format("kf_o{}", d), stride[d] * sx[2 + d]));
      out.Line(fmt::format("kf_x_rows = kf_x_ptr + {}", Sum(corner)));
      out.Line(fmt::format("kf_span_blocks = ({} + BLOCK_K - 1) // BLOCK_K", rows.span));
      const auto [lo, hi] = EmitStepRange(out, fmt::format("{} * kf_span_blocks", rows.rows), split);
      out.Open(fmt::format("for kf_kk in range({}, {}):", lo, hi));
      out.Line("kf_row = kf_kk // kf_span_blocks");
      out.Line("kf_j = (kf_kk % kf_span_blocks) * BLOCK_K + tl.arange(0, BLOCK_K)");
      std::vector<std::string> row_terms;
      if (spatial > 1) {
        out.Line("kf_trem = kf_row");
        split_taps(spatial - 1);
      }
      for (size_t d = spatial - 1; d-- > 0;) row_terms.push_back(Term(fmt::format("kf_t{}", d), dilation[d] * sx[2 + d]));
      row_terms.push_back("kf_j");
      out.Line(fmt::format("kf_a_tile = tl.load(kf_x_rows[:, None] + ({})[None, :], mask=(kf_m[:, None] < {}) & (kf_j[None, :] < {}), "
                           "other=0.0)", Sum(row_terms), m, rows.span));
      out.Line(fmt::format("kf_b_tile = tl.load(kf_w_ptr + {} + {} + kf_j[:, None], mask=(kf_j[:, None] < {}) & (kf_n[None, :] < {}), "
                           "other=0.0)", Term("kf_co[None, :]", rows.rows * rows.span), Term("kf_row", rows.span), rows.span, n));
      out.Line(fmt::format("kf_acc = tl.dot(kf_a_tile, kf_b_tile, kf_acc, input_precision=\"{}\")", options.dot_precision));
      out.Close();
    } else if (layout == ConvLayout::kSubpixel) {
      // One loop over (tap reaching the phase, channel block).
      out.Line(fmt::format("kf_ci_blocks = ({} + BLOCK_K - 1) // BLOCK_K", ci_g));
      out.Open(fmt::format("for kf_kk in range(0, {} * kf_ci_blocks):", phase_of.taps));
      out.Line("kf_jrem = kf_kk // kf_ci_blocks");
      out.Line("kf_ci = (kf_kk % kf_ci_blocks) * BLOCK_K + tl.arange(0, BLOCK_K)");
      std::string valid = fmt::format("(kf_m < {})", m), tap_valid;
      for (size_t d = spatial; d-- > 0;) {
        out.Line(fmt::format("kf_t{0} = kf_first{0} + (kf_jrem % {1}) * {2}", d, phase_of.reach[d], stride[d]));
        if (d > 0) out.Line(fmt::format("kf_jrem = kf_jrem // {}", phase_of.reach[d]));
      }
      for (size_t d = 0; d < spatial; ++d) {
        valid += fmt::format(" & (kf_o{0} < {1})", d, out_shape[2 + d]) + EmitPhaseTap(out, conv, d);
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
            // Without padding a tap stays inside the input (see the flat-K loop below).
            out.Line(fmt::format("kf_in{0} = kf_o{0} * {1} - {2} + kf_t{0} * {3}", d, stride[d], padding[d], dilation[d]));
            if (padding[d] != 0) valid += fmt::format(" & (kf_in{0} >= 0) & (kf_in{0} < {1})", d, x_type.shape[2 + d]);
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
        const auto [lo, hi] = EmitStepRange(out, fmt::format("{} * kf_ci_blocks", taps), split);
        out.Open(fmt::format("for kf_kk in range({}, {}):", lo, hi));
        out.Line("kf_trem = kf_kk // kf_ci_blocks");
        out.Line("kf_ci = (kf_kk % kf_ci_blocks) * BLOCK_K + tl.arange(0, BLOCK_K)");
        split_taps(spatial);
        tap_operands();
        channel_block("");
        out.Close();
      }
    } else {
      // The input offset of (position, k) is a row part (the position's window corner) plus a
      // column part (the channel and tap, less the padding): one add per element of the tile. Only
      // a padded dim can leave the input, so only those are bounds-checked per element (without
      // padding, o * stride + t * dilation <= (out - 1) * stride + (kernel - 1) * dilation < in).
      std::vector<std::string> row_terms = {Term("kf_img", sx[0]), Term("kf_group", ci_g * sx[1])};
      for (size_t d = 0; d < spatial; ++d) row_terms.push_back(Term(fmt::format("kf_o{}", d), stride[d] * sx[2 + d]));
      out.Line(fmt::format("kf_x_rows = kf_x_ptr + {}", Sum(row_terms)));
      out.Open(fmt::format("for kf_k0 in range({}):", EmitKSliceRange(out, k, split)));
      out.Line("kf_k = kf_k0 + tl.arange(0, BLOCK_K)");
      out.Line("kf_krem = kf_k");
      for (size_t d = spatial; d-- > 0;) {
        out.Line(fmt::format("kf_t{} = kf_krem % {}", d, w_type.shape[2 + d]));
        out.Line(fmt::format("kf_krem = kf_krem // {}", w_type.shape[2 + d]));
      }
      out.Line("kf_ci = kf_krem");
      std::vector<std::string> column_terms = {Term("kf_ci", sx[1])};
      int64_t corner = 0;
      std::string valid = fmt::format("(kf_m[:, None] < {}) & (kf_k[None, :] < {})", m, k);
      for (size_t d = 0; d < spatial; ++d) {
        column_terms.push_back(Term(fmt::format("kf_t{}", d), dilation[d] * sx[2 + d]));
        corner += padding[d] * sx[2 + d];
        if (padding[d] == 0) continue;
        out.Line(fmt::format("kf_in{0} = kf_o{0}[:, None] * {1} - {2} + kf_t{0}[None, :] * {3}", d, stride[d], padding[d],
                             dilation[d]));
        valid += fmt::format(" & (kf_in{0} >= 0) & (kf_in{0} < {1})", d, x_type.shape[2 + d]);
      }
      out.Line(fmt::format("kf_x_columns = {}{}", Sum(column_terms), corner != 0 ? fmt::format(" - {}", corner) : ""));
      out.Line(fmt::format("kf_a_tile = tl.load(kf_x_rows[:, None] + kf_x_columns[None, :], mask={}, other=0.0)", valid));
      // A weight dense over (input channel, taps) holds K element k of an output channel at k: an
      // index Triton sees is contiguous along K, where the (channel, tap) one it rebuilds from
      // divisions is a gather (level2/71 on the H200: 2.10 ms -> 0.65 ms).
      std::vector<std::string> w_terms = {Term("kf_co[None, :]", sw[0])};
      const ir::Shape w_k(w_type.shape.begin() + 1, w_type.shape.end());
      if (std::vector<int64_t>(sw.begin() + 1, sw.end()) == ir::ContiguousStrides(w_k)) {
        w_terms.push_back("kf_k[:, None]");
      } else {
        w_terms.push_back(Term("kf_ci[:, None]", sw[1]));
        for (size_t d = 0; d < spatial; ++d) w_terms.push_back(Term(fmt::format("kf_t{}[:, None]", d), sw[2 + d]));
      }
      out.Line(fmt::format("kf_b_tile = tl.load(kf_w_ptr + {}, mask=(kf_k[:, None] < {}) & (kf_n[None, :] < {}), other=0.0)",
                           Sum(w_terms), k, n));
      out.Line(fmt::format("kf_acc = tl.dot(kf_a_tile, kf_b_tile, kf_acc, input_precision=\"{}\")", options.dot_precision));
      out.Close();
    }
  };
  // The accumulator by one FMA per input channel and tap, the taps unrolled.
  auto direct_loop = [&] {
    for (size_t d = 0; d < spatial; ++d) out.Open(fmt::format("for kf_t{} in tl.static_range({}):", d, w_type.shape[2 + d]));
    std::string valid = fmt::format("(kf_m < {})", m);
    std::vector<std::string> x_terms = {Term("kf_img", sx[0]), Term("kf_group", ci_g * sx[1])};
    std::vector<std::string> w_terms = {Term("kf_co", sw_co)};
    for (size_t d = 0; d < spatial; ++d) {
      out.Line(fmt::format("kf_in{0} = kf_o{0} * {1} - {2} + kf_t{0} * {3}", d, stride[d], padding[d], dilation[d]));
      // Without padding a tap stays inside the input (see the flat-K loop).
      if (padding[d] != 0) valid += fmt::format(" & (kf_in{0} >= 0) & (kf_in{0} < {1})", d, x_type.shape[2 + d]);
      x_terms.push_back(Term(fmt::format("kf_in{}", d), sx[2 + d]));
      w_terms.push_back(Term(fmt::format("kf_t{}", d), sw[2 + d]));
    }
    out.Line(fmt::format("kf_valid = {}", valid));
    out.Line(fmt::format("kf_x_tap = kf_x_ptr + {}", Sum(x_terms)));
    out.Line(fmt::format("kf_w_tap = kf_w_ptr + {}", Sum(w_terms)));
    EmitDirectChannels(out, conv, sx[1], sw_ci, "");
    for (size_t d = 0; d < spatial; ++d) out.Close();
  };
  if (forms.dot && forms.direct) {
    out.Open("if DIRECT:");
    direct_loop();
    out.Close();
    out.Open("else:");
    dot_loop();
    out.Close();
  } else if (forms.direct) {
    direct_loop();
  } else {
    dot_loop();
  }
  CloseAccumulation(out, split);
  std::string mask = fmt::format("(kf_m[:, None] < {}) & (kf_n[None, :] < {})", m, n);
  if (layout == ConvLayout::kSubpixel) {
    for (size_t d = 0; d < spatial; ++d) mask += fmt::format(" & (kf_o{0}[:, None] < {1})", d, out_shape[2 + d]);
  }
  out.Line("kf_mask = " + mask);
  OpenEpilogue(out, split);
  RETURN_IF_ERROR(EmitConvolutionEpilogue(out, graph, group, conv, kernel));
  CloseEpilogue(out, split, m, n);
  out.Close();
  const std::optional<TileChoice> config =
      FinishGemmKernel(kernel, out.text(), space, options, parameters, forms.direct ? space.front() : kFixedTile);

  auto [x_arg, w_arg] = layout == ConvLayout::kAsGiven      ? std::pair(VarName(graph, conv.x), VarName(graph, conv.w))
                        : layout == ConvLayout::kPaddedRows ? EmitPaddedRows(kernel, graph, conv, rows)
                                                            : EmitRelayout(kernel, graph, conv, layout);
  EmitGemmLaunch(kernel, graph, ConvolutionArgs(graph, conv, x_arg, w_arg), conv.outputs, config, m, n,
                 layout == ConvLayout::kSubpixel ? phases : groups, parameters, space);
  return kernel;
}

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
  if (helpers.count("_kf_padded_channels_last")) {
    out.Line("@triton.jit");
    out.Open("def _kf_padded_channels_last(x_ptr, y_ptr, stride_image, stride_channel, C: tl.constexpr, CP: tl.constexpr, "
             "D: tl.constexpr, H: tl.constexpr, W: tl.constexpr, PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, "
             "N: tl.constexpr, BLOCK: tl.constexpr):");
    out.Line("# y[image, d, h, w, c] = x[image, c, d - PD, h - PH, w - PW] (positions dense in x), 0 in the padding");
    out.Line("# and for channels C up to CP.");
    out.Line("i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)");
    out.Line("mask = i < N * (D + 2 * PD) * (H + 2 * PH) * (W + 2 * PW) * CP");
    out.Line("c = i % CP");
    out.Line("w = (i // CP) % (W + 2 * PW) - PW");
    out.Line("h = (i // (CP * (W + 2 * PW))) % (H + 2 * PH) - PH");
    out.Line("d = (i // (CP * (W + 2 * PW) * (H + 2 * PH))) % (D + 2 * PD) - PD");
    out.Line("image = i // (CP * (W + 2 * PW) * (H + 2 * PH) * (D + 2 * PD))");
    out.Line("inside = (c < C) & (d >= 0) & (d < D) & (h >= 0) & (h < H) & (w >= 0) & (w < W)");
    out.Line("value = tl.load(x_ptr + image * stride_image + c * stride_channel + (d * H + h) * W + w, mask=mask & inside, other=0.0)");
    out.Line("tl.store(y_ptr + i, value, mask=mask)");
    out.Close();
    out.Blank();
    out.Blank();
  }
  if (helpers.count("_kf_taps_outside")) {
    out.Line("@triton.jit");
    out.Open("def _kf_taps_outside(w_ptr, y_ptr, CO: tl.constexpr, C: tl.constexpr, CP: tl.constexpr, T: tl.constexpr, "
             "STRIDE_CO: tl.constexpr, STRIDE_C: tl.constexpr, BLOCK: tl.constexpr):");
    out.Line("# y[co, t, c] = w[co * STRIDE_CO + c * STRIDE_C + t] (taps contiguous in w) for c < C, 0 up to CP: each");
    out.Line("# tap's input channels become contiguous.");
    out.Line("i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)");
    out.Line("mask = i < CO * CP * T");
    out.Line("c = i % CP");
    out.Line("t = (i // CP) % T");
    out.Line("co = i // (CP * T)");
    out.Line("tl.store(y_ptr + i, tl.load(w_ptr + co * STRIDE_CO + c * STRIDE_C + t, mask=mask & (c < C), other=0.0), mask=mask)");
    out.Close();
    out.Blank();
    out.Blank();
  }
}

}  // namespace kforge::codegen
