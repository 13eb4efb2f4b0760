// Writes the ModelNew of partial mode, for a task whose Model torch.export could not capture
// whole: the task's own code (its Model copied under another name, since a candidate may not name
// the reference) runs everything that stays PyTorch, and ModelNew's constructor replaces each
// captured submodule with a generated module that runs its kernels. The generated modules keep
// their parameters' and buffers' names, so the reference's state dict loads with strict=True.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen/model_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::codegen {

// A submodule of the task's Model captured on its own, under its qualified name ("layers.0"),
// with its parameters named relative to it ("0.weight").
struct SubmoduleGraph {
  std::string name;
  const ir::Graph* graph = nullptr;
  const passes::FusionPlan* plan = nullptr;
};

struct PartialModel {
  std::string task;            // named in the file's first line
  std::string forward_source;  // the task's code as the candidate carries it; defines forward_class
  std::string forward_class;   // the copy of the task's Model ("kf_task_Model")
  std::vector<SubmoduleGraph> submodules;
};

// Submodules whose graphs print alike (the blocks of a stack) share one generated class and its
// kernels. InvalidArgument without a submodule, for a forward_class that is not a Python name,
// and where WriteModelNew would fail.
Result<std::string> WritePartialModelNew(const PartialModel& model, const ModelWriterOptions& options,
                                         WriteNotes* notes = nullptr);

}  // namespace kforge::codegen
