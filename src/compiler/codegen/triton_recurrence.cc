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
  passes::ScanOperands operands;
  int lanes = 1;
  int64_t steps = 0, batch = 0, hidden = 0;
  // Element strides of one time step and one batch row in gx [rows, G * H].
  int64_t gx_step = 0, gx_row = 0;
  // Every lane's w_hh (and every stacked lane's w_ih) has these strides.
  std::vector<int64_t> w_hh_stride, w_ih_stride;

  bool stacked() const { return !attributes.directions && lanes > 1; }
  int64_t state_size() const { return batch * hidden; }  // one lane's [B, H]
};

Status SameShapeAndStrides(const ir::Graph& graph, const ir::OpNode& node, const std::vector<ir::NodeRef>& tensors,
                           const ir::Shape& shape) {
  for (const ir::NodeRef& tensor : tensors) {
    const ir::TensorType& type = *graph.TypeOf(tensor);
    if (type.shape != shape || type.stride != graph.TypeOf(tensors[0])->stride) {
      return Status::InvalidArgument(fmt::format("%{}: lanes' weights of other shapes or strides", node.name));
    }
  }
  return Status::Ok();
}

Result<Scan> ReadScan(const ir::Graph& graph, const ir::OpNode& node) {
  Scan s;
  s.node = &node;
  s.attributes = passes::RecurrenceAttributes::Of(node);
  ASSIGN_OR_RETURN(s.operands, passes::ScanOperands::Of(node));
  s.lanes = s.operands.lanes();
  const ir::TensorType& seq = node.outputs[0];
  if (seq.rank() != 3 || !seq.is_contiguous()) return Status::InvalidArgument(fmt::format("%{}: a non-contiguous output", node.name));
  s.steps = seq.shape[0];
  s.batch = seq.shape[1];
  s.hidden = seq.shape[2] / (s.attributes.directions ? 2 : 1);
  const int64_t gates = s.attributes.gates() * s.hidden;
  for (const ir::NodeRef& gx : s.operands.gx) {
    const ir::TensorType& type = *graph.TypeOf(gx);
    if (type.rank() != 2 || !type.is_contiguous() || type.shape != ir::Shape{s.steps * s.batch, gates}) {
      return Status::InvalidArgument(fmt::format("%{}: gx of another shape or layout", node.name));
    }
  }
  RETURN_IF_ERROR(SameShapeAndStrides(graph, node, s.operands.w_hh, {gates, s.hidden}));
  RETURN_IF_ERROR(SameShapeAndStrides(graph, node, s.operands.w_ih, {gates, s.hidden}));
  const ir::Shape states = {s.lanes, s.batch, s.hidden};
  if (graph.TypeOf(s.operands.h0)->shape != states || (s.operands.c0 && graph.TypeOf(*s.operands.c0)->shape != states)) {
    return Status::InvalidArgument(fmt::format("%{}: initial states of another shape", node.name));
  }
  for (int32_t i = 1; i < node.num_outputs(); ++i) {
    if (node.outputs[i].shape != states || !node.outputs[i].is_contiguous()) {
      return Status::InvalidArgument(fmt::format("%{}: final states of another shape or layout", node.name));
    }
  }
  s.w_hh_stride = graph.TypeOf(s.operands.w_hh[0])->stride;
  if (!s.operands.w_ih.empty()) s.w_ih_stride = graph.TypeOf(s.operands.w_ih[0])->stride;
  const bool bf = s.attributes.batch_first;
  s.gx_step = bf ? gates : s.batch * gates;
  s.gx_row = bf ? s.steps * gates : gates;
  return s;
}

class ScanWriter {
 public:
  ScanWriter(const ir::Graph& graph, const Scan& s, const KernelOptions& options, SourceWriter& out)
      : graph_(graph), s_(s), options_(options), out_(out) {}

