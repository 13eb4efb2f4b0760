// `kforge bench --gpus N`: the run dealt to N worker processes (search/bench_workers.h), its
// progress kept in --out from their claims and reports, then the summary --no-run makes.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "cli/bench.h"
#include "cli/commands.h"
#include "cli/given_options.h"
#include "core/files.h"
#include "core/log.h"
#include "report/bench_progress.h"
#include "report/bench_row.h"
#include "sandbox/environment.h"
#include "search/bench_claims.h"
#include "search/bench_workers.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> AsEnvironmentList(const std::map<std::string, std::string>& environment) {
  std::vector<std::string> list;
  for (const auto& [name, value] : environment) list.push_back(name + "=" + value);
  return list;
}

// "0-7", "0,2,5", "" for none.
std::string CoreList(const std::vector<int>& cores) {
  if (cores.empty()) return "";
  bool contiguous = true;
  for (size_t i = 1; i < cores.size(); ++i) contiguous = contiguous && cores[i] == cores[i - 1] + 1;
  if (contiguous && cores.size() > 1) return fmt::format("{}-{}", cores.front(), cores.back());
  return fmt::format("{}", fmt::join(cores, ","));
}

// The last `count` lines of a worker's log, to say why it stopped.
std::string LogTail(const fs::path& log, size_t count) {
  auto text = ReadFile(log);
  if (!text.ok()) return "";
  size_t start = text->size();
  for (size_t lines = 0; start > 0 && lines <= count; ) {
    if ((*text)[--start] == '\n') ++lines;
  }
  return text->substr(start == 0 ? 0 : start + 1);
}

// The worker processes' command line: this binary, the global options and the bench's as given
// (minus --gpus), and the run to claim tasks in.
std::vector<std::string> WorkerArguments(const BenchFlags& flags, const CLI::App& command, const std::string& run_id) {
  std::error_code ec;
  std::vector<std::string> argv = {fs::read_symlink("/proc/self/exe", ec).string()};
  for (std::string& option : GivenOptions(*command.get_parent(), {})) argv.push_back(std::move(option));
  argv.push_back(command.get_name());
  argv.push_back(flags.suite);
  for (std::string& option : GivenOptions(command, {"--gpus", "--json"})) argv.push_back(std::move(option));
  argv.push_back("--claim-run=" + run_id);
  return argv;
}

// What the run has to deal workers to: the CPU, or the GPUs this process sees.
struct Devices {
  bool on_cpu = false;
  std::vector<std::string> gpus;
};

Result<Devices> FindDevices(const CommonOptions& common, const std::map<std::string, std::string>& environment) {
  // Opened here first, so that the store exists before the workers open it together.
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> workspace, Workspace::Open(common));
  Devices devices;
  devices.on_cpu = workspace->device() == "cpu";
  if (devices.on_cpu) return devices;
  if (workspace->device() != "cuda:0") {
    return Status::InvalidArgument("--gpus with --device " + workspace->device() +
                                   ": pick the GPUs with CUDA_VISIBLE_DEVICES instead");
  }
  auto runner = MakeSubprocessRunner(AsEnvironmentList(environment), 60);
  ASSIGN_OR_RETURN(devices.gpus, VisibleGpus(environment, *runner));
  return devices;
}

// Keeps progress.json and the console up to date from what the workers do.
class RunFollower {
 public:
  RunFollower(const BenchFlags& flags, const BenchTasks& found)
      : flags_(flags), found_(found),
        progress_(fs::path(flags.out) / "progress.json", static_cast<int>(found.tasks.size())) {}

  // Tasks a stored report answers count as done at once (the workers skip them); returns how many
  // are left to run.
  int CountReused() {
    int left = 0;
    for (const TaskFile& task : found_.tasks) {
      const Json stored = ReusableReport(flags_, found_.suite, task, /*summarizing=*/false);
      if (stored.is_null()) {
        ++left;
      } else {
        Finished(task.name, stored, /*reused=*/true);
      }
    }
    return left;
  }

  BenchWorkerEvents Events(const std::vector<BenchWorkerSpec>& workers) {
    progress_.SetWorkers(static_cast<int>(workers.size()));
    failed_.assign(workers.size(), false);
    BenchWorkerEvents events;
    events.started = [this](const std::string& task) {
      progress_.Started(task);
      SetStatusLine(progress_.progress().Line());
    };
    events.finished = [this](const std::string& task) { Finished(task, ReportOf(task), /*reused=*/false); };
    events.ended = [this, &workers](size_t worker, const ExitStatus& status) {
      if (status.exited && status.code == 0) return;
      failed_[worker] = true;
      // Said even with --quiet: the run is short of a worker.
      LogLine(LogLevel::kQuiet, fmt::format("error: worker {} {}; the end of its log ({}):\n{}", worker + 1,
                                            status.ToString(), workers[worker].log.string(),
                                            LogTail(workers[worker].log, 15)));
    };
    return events;
  }

  size_t failed_workers() const { return std::count(failed_.begin(), failed_.end(), true); }
  BenchProgressWriter& progress() { return progress_; }

