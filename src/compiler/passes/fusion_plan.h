// Partitions a graph's op nodes into fusion groups, one generated kernel each: same-shape pointwise
// ops; reductions with the pointwise ops before and after them over the same rows (softmax, norms);
// matmuls and convolutions, and poolings (windows), with their pointwise epilogues; attention with the producers
// of its bias that only it reads; a recurrent scan alone; a flip or a gather along one dim (a copy at computed positions) with its same-shape pointwise
// consumers. Metadata-only views and every other op are groups of their own (views cost
// nothing; the rest are library calls).
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace kforge::passes {

struct FusionGroup {
  enum class Kind { kPointwise, kReduction, kMatmul, kWindow, kAttention, kRecurrence, kLibrary, kView };
  Kind kind = Kind::kLibrary;
  std::vector<ir::ValueId> nodes;  // op nodes, in graph order
  std::string name;                // an identifier, unique in its plan
};

struct FusionPlan {
  std::vector<FusionGroup> groups;  // a valid execution order
};

const char* ToString(FusionGroup::Kind kind);

FusionPlan PlanFusion(const ir::Graph& graph);

// The tensors a group reads that it does not compute, in first-use order, without repeats.
std::vector<ir::NodeRef> GroupInputs(const ir::Graph& graph, const FusionGroup& group);
// The tensors a group computes that are used after it (by another group, as a graph output or as
// a mutation's new value, which forward() writes back), in node order.
std::vector<ir::NodeRef> GroupOutputs(const ir::Graph& graph, const FusionGroup& group);

// Stable text for golden tests: one line per group with its nodes, inputs and outputs.
std::string PrintFusionPlan(const ir::Graph& graph, const FusionPlan& plan);

}  // namespace kforge::passes
