// A fusion group as a task of its own: a KernelBench-format program whose `Model` computes the
// group's nodes (ATen calls) from the tensors it reads, at the captured shapes and dtypes, with no
// parameters. Kernel writers can then work on one group at a time, and a ModelNew can call their
// verified result in the group's place (ModelWriterOptions::substitutes). Tensors are named by
// position (in0.., v0..), so groups that compute the same thing on the same shapes have the same
// source and signature: one kernel serves them all.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

struct GroupTask {
  std::string group;                 // the group's name in the plan
  std::string source;                // the task file
  std::vector<ir::NodeRef> inputs;   // the forward's arguments, in order
  std::vector<ir::NodeRef> outputs;  // what it returns, in order
  std::string signature;             // the source's sha256
};

// InvalidArgument for a view or an empty group, a group without outputs, or a constant that is
// not a scalar.
Result<GroupTask> WriteGroupTask(const ir::Graph& graph, const passes::FusionGroup& group);

}  // namespace kforge::codegen
