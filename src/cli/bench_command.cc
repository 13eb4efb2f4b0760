#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "cli/bench.h"
#include "cli/commands.h"
#include "core/files.h"
#include "core/log.h"
#include "report/bench_progress.h"
#include "report/bench_row.h"
#include "report/bench_summary.h"
#include "search/bench_claims.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// "level1" for SUITE/level1/x.py; the suite folder's own name for SUITE/x.py.
std::string LevelOf(const fs::path& suite, const fs::path& task) {
  fs::path relative = fs::relative(task, suite);
  return relative.has_parent_path() ? relative.begin()->string() : fs::absolute(suite).lexically_normal().filename().string();
}

// A stored report still answers for `task` when it was made from the same source in the same mode
// and, unless only summarizing, with the same graph replay setting (reports older than the
// setting were made without graph replay: "never").
bool Reusable(const Json& report, const TaskFile& task, const OptimizeSettings& settings, bool summarizing) {
  return JsonGet<std::string>(report, "task_hash", "") == task.hash && JsonGet<std::string>(report, "mode", "") == settings.mode &&
         (summarizing || JsonGet<std::string>(report, "graph_replay", "never") == settings.graph_replay);
}

Result<Shard> ParseShard(const std::string& text) {
  Shard shard;
  char slash = 0;
  std::istringstream in(text);
  if (!(in >> shard.index >> slash >> shard.count) || slash != '/' || !in.eof() || shard.count < 1 || shard.index < 1 ||
      shard.index > shard.count) {
    return Status::InvalidArgument("--shard must be I/N with 1 <= I <= N (got '" + text + "')");
  }
  return shard;
}

// The shard's tasks: every N-th of the suite's tasks in their sorted order, starting at the I-th, so
// that the N shards split the suite without overlap and each level spreads over all of them.
std::vector<TaskFile> ShardOf(std::vector<TaskFile> tasks, const Shard& shard) {
  std::vector<TaskFile> kept;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (static_cast<int>(i % shard.count) == shard.index - 1) kept.push_back(std::move(tasks[i]));
  }
  return kept;
}

}  // namespace

Result<BenchTasks> FindBenchTasks(const BenchFlags& flags) {
  BenchTasks found;
  found.suite = flags.suite;
  if (!fs::is_directory(found.suite)) return Status::InvalidArgument(fmt::format("{} is not a folder of task files", flags.suite));
  if (!flags.shard.empty()) {
    ASSIGN_OR_RETURN(found.shard, ParseShard(flags.shard));
  }
  ASSIGN_OR_RETURN(std::vector<TaskFile> tasks, FindTasks(found.suite));
  if (tasks.empty()) return Status::InvalidArgument(fmt::format("no task files (with class Model) under {}", flags.suite));
  found.tasks = ShardOf(std::move(tasks), found.shard);
  return found;
}

fs::path TaskFolder(const BenchFlags& flags, const fs::path& suite, const TaskFile& task) {
  fs::path relative = fs::relative(task.path, suite);
  return fs::path(flags.out) / relative.parent_path() / task.path.stem();
}

Json ReusableReport(const BenchFlags& flags, const fs::path& suite, const TaskFile& task, bool summarizing) {
  if (flags.fresh) return Json();
  const fs::path report_path = TaskFolder(flags, suite, task) / "report.json";
  auto stored = ReadFile(report_path);
  if (!stored.ok()) return Json();
  auto parsed = ParseJson(*stored, report_path.string());
  if (!parsed.ok() || !Reusable(*parsed, task, flags.settings, summarizing)) return Json();
  return *parsed;
}