  void Write() {
    const int gates = s_.attributes.gates();
    out_.Line(fmt::format("# One time step of a {} cell over a batch of {} and {} hidden units, {}: {} gate{} of", s_.attributes.cell,
                          s_.batch, s_.hidden, LanesPhrase(), gates, gates > 1 ? "s" : ""));
    out_.Line(fmt::format("# h_prev @ w_hh^T (tl.dot, input_precision=\"{}\") plus the step's input projection.",
                          options_.dot_precision));
    out_.Line("kf_lane = tl.program_id(2)");
    if (s_.stacked()) {
      out_.Line("# Lane k (layer k) runs step s - k: its input is the output lane k - 1 wrote at the launch before.");
      out_.Line("kf_n = kf_s - kf_lane");
      out_.Open(fmt::format("if (kf_n >= 0) & (kf_n < {}):", s_.steps));
    } else {
      out_.Line("kf_n = kf_s");
    }
    if (s_.attributes.directions) {
      out_.Line("# Lane 1 (the reverse direction) walks the time steps last to first.");
      out_.Line(fmt::format("kf_t = kf_n + kf_lane * ({} - 2 * kf_n)", s_.steps - 1));
    } else {
      out_.Line("kf_t = kf_n");
    }
    out_.Line("kf_b = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)");
    out_.Line("kf_j = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)");
    out_.Line(fmt::format("kf_b_valid = kf_b < {}", s_.batch));
    out_.Line(fmt::format("kf_j_valid = kf_j < {}", s_.hidden));
    out_.Line("kf_mask = kf_b_valid[:, None] & kf_j_valid[None, :]");
    out_.Line("kf_tile = kf_b[:, None] * " + std::to_string(s_.hidden) + " + kf_j[None, :]");
    std::vector<std::pair<std::string, std::vector<ir::NodeRef>>> hh = {{"kf_w_hh", s_.operands.w_hh}};
    if (s_.operands.has_biases()) hh.push_back({"kf_b_hh", s_.operands.b_hh});
    SelectByLane(hh, 0);
    out_.Line("# The lane's hidden state of the step before: the other slot of its ring.");
    out_.Line(fmt::format("kf_h_prev = kf_ring_ptr + (kf_lane * 2 + (kf_n + 1) % 2) * {}", s_.state_size()));
    Projection("kf_h_prev", "kf_w_hh", s_.w_hh_stride, "kf_hh", s_.operands.has_biases() ? "kf_b_hh" : "");
    WriteInput();
    WriteCell();
    const std::string lane_state = fmt::format("kf_lane * {} + kf_tile", s_.state_size());
    out_.Line(fmt::format("tl.store(kf_ring_ptr + (kf_lane * 2 + kf_n % 2) * {} + kf_tile, kf_h_new, mask=kf_mask)", s_.state_size()));
    const ir::NodeRef seq = s_.node->ref(0), last = s_.node->ref(1);
    if (s_.attributes.directions) {
      out_.Line(fmt::format("tl.store({} + kf_t * {} + kf_b[:, None] * {} + kf_lane * {} + kf_j[None, :], kf_h_new, mask=kf_mask)",
                            Ptr(seq), 2 * s_.state_size(), 2 * s_.hidden, s_.hidden));
    } else {
      const std::string last_lane = s_.stacked() ? fmt::format(" & (kf_lane == {})", s_.lanes - 1) : "";
      out_.Line(fmt::format("tl.store({} + kf_t * {} + kf_tile, kf_h_new, mask=kf_mask{})", Ptr(seq), s_.state_size(), last_lane));
    }
    out_.Line(fmt::format("tl.store({} + {}, kf_h_new, mask=kf_mask & (kf_n == {}))", Ptr(last), lane_state, s_.steps - 1));
    if (s_.stacked()) out_.Close();
  }

 private:
  std::string Ptr(ir::NodeRef ref) const { return VarName(graph_, ref) + "_ptr"; }

  std::string LanesPhrase() const {
    if (s_.attributes.directions) return "both directions side by side";
    if (s_.lanes > 1) return fmt::format("{} stacked layers side by side", s_.lanes);
    return "one layer";
  }

  // Each variable names lane `first`'s tensor of its list, then, on the lanes after, that lane's.
  void SelectByLane(const std::vector<std::pair<std::string, std::vector<ir::NodeRef>>>& variables, int first) {
    for (const auto& [variable, tensors] : variables) out_.Line(fmt::format("{} = {}", variable, Ptr(tensors[0])));
    for (size_t i = 1; i < variables[0].second.size(); ++i) {
      out_.Open(fmt::format("if kf_lane == {}:", first + static_cast<int>(i)));
      for (const auto& [variable, tensors] : variables) out_.Line(fmt::format("{} = {}", variable, Ptr(tensors[i])));
      out_.Close();
    }
  }

