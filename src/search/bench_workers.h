// `kforge bench --gpus N`: N worker processes of the same binary run one bench together, one per
// GPU (or N on the CPU), each pinned to its own share of the CPU cores so that one worker's
// compiling does not slow another's launch-bound timings. Tasks are not split ahead of time: each
// worker claims the next unclaimed task when it is free (bench_claims.h). This file holds the
// policy (how many workers, which GPU and cores each gets, what each runs) and the loop that
// follows them until they end; the caller prints and summarizes.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "sandbox/cpu_affinity.h"
#include "sandbox/process_runner.h"
#include "sandbox/subprocess.h"
#include "search/bench_claims.h"

namespace kforge {

// The GPUs CUDA_VISIBLE_DEVICES names, when it is set.
std::optional<std::vector<std::string>> GpusNamedByEnvironment(const std::map<std::string, std::string>& environment);

// The GPUs this process may use, as CUDA names them: the entries of CUDA_VISIBLE_DEVICES when it
// is set, else one index per GPU that `nvidia-smi -L` lists. Unavailable when neither says.
Result<std::vector<std::string>> VisibleGpus(const std::map<std::string, std::string>& environment,
                                             ProcessRunner& runner);

// How many workers `--gpus TEXT` asks for: a positive number, or "all" (every GPU in `gpus`). On
// the CPU (`on_cpu`) a number counts CPU workers and "all" is an error. InvalidArgument, saying
// why, for anything else or for more workers than GPUs.
Result<int> WorkerCount(const std::string& text, bool on_cpu, const std::vector<std::string>& gpus);

// One worker process: what it runs, with which environment and cores, where its output goes.
struct BenchWorkerSpec {
  std::vector<std::string> argv;
  std::vector<std::string> environment;
  std::vector<int> cpus;
  std::filesystem::path log;
  std::string gpu;  // its CUDA_VISIBLE_DEVICES, or empty on the CPU
};

// The workers of one run: worker i runs `argv` (the bench with the run's claim flag), sees only
// gpus[i] when on a GPU, runs on cores[i] and writes its output to log_dir/worker-<i+1>.log.
std::vector<BenchWorkerSpec> PlanBenchWorkers(const std::vector<std::string>& argv,
                                              const std::vector<std::string>& environment,
                                              const std::vector<std::string>& gpus,
                                              const std::vector<std::vector<int>>& cores,
                                              const std::filesystem::path& log_dir);

// What the loop tells its caller, from the thread that called RunBenchWorkers.
struct BenchWorkerEvents {
  std::function<void(const std::string& task)> started;   // a worker claimed it
  std::function<void(const std::string& task)> finished;  // its report is written
  std::function<void(size_t worker, const ExitStatus& status)> ended;
};

struct BenchWorkersOutcome {
  std::vector<ExitStatus> exits;  // one per worker
  int signal = 0;                 // SIGINT or SIGTERM when one stopped the run, else 0
  bool interrupted() const { return signal != 0; }
};

// Starts the workers (each in its own process group, stdin from /dev/null, killed when this
// thread ends) and follows them: every `poll_s` it reads the run's claims and reports tasks that
// started and finished, until every worker has ended. SIGINT or SIGTERM to this thread (blocked
// here while it runs) kills every worker's process group and ends the run. IoError when a worker
// cannot be started (those already started are stopped).
Result<BenchWorkersOutcome> RunBenchWorkers(const std::vector<BenchWorkerSpec>& workers, const TaskClaims& claims,
                                            const BenchWorkerEvents& events, double poll_s = 0.5);

}  // namespace kforge
