// Writes a standalone Python module for a planned graph: one Triton kernel per pointwise,
// reduction and matmul group, and a `ModelNew(nn.Module)` whose parameters and buffers carry the
// original state-dict names and whose forward runs the groups in plan order (kernels, or ATen
// calls for views and the rest), then copies the graph's mutations into the parameters and
// buffers they update (a training-mode batch norm's running statistics).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/codegen/graph_replay.h"
#include "compiler/codegen/source_writer.h"
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
  // Whether forward() replays its kernels as one CUDA graph (kAuto: by ChooseReplay's rule).
  GraphReplay graph_replay = GraphReplay::kNever;
  // Under kAuto, whether the forwards the rule leaves to measurement (ReplayChoice::kMeasure)
  // replay; they launch directly otherwise.
  bool replay_undecided = false;
  // Whether forward() compiles every kernel at once before its first call on the GPU
  // (KfCompileAhead, compile_ahead.h), where it may run with its kernels switched off.
  bool compile_ahead = false;
};

// Why codegen left each group it could not translate to ATen calls (fallback_unsupported), by
// group name.
using NoKernelReasons = std::map<std::string, std::string>;

// What a writer tells beside the source.
struct WriteNotes {
  NoKernelReasons no_kernel;  // the groups left to ATen calls for want of a kernel
  // A forward whose graph replay the rule leaves to measurement (ReplayChoice::kMeasure): written
  // as options.replay_undecided says; the other form is worth evaluating too.
  bool replay_undecided = false;
  // The CUDA kernels whose tiles the tuner may measure (EmittedKernel::cuda_tuning), one a key.
  std::vector<CudaTuning> cuda_tuning;
};

// Fails (InvalidArgument) on a group it cannot translate unless `fallback_unsupported`,
// and on a constant it cannot inline (a non-scalar tensor). `notes` (may be null) receives the
// groups left to ATen calls that way and whether the graph replay was left to measurement.
Result<std::string> WriteModelNew(const ir::Graph& graph, const passes::FusionPlan& plan,
                                  const ModelWriterOptions& options = {}, WriteNotes* notes = nullptr);

// One planned graph's share of a generated file, for writers that put several in one file: the
// top-level definitions it needs (kernels, substitute modules; kernel names come from group
// names, which must therefore be unique in the file), the helpers those kernels call, and the
// nn.Module class `class_name` that runs the graph. Fails as WriteModelNew does.
struct GraphModule {
  std::set<std::string> helpers;  // written once per file by WriteFileHeader
  NoKernelReasons no_kernel;      // the groups left to ATen calls for want of a kernel
  bool replay_undecided = false;  // the rule left its graph replay to measurement
  std::vector<CudaTuning> cuda_tuning;  // of the kernels it defines
  std::string definitions;
  std::string module_class;
};
Result<GraphModule> WriteGraphModule(const ir::Graph& graph, const passes::FusionPlan& plan, const std::string& class_name,
                                     const ModelWriterOptions& options);

// Adds what `module` tells to `notes` (may be null).
void AddNotes(const GraphModule& module, WriteNotes* notes);

// The start of a generated file: `comments` (each a "# " line), the imports (torch and triton
// only), BLOCK_SIZE and the pointwise helpers.
void WriteFileHeader(SourceWriter& out, const std::vector<std::string>& comments, const std::set<std::string>& helpers,
                     int block_size);

}  // namespace kforge::codegen