  // `result`<g> = `state` [B, H] @ `weights`' rows of gate g, transposed (+ `bias`), for every gate.
  void Projection(const std::string& state, const std::string& weights, const std::vector<int64_t>& w, const std::string& result,
                  const std::string& bias) {
    const int gates = s_.attributes.gates();
    for (int g = 0; g < gates; ++g) out_.Line(fmt::format("{}{} = tl.zeros((BLOCK_B, BLOCK_H), dtype=tl.float32)", result, g));
    out_.Open(fmt::format("for kf_k0 in range(0, {}, BLOCK_K):", s_.hidden));
    out_.Line("kf_k = kf_k0 + tl.arange(0, BLOCK_K)");
    out_.Line(fmt::format("kf_k_valid = kf_k < {}", s_.hidden));
    out_.Line(fmt::format("kf_u = tl.load({} + kf_b[:, None] * {} + kf_k[None, :], mask=kf_b_valid[:, None] & kf_k_valid[None, :], "
                          "other=0.0)",
                          state, s_.hidden));
    for (int g = 0; g < gates; ++g) {
      out_.Line(fmt::format("kf_w = tl.load({} + ({} + kf_j[None, :]) * {} + kf_k[:, None] * {}, "
                            "mask=kf_k_valid[:, None] & kf_j_valid[None, :], other=0.0)",
                            weights, g * s_.hidden, w[0], w[1]));
      out_.Line(fmt::format("{0}{1} = tl.dot(kf_u, kf_w, {0}{1}, input_precision=\"{2}\")", result, g, options_.dot_precision));
    }
    out_.Close();
    if (bias.empty()) return;
    for (int g = 0; g < gates; ++g) {
      out_.Line(fmt::format("{0}{1} = {0}{1} + tl.load({2} + {3} + kf_j, mask=kf_j_valid, other=0.0)[None, :]", result, g, bias,
                            g * s_.hidden));
    }
  }

  // kf_x<g>: the step's input projection, gate by gate.
  void WriteInput() {
    const int gates = s_.attributes.gates();
    const auto load_gx = [&](const std::string& gx) {
      out_.Line(fmt::format("kf_gx = {} + kf_t * {} + kf_b[:, None] * {} + kf_j[None, :]", gx, s_.gx_step, s_.gx_row));
      for (int g = 0; g < gates; ++g) out_.Line(fmt::format("kf_x{} = tl.load(kf_gx + {}, mask=kf_mask, other=0.0)", g, g * s_.hidden));
    };
    if (!s_.stacked()) {
      std::vector<std::pair<std::string, std::vector<ir::NodeRef>>> gx = {{"kf_gx_ptr", s_.operands.gx}};
      SelectByLane(gx, 0);
      load_gx("kf_gx_ptr");
      return;
    }
    out_.Line("# The first layer's input projection is gx; a layer above projects the output of the one below.");
    out_.Open("if kf_lane == 0:");
    load_gx(Ptr(s_.operands.gx[0]));
    out_.Close();
    out_.Open("else:");
    std::vector<std::pair<std::string, std::vector<ir::NodeRef>>> ih = {{"kf_w_ih", s_.operands.w_ih}};
    if (s_.operands.has_biases()) ih.push_back({"kf_b_ih", s_.operands.b_ih});
    SelectByLane(ih, 1);
    out_.Line(fmt::format("kf_below = kf_ring_ptr + ((kf_lane - 1) * 2 + kf_n % 2) * {}", s_.state_size()));
    Projection("kf_below", "kf_w_ih", s_.w_ih_stride, "kf_x", s_.operands.has_biases() ? "kf_b_ih" : "");
    out_.Close();
  }

