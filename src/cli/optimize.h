// One task through the built-in compiler and the evaluator, shared by `optimize` and `bench`.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "cli/agent_stage.h"
#include "cli/workspace.h"
#include "core/json.h"
#include "tasks/task.h"

namespace CLI {
class App;
}  // namespace CLI

namespace kforge {

struct OptimizeSettings {
  std::string mode = "strict";  // strict | partial
  double timeout_s = 300;       // the generated candidate's evaluation
  std::vector<std::string> disabled_passes;
  bool dump_ir = false;
  bool compile_baseline = true;  // time torch.compile of the reference too (GPU only)
  bool fresh_baselines = false;  // measure eager and torch.compile again instead of reusing stored timings
  std::string graph_replay = "auto";  // forward replayed as a CUDA graph: auto (GPU, by rule), always, never
  std::filesystem::path folder;  // where model_new.py, report.json (and ir/, llm/) go
  AgentSettings agents;          // the LLM stage after the compiler's; off unless agents.llm is set
};

// The flags `optimize` and `bench` share for how the reference is timed and the forward launched:
// --no-compile-baseline, --fresh-baselines, --graph-replay.
void AddTimingFlags(CLI::App& app, OptimizeSettings& settings);

// Captures, compiles and writes model_new.py, evaluates it, stores the evaluation and writes
// report.json. With an LLM stage, kernel writers then start from the compiler's candidate and
// model_new.py becomes the best accepted candidate of either (the report says which, "source"). Returns the report (task, model_new, mode, compile, evaluation) plus "text", the
// evaluation as printed. A Model torch.export cannot capture whole is compiled by submodules in
// partial mode (compile.partial says which; see task_compiler.h). InvalidArgument for a broken
// task, a bad setting, or such a Model in strict mode; a candidate's failure is a verdict inside
// the report, not an error.
Result<Json> OptimizeTask(Workspace& workspace, const TaskFile& task, const OptimizeSettings& settings,
                          const CommonOptions& common);

}  // namespace kforge
