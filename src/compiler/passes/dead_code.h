// Dead-code elimination: drops op nodes whose results reach no graph output (in a captured
// training-mode batch norm, the running-statistics updates, for instance). Inputs, parameters and
// constants always stay: they are the program's signature and its state dict.
#pragma once

#include "compiler/ir/graph.h"
#include "core/status.h"

namespace kforge::passes {

Result<ir::Graph> RemoveDeadCode(const ir::Graph& graph);

}  // namespace kforge::passes
