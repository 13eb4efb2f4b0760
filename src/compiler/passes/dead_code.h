// Dead-code elimination: drops op nodes whose results reach neither a graph output nor a
// mutation's new value (a training-mode batch norm's running-statistics updates are live: forward()
// writes them back). Inputs, parameters and constants always stay: they are the program's
// signature and its state dict.
#pragma once

#include "compiler/ir/graph.h"
#include "core/status.h"

namespace kforge::passes {

Result<ir::Graph> RemoveDeadCode(const ir::Graph& graph);

}  // namespace kforge::passes
