#include <cstdio>
#include <algorithm>
#include <memory>

#include "cli/commands.h"
#include "cli/task_compiler.h"
#include "compiler/ir/import_graph.h"
#include "compiler/ir/partial_capture.h"
#include "compiler/ir/printer.h"

namespace kforge {
namespace {

struct IrFlags {
  std::vector<std::string> tasks;
  bool json = false;
  bool full_size = false;
};

// A Model torch.export could not capture whole: why, each submodule captured on its own (as in
// --mode partial) and what stays PyTorch.
int PrintPartial(const TaskFile& task, const Json& captured) {
  auto partial = ir::ImportPartialCapture(captured);
  if (!partial.ok()) return UsageError(task.name + ": the captured submodules do not import: " + partial.status().message());
  std::printf("# %s\n", partial->rest.export_error.c_str());
  if (partial->submodules.empty()) std::printf("# no submodule exports on its own\n");
  for (const ir::CapturedSubmodule& submodule : partial->submodules) {
    std::printf("\n# submodule %s (--mode partial compiles it)\n%s", submodule.name.c_str(), ir::PrintGraph(submodule.graph).c_str());
  }
  for (const ir::KeptSubmodule& kept : partial->rest.kept) {
    std::printf("# stays PyTorch: %s: %s\n", kept.name.c_str(), kept.reason.c_str());
  }
  return 0;
}

// Captures one task and prints its IR (or the captured JSON); for a Model that does not export
// whole, the submodules that do.
int PrintTask(WorkerClient& trusted, const std::string& path, bool cpu_sizes, bool json) {
  auto task = ReadTaskFile(path);
  if (!task.ok()) return UsageError(task.status().message());
  auto captured = CaptureTask(trusted, *task, cpu_sizes, /*fallback=*/true);
  if (!captured.ok()) return UsageError(captured.status().message());
  if (json) {
    std::printf("%s\n", captured->dump(1).c_str());
    return 0;
  }
  if (ir::IsPartialCapture(*captured)) return PrintPartial(*task, *captured);
  // Import validates and verifies; a failure here is a capture bug, reported with where it is.
  auto graph = ir::ImportGraph(*captured);
  if (!graph.ok()) return UsageError(task->name + ": the captured graph does not import: " + graph.status().message());
  std::printf("%s", ir::PrintGraph(*graph).c_str());
  return 0;
}

int RunIr(const IrFlags& flags, const CommonOptions& common) {
  auto workspace = Workspace::OpenForDevice(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());
  auto trusted = (*workspace)->workers().Trusted();
  if (!trusted.ok()) return UsageError(trusted.status().message());
  bool cpu_sizes = (*workspace)->device() == "cpu" && !flags.full_size;
  int status = 0;
  for (const std::string& path : flags.tasks) status = std::max(status, PrintTask(**trusted, path, cpu_sizes, flags.json));
  return status;
}

}  // namespace

CommandRunner AttachIr(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<IrFlags>();
  app.add_option("tasks", flags->tasks, "task file(s) to capture")->required();
  app.add_flag("--json", flags->json, "print the captured graph JSON instead of the IR");
  app.add_flag("--full-size", flags->full_size, "on the CPU, capture at the task's full sizes");
  return [flags, &common] { return RunIr(*flags, common); };
}

}  // namespace kforge
