// The built-in compiler's stage of `optimize` for one task: capture (the trusted worker), import,
// the pass pipeline and code generation. A Model torch.export captures whole is one graph. When
// it cannot be captured whole, the worker finds the largest submodules that export on their own:
// with `allow_partial` (partial mode) each becomes a graph and the task's own code keeps the rest
// in PyTorch; without it, compiling fails with a message that says why the Model did not export
// and what partial mode would compile.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/model_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/partial_capture.h"
#include "compiler/passes/fusion_plan.h"
#include "compiler/passes/pipeline.h"
#include "core/json.h"
#include "sandbox/worker_client.h"
#include "tasks/task.h"

namespace kforge {

struct CompiledGraph {
  std::string submodule;  // its qualified name; "" for the whole Model
  ir::Graph graph;        // after the passes
  passes::FusionPlan plan;
  std::vector<passes::PassRecord> passes;
};

struct CompiledTask {
  std::vector<CompiledGraph> graphs;       // the whole Model, or each captured submodule in the Model's order
  std::optional<ir::PyTorchRest> partial;  // set when the Model was not captured whole
  // groups (each with its submodule in partial mode), capture_s, passes_s, pass_s (seconds per
  // pass over all graphs, or "disabled") and, in partial mode, partial: export_error, compiled
  // (submodule names) and pytorch (the submodules kept, each with its reason).
  Json summary;

  bool whole() const { return !partial.has_value(); }
};

struct CompileOptions {
  bool cpu_sizes = false;      // capture at the task's CPU sizes
  bool allow_partial = false;  // partial mode: compile submodules when the Model does not export whole
  passes::PipelineOptions pipeline;
};

// The trusted worker's capture of `task` (graph JSON) at its CPU sizes or full size; with
// `fallback`, a Model that does not export whole comes back as a partial capture (its exportable
// submodules) instead of an error.
Result<Json> CaptureTask(WorkerClient& trusted, const TaskFile& task, bool cpu_sizes, bool fallback);

// InvalidArgument for a task that does not load or capture (the worker's message), and for a
// Model that does not export whole when partial capture is not allowed or captures nothing.
Result<CompiledTask> CompileTask(WorkerClient& trusted, const TaskFile& task, const CompileOptions& options);

// model_new.py's source: WriteModelNew for a whole Model, WritePartialModelNew otherwise.
// `notes` (may be null) receives the groups left to ATen for want of a kernel, with the reason, and
// whether a forward's graph replay was left to measurement.
Result<std::string> WriteCandidate(const CompiledTask& compiled, const TaskFile& task,
                                   const codegen::ModelWriterOptions& options, codegen::WriteNotes* notes = nullptr);

// The groups a candidate leaves to PyTorch that compute (library groups, and groups codegen could
// not translate, with `no_kernel`'s reasons): [{"group", "ops", "reason"[, "submodule"]}], what
// stops a task in strict mode.
Json LeftToPyTorch(const CompiledTask& compiled, const codegen::NoKernelReasons& no_kernel);

// What the LLM kernel writers are told about the compiler's view of the task: each graph after
// the passes with its fusion groups and, in partial mode, what stays PyTorch and why.
std::string IrSummary(const CompiledTask& compiled);

}  // namespace kforge
