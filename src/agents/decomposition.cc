#include "agents/decomposition.h"

#include <fmt/format.h>

namespace kforge {

Result<std::vector<DecompositionPart>> DecomposePlan(const ir::Graph& graph, const passes::FusionPlan& plan) {
  std::vector<DecompositionPart> parts;
  std::map<std::string, size_t> by_signature;
  for (const passes::FusionGroup& group : plan.groups) {
    if (group.kind == passes::FusionGroup::Kind::kView) continue;
    ASSIGN_OR_RETURN(codegen::GroupTask task, codegen::WriteGroupTask(graph, group));
    auto [it, fresh] = by_signature.emplace(task.signature, parts.size());
    if (fresh) parts.emplace_back();
    parts[it->second].groups.push_back(std::move(task));
  }
  return parts;
}

std::vector<std::string> DecompositionPart::GroupNames() const {
  std::vector<std::string> names;
  for (const codegen::GroupTask& group : groups) names.push_back(group.group);
  return names;
}

const char* ToString(Route route) {
  return route == Route::kWholeProgram ? "whole_program" : "decomposition";
}

Route ChooseRoute(const passes::FusionPlan& plan) {
  int kernels = 0;
  for (const passes::FusionGroup& group : plan.groups) {
    if (group.kind == passes::FusionGroup::Kind::kLibrary) return Route::kDecomposition;
    if (group.kind != passes::FusionGroup::Kind::kView) ++kernels;
  }
  return kernels <= kMaxGroupsForWholeProgram ? Route::kWholeProgram : Route::kDecomposition;
}

Result<std::string> ComposeModelNew(const ir::Graph& graph, const passes::FusionPlan& plan,
                                    const std::vector<DecompositionPart>& parts,
                                    const std::map<std::string, std::string>& accepted,
                                    codegen::ModelWriterOptions options, const ModuleRenamer& rename) {
  for (size_t index = 0; index < parts.size(); ++index) {
    const DecompositionPart& part = parts[index];
    auto program = accepted.find(part.task().signature);
    if (program == accepted.end()) continue;
    // One copy of the program per part, its names under the part's prefix; every group of the
    // part gets an instance of its ModelNew, called on that group's own tensors.
    const std::string prefix = fmt::format("kf_part{}_", index);
    ASSIGN_OR_RETURN(std::string renamed, rename(program->second, prefix));
    for (const codegen::GroupTask& group : part.groups) {
      codegen::GroupSubstitute substitute;
      substitute.module_source = &group == &part.task() ? renamed : "";
      substitute.class_name = prefix + "ModelNew";
      substitute.inputs = group.inputs;
      substitute.outputs = group.outputs;
      options.substitutes[group.group] = std::move(substitute);
    }
  }
  if (options.substitutes.empty()) return Status::InvalidArgument("no part has an accepted program to compose");
  return codegen::WriteModelNew(graph, plan, options);
}

}  // namespace kforge