  void WriteCell() {
    const std::string& cell = s_.attributes.cell;
    if (cell == "lstm") {
      const std::string c = fmt::format("{} + kf_lane * {} + kf_tile", Ptr(s_.node->ref(2)), s_.state_size());
      out_.Line("# LSTM (gates i, f, g, o): c = f * c_prev + i * g; h = o * tanh(c).");
      out_.Line("kf_i = tl.sigmoid(kf_x0 + kf_hh0)");
      out_.Line("kf_f = tl.sigmoid(kf_x1 + kf_hh1)");
      out_.Line("kf_g = _kf_tanh(kf_x2 + kf_hh2)");
      out_.Line("kf_o = tl.sigmoid(kf_x3 + kf_hh3)");
      out_.Line(fmt::format("kf_c_prev = tl.load({}, mask=kf_mask, other=0.0)", c));
      out_.Line("kf_c = kf_f * kf_c_prev + kf_i * kf_g");
      out_.Line(fmt::format("tl.store({}, kf_c, mask=kf_mask)", c));
      out_.Line("kf_h_new = kf_o * _kf_tanh(kf_c)");
    } else if (cell == "gru") {
      out_.Line("# GRU (gates r, z, n): n = tanh(x_n + r * (w_hn h + b_hn)); h = (1 - z) * n + z * h_prev.");
      out_.Line("kf_r = tl.sigmoid(kf_x0 + kf_hh0)");
      out_.Line("kf_z = tl.sigmoid(kf_x1 + kf_hh1)");
      out_.Line("kf_n_gate = _kf_tanh(kf_x2 + kf_r * kf_hh2)");
      out_.Line("kf_h_old = tl.load(kf_h_prev + kf_tile, mask=kf_mask, other=0.0)");
      out_.Line("kf_h_new = (1.0 - kf_z) * kf_n_gate + kf_z * kf_h_old");
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

Result<EmittedKernel> EmitRecurrenceKernel(const ir::Graph& graph, const passes::FusionGroup& group, const KernelOptions& options) {
  if (group.nodes.size() != 1) return Status::InvalidArgument(fmt::format("group {}: a scan group of several nodes", group.name));
  const auto& node = graph.value(group.nodes.front()).As<ir::OpNode>();
  ASSIGN_OR_RETURN(Scan s, ReadScan(graph, node));
  const passes::ScanOperands& operands = s.operands;
  EmittedKernel kernel;
  kernel.name = "scan_" + group.name;
  kernel.helpers = {"_kf_tanh"};
  const int64_t launches = s.steps + (s.stacked() ? s.lanes - 1 : 0);
  kernel.repeats = static_cast<int>(launches);

  std::vector<ir::NodeRef> tensors = operands.gx;
  for (const std::vector<ir::NodeRef>* list : {&operands.w_ih, &operands.b_ih, &operands.w_hh, &operands.b_hh}) {
    tensors.insert(tensors.end(), list->begin(), list->end());
  }
  std::vector<std::string> params, args;
  for (const ir::NodeRef& tensor : tensors) {
    params.push_back(VarName(graph, tensor) + "_ptr");
    args.push_back(VarName(graph, tensor));
  }
  const std::string seq = VarName(graph, node.ref(0)), ring = seq + "_ring";
  params.push_back("kf_ring_ptr");
  args.push_back(ring);
  for (int32_t i = 0; i < node.num_outputs(); ++i) {
    params.push_back(VarName(graph, node.ref(i)) + "_ptr");
    args.push_back(VarName(graph, node.ref(i)));
  }
  params.insert(params.end(), {"kf_s", "BLOCK_B: tl.constexpr", "BLOCK_H: tl.constexpr", "BLOCK_K: tl.constexpr"});

  SourceWriter out;
  OpenKernel(out, kernel.name, params, graph, group);
  ScanWriter(graph, s, options, out).Write();
  out.Close();
  kernel.source = out.text();

  // Programs: batch tiles of at least 16 rows (tl.dot's smallest side) and 16 hidden units each, so
  // that a small batch still spreads the step over H / 16 programs per lane, each streaming its
  // w_hh rows.
  const int64_t block_b = std::min<int64_t>(NextPowerOfTwo(s.batch, 16), 64);
  const int64_t block_h = s.hidden >= 2048 ? 32 : 16;
  const int64_t block_k = std::min<int64_t>(NextPowerOfTwo(s.hidden, 16), 64);
  for (int32_t i = 0; i < node.num_outputs(); ++i) kernel.launch.push_back(EmptyLike(VarName(graph, node.ref(i)), node.outputs[i]));
  kernel.launch.push_back(fmt::format("{} = torch.empty(({}, 2, {}, {}), dtype=torch.float32, device=device)", ring, s.lanes, s.batch,
                                      s.hidden));
  kernel.launch.push_back(fmt::format("{}[:, 1].copy_({})  # the hidden states of the step before the first", ring,
                                      VarName(graph, operands.h0)));
  if (operands.c0) {
    kernel.launch.push_back(fmt::format("{}.copy_({})  # the cell states the first step reads", VarName(graph, node.ref(2)),
                                        VarName(graph, *operands.c0)));
  }
  args.push_back("kf_s");
  args.push_back(fmt::format("BLOCK_B={}, BLOCK_H={}, BLOCK_K={}", block_b, block_h, block_k));
  kernel.launch.push_back(fmt::format("for kf_s in range({}):", launches));
  kernel.launch.push_back(fmt::format("    {}[({}, {}, {})]({})", kernel.name, (s.batch + block_b - 1) / block_b,
                                      (s.hidden + block_h - 1) / block_h, s.lanes, fmt::join(args, ", ")));
  return kernel;
}

}  // namespace kforge::codegen
