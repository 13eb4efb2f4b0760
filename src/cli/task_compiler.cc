#include "cli/task_compiler.h"

#include <set>
#include <utility>

#include <fmt/format.h>

#include "compiler/codegen/partial_model_writer.h"
#include "compiler/ir/import_graph.h"
#include "compiler/ir/printer.h"
#include "core/clock.h"

namespace kforge {
namespace {

std::string CapturedNames(const std::vector<ir::CapturedSubmodule>& submodules) {
  std::vector<std::string> names;
  for (const ir::CapturedSubmodule& submodule : submodules) names.push_back(submodule.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// "blocks.1 (called with 2 different input shapes ...); head (...)".
std::string DescribeKept(const std::vector<ir::KeptSubmodule>& kept) {
  std::vector<std::string> parts;
  for (const ir::KeptSubmodule& submodule : kept) parts.push_back(fmt::format("{} ({})", submodule.name, submodule.reason));
  return fmt::format("{}", fmt::join(parts, "; "));
}

// Why a Model that does not export whole is not compiled: strict mode needs it whole, or no
// submodule exports on its own either.
Status CannotCaptureWhole(const ir::PartialCapture& capture) {
  const ir::PyTorchRest& rest = capture.rest;
  if (capture.submodules.empty()) {
    return Status::InvalidArgument(fmt::format(
        "{}. No submodule exports on its own either{}, so there is nothing to compile.", rest.export_error,
        rest.kept.empty() ? "" : ": " + DescribeKept(rest.kept)));
  }
  return Status::InvalidArgument(fmt::format(
      "{}. The Model cannot be captured whole, which strict mode needs; --mode partial would compile its submodules "
      "{} on their own and keep the rest of the Model in PyTorch.",
      rest.export_error, CapturedNames(capture.submodules)));
}

Result<CompiledGraph> RunPasses(std::string submodule, ir::Graph graph, const passes::PipelineOptions& options) {
  Result<passes::PipelineResult> pipeline = passes::RunPipeline(std::move(graph), options);
  if (!pipeline.ok()) return submodule.empty() ? pipeline.status() : pipeline.status().WithContext("submodule " + submodule);
  return CompiledGraph{std::move(submodule), std::move(pipeline->graph), std::move(pipeline->plan),
                       std::move(pipeline->passes)};
}

Json PartialSummary(const CompiledTask& compiled) {
  Json names = Json::array();
  for (const CompiledGraph& graph : compiled.graphs) names.push_back(graph.submodule);
  Json pytorch = Json::array();
  for (const ir::KeptSubmodule& kept : compiled.partial->kept) pytorch.push_back({{"name", kept.name}, {"reason", kept.reason}});
  return {{"export_error", compiled.partial->export_error}, {"compiled", names}, {"pytorch", pytorch}};
}

Json Summary(const CompiledTask& compiled, double capture_s, double passes_s) {
  Json groups = Json::array();
  Json pass_times = Json::object();
  for (const CompiledGraph& graph : compiled.graphs) {
    for (const passes::FusionGroup& group : graph.plan.groups) {
      Json entry = {{"name", group.name}, {"kind", passes::ToString(group.kind)}, {"nodes", group.nodes.size()}};
      if (!graph.submodule.empty()) entry["submodule"] = graph.submodule;
      groups.push_back(std::move(entry));
    }
    for (const passes::PassRecord& record : graph.passes) {
      Json& seconds = pass_times[record.name];
      seconds = !record.ran ? Json("disabled") : Json(record.seconds + (seconds.is_number() ? seconds.get<double>() : 0.0));
    }
  }
  Json summary = {{"groups", groups}, {"capture_s", capture_s}, {"passes_s", passes_s}, {"pass_s", pass_times}};
  if (compiled.partial) summary["partial"] = PartialSummary(compiled);
  return summary;
}

Result<std::string> WriteSource(const CompiledTask& compiled, const TaskFile& task, const codegen::ModelWriterOptions& options,
                                codegen::WriteNotes* notes) {
  if (compiled.whole()) {
    return codegen::WriteModelNew(compiled.graphs.front().graph, compiled.graphs.front().plan, options, notes);
  }
  codegen::PartialModel model{task.name, compiled.partial->forward_source, compiled.partial->forward_class, {}};
  for (const CompiledGraph& graph : compiled.graphs) model.submodules.push_back({graph.submodule, &graph.graph, &graph.plan});
  return codegen::WritePartialModelNew(model, options, notes);
}

// Whether an op left to PyTorch computes (rather than viewing, moving or filling data).
bool Computes(ir::OpKind kind) {
  return kind != ir::OpKind::kView && kind != ir::OpKind::kDataMovement && kind != ir::OpKind::kCreation;
}

}  // namespace

Result<Json> CaptureTask(WorkerClient& trusted, const TaskFile& task, bool cpu_sizes, bool fallback) {
  return trusted.Call("capture",
                      Json{{"task_path", task.path.string()}, {"task_name", task.name}, {"cpu_sizes", cpu_sizes}, {"fallback", fallback}},
                      600);
}

Result<CompiledTask> CompileTask(WorkerClient& trusted, const TaskFile& task, const CompileOptions& options) {
  const Clock& clock = RealClock();
  // torch.export's one-time start-up in the worker, apart from this task's capture (0 after the first task).
  ASSIGN_OR_RETURN(Json warmed, trusted.Call("warm_capture", Json::object(), 600));
  double started = clock.NowSeconds();
  // The fallback costs nothing for a Model that exports whole; for one that does not, even strict
  // mode wants to say what partial mode would compile.
  ASSIGN_OR_RETURN(Json captured, CaptureTask(trusted, task, options.cpu_sizes, /*fallback=*/true));
  double captured_at = clock.NowSeconds();
  CompiledTask compiled;
  if (!ir::IsPartialCapture(captured)) {
    ASSIGN_OR_RETURN(ir::Graph graph, ir::ImportGraph(captured));
    ASSIGN_OR_RETURN(CompiledGraph whole, RunPasses("", std::move(graph), options.pipeline));
    compiled.graphs.push_back(std::move(whole));
  } else {
    ASSIGN_OR_RETURN(ir::PartialCapture capture, ir::ImportPartialCapture(captured));
    if (!options.allow_partial || capture.submodules.empty()) return CannotCaptureWhole(capture);
    for (ir::CapturedSubmodule& submodule : capture.submodules) {
      ASSIGN_OR_RETURN(CompiledGraph part, RunPasses(submodule.name, std::move(submodule.graph), options.pipeline));
      compiled.graphs.push_back(std::move(part));
    }
    compiled.partial = std::move(capture.rest);
  }
  compiled.summary = Summary(compiled, captured_at - started, clock.NowSeconds() - captured_at);
  compiled.summary["startup_s"] = JsonGet<double>(warmed, "seconds", 0);
  return compiled;
}

Json LeftToPyTorch(const CompiledTask& compiled, const codegen::NoKernelReasons& no_kernel) {
  Json left = Json::array();
  for (const CompiledGraph& graph : compiled.graphs) {
    for (const passes::FusionGroup& group : graph.plan.groups) {
      auto reason = no_kernel.find(group.name);
      if (group.kind != passes::FusionGroup::Kind::kLibrary && reason == no_kernel.end()) continue;
      std::set<std::string> ops;
      for (ir::ValueId id : group.nodes) {
        const auto& op = graph.graph.value(id).As<ir::OpNode>();
        if (Computes(op.op_kind())) ops.insert(op.op);
      }
      if (ops.empty()) continue;
      Json entry = {{"group", group.name},
                    {"ops", ops},
                    {"reason", reason != no_kernel.end() ? reason->second : "the compiler has no kernel form for it"}};
      if (!graph.submodule.empty()) entry["submodule"] = graph.submodule;
      left.push_back(std::move(entry));
    }
  }
  return left;
}

Result<std::string> WriteCandidate(const CompiledTask& compiled, const TaskFile& task,
                                   const codegen::ModelWriterOptions& options, codegen::WriteNotes* notes) {
  Result<std::string> source = WriteSource(compiled, task, options, notes);
  if (!source.ok()) return source.status().WithContext("generating code for " + task.name);
  return source;
}

std::string IrSummary(const CompiledTask& compiled) {
  std::string summary;
  if (compiled.partial) {
    summary = fmt::format("torch.export could not capture the Model whole ({}). The submodules below were captured on "
                          "their own; the task's own code runs the rest in PyTorch{}.\n\n",
                          compiled.partial->export_error,
                          compiled.partial->kept.empty() ? "" : ", including " + DescribeKept(compiled.partial->kept));
  }
  for (const CompiledGraph& graph : compiled.graphs) {
    if (!graph.submodule.empty()) summary += fmt::format("Submodule {}:\n", graph.submodule);
    summary += "```\n" + ir::PrintGraph(graph.graph) + "```\n\nFusion groups:\n";
    for (const auto& group : graph.plan.groups) {
      summary += fmt::format("- {} ({}, {} node(s))\n", group.name, passes::ToString(group.kind), group.nodes.size());
    }
    if (!compiled.whole()) summary += "\n";
  }
  return summary;
}

}  // namespace kforge
