// Readable, stable text for an IR graph: one line per value, in order, then one per mutation
// ("mutate    bn.running_mean <- %bn.3"), then the outputs. Strides
// appear only when not contiguous; output i of a multi-output node is "%name.i" (".0" included). Golden
// tests compare this text, so changing the format means updating the golden files.
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace kforge::ir {

std::string PrintGraph(const Graph& graph);
// "%x", "%native_layer_norm.1", or "%<dangling #7.0>" for a reference that resolves to nothing.
std::string PrintRef(const Graph& graph, NodeRef ref);
// A float as Python spells it: always visibly a float ("1.0", "1e-05"), "nan", "inf", "-inf".
std::string PrintFloat(double value);
// One argument as it appears in a printed call: "%x", "[1, 0]", "1e-05", "\"tanh\"", "None".
std::string PrintArgument(const Graph& graph, const Argument& argument);

}  // namespace kforge::ir
