// An IR op as the Python line that calls its ATen operator ("relu = torch.ops.aten.relu.default(x)"):
// how ModelNew runs the groups without a kernel and how a group becomes a task of its own.
// Tensors are named by the caller, so the same op prints alike under different names.
#pragma once

#include <functional>
#include <string>

#include "compiler/ir/graph.h"

namespace kforge::codegen {

using ValueNamer = std::function<std::string(ir::NodeRef)>;

// The call with its results assigned; a `device` variable must be in scope (device arguments,
// and numbers the compiler inlined into a pointwise op's tensor slots, refer to it).
std::string AtenCallLine(const ir::OpNode& op, const ValueNamer& name);

}  // namespace kforge::codegen
