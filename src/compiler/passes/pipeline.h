// The compiler's one pass pipeline: every graph pass in order, then fusion planning. The runner
// can disable a pass by name, times each pass, verifies the IR after each one (a pass that breaks
// the IR is a kforge bug, reported as Internal) and keeps a dump of the IR after each on request.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/status.h"

namespace kforge::passes {

struct PipelineOptions {
  std::set<std::string> disabled;  // pass names: see PassNames()
  bool dump = false;               // keep the printed IR (or plan) after each pass
};

struct PassRecord {
  std::string name;
  bool ran = false;
  double seconds = 0;
  int values_before = 0;
  int values_after = 0;
  std::string dump;  // empty unless PipelineOptions::dump
};

struct PipelineResult {
  ir::Graph graph;
  FusionPlan plan;
  std::vector<PassRecord> passes;
};

// The passes RunPipeline runs, in order: "recurrence", "attention", "attention_products",
// "decompose", "copies", "epilogues", "dead_code", "concatenations", then "fuse" (fusion planning).
const std::vector<std::string>& PassNames();

// InvalidArgument for an unknown name in `disabled`; Internal when a pass breaks the IR.
Result<PipelineResult> RunPipeline(ir::Graph graph, const PipelineOptions& options);

// One group per op (no fusion): what "fuse" disabled means.
FusionPlan UnfusedPlan(const ir::Graph& graph);

}  // namespace kforge::passes
