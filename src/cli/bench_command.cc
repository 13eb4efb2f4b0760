#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/optimize.h"
#include "core/files.h"
#include "core/log.h"
#include "report/bench_summary.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

struct BenchFlags {
  std::string suite;
  std::string out = "out/bench";
  bool json = false;
  bool fresh = false;
  bool no_run = false;
  OptimizeSettings settings;
};

// "level1" for SUITE/level1/x.py; the suite folder's own name for SUITE/x.py.
std::string LevelOf(const fs::path& suite, const fs::path& task) {
  fs::path relative = fs::relative(task, suite);
  return relative.has_parent_path() ? relative.begin()->string() : fs::absolute(suite).lexically_normal().filename().string();
}

// A stored report still answers for `task` when it was made from the same source in the same mode.
bool Reusable(const Json& report, const TaskFile& task, const std::string& mode) {
  return JsonGet<std::string>(report, "task_hash", "") == task.hash && JsonGet<std::string>(report, "mode", "") == mode;
}

int RunBench(const BenchFlags& flags, const CommonOptions& common) {
  fs::path suite = flags.suite;
  if (!fs::is_directory(suite)) return UsageError(fmt::format("{} is not a folder of task files", flags.suite));
  auto tasks = FindTasks(suite);
  if (!tasks.ok()) return UsageError(tasks.status().message());
  if (tasks->empty()) return UsageError(fmt::format("no task files (with class Model) under {}", flags.suite));
  if (flags.fresh && flags.no_run) return UsageError("--fresh and --no-run exclude each other");
  auto workspace = flags.no_run ? Workspace::Open(common) : Workspace::OpenForDevice(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());

  std::vector<Json> entries;
  std::vector<std::string> not_run;
  size_t index = 0;
  for (const TaskFile& task : *tasks) {
    ++index;
    const std::string level = LevelOf(suite, task.path);
    fs::path relative = fs::relative(task.path, suite);
    OptimizeSettings settings = flags.settings;
    settings.folder = fs::path(flags.out) / relative.parent_path() / task.path.stem();
    const fs::path report_path = settings.folder / "report.json";
    Json entry;
    if (auto stored = ReadFile(report_path); !flags.fresh && stored.ok()) {
      auto parsed = ParseJson(*stored, report_path.string());
      if (parsed.ok() && Reusable(*parsed, task, settings.mode)) entry = *parsed;
    }
    if (entry.is_null() && flags.no_run) {
      not_run.push_back(task.name);
      continue;
    }
    if (entry.is_null()) {
      if (!common.quiet) LogInfo("[{}/{}] {}", index, tasks->size(), task.name);
      auto report = OptimizeTask(**workspace, task, settings, common);
      if (report.ok()) {
        entry = std::move(report).value();
        entry.erase("text");
      } else {
        entry = {{"task", task.name}, {"mode", settings.mode}, {"error", report.status().message()}};
      }
      entry["task_hash"] = task.hash;
      entry["level"] = level;
      std::error_code ec;
      fs::create_directories(settings.folder, ec);
      (void)WriteFile(report_path, entry.dump(1));  // also marks the task done for a resumed run
    } else if (!common.quiet) {
      LogInfo("[{}/{}] {}: done earlier ({})", index, tasks->size(), task.name, report_path.string());
    }
    entry["level"] = level;
    if (!common.quiet) {
      std::string verdict = entry.contains("error") ? "error" : JsonGet<std::string>(entry["evaluation"], "verdict", "?");
      LogInfo("  {}", verdict);
    }
    entries.push_back(std::move(entry));
  }

  Json summary = SummarizeBench(entries);
  summary["suite"] = fs::absolute(suite).lexically_normal().string();
  if (!flags.no_run) {
    summary["device"] = (*workspace)->device();
    summary["gpu"] = (*workspace)->gpu_name();
  }
  summary["mode"] = flags.settings.mode;
  summary["precision"] = common.precision;
  Json tasks_json = Json::array();
  for (const Json& entry : entries) {
    const Json evaluation = JsonField(entry, "evaluation");
    const Json timing = JsonField(JsonField(evaluation, "evidence"), "timing");
    tasks_json.push_back({{"task", entry.value("task", "")},
                          {"level", entry.value("level", "")},
                          {"verdict", entry.contains("error") ? Json("error") : JsonField(evaluation, "verdict")},
                          {"candidate_ms", JsonField(JsonField(evaluation, "candidate_ms"), "median")},
                          {"eager_ms", JsonField(JsonField(evaluation, "reference_ms"), "median")},
                          {"compile_ms", JsonField(JsonField(timing, "reference_compile_ms"), "median")},
                          {"speedup_vs_eager", JsonField(JsonField(evaluation, "speedup"), "speedup")},
                          {"speedup_vs_compile", JsonField(JsonField(timing, "speedup_vs_compile"), "speedup")},
                          {"fraction_of_roofline",
                           JsonField(JsonField(JsonField(evaluation, "evidence"), "roofline"), "fraction_of_roofline")},
                          {"compile_s", JsonGet<double>(JsonField(entry, "compile"), "capture_s", 0) +
                                            JsonGet<double>(JsonField(entry, "compile"), "passes_s", 0) +
                                            JsonGet<double>(JsonField(entry, "compile"), "codegen_s", 0)},
                          {"startup_s", JsonGet<double>(JsonField(entry, "compile"), "startup_s", 0)},
                          {"tuning", JsonField(JsonField(entry, "compile"), "tuning")}});
  }
  summary["tasks"] = tasks_json;
  summary["not_run"] = not_run;
  std::error_code ec;
  fs::create_directories(flags.out, ec);
  if (Status written = WriteFile(fs::path(flags.out) / "bench.json", summary.dump(1)); !written.ok()) {
    return UsageError(written.message());
  }
  if (flags.json) {
    std::printf("%s\n", summary.dump().c_str());
  } else {
    std::printf("%s", FormatBenchSummary(summary).c_str());
    if (!not_run.empty()) std::printf("not run (no report yet): %zu task(s)\n", not_run.size());
    if (!flags.no_run && (*workspace)->device() == "cpu") {
      std::printf("NOTE: on the CPU every kernel runs in Triton's interpreter: correctness counts, timings mean nothing.\n");
    }
    std::printf("wrote %s\n", (fs::path(flags.out) / "bench.json").string().c_str());
  }
  return 0;
}

}  // namespace

CommandRunner AttachBench(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<BenchFlags>();
  app.add_option("suite", flags->suite, "folder of task files (KernelBench level folders work unchanged)")->required();
  app.add_option("--out", flags->out, "folder for each task's model_new.py and report.json, and bench.json")
      ->capture_default_str();
  app.add_option("--mode", flags->settings.mode, "strict: every FLOP in generated kernels; partial: library GEMM/convolution allowed")
      ->capture_default_str();
  app.add_option("--timeout", flags->settings.timeout_s, "seconds each generated candidate's evaluation may take")
      ->capture_default_str();
  app.add_flag("--fresh", flags->fresh, "redo every task (by default a task with a report from the same source and mode is kept)");
  app.add_flag("--no-compile-baseline{false}", flags->settings.compile_baseline,
               "do not time torch.compile of the references (timed on a GPU by default)");
  app.add_flag("--no-run", flags->no_run, "only summarize the reports already in --out (a run cut short); run nothing");
  app.add_flag("--json", flags->json, "print the summary as JSON");
  return [flags, &common] { return RunBench(*flags, common); };
}

}  // namespace kforge
