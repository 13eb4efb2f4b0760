#include "compiler/codegen/triton_recurrence.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/codegen/python_names.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/passes/recurrence.h"

namespace kforge::codegen {
namespace {

// What the kernel computes, read off the scan node.
struct Scan {
  const ir::OpNode* node = nullptr;
  passes::RecurrenceAttributes attributes;
  ir::NodeRef gx, w_hh, h0;
  std::optional<ir::NodeRef> b_hh, c0;
  int64_t steps = 0, batch = 0, hidden = 0;
  // Element strides of one time step and one batch row in gx [rows, G * H] and in the output
  // (time-major [T, B, H]).
  int64_t gx_step = 0, gx_row = 0, out_step = 0, out_row = 0;
};

Result<Scan> ReadScan(const ir::Graph& graph, const ir::OpNode& node) {
  Scan s;
  s.node = &node;
  s.attributes = passes::RecurrenceAttributes::Of(node);
  if (node.args.size() != 5 || !node.args[0].Is<ir::NodeRef>() || !node.args[1].Is<ir::NodeRef>() || !node.args[3].Is<ir::NodeRef>()) {
    return Status::InvalidArgument(fmt::format("%{}: a scan without (gx, w_hh, b_hh, h0, c0)", node.name));
  }
  s.gx = node.args[0].As<ir::NodeRef>();
  s.w_hh = node.args[1].As<ir::NodeRef>();
  s.h0 = node.args[3].As<ir::NodeRef>();
  if (node.args[2].Is<ir::NodeRef>()) s.b_hh = node.args[2].As<ir::NodeRef>();
  if (node.args[4].Is<ir::NodeRef>()) s.c0 = node.args[4].As<ir::NodeRef>();
  if (s.attributes.has_cell_state() != s.c0.has_value() || node.num_outputs() != (s.c0 ? 3 : 2)) {
    return Status::InvalidArgument(fmt::format("%{}: the cell state does not match the {} cell", node.name, s.attributes.cell));
  }
  const ir::TensorType& out = node.outputs[0];
  const ir::TensorType& gx = *graph.TypeOf(s.gx);
  if (out.rank() != 3 || !out.is_contiguous() || !gx.is_contiguous() || gx.rank() != 2) {
    return Status::InvalidArgument(fmt::format("%{}: a scan over non-contiguous or unbatched tensors", node.name));
  }
  const bool bf = s.attributes.batch_first;
  s.steps = out.shape[0];
  s.batch = out.shape[1];
  s.hidden = out.shape[2];
  const int64_t gates = s.attributes.gates() * s.hidden;
  if (gx.shape[0] != s.steps * s.batch || gx.shape[1] != gates || graph.TypeOf(s.w_hh)->shape != ir::Shape{gates, s.hidden}) {
    return Status::InvalidArgument(fmt::format("%{}: gx or w_hh of another shape", node.name));
  }
  s.gx_step = bf ? gates : s.batch * gates;
  s.gx_row = bf ? s.steps * gates : gates;
  s.out_step = s.batch * s.hidden;
  s.out_row = s.hidden;
  return s;
}

class ScanWriter {
 public:
  ScanWriter(const ir::Graph& graph, const Scan& s, const KernelOptions& options, SourceWriter& out)
      : graph_(graph), s_(s), options_(options), out_(out) {}

