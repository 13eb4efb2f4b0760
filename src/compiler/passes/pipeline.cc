#include "compiler/passes/pipeline.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>

#include <fmt/format.h>

#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/attention.h"
#include "compiler/passes/attention_products.h"
#include "compiler/passes/concatenation.h"
#include "compiler/passes/copy_elision.h"
#include "compiler/passes/dead_code.h"
#include "compiler/passes/decompose.h"
#include "compiler/passes/fusion_rules.h"
#include "compiler/passes/product_epilogues.h"
#include "compiler/passes/recurrence.h"

namespace kforge::passes {
namespace {

using GraphPass = std::function<Result<ir::Graph>(const ir::Graph&)>;

struct NamedPass {
  const char* name;
  GraphPass run;
};

const std::vector<NamedPass>& GraphPasses() {
  static const std::vector<NamedPass> passes = {
      {"recurrence", LowerRecurrence}, {"attention", FuseAttention}, {"attention_products", SplitAttentionProducts}, {"decompose", Decompose}, {"copies", ElideCopies},
      {"epilogues", MoveEpiloguesIntoProducts}, {"dead_code", RemoveDeadCode}, {"concatenations", ConcatenateInPlace}};
  return passes;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

const std::vector<std::string>& PassNames() {
  static const std::vector<std::string> names = {"recurrence", "attention", "attention_products", "decompose", "copies", "epilogues", "dead_code", "concatenations", "fuse"};
  return names;
}

FusionPlan UnfusedPlan(const ir::Graph& graph) {
  FusionPlan plan;
  for (const ir::Value& value : graph) {
    const auto* node = value.TryAs<ir::OpNode>();
    if (node == nullptr) continue;
    FusionGroup group;
    // An attention node has no library form: its kernel reads its bias from memory instead.
    group.kind = IsMetadataView(value)              ? FusionGroup::Kind::kView
                 : IsFusablePointwise(graph, value) ? FusionGroup::Kind::kPointwise
                 : IsAttention(value)               ? FusionGroup::Kind::kAttention
                 : IsRecurrence(value)              ? FusionGroup::Kind::kRecurrence
                                                    : FusionGroup::Kind::kLibrary;
    group.nodes = {value.id};
    group.name = node->name;
    plan.groups.push_back(std::move(group));
  }
  return plan;
}

Result<PipelineResult> RunPipeline(ir::Graph graph, const PipelineOptions& options) {
  for (const std::string& name : options.disabled) {
    if (std::find(PassNames().begin(), PassNames().end(), name) == PassNames().end()) {
      return Status::InvalidArgument(fmt::format("no pass named '{}' (passes: {})", name, fmt::join(PassNames(), ", ")));
    }
  }
  std::vector<PassRecord> records;
  for (const NamedPass& pass : GraphPasses()) {
    PassRecord record{pass.name, false, 0, graph.size(), graph.size(), ""};
    if (!options.disabled.count(pass.name)) {
      auto start = std::chrono::steady_clock::now();
      ASSIGN_OR_RETURN(ir::Graph rewritten, pass.run(graph));
      record.seconds = SecondsSince(start);
      if (Status verified = ir::VerifyGraph(rewritten); !verified.ok()) {
        return Status::Internal(std::string("pass ") + pass.name + " broke the IR: " + verified.message());
      }
      graph = std::move(rewritten);
      record.ran = true;
      record.values_after = graph.size();
      if (options.dump) record.dump = ir::PrintGraph(graph);
    }
    records.push_back(std::move(record));
  }
  PassRecord fusion{"fuse", !options.disabled.count("fuse"), 0, graph.size(), graph.size(), ""};
  auto start = std::chrono::steady_clock::now();
  FusionPlan plan = fusion.ran ? PlanFusion(graph) : UnfusedPlan(graph);
  fusion.seconds = SecondsSince(start);
  if (options.dump) fusion.dump = PrintFusionPlan(graph, plan);
  records.push_back(std::move(fusion));
  return PipelineResult{std::move(graph), std::move(plan), std::move(records)};
}

}  // namespace kforge::passes