int RunBenchHere(const BenchFlags& flags, const CommonOptions& common, const BenchTasks& found) {
  const fs::path& suite = found.suite;
  const Shard& shard = found.shard;
  const std::vector<TaskFile>& tasks = found.tasks;
  if (flags.fresh && flags.no_run) return UsageError("--fresh and --no-run exclude each other");
  auto workspace = flags.no_run ? Workspace::Open(common) : Workspace::OpenForCandidates(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());
  // A worker of a --gpus run: it runs the tasks it claims, and the run's parent summarizes.
  std::unique_ptr<TaskClaims> claims;
  if (!flags.claim_run.empty()) {
    claims = std::make_unique<TaskClaims>(ClaimsScope(flags.out, shard.index, shard.count), flags.claim_run);
  }

  std::vector<Json> entries;
  std::vector<BenchRow> rows;  // one per entry: the summary's task rows
  std::vector<std::string> not_run;
  std::error_code ec;
  fs::create_directories(flags.out, ec);
  // A summary-only pass leaves the progress of the run it summarizes alone.
  BenchProgressWriter progress(flags.no_run || claims ? fs::path() : fs::path(flags.out) / "progress.json",
                               static_cast<int>(tasks.size()));
  for (const TaskFile& task : tasks) {
    const std::string level = LevelOf(suite, task.path);
    OptimizeSettings settings = flags.settings;
    settings.folder = TaskFolder(flags, suite, task);
    const fs::path report_path = settings.folder / "report.json";
    Json entry = ReusableReport(flags, suite, task, flags.no_run);
    if (entry.is_null() && flags.no_run) {
      not_run.push_back(task.name);
      continue;
    }
    if (claims && !entry.is_null()) continue;  // the parent counted it as done earlier
    if (claims) {
      auto claimed = claims->Claim(task.name);
      if (!claimed.ok()) LogLine(LogLevel::kQuiet, "error: " + claimed.status().message());
      if (!claimed.ok() || !*claimed) continue;  // another worker's
    }
    const bool reused = !entry.is_null();
    if (!reused) {
      progress.Started(task.name);
      if (!claims) SetStatusLine(progress.progress().Line());
      auto report = OptimizeTask(**workspace, task, settings, common);
      if (report.ok()) {
        entry = std::move(report).value();
        entry.erase("text");
      } else {
        entry = {{"task", task.name}, {"mode", settings.mode}, {"error", report.status().message()}};
      }
      entry["task_hash"] = task.hash;
      entry["level"] = level;
      fs::create_directories(settings.folder, ec);
      (void)WriteFileAtomically(report_path, entry.dump(1));  // also marks the task done for a resumed run
      if (claims) (void)claims->MarkDone(task.name);
    }
    entry["level"] = level;
    const BenchRow row = RowFromReport(entry);
    progress.Finished(task.name, row.verdict, row.timings_meaningful ? row.speedup_vs_eager : std::nullopt, reused);
    LogInfo("{}: {}{}{}", task.name, row.verdict,
            row.timings_meaningful && row.speedup_vs_eager ? fmt::format(" ({:.2f}x eager)", *row.speedup_vs_eager) : "",
            reused ? fmt::format(", done earlier ({})", report_path.string()) : "");
    entries.push_back(std::move(entry));
    rows.push_back(row);
  }
  SetStatusLine("");
  if (claims) return 0;  // the parent writes the progress and the summary
  if (!flags.no_run) progress.AllDone();

  Json summary = SummarizeBench(entries);
  summary["suite"] = fs::absolute(suite).lexically_normal().string();
  if (!flags.no_run) {
    summary["device"] = (*workspace)->device();
    summary["gpu"] = (*workspace)->gpu_name();
  }
  summary["mode"] = flags.settings.mode;
  summary["shard"] = flags.shard.empty() ? Json() : Json(flags.shard);
  summary["precision"] = common.precision;
  Json tasks_json = Json::array();
  for (const BenchRow& row : rows) tasks_json.push_back(row.ToJson());
  summary["tasks"] = tasks_json;
  summary["not_run"] = not_run;
  // Shards of one suite share --out; each keeps its own summary, and --no-run without --shard
  // summarizes them all.
  const fs::path summary_path = fs::path(flags.out) / (flags.shard.empty() ? std::string("bench.json")
                                                        : fmt::format("bench.shard-{}-of-{}.json", shard.index, shard.count));
  if (Status written = WriteFile(summary_path, summary.dump(1)); !written.ok()) return UsageError(written.message());
  if (flags.json) {
    std::printf("%s\n", summary.dump().c_str());
  } else {
    std::printf("%s", FormatBenchSummary(summary).c_str());
    if (!not_run.empty()) std::printf("not run (no report yet): %zu task(s)\n", not_run.size());
    if (!flags.no_run && (*workspace)->device() == "cpu") {
      std::printf("NOTE: on the CPU every kernel runs in Triton's interpreter: correctness counts, timings mean nothing.\n");
    }
    std::printf("wrote %s\n", summary_path.string().c_str());
  }
  // Exit 1 when any task ended without an accepted kernel (an error included), so a script
  // sees a partial result; the summary says which.
  size_t failed = 0;
  for (const Json& task : tasks_json) failed += JsonGet<std::string>(task, "verdict", "error") != "accepted";
  if (failed > 0 && !flags.json) std::printf("%zu task(s) without an accepted kernel: exit status 1\n", failed);
  return failed > 0 || !not_run.empty() ? 1 : 0;
}

