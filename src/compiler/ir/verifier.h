// Checks that a graph is well-formed: unique names, every reference resolves to an earlier value
// and an existing output, outputs exist, types are valid, the shape rules the compiler relies on
// hold (pointwise broadcasting, matmul shapes, views that keep the element count), and each
// mutation's new value exists and has its parameter's or buffer's shape and dtype.
// Run after import and after every pass. Returns InvalidArgument naming the first bad value.
#pragma once

#include "compiler/ir/graph.h"
#include "core/status.h"

namespace kforge::ir {

Status VerifyGraph(const Graph& graph);

}  // namespace kforge::ir