  void Write() {
    const int gates = s_.attributes.gates();
    const std::vector<int64_t>& w = graph_.TypeOf(s_.w_hh)->stride;
    out_.Line(fmt::format("# One time step of a {} cell over a batch of {} and {} hidden units: {} gate{} of", s_.attributes.cell,
                          s_.batch, s_.hidden, gates, gates > 1 ? "s" : ""));
    out_.Line(fmt::format("# h_prev @ w_hh^T (tl.dot, input_precision=\"{}\") plus the step's input projection.",
                          options_.dot_precision));
    out_.Line("kf_b = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)");
    out_.Line("kf_j = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)");
    out_.Line(fmt::format("kf_b_valid = kf_b < {}", s_.batch));
    out_.Line(fmt::format("kf_j_valid = kf_j < {}", s_.hidden));
    out_.Line("kf_mask = kf_b_valid[:, None] & kf_j_valid[None, :]");
    for (int g = 0; g < gates; ++g) out_.Line(fmt::format("kf_acc{} = tl.zeros((BLOCK_B, BLOCK_H), dtype=tl.float32)", g));
    out_.Open(fmt::format("for kf_k0 in range(0, {}, BLOCK_K):", s_.hidden));
    out_.Line("kf_k = kf_k0 + tl.arange(0, BLOCK_K)");
    out_.Line(fmt::format("kf_k_valid = kf_k < {}", s_.hidden));
    out_.Line("kf_h = tl.load(kf_h_prev_ptr + kf_h_prev_offset + kf_b[:, None] * kf_h_prev_row + kf_k[None, :] * kf_h_prev_col, "
              "mask=kf_b_valid[:, None] & kf_k_valid[None, :], other=0.0)");
    for (int g = 0; g < gates; ++g) {
      out_.Line(fmt::format("kf_w = tl.load({} + ({} + kf_j[None, :]) * {} + kf_k[:, None] * {}, "
                            "mask=kf_k_valid[:, None] & kf_j_valid[None, :], other=0.0)",
                            Ptr(s_.w_hh), g * s_.hidden, w[0], w[1]));
      out_.Line(fmt::format("kf_acc{0} = tl.dot(kf_h, kf_w, kf_acc{0}, input_precision=\"{1}\")", g, options_.dot_precision));
    }
    out_.Close();
    out_.Line(fmt::format("kf_x = {} + kf_step * {} + kf_b[:, None] * {} + kf_j[None, :]", Ptr(s_.gx), s_.gx_step, s_.gx_row));
    for (int g = 0; g < gates; ++g) {
      out_.Line(fmt::format("kf_x{} = tl.load(kf_x + {}, mask=kf_mask, other=0.0)", g, g * s_.hidden));
      const std::string bias =
          s_.b_hh ? fmt::format("tl.load({} + {} + kf_j, mask=kf_j_valid, other=0.0)[None, :]", Ptr(*s_.b_hh), g * s_.hidden) : "0.0";
      out_.Line(fmt::format("kf_hh{} = kf_acc{} + {}", g, g, bias));
    }
    WriteCell();
    const ir::NodeRef out = s_.node->ref(0), last = s_.node->ref(1);
    out_.Line(fmt::format("tl.store({} + kf_step * {} + kf_b[:, None] * {} + kf_j[None, :], kf_h_new, mask=kf_mask)", Ptr(out),
                          s_.out_step, s_.out_row));
    out_.Line(fmt::format("tl.store({} + kf_b[:, None] * {} + kf_j[None, :], kf_h_new, mask=kf_mask)", Ptr(last), s_.hidden));
  }

 private:
  std::string Ptr(ir::NodeRef ref) const { return VarName(graph_, ref) + "_ptr"; }

  void WriteCell() {
    const std::string& cell = s_.attributes.cell;
    if (cell == "lstm") {
      out_.Line("# LSTM (gates i, f, g, o): c = f * c_prev + i * g; h = o * tanh(c).");
      out_.Line("kf_i = tl.sigmoid(kf_x0 + kf_hh0)");
      out_.Line("kf_f = tl.sigmoid(kf_x1 + kf_hh1)");
      out_.Line("kf_g = _kf_tanh(kf_x2 + kf_hh2)");
      out_.Line("kf_o = tl.sigmoid(kf_x3 + kf_hh3)");
      out_.Line("kf_c_prev = tl.load(kf_c_prev_ptr + kf_b[:, None] * kf_c_prev_row + kf_j[None, :] * kf_c_prev_col, mask=kf_mask, "
                "other=0.0)");
      out_.Line("kf_c = kf_f * kf_c_prev + kf_i * kf_g");
      out_.Line(fmt::format("tl.store({} + kf_b[:, None] * {} + kf_j[None, :], kf_c, mask=kf_mask)", Ptr(s_.node->ref(2)), s_.hidden));
      out_.Line("kf_h_new = kf_o * _kf_tanh(kf_c)");
    } else if (cell == "gru") {
      out_.Line("# GRU (gates r, z, n): n = tanh(x_n + r * (w_hn h + b_hn)); h = (1 - z) * n + z * h_prev.");
      out_.Line("kf_r = tl.sigmoid(kf_x0 + kf_hh0)");
      out_.Line("kf_z = tl.sigmoid(kf_x1 + kf_hh1)");
      out_.Line("kf_n = _kf_tanh(kf_x2 + kf_r * kf_hh2)");
      out_.Line("kf_h_old = tl.load(kf_h_prev_ptr + kf_h_prev_offset + kf_b[:, None] * kf_h_prev_row + kf_j[None, :] * kf_h_prev_col, "
                "mask=kf_mask, other=0.0)");
      out_.Line("kf_h_new = (1.0 - kf_z) * kf_n + kf_z * kf_h_old");
    } else if (cell == "rnn_relu") {
      out_.Line("kf_h_new = tl.maximum(kf_x0 + kf_hh0, 0.0)");
    } else {
      out_.Line("kf_h_new = _kf_tanh(kf_x0 + kf_hh0)");
    }
  }

