#include "compiler/codegen/triton_window.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "compiler/codegen/epilogue.h"
#include "compiler/codegen/python_names.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/codegen/triton_pointwise.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::codegen {
namespace {

bool Flag(const ir::OpNode& op, ir::ArgSlot slot) {
  const ir::Argument* arg = op.FindArgument(slot);
  return arg != nullptr && arg->Is<bool>() && arg->As<bool>();
}

// A window tap by tap, one element per output and tap: loads each tap of the input (`other` where
// it falls in the padding) as kf_v and folds it in with `accumulate` (which may read kf_i, kf_j).
void EmitTaps(SourceWriter& out, int64_t window_h, int64_t window_w, const ir::IntList& dilation, int64_t in_h,
              int64_t in_w, const std::vector<int64_t>& sx, const char* other, const std::string& accumulate) {
  out.Open(fmt::format("for kf_i in tl.static_range({}):", window_h));
  out.Open(fmt::format("for kf_j in tl.static_range({}):", window_w));
  out.Line(fmt::format("kf_h = kf_h0 + kf_i * {}", dilation[0]));
  out.Line(fmt::format("kf_w = kf_w0 + kf_j * {}", dilation[1]));
  out.Line(fmt::format("kf_in = kf_mask & (kf_h >= 0) & (kf_h < {}) & (kf_w >= 0) & (kf_w < {})", in_h, in_w));
  out.Line(fmt::format("kf_v = tl.load(kf_x_ptr + kf_base + kf_h * {} + kf_w * {}, mask=kf_in, other={})", sx[2], sx[3],
                       other));
  out.Line(accumulate);
  out.Close();
  out.Close();
}

struct PoolRows {
  bool adaptive, count_include_pad;
  int64_t divisor;  // an average's constant divisor (every window whole), else 0: windows are counted
  int64_t window_h, window_w, in_h, in_w;
  ir::IntList padding, dilation;
  std::vector<int64_t> sx;
};

// An average-pooling window one row at a time: each output's taps along the row load together as one
// [outputs, taps] tile (contiguous in memory when the input's rows are), then reduce along the
// taps. Loading tap by tap instead made neighbouring lanes read addresses a stride apart.
void EmitPoolRows(SourceWriter& out, const PoolRows& p) {
  out.Line(fmt::format("kf_taps = tl.arange(0, {})[None, :]", NextPowerOfTwo(p.window_w)));
  out.Open(fmt::format("for kf_i in tl.static_range({}):", p.window_h));
  std::string row_in, tap_in;
  if (p.adaptive) {
    out.Line("kf_h = kf_h0 + kf_i");
    out.Line("kf_w = kf_w0[:, None] + kf_taps");
    row_in = "kf_mask & (kf_h < kf_h1)";
    tap_in = "(kf_w < kf_w1[:, None])";
  } else {
    out.Line(fmt::format("kf_h = kf_h0 + kf_i * {}", p.dilation[0]));
    out.Line(fmt::format("kf_w = kf_w0[:, None] + kf_taps * {}", p.dilation[1]));
    row_in = fmt::format("kf_mask & (kf_h >= 0) & (kf_h < {})", p.in_h);
    tap_in = fmt::format("(kf_w >= 0) & (kf_w < {})", p.in_w);
  }
  out.Line(fmt::format("kf_in = ({})[:, None] & (kf_taps < {}) & {}", row_in, p.window_w, tap_in));
  out.Line(fmt::format("kf_v = tl.load(kf_x_ptr + (kf_base + kf_h * {})[:, None] + kf_w * {}, mask=kf_in, other=0.0)",
                       p.sx[2], p.sx[3]));
  out.Line("kf_acc += tl.sum(kf_v, axis=1)");
  if (p.divisor > 0) {
    out.Close();
    return;
  }
  if (p.adaptive || !p.count_include_pad) {
    out.Line("kf_count += tl.sum(tl.where(kf_in, 1.0, 0.0), axis=1)");
  } else {
    // count_include_pad: the window clipped to the padded input counts, padding included.
    out.Line(fmt::format("kf_count += tl.sum(tl.where(kf_mask[:, None] & (kf_h < {})[:, None] & (kf_taps < {}) & "
                         "(kf_w < {}), 1.0, 0.0), axis=1)",
                         p.in_h + p.padding[0], p.window_w, p.in_w + p.padding[1]));
  }
  out.Close();
}

}  // namespace

