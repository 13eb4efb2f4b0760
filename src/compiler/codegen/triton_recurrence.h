// Emits the kernel of a recurrent scan group (a kforge.rnn_scan node, passes/recurrence.h): one
// time step per launch, which forward() launches once per step in a loop (under graph replay, the
// loop is captured once). A program owns a tile of batch rows and hidden units: it multiplies the
// previous hidden state [B, H] (the initial state at the first step, else the output of the step
// before) by its rows of w_hh for every gate with tl.dot (KernelOptions::dot_precision), adds the
// step's input projection and the biases, applies the cell (LSTM, GRU, tanh or ReLU RNN), and
// writes the step's output, the final state h_T and, for an LSTM, the cell state, which it keeps in
// c_T between steps (each program reads and writes only its own tile of it).
#pragma once

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

Result<EmittedKernel> EmitRecurrenceKernel(const ir::Graph& graph, const passes::FusionGroup& group,
                                           const KernelOptions& options);

}  // namespace kforge::codegen
