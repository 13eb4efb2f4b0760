// Emits the kernel of a recurrent scan group (a kforge.rnn_scan node, passes/recurrence.h): one
// launch per step, which forward() runs in a loop (under graph replay, the loop is captured once).
// A program owns a tile of batch rows and hidden units of one lane (grid axis 2): it multiplies
// the lane's previous hidden state [B, H] by its rows of w_hh for every gate with tl.dot
// (KernelOptions::dot_precision), adds the step's input projection (read from gx, or, for a
// stacked layer above the first, computed from the layer below's output of the same time step
// with its own w_ih) and the biases, applies the cell (LSTM, GRU, tanh or ReLU RNN), and writes
// the step's output. The lanes' hidden states live in a ring of two slots per lane (the step
// before, read whole by every program of the lane, and this step's), filled with h0 before the
// first launch; an LSTM's cell state lives in c_n, filled with c0, each program reading and
// writing only its own tile of it.
#pragma once

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

Result<EmittedKernel> EmitRecurrenceKernel(const ir::Graph& graph, const passes::FusionGroup& group,
                                           const KernelOptions& options);

}  // namespace kforge::codegen
