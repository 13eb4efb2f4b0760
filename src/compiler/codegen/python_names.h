// Python spellings shared by the emitters: variable names for IR values and literals for scalars.
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace kforge::codegen {

// The variable holding `ref`: the value's name ("relu"), "<name>_<i>" for output i of a
// multi-output node, with "_" appended when it would clash with a name the emitters use.
std::string VarName(const ir::Graph& graph, ir::NodeRef ref);
// A float literal Python reads back exactly: "0.01", "20.0", "1e-05", "float('inf')".
std::string FloatLiteral(double value);

}  // namespace kforge::codegen
