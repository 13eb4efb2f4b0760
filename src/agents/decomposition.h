// Decomposition and composition for the kernel writers. The compiler's fusion groups are the
// subgraphs: each becomes a task of its own (codegen::WriteGroupTask), groups computing the same
// thing on the same shapes share one part, so each distinct kernel is written once; the verified
// parts are then composed into one ModelNew by the model writer — deterministic code, not a
// model's rewrite — which the evaluator judges end to end. The router picks what to try first.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/group_task.h"
#include "compiler/codegen/model_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge {

struct DecompositionPart {
  // The task of every group with the part's signature, in plan order: the same source, each with
  // its own group's tensors as inputs and outputs.
  std::vector<codegen::GroupTask> groups;

  // The part's task: its first group's.
  const codegen::GroupTask& task() const { return groups.front(); }
  std::vector<std::string> GroupNames() const;
};

// The plan's groups that compute something (views are left to the composed ModelNew), as
// distinct parts in plan order. InvalidArgument when a group cannot stand alone as a task.
Result<std::vector<DecompositionPart>> DecomposePlan(const ir::Graph& graph, const passes::FusionPlan& plan);

enum class Route { kWholeProgram, kDecomposition };
const char* ToString(Route route);

// Whole-program generation first for a graph of at most kMaxGroupsForWholeProgram kernel groups
// without library calls (one model reply can hold that much); decomposition first otherwise. The
// other route is the fallback when the first yields no accepted candidate.
inline constexpr int kMaxGroupsForWholeProgram = 2;
Route ChooseRoute(const passes::FusionPlan& plan);

// Renames a module's top-level names under `prefix` (the trusted worker's prefix_names).
using ModuleRenamer = std::function<Result<std::string>(const std::string& source, const std::string& prefix)>;

// One ModelNew in which every group whose part has an accepted program (`accepted`, by
// signature) calls that program, and every other group keeps what the compiler emits for it.
// InvalidArgument when nothing was accepted.
Result<std::string> ComposeModelNew(const ir::Graph& graph, const passes::FusionPlan& plan,
                                    const std::vector<DecompositionPart>& parts,
                                    const std::map<std::string, std::string>& accepted,
                                    codegen::ModelWriterOptions options, const ModuleRenamer& rename);

}  // namespace kforge
