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
    if (fresh) parts.push_back({std::move(task), {}});
    parts[it->second].groups.push_back(group.name);
  }
  return parts;
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
    auto program = accepted.find(part.task.signature);
    if (program == accepted.end()) continue;
    // One copy of the program per part, its names under the part's prefix; every group of the
    // part gets an instance of its ModelNew.
    const std::string prefix = fmt::format("kf_part{}_", index);
    ASSIGN_OR_RETURN(std::string renamed, rename(program->second, prefix));
    for (size_t g = 0; g < part.groups.size(); ++g) {
      const std::string& name = part.groups[g];
      const passes::FusionGroup* group = nullptr;
      for (const auto& candidate : plan.groups) {
        if (candidate.name == name) group = &candidate;
      }
      if (group == nullptr) return Status::Internal("a part names group " + name + ", which the plan lacks");
      codegen::GroupSubstitute substitute;
      substitute.module_source = g == 0 ? renamed : "";
      substitute.class_name = prefix + "ModelNew";
      substitute.inputs = passes::GroupInputs(graph, *group);
      substitute.outputs = passes::GroupOutputs(graph, *group);
      // Scalar constants are the part's own (inlined in its task), not arguments.
      std::erase_if(substitute.inputs, [&graph](ir::NodeRef ref) { return graph.value(ref.value).TryAs<ir::ConstantValue>() != nullptr; });
      options.substitutes[name] = std::move(substitute);
    }
  }
  if (options.substitutes.empty()) return Status::InvalidArgument("no part has an accepted program to compose");
  return codegen::WriteModelNew(graph, plan, options);
}

}  // namespace kforge
