// Fusion legality as small named predicates, each with its rule in one comment line. PlanFusion
// (fusion_plan.h) combines them; nothing here looks beyond the values it is given.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace kforge::passes {

// A tensor input of a value: every reference among its positional and keyword arguments.
std::vector<ir::NodeRef> TensorInputs(const ir::Value& value);

// Fusable pointwise: a known pointwise op with exactly one output whose every tensor input broadcasts to it.
bool IsFusablePointwise(const ir::Graph& graph, const ir::Value& value);
// Metadata view: a view the registry marks metadata-only (never copies), kept as its own kView group.
bool IsMetadataView(const ir::Value& value);
// Broadcast: `from` broadcasts to `to` when, aligned at the right, each dim is equal or 1 and `from` is no longer.
bool BroadcastsTo(const ir::Shape& from, const ir::Shape& to);
// Same iteration space: a pointwise op joins a group only when its output has the group's output shape.
bool SameIterationSpace(const ir::Value& op, const ir::Shape& group_shape);

}  // namespace kforge::passes