namespace {

int RunBench(const BenchFlags& flags, const CommonOptions& common, const CLI::App& command) {
  auto found = FindBenchTasks(flags);
  if (!found.ok()) return UsageError(found.status().message());
  if (flags.slurm) return SubmitBenchToSlurm(flags, common, *found, command);
  if (!flags.gpus.empty()) return RunBenchOnWorkers(flags, common, *found, command);
  return RunBenchHere(flags, common, *found);
}

}  // namespace

CommandRunner AttachBench(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<BenchFlags>();
  app.add_option("suite", flags->suite, "folder of task files (KernelBench level folders work unchanged)")->required();
  app.add_option("--shard", flags->shard,
                 "I/N: run (or with --no-run, summarize) only the I-th of N parts of the suite, every N-th task from "
                 "the I-th; shards sharing --out are summarized together by --no-run without --shard");
  app.add_option("--out", flags->out, "folder for each task's model_new.py and report.json, and bench.json")
      ->capture_default_str();
  app.add_option("--mode", flags->settings.mode, "strict: every FLOP in generated kernels; partial: library GEMM/convolution allowed")
      ->capture_default_str();
  app.add_option("--timeout", flags->settings.timeout_s, "seconds each generated candidate's evaluation may take")
      ->capture_default_str();
  app.add_flag("--fresh", flags->fresh, "redo every task (by default a task with a report from the same source and mode is kept)");
  AddTimingFlags(app, flags->settings);
  app.add_flag("--no-run", flags->no_run, "only summarize the reports already in --out (a run cut short); run nothing");
  app.add_flag("--json", flags->json, "print the summary as JSON");
  app.add_option("--gpus", flags->gpus,
                 "N or all: run the bench on N worker processes of this binary, one per GPU (with --device cpu, N CPU "
                 "workers), each on its own share of the CPU cores; a free worker takes the next task, and the "
                 "summary is the one --no-run makes");
  // A worker of a --gpus run: set by its parent, never by hand.
  app.add_option("--claim-run", flags->claim_run, "")->group("");
  app.add_flag("--slurm", flags->slurm,
               "submit the bench as a Slurm job array (one shard per element, OUT/slurm/bench.sbatch) and a job that "
               "summarizes the shards after them; OUT, the binary and the workspace must be on a filesystem every node sees");
  app.add_option("--slurm-shards", flags->slurm_shards, "with --slurm: how many array elements (default: one per task)");
  app.add_option("--sbatch-arg", flags->sbatch_args,
                 "with --slurm: an argument for sbatch, passed through to both jobs (repeat; give it with '=': "
                 "--sbatch-arg=--partition=gpu --sbatch-arg=--gres=gpu:1)")
      ->allow_extra_args(false);  // one value each time: a vector option would swallow the suite after it
  app.add_flag("--wait", flags->wait, "with --slurm: wait for the summary job, print its table and exit as bench does");
  return [flags, &common, &app] { return RunBench(*flags, common, app); };
}

}  // namespace kforge
