#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/log.h"
#include "report/text_report.h"
#include "search/reference_compiles.h"

namespace kforge {
namespace {

struct BaselineFlags {
  std::vector<std::string> tasks;
  bool max_autotune = false;
  bool json = false;
  bool full_size = false;
  bool missing = false;
  int jobs = 1;
};

int RunBaseline(const BaselineFlags& flags, const CommonOptions& common) {
  auto precision = ParsePrecision(common.precision);
  if (!precision) return UsageError("--precision must be fp32, tf32 or bf16");
  if (flags.jobs < 1) return UsageError(fmt::format("--jobs must be at least 1 (got {})", flags.jobs));
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
  CompileAhead(
      tasks, evaluator, flags.jobs,
      [&](int count) {
        LogInfo("compiling torch.compile ahead, {} task(s) at a time; their workers end before anything is timed", count);
        std::vector<std::unique_ptr<WorkerSource>> sets;
        for (auto& set : (*workspace)->CompileWorkerSets(count)) sets.push_back(std::move(set));
        return sets;
      },
      [](const ReferenceCompile& compiled) {
        if (compiled.status.ok()) {
          LogInfo("  compiled {} in {:.1f} s", compiled.task, compiled.compile_s);
        } else {
          LogInfo("  could not compile {} ahead ({}); its timing compiles it", compiled.task, compiled.status.message());
        }
      });
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
  app.add_option("--jobs", flags->jobs,
                 "compile the tasks' torch.compile this many at a time, each in its own worker, before timing them one "
                 "at a time from the workspace's compile cache (default 1: each compiled as it is timed)");
  return [flags, &common] { return RunBaseline(*flags, common); };
}

}  // namespace kforge