 private:
  Json ReportOf(const std::string& task) const {
    for (const TaskFile& file : found_.tasks) {
      if (file.name != task) continue;
      const fs::path path = TaskFolder(flags_, found_.suite, file) / "report.json";
      auto text = ReadFile(path);
      auto parsed = text.ok() ? ParseJson(*text, path.string()) : Result<Json>(text.status());
      if (parsed.ok() && parsed->is_object()) return *parsed;
    }
    return Json{{"task", task}, {"error", "its worker wrote no report"}};
  }

  void Finished(const std::string& task, const Json& report, bool reused) {
    const BenchRow row = RowFromReport(report);
    const auto speedup = row.timings_meaningful ? row.speedup_vs_eager : std::nullopt;
    progress_.Finished(task, row.verdict, speedup, reused);
    if (reused) return;
    LogInfo("{}: {}{}", task, row.verdict, speedup ? fmt::format(" ({:.2f}x eager)", *speedup) : "");
    SetStatusLine(progress_.progress().Line());
  }

  const BenchFlags& flags_;
  const BenchTasks& found_;
  BenchProgressWriter progress_;
  std::vector<bool> failed_;
};

// The workers of run `run_id`: their command line, GPU, cores and log (emptied), each said once.
std::vector<BenchWorkerSpec> PlanWorkers(const BenchFlags& flags, const CLI::App& command, const Devices& devices,
                                         const std::map<std::string, std::string>& environment,
                                         const std::string& run_id, int count) {
  const fs::path log_dir = fs::path(flags.out) / "workers";
  std::error_code ec;
  fs::create_directories(log_dir, ec);
  const std::vector<int> cores = AllowedCores();
  auto workers = PlanBenchWorkers(WorkerArguments(flags, command, run_id), AsEnvironmentList(environment),
                                  devices.gpus, PartitionCores(cores, count), log_dir);
  for (size_t i = 0; i < workers.size(); ++i) {
    fs::remove(workers[i].log, ec);
    LogInfo("worker {}: {}cores {}; log {}", i + 1, workers[i].gpu.empty() ? "" : "GPU " + workers[i].gpu + ", ",
            CoreList(workers[i].cpus), workers[i].log.string());
  }
  if (cores.size() < workers.size()) {
    LogInfo("fewer CPU cores than workers: workers share cores, and their timings disturb each other");
  }
  return workers;
}

// The summary as --no-run makes it, without its line per task: those were said as they finished.
int Summarize(const BenchFlags& flags, const CommonOptions& common, const BenchTasks& found) {
  BenchFlags summary = flags;
  summary.no_run = true;
  summary.fresh = false;
  summary.gpus.clear();
  const LogLevel level = GetLogLevel();
  SetLogLevel(LogLevel::kQuiet);
  const int status = RunBenchHere(summary, common, found);
  SetLogLevel(level);
  return status;
}

}  // namespace

int RunBenchOnWorkers(const BenchFlags& flags, const CommonOptions& common, const BenchTasks& found,
                      const CLI::App& command) {
  if (flags.no_run) return UsageError("--gpus runs the bench and --no-run runs nothing: give one of them");
  const auto environment = ProcessEnvironment();
  auto devices = FindDevices(common, environment);
  if (!devices.ok()) return UsageError(devices.status().message());
  auto count = WorkerCount(flags.gpus, devices->on_cpu, devices->gpus);
  if (!count.ok()) return UsageError(count.status().message());

  const std::string run_id = NewBenchRunId();
  const fs::path scope = ClaimsScope(flags.out, found.shard.index, found.shard.count);
  auto lock = ClaimsLock::Acquire(scope, run_id);
  if (!lock.ok()) return UsageError(lock.status().message());
  const TaskClaims claims(scope, run_id);
  RunFollower follower(flags, found);
  const int workers = std::min(*count, follower.CountReused());
  if (workers > 0) {
    const auto specs = PlanWorkers(flags, command, *devices, environment, run_id, workers);
    auto outcome = RunBenchWorkers(specs, claims, follower.Events(specs));
    SetStatusLine("");
    if (!outcome.ok()) return UsageError(outcome.status().message());
    if (outcome->interrupted()) {
      const BenchProgress& progress = follower.progress().progress();
      LogLine(LogLevel::kQuiet, fmt::format("{}: stopped every worker; {} of {} task(s) done. The same command "
                                            "resumes the run (finished tasks are kept).", strsignal(outcome->signal),
                                            progress.done, progress.total));
      return 128 + outcome->signal;
    }
  }
  follower.progress().AllDone();
  RemoveTreeQuietly(claims.folder());  // every worker has ended: nobody claims anything any more
  const int status = Summarize(flags, common, found);
  if (follower.failed_workers() > 0) {
    std::printf("%zu of %d worker(s) failed (their logs are in %s): exit status 2\n", follower.failed_workers(),
                workers, (fs::path(flags.out) / "workers").string().c_str());
    return 2;
  }
  return status;
}

}  // namespace kforge
