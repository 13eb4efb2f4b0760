#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "report/text_report.h"

namespace kforge {
namespace {

struct BaselineFlags {
  std::vector<std::string> tasks;
  bool max_autotune = false;
  bool json = false;
  bool full_size = false;
  bool missing = false;
};

int RunBaseline(const BaselineFlags& flags, const CommonOptions& common) {
  auto precision = ParsePrecision(common.precision);
  if (!precision) return UsageError("--precision must be fp32, tf32 or bf16");
  std::vector<TaskFile> tasks;
  for (const std::string& path : flags.tasks) {
    auto task = ReadTaskFile(path);
    if (!task.ok()) return UsageError(task.status().message());
    tasks.push_back(*std::move(task));
  }
  auto workspace = Workspace::OpenForDevice(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());
  EvalOptions options = (*workspace)->EvalDefaults(/*fresh_baselines=*/!flags.missing);
  options.precision = *precision;
  options.cpu_sizes = !flags.full_size;
  Evaluator evaluator((*workspace)->workers(), options);
  for (const TaskFile& task : tasks) {
    auto baseline = evaluator.Baseline(task, flags.max_autotune);
    if (!baseline.ok()) return UsageError(baseline.status().message());
    std::printf("%s", flags.json ? ((*baseline).dump() + "\n").c_str() : FormatBaseline(*baseline).c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

CommandRunner AttachBaseline(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<BaselineFlags>();
  app.add_option("tasks", flags->tasks, "task file(s)")->required();
  app.add_flag("--max-autotune", flags->max_autotune, "also time torch.compile(mode=\"max-autotune\")");
  app.add_flag("--json", flags->json, "print JSON");
  app.add_flag("--full-size", flags->full_size, "on the CPU, keep the task's full sizes");
  app.add_flag("--missing", flags->missing,
               "time only what the workspace's store lacks for this machine; stored timings are printed as stored");
  return [flags, &common] { return RunBaseline(*flags, common); };
}

}  // namespace kforge
