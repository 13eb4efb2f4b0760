// Recurrent layers as ops the compiler has kernels for. Capture keeps aten.lstm, aten.gru,
// aten.rnn_tanh and aten.rnn_relu (.input) whole; this pass lowers them to
//   gx = addmm(b_ih, x.view(T * B, I), w_ih^T)        every time step's input projection, one GEMM
//   seq, h_n[, c_n] = kforge.rnn_scan.default([gx...], [w_ih...], [b_ih...], [w_hh...], [b_hh...], h0, c0,
//                                             cell=, directions=, batch_first=)
// a scan over "lanes" that run side by side, one kernel launch per step (codegen/triton_recurrence.h):
// - a stack of unidirectional layers (directions=false): lane 0 is the first layer and reads gx;
//   lane k > 0 is the layer above and projects lane k-1's output itself (w_ih[k-1], b_ih[k-1]).
//   Lane k runs time step t at launch t + k, so L layers of T steps take T + L - 1 launches
//   instead of L * T, each L layers wide. seq is the last layer's output.
// - a bidirectional layer (directions=true): lane 0 walks gx[0] forwards, lane 1 gx[1] backwards,
//   in the same T launches; seq holds both, [T, B, 2 * H], as the layer's output.
// seq is time-major [T, B, D * H] whatever the input's layout; a batch-first network's output is
// it permuted to [B, T, D * H], the strides torch's own decomposition gives it, which the ops after
// it were traced with. h0 and c0 are the lanes' rows of the initial states, [N, B, H]; h_n and c_n
// their final states, stacked as torch stacks them (layer-major, then direction). A layer it
// cannot lower (inter-layer dropout in training, projections, packed or unbatched input, non-fp32,
// or results whose shapes or strides would differ from the captured ones) is left as it was, a
// library call.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "core/status.h"

namespace kforge::passes {

// A kforge.rnn_scan node's keyword arguments, read and written only here.
struct RecurrenceAttributes {
  std::string cell = "lstm";  // lstm, gru, rnn_tanh, rnn_relu
  bool directions = false;    // the lanes are a bidirectional layer's two directions (else stacked layers)
  bool batch_first = false;   // gx's rows are [B, T] ordered (else [T, B]); seq is [T, B, D * H] either way

  // Gates per hidden unit: 4 (LSTM: i, f, g, o), 3 (GRU: r, z, n) or 1.
  int gates() const;
  bool has_cell_state() const { return cell == "lstm"; }
  std::vector<ir::NamedArgument> ToKwargs() const;
  static RecurrenceAttributes Of(const ir::OpNode& node);
};

// A kforge.rnn_scan node's tensors, parsed once: the kernel and the library call read these.
struct ScanOperands {
  std::vector<ir::NodeRef> gx;    // 1 (stacked layers) or 2 (directions), [rows, G * H] each
  std::vector<ir::NodeRef> w_ih;  // lanes 1..N-1 of a stack, [G * H, H]; empty for directions
  std::vector<ir::NodeRef> b_ih;  // as w_ih, or empty without biases
  std::vector<ir::NodeRef> w_hh;  // one per lane, [G * H, H]
  std::vector<ir::NodeRef> b_hh;  // one per lane, or empty without biases
  ir::NodeRef h0;                 // [N, B, H]
  std::optional<ir::NodeRef> c0;  // [N, B, H], an LSTM's

  int lanes() const { return static_cast<int>(w_hh.size()); }
  bool has_biases() const { return !b_hh.empty(); }
  std::vector<ir::Argument> ToArgs() const;
  // The operands of `node`, or why they are not a scan's (list lengths that do not agree with its
  // lane count, attributes and biases).
  static Result<ScanOperands> Of(const ir::OpNode& node);
};

// Stacks of at most this many layers share one scan (one branch per lane picks its weights).
inline constexpr int kMaxStackedLayers = 8;

Result<ir::Graph> LowerRecurrence(const ir::Graph& graph);

}  // namespace kforge::passes
