// `kforge bench`, shared by its three ways of running: in this process (bench_command.cc), on
// parallel worker processes (--gpus, bench_gpus.cc) and as a Slurm job array (--slurm,
// bench_slurm.cc). Wiring only: the policies live in src/search.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/optimize.h"
#include "cli/workspace.h"
#include "core/json.h"
#include "tasks/task.h"

namespace kforge {

struct BenchFlags {
  std::string suite;
  std::string shard;  // "I/N": the I-th of N deterministic parts of the suite
  std::string out = "out/bench";
  bool json = false;
  bool fresh = false;
  bool no_run = false;
  std::string gpus;       // --gpus N|all: that many worker processes share the run
  std::string claim_run;  // a worker of a --gpus run: runs only the tasks it claims in this run
  bool slurm = false;
  int slurm_shards = 0;   // 0: one per task
  std::vector<std::string> sbatch_args;
  bool wait = false;
  OptimizeSettings settings;
};

struct Shard {
  int index = 1;  // 1-based
  int count = 1;
};

// The suite's tasks this invocation covers (its shard's), checked: a usage error's message when
// the suite or the shard is not usable.
struct BenchTasks {
  std::filesystem::path suite;
  Shard shard;
  std::vector<TaskFile> tasks;
};
Result<BenchTasks> FindBenchTasks(const BenchFlags& flags);

// Where a task's model_new.py and report.json go under --out.
std::filesystem::path TaskFolder(const BenchFlags& flags, const std::filesystem::path& suite, const TaskFile& task);

// The task's stored report when it still answers for it (same source and mode; unless only
// summarizing, the same graph replay setting), else null. Never one with --fresh.
Json ReusableReport(const BenchFlags& flags, const std::filesystem::path& suite, const TaskFile& task, bool summarizing);

// Runs (or with --no-run, summarizes) the bench in this process; the exit status.
int RunBenchHere(const BenchFlags& flags, const CommonOptions& common, const BenchTasks& tasks);
// --gpus: on worker processes of this binary, then the summary as --no-run makes it.
int RunBenchOnWorkers(const BenchFlags& flags, const CommonOptions& common, const BenchTasks& tasks,
                      const CLI::App& command);
// --slurm: submits the shards as a Slurm job array and the summary as a job after them.
int SubmitBenchToSlurm(const BenchFlags& flags, const CommonOptions& common, const BenchTasks& tasks,
                       const CLI::App& command);

}  // namespace kforge
