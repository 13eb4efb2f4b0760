// Recurrent layers as ops the compiler has kernels for. Capture keeps aten.lstm, aten.gru,
// aten.rnn_tanh and aten.rnn_relu (.input) whole; this pass lowers each, per layer and direction, to
//   gx = addmm(b_ih, x.view(T * B, I), w_ih^T)        every time step's input projection, one GEMM
//   out, h_T[, c_T] = kforge.rnn_scan.default(gx, w_hh, b_hh, h_0[, c_0], cell=, reverse=, batch_first=)
// where the scan walks the time steps (one kernel launch each, codegen/triton_recurrence.h): the
// hidden projection h @ w_hh^T and the cell's gates per step. Its output is time-major [T, B, H]
// whatever the input's layout. A bidirectional layer's two outputs are concatenated on the feature
// dim and feed the next layer; a batch-first layer's final output is that [T, B, D * H] permuted
// to [B, T, D * H], the strides torch's own decomposition gives it, which the ops after it were
// traced with; h_n (and c_n) stack the final states of every layer and direction. A layer it
// cannot lower (inter-layer dropout in training, projections, packed or unbatched input,
// non-fp32, or results whose shapes or strides would differ from the captured ones) is left as it
// was, a library call.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "core/status.h"

namespace kforge::passes {

// A kforge.rnn_scan node's keyword arguments, read and written only here.
struct RecurrenceAttributes {
  std::string cell = "lstm";  // lstm, gru, rnn_tanh, rnn_relu
  bool reverse = false;       // walks the time steps last to first (a bidirectional layer's second direction)
  bool batch_first = false;   // gx's rows are [B, T] ordered (else [T, B]); out is [T, B, H] either way

  // Gates per hidden unit: 4 (LSTM: i, f, g, o), 3 (GRU: r, z, n) or 1.
  int gates() const;
  bool has_cell_state() const { return cell == "lstm"; }
  std::vector<ir::NamedArgument> ToKwargs() const;
  static RecurrenceAttributes Of(const ir::OpNode& node);
};

Result<ir::Graph> LowerRecurrence(const ir::Graph& graph);

}  // namespace kforge::passes
