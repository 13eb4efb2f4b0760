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

// An int list argument expanded to `n` entries (a single value repeats), or `fallback` when absent or empty.
ir::IntList Expand(const ir::OpNode& op, ir::ArgSlot slot, size_t n, const ir::IntList& fallback) {
  const ir::Argument* arg = op.FindArgument(slot);
  ir::IntList list;
  if (arg != nullptr && arg->Is<ir::IntList>()) list = arg->As<ir::IntList>();
  if (arg != nullptr && arg->Is<int64_t>()) list = {arg->As<int64_t>()};
  if (list.empty()) return fallback;
  if (list.size() == 1) list.assign(n, list[0]);
  return list;
}

bool Flag(const ir::OpNode& op, ir::ArgSlot slot) {
  const ir::Argument* arg = op.FindArgument(slot);
  return arg != nullptr && arg->Is<bool>() && arg->As<bool>();
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
    kernel_size = Expand(pool, {1, "kernel_size"}, spatial, {});
    stride = Expand(pool, {2, "stride"}, spatial, kernel_size);
    padding = Expand(pool, {3, "padding"}, spatial, {0, 0});
    if (is_max) dilation = Expand(pool, {4, "dilation"}, spatial, {1, 1});
    if (kernel_size.size() != spatial || stride.size() != spatial || padding.size() != spatial || dilation.size() != spatial) {
      return Status::InvalidArgument(fmt::format("%{}: window arguments of the wrong length", pool.name));
    }
    if (Flag(pool, {is_max ? 5 : 4, "ceil_mode"})) return Status::InvalidArgument(fmt::format("%{}: ceil_mode", pool.name));
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
  out.Line("kf_offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)");
  out.Line(fmt::format("kf_mask = kf_offsets < {}", numel));
  out.Line(fmt::format("kf_ow = kf_offsets % {}", out_w));
  out.Line(fmt::format("kf_oh = (kf_offsets // {}) % {}", out_w, out_h));
  out.Line(fmt::format("kf_c = (kf_offsets // {}) % {}", out_w * out_h, out_shape[1]));
  out.Line(fmt::format("kf_img = kf_offsets // {}", out_w * out_h * out_shape[1]));
  out.Line(fmt::format("kf_base = kf_img * {} + kf_c * {}", sx[0], sx[1]));
  int64_t window_h, window_w;
  if (adaptive) {
    // Window [floor(o * in / out), ceil((o + 1) * in / out)); at most ceil(in / out) + 1 long.
    window_h = (in_h + out_h - 1) / out_h + 1;
    window_w = (in_w + out_w - 1) / out_w + 1;
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
  if (!is_max && !depthwise) out.Line("kf_count = tl.zeros([BLOCK_SIZE], tl.float32)");
  std::vector<int64_t> sw = weight ? graph.TypeOf(*weight)->stride : std::vector<int64_t>{};
  out.Open(fmt::format("for kf_i in tl.static_range({}):", window_h));
  out.Open(fmt::format("for kf_j in tl.static_range({}):", window_w));
  if (adaptive) {
    out.Line("kf_h = kf_h0 + kf_i");
    out.Line("kf_w = kf_w0 + kf_j");
    out.Line("kf_in = kf_mask & (kf_h < kf_h1) & (kf_w < kf_w1)");
  } else {
    out.Line(fmt::format("kf_h = kf_h0 + kf_i * {}", dilation[0]));
    out.Line(fmt::format("kf_w = kf_w0 + kf_j * {}", dilation[1]));
    out.Line(fmt::format("kf_in = kf_mask & (kf_h >= 0) & (kf_h < {}) & (kf_w >= 0) & (kf_w < {})", in_h, in_w));
  }
  out.Line(fmt::format("kf_v = tl.load(kf_x_ptr + kf_base + kf_h * {} + kf_w * {}, mask=kf_in, other={})", sx[2], sx[3],
                       is_max ? "float('-inf')" : "0.0"));
  if (depthwise) {
    out.Line(fmt::format("kf_acc += kf_v * tl.load(kf_w_ptr + kf_c * {} + kf_i * {} + kf_j * {}, mask=kf_mask, other=0.0)",
                         sw[0], sw[2], sw[3]));
  } else if (is_max) {
    out.Line("kf_acc = tl.where(kf_v > kf_acc, kf_v, kf_acc)");
  } else {
    out.Line("kf_acc += kf_v");
    if (adaptive || !count_include_pad) {
      out.Line("kf_count += tl.where(kf_in, 1.0, 0.0)");
    } else {
      // count_include_pad: the window clipped to the padded input counts, padding included.
      out.Line(fmt::format("kf_count += tl.where(kf_mask & (kf_h < {}) & (kf_w < {}), 1.0, 0.0)", in_h + padding[0],
                           in_w + padding[1]));
    }
  }
  out.Close();
  out.Close();
  if (depthwise && bias) out.Line("kf_acc += tl.load(kf_bias_ptr + kf_c, mask=kf_mask, other=0.0)");
  if (!is_max && !depthwise) out.Line("kf_acc = kf_acc / tl.maximum(kf_count, 1.0)");
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
  args.push_back(fmt::format("BLOCK_SIZE={}", block_size));
  kernel.launch.push_back(fmt::format("{}[(triton.cdiv({}, {}),)]({})", kernel.name, numel, block_size, fmt::join(args, ", ")));
  return kernel;
}

}  // namespace kforge::codegen