Result<EmittedKernel> EmitWindowKernel(const ir::Graph& graph, const passes::FusionGroup& group, int block_size) {
  const auto& pool = graph.value(group.nodes.front()).As<ir::OpNode>();
  if (!passes::IsFusablePooling(graph, pool)) return Status::InvalidArgument(fmt::format("%{}: not a pooling op", pool.name));
  const ir::NodeRef x = pool.args[0].As<ir::NodeRef>();
  const ir::TensorType& x_type = *graph.TypeOf(x);
  const ir::Shape& out_shape = pool.type().shape;
  const size_t spatial = 2;
  const bool is_max = pool.op == "aten.max_pool2d_with_indices.default";
  const bool adaptive = pool.op == "aten._adaptive_avg_pool2d.default";
  const bool depthwise = passes::IsDepthwiseConvolution(graph, pool);
  ir::IntList kernel_size, stride, padding, dilation = {1, 1};
  bool count_include_pad = true;
  std::optional<ir::NodeRef> weight, bias;
  if (depthwise) {
    // convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    weight = pool.args[1].As<ir::NodeRef>();
    if (pool.args[2].Is<ir::NodeRef>()) bias = pool.args[2].As<ir::NodeRef>();
    const ir::Shape& w_shape = graph.TypeOf(*weight)->shape;
    kernel_size = {w_shape[2], w_shape[3]};
    stride = pool.args[3].As<ir::IntList>();
    padding = pool.args[4].As<ir::IntList>();
    dilation = pool.args[5].As<ir::IntList>();
  } else if (!adaptive) {
    kernel_size = pool.FindIntList({1, "kernel_size"}, spatial, {});
    stride = pool.FindIntList({2, "stride"}, spatial, kernel_size);
    padding = pool.FindIntList({3, "padding"}, spatial, {0, 0});
    if (is_max) dilation = pool.FindIntList({4, "dilation"}, spatial, {1, 1});
    if (kernel_size.size() != spatial || stride.size() != spatial || padding.size() != spatial || dilation.size() != spatial) {
      return Status::InvalidArgument(fmt::format("%{}: window arguments of the wrong length", pool.name));
    }
    // In ceil mode a max window may hang past the input: its taps there are masked off like
    // padding's, and the output's size is the captured type's. An average's divisor would change.
    if (!is_max && Flag(pool, {4, "ceil_mode"})) return Status::InvalidArgument(fmt::format("%{}: ceil_mode", pool.name));
    if (!is_max) {
      const ir::Argument* include = pool.FindArgument({5, "count_include_pad"});
      count_include_pad = include == nullptr || !include->Is<bool>() || include->As<bool>();
      const ir::Argument* divisor = pool.FindArgument({6, "divisor_override"});
      if (divisor != nullptr && !divisor->Is<ir::NoneArg>()) {
        return Status::InvalidArgument(fmt::format("%{}: divisor_override", pool.name));
      }
    }
  }
  std::vector<ir::NodeRef> outputs = passes::GroupOutputs(graph, group);
  if (std::find(outputs.begin(), outputs.end(), pool.ref(1)) != outputs.end() && pool.num_outputs() > 1) {
    return Status::InvalidArgument(fmt::format("%{}: the indices output is read", pool.name));
  }
  std::vector<ir::NodeRef> operands = {x};
  if (weight) operands.push_back(*weight);
  if (bias) operands.push_back(*bias);
  ASSIGN_OR_RETURN(std::vector<ir::NodeRef> inputs, EpilogueInputs(graph, group, operands, out_shape));

  EmittedKernel kernel;
  kernel.name = "window_" + group.name;
  std::vector<std::string> params = {"kf_x_ptr"};
  if (weight) params.push_back("kf_w_ptr");
  if (bias) params.push_back("kf_bias_ptr");
  for (const ir::NodeRef& ref : inputs) params.push_back(VarName(graph, ref) + "_ptr");
  for (const ir::NodeRef& ref : outputs) params.push_back(VarName(graph, ref) + "_ptr");
  params.push_back("BLOCK_SIZE: tl.constexpr");
  int64_t numel = 1;
  for (int64_t d : out_shape) numel *= d;
  const std::vector<int64_t>& sx = x_type.stride;
  const int64_t in_h = x_type.shape[2], in_w = x_type.shape[3], out_h = out_shape[2], out_w = out_shape[3];

  SourceWriter out;
  OpenKernel(out, kernel.name, params, graph, group);
  out.Line(fmt::format("# {} over {} windows of {}.",
                       depthwise ? "Depthwise convolution" : is_max ? "Max" : "Average",
                       ir::ShapeToString(out_shape), ir::ShapeToString(x_type.shape)));
  // A depthwise convolution's program covers positions of one (image, channel) plane (grid axes 2
  // and 1): its channel's weights are scalars loaded once per program, and no position divides
  // out an image or channel. (Elementwise over every output, each tap also loaded the weight and
  // each position divided its four indices out in int64: EfficientNet's MBConv spent 2.35 ms in
  // its 5x5 one on the H200, six times the memory floor of 0.39 ms.)
  const bool planes = depthwise && out_shape[0] <= kMaxGridYz && out_shape[1] <= kMaxGridYz;
  if (planes) {
    out.Line("kf_c0 = tl.program_id(1)");
    out.Line("kf_img0 = tl.program_id(2)");
    out.Line("kf_p = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)");
    out.Line(fmt::format("kf_mask = kf_p < {}", out_h * out_w));
    out.Line(fmt::format("kf_ow = kf_p % {}", out_w));
    out.Line(fmt::format("kf_oh = kf_p // {}", out_w));
    out.Line("kf_c = kf_c0 + tl.zeros([BLOCK_SIZE], tl.int32)");
    out.Line("kf_img = kf_img0 + tl.zeros([BLOCK_SIZE], tl.int64)");
    out.Line(fmt::format("kf_base = kf_img0.to(tl.int64) * {} + kf_c0.to(tl.int64) * {}", sx[0], sx[1]));
  } else {
    out.Line("kf_offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)");
    out.Line(fmt::format("kf_mask = kf_offsets < {}", numel));
    out.Line(fmt::format("kf_ow = kf_offsets % {}", out_w));
    out.Line(fmt::format("kf_oh = (kf_offsets // {}) % {}", out_w, out_h));
    out.Line(fmt::format("kf_c = (kf_offsets // {}) % {}", out_w * out_h, out_shape[1]));
    out.Line(fmt::format("kf_img = kf_offsets // {}", out_w * out_h * out_shape[1]));
    out.Line(fmt::format("kf_base = kf_img * {} + kf_c * {}", sx[0], sx[1]));
  }
  int64_t window_h, window_w;
  // Adaptive windows that tile the input exactly are plain windows of in / out at that stride:
  // each starts at a multiple of its length, so Triton sees aligned contiguous taps.
  const bool uniform = adaptive && in_h % out_h == 0 && in_w % out_w == 0;
  if (uniform) {
    window_h = in_h / out_h;
    window_w = in_w / out_w;
    padding = {0, 0};
    out.Line(fmt::format("kf_h0 = kf_oh * {}", window_h));
    out.Line(fmt::format("kf_w0 = kf_ow * {}", window_w));
  } else if (adaptive) {
    // Window [floor(o * in / out), ceil((o + 1) * in / out)): exactly in / out long when out divides
    // in, else at most ceil(in / out) + 1.
    window_h = in_h % out_h == 0 ? in_h / out_h : (in_h + out_h - 1) / out_h + 1;
    window_w = in_w % out_w == 0 ? in_w / out_w : (in_w + out_w - 1) / out_w + 1;
    out.Line(fmt::format("kf_h0 = (kf_oh * {}) // {}", in_h, out_h));
    out.Line(fmt::format("kf_h1 = ((kf_oh + 1) * {} + {}) // {}", in_h, out_h - 1, out_h));
    out.Line(fmt::format("kf_w0 = (kf_ow * {}) // {}", in_w, out_w));
    out.Line(fmt::format("kf_w1 = ((kf_ow + 1) * {} + {}) // {}", in_w, out_w - 1, out_w));
  } else {
    window_h = kernel_size[0];
    window_w = kernel_size[1];
    out.Line(fmt::format("kf_h0 = kf_oh * {} - {}", stride[0], padding[0]));
    out.Line(fmt::format("kf_w0 = kf_ow * {} - {}", stride[1], padding[1]));
  }
  out.Line(fmt::format("kf_acc = tl.full([BLOCK_SIZE], {}, tl.float32)", is_max ? "float('-inf')" : "0.0"));
  // Without padding every window lies whole inside the input (no ceil_mode): a constant divisor.
  const bool whole_windows = uniform || (!adaptive && padding == ir::IntList{0, 0});
  const int64_t divisor = !is_max && !depthwise && whole_windows ? window_h * window_w : 0;
  if (!is_max && !depthwise && divisor == 0) out.Line("kf_count = tl.zeros([BLOCK_SIZE], tl.float32)");
  if (depthwise) {
    // Under planes the channel is the program's (kf_c0): its weight for a tap is one scalar load.
    const std::vector<int64_t>& sw = graph.TypeOf(*weight)->stride;
    const std::string tap_weight = planes ? fmt::format("tl.load(kf_w_ptr + kf_c0 * {} + kf_i * {} + kf_j * {})", sw[0], sw[2], sw[3])
                                          : fmt::format("tl.load(kf_w_ptr + kf_c * {} + kf_i * {} + kf_j * {}, mask=kf_mask, other=0.0)",
                                                        sw[0], sw[2], sw[3]);
    EmitTaps(out, window_h, window_w, dilation, in_h, in_w, sx, "0.0", "kf_acc += kf_v * " + tap_weight);
  } else if (is_max) {
    // Tap by tap, NaN propagating like ATen's. Measured on an H200 (bench/pool_probe.py, 3x3 stride
    // 2): 84% of the memory roofline, against 65% for the [outputs, taps] row tile, whose taps
    // padded to a power of two waste a quarter of its loads.
    EmitTaps(out, window_h, window_w, dilation, in_h, in_w, sx, "float('-inf')",
             "kf_acc = tl.maximum(kf_acc, kf_v, propagate_nan=tl.PropagateNan.ALL)");
  } else {
    PoolRows rows{adaptive && !uniform, count_include_pad, divisor, window_h, window_w, in_h, in_w, padding, dilation, sx};
    EmitPoolRows(out, rows);
  }
  if (depthwise && bias) out.Line(planes ? "kf_acc += tl.load(kf_bias_ptr + kf_c0)" : "kf_acc += tl.load(kf_bias_ptr + kf_c, mask=kf_mask, other=0.0)");
  if (divisor > 0) {
    out.Line(fmt::format("kf_acc = kf_acc / {}.0", divisor));
  } else if (!is_max && !depthwise) {
    out.Line("kf_acc = kf_acc / tl.maximum(kf_count, 1.0)");
  }
  out.Line(fmt::format("{} = kf_acc", VarName(graph, pool.ref())));
  RETURN_IF_ERROR(EmitEpilogue(out, graph, group, inputs, outputs, out_shape, {"kf_img", "kf_c", "kf_oh", "kf_ow"}, kernel));
  out.Close();
  kernel.source = out.text();

  std::vector<std::string> args = {VarName(graph, x)};
  if (weight) args.push_back(VarName(graph, *weight));
  if (bias) args.push_back(VarName(graph, *bias));
  for (const ir::NodeRef& ref : inputs) args.push_back(VarName(graph, ref));
  for (const ir::NodeRef& ref : outputs) {
    kernel.launch.push_back(EmptyLike(VarName(graph, ref), *graph.TypeOf(ref)));
    args.push_back(VarName(graph, ref));
  }
  // An average-pooling program holds a [outputs, taps] tile: as many elements as a pointwise block.
  // Tap-by-tap programs (max pooling, depthwise convolution) hold one element per output: max
  // pooling measured best at 256 outputs over 4 warps (bench/pool_probe.py). A depthwise program by
  // plane holds the plane's positions where they fit (EfficientNet's 7 x 7 planes: 64 lanes).
  const int64_t outputs_per_program = planes    ? std::min<int64_t>(block_size, std::max<int64_t>(32, NextPowerOfTwo(out_h * out_w)))
                                      : depthwise ? block_size
                                      : is_max    ? std::min<int64_t>(256, block_size)
                                                  : std::max<int64_t>(32, block_size / NextPowerOfTwo(window_w));
  // A plane's positions along axis 0, its channel and image along axes 1 and 2; else every output.
  const std::string grid = planes ? fmt::format("triton.cdiv({}, {}), {}, {}", out_h * out_w, outputs_per_program, out_shape[1], out_shape[0])
                                  : fmt::format("triton.cdiv({}, {}),", numel, outputs_per_program);
  args.push_back(fmt::format("BLOCK_SIZE={}", outputs_per_program));
  kernel.launch.push_back(fmt::format("{}[({})]({})", kernel.name, grid, fmt::join(args, ", ")));
  return kernel;
}

}  // namespace kforge::codegen
