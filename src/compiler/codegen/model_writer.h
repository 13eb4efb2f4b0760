// Writes a standalone Python module for a planned graph: one Triton kernel per pointwise,
// reduction and matmul group, and a `ModelNew(nn.Module)` whose parameters and buffers carry the
// original state-dict names and whose forward runs the groups in plan order (kernels, or ATen
// calls for views and the rest).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <string>

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

// A group computed by a module written for it alone (a verified kernel for its GroupTask) instead
// of a generated kernel: `module_source` defines `class_name`, whose forward takes the group's
// inputs in order and returns its outputs; its top-level names must not clash with the file's.
struct GroupSubstitute {
  std::string module_source;
  std::string class_name;
  std::vector<ir::NodeRef> inputs;
  std::vector<ir::NodeRef> outputs;
};

struct ModelWriterOptions {
  int block_size = 1024;  // pointwise kernels' elements per program
  KernelOptions kernel;
  // Emit a group codegen cannot translate as ATen calls (with a comment saying why) instead of
  // failing.
  bool fallback_unsupported = false;
  // By group name.
  std::map<std::string, GroupSubstitute> substitutes;
};

// Fails (InvalidArgument) on a group it cannot translate unless `fallback_unsupported`,
// and on a constant it cannot inline (a non-scalar tensor).
Result<std::string> WriteModelNew(const ir::Graph& graph, const passes::FusionPlan& plan,
                                  const ModelWriterOptions& options = {});

}  // namespace kforge::codegen