  const ir::Graph& graph_;
  const Scan& s_;
  const KernelOptions& options_;
  SourceWriter& out_;
};

}  // namespace

// The launch argument that is `first` at the first step and `later` after it.
std::string FirstOr(const std::string& first, const std::string& later) {
  return first == later ? first : fmt::format("{} if kf_s == 0 else {}", first, later);
}

Result<EmittedKernel> EmitRecurrenceKernel(const ir::Graph& graph, const passes::FusionGroup& group, const KernelOptions& options) {
  if (group.nodes.size() != 1) return Status::InvalidArgument(fmt::format("group {}: a scan group of several nodes", group.name));
  const auto& node = graph.value(group.nodes.front()).As<ir::OpNode>();
  ASSIGN_OR_RETURN(Scan s, ReadScan(graph, node));
  const bool lstm = s.attributes.has_cell_state();
  EmittedKernel kernel;
  kernel.name = "scan_" + group.name;
  kernel.helpers = {"_kf_tanh"};
  kernel.repeats = static_cast<int>(s.steps);

  // The step's previous hidden state (and cell state) are read through a pointer, an offset and
  // strides the launch picks: the initial state at the first step, then the output of the step before.
  std::vector<std::string> params = {VarName(graph, s.gx) + "_ptr", VarName(graph, s.w_hh) + "_ptr"};
  if (s.b_hh) params.push_back(VarName(graph, *s.b_hh) + "_ptr");
  params.insert(params.end(), {"kf_h_prev_ptr", "kf_h_prev_offset", "kf_h_prev_row", "kf_h_prev_col"});
  if (lstm) params.insert(params.end(), {"kf_c_prev_ptr", "kf_c_prev_row", "kf_c_prev_col"});
  for (int32_t i = 0; i < node.num_outputs(); ++i) params.push_back(VarName(graph, node.ref(i)) + "_ptr");
  params.insert(params.end(), {"kf_step", "BLOCK_B: tl.constexpr", "BLOCK_H: tl.constexpr", "BLOCK_K: tl.constexpr"});

  SourceWriter out;
  OpenKernel(out, kernel.name, params, graph, group);
  ScanWriter(graph, s, options, out).Write();
  out.Close();
  kernel.source = out.text();

  // Programs: batch tiles of at least 16 rows (tl.dot's smallest side) and 16 hidden units each, so
  // that a small batch still spreads the step over H / 16 programs, each streaming its w_hh rows.
  const int64_t block_b = std::min<int64_t>(NextPowerOfTwo(s.batch, 16), 64);
  const int64_t block_h = s.hidden >= 2048 ? 32 : 16;
  const int64_t block_k = std::min<int64_t>(NextPowerOfTwo(s.hidden, 16), 64);
  const std::string h0 = VarName(graph, s.h0), seq = VarName(graph, node.ref(0));
  const std::vector<int64_t>& h0_stride = graph.TypeOf(s.h0)->stride;
  for (int32_t i = 0; i < node.num_outputs(); ++i) kernel.launch.push_back(EmptyLike(VarName(graph, node.ref(i)), node.outputs[i]));
  const bool reverse = s.attributes.reverse;
  kernel.launch.push_back(fmt::format("for kf_s in range({}):", s.steps));
  kernel.launch.push_back(reverse ? fmt::format("    kf_t = {} - kf_s", s.steps - 1) : "    kf_t = kf_s");
  std::vector<std::string> args = {VarName(graph, s.gx), VarName(graph, s.w_hh)};
  if (s.b_hh) args.push_back(VarName(graph, *s.b_hh));
  args.push_back(FirstOr(h0, seq));
  args.push_back(FirstOr("0", fmt::format("(kf_t {} 1) * {}", reverse ? "+" : "-", s.out_step)));
  args.push_back(FirstOr(std::to_string(h0_stride[0]), std::to_string(s.out_row)));
  args.push_back(FirstOr(std::to_string(h0_stride[1]), "1"));
  if (lstm) {
    const std::string c0 = VarName(graph, *s.c0), c_last = VarName(graph, node.ref(2));
    const std::vector<int64_t>& c0_stride = graph.TypeOf(*s.c0)->stride;
    args.push_back(FirstOr(c0, c_last));
    args.push_back(FirstOr(std::to_string(c0_stride[0]), std::to_string(s.hidden)));
    args.push_back(FirstOr(std::to_string(c0_stride[1]), "1"));
  }
  for (int32_t i = 0; i < node.num_outputs(); ++i) args.push_back(VarName(graph, node.ref(i)));
  args.push_back("kf_t");
  args.push_back(fmt::format("BLOCK_B={}, BLOCK_H={}, BLOCK_K={}", block_b, block_h, block_k));
  kernel.launch.push_back(fmt::format("    {}[({}, {})]({})", kernel.name, (s.batch + block_b - 1) / block_b,
                                      (s.hidden + block_h - 1) / block_h, fmt::join(args, ", ")));
  return kernel;
}

}  // namespace kforge::codegen
