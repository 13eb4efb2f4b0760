#include "search/bench_workers.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "sandbox/stop_signals.h"

namespace kforge {
namespace {

// Reports what changed in the run's claims since the last call.
class ClaimsFollower {
 public:
  ClaimsFollower(const TaskClaims& claims, const BenchWorkerEvents& events) : claims_(claims), events_(events) {}

  void Poll() {
    const TaskClaims::Snapshot snapshot = claims_.Scan();
    for (const std::string& task : snapshot.claimed) {
      if (started_.insert(task).second && events_.started) events_.started(task);
    }
    for (const std::string& task : snapshot.done) {
      if (started_.insert(task).second && events_.started) events_.started(task);
      if (finished_.insert(task).second && events_.finished) events_.finished(task);
    }
  }

 private:
  const TaskClaims& claims_;
  const BenchWorkerEvents& events_;
  std::set<std::string> started_, finished_;
};

}  // namespace

std::optional<std::vector<std::string>> GpusNamedByEnvironment(const std::map<std::string, std::string>& environment) {
  auto visible = environment.find("CUDA_VISIBLE_DEVICES");
  if (visible == environment.end() || visible->second.empty()) return std::nullopt;
  std::vector<std::string> gpus;
  std::stringstream list(visible->second);
  for (std::string id; std::getline(list, id, ',');) {
    if (!id.empty()) gpus.push_back(id);
  }
  return gpus;
}

Result<std::vector<std::string>> VisibleGpus(const std::map<std::string, std::string>& environment,
                                             ProcessRunner& runner) {
  if (auto named = GpusNamedByEnvironment(environment)) return *named;
  std::vector<std::string> gpus;
  auto listed = runner.Run({"nvidia-smi", "-L"});
  if (!listed.ok()) {
    return Status::Unavailable("cannot count the GPUs: " + listed.status().message() +
                               "; set CUDA_VISIBLE_DEVICES to the GPUs to use, or use --device cpu");
  }
  if (!listed->ok()) {
    return Status::Unavailable(fmt::format("cannot count the GPUs: nvidia-smi -L {}: {}", listed->status.ToString(),
                                           listed->output));
  }
  // "GPU 0: NVIDIA H200 (UUID: GPU-...)"; MIG devices are listed under their GPU and not counted.
  std::istringstream lines(listed->output);
  for (std::string line; std::getline(lines, line);) {
    int index = -1;
    if (std::sscanf(line.c_str(), "GPU %d:", &index) == 1 && index >= 0) gpus.push_back(std::to_string(index));
  }
  return gpus;
}

Result<int> WorkerCount(const std::string& text, bool on_cpu, const std::vector<std::string>& gpus) {
  if (text == "all") {
    if (on_cpu) return Status::InvalidArgument("--gpus all counts GPUs; with --device cpu give the number of CPU workers");
    if (gpus.empty()) return Status::InvalidArgument("--gpus all: this machine shows no GPU; use --device cpu");
    return static_cast<int>(gpus.size());
  }
  int count = 0;
  size_t used = 0;
  try {
    count = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || count < 1) {
    return Status::InvalidArgument("--gpus must be a number of workers (1 or more) or 'all' (got '" + text + "')");
  }
  if (!on_cpu && count > static_cast<int>(gpus.size())) {
    return Status::InvalidArgument(fmt::format(
        "--gpus {}: this machine shows {} GPU(s){}; workers sharing a GPU would time each other", count, gpus.size(),
        gpus.empty() ? "" : fmt::format(" ({})", fmt::join(gpus, ","))));
  }
  return count;
}

std::vector<BenchWorkerSpec> PlanBenchWorkers(const std::vector<std::string>& argv,
                                              const std::vector<std::string>& environment,
                                              const std::vector<std::string>& gpus,
                                              const std::vector<std::vector<int>>& cores,
                                              const std::filesystem::path& log_dir) {
  std::vector<BenchWorkerSpec> workers(cores.size());
  for (size_t i = 0; i < workers.size(); ++i) {
    BenchWorkerSpec& worker = workers[i];
    worker.argv = argv;
    worker.cpus = cores[i];
    worker.log = log_dir / fmt::format("worker-{}.log", i + 1);
    for (const std::string& entry : environment) {
      if (gpus.empty() || entry.rfind("CUDA_VISIBLE_DEVICES=", 0) != 0) worker.environment.push_back(entry);
    }
    if (!gpus.empty()) {
      worker.gpu = gpus[i % gpus.size()];
      worker.environment.push_back("CUDA_VISIBLE_DEVICES=" + worker.gpu);
    }
  }
  return workers;
}

Result<BenchWorkersOutcome> RunBenchWorkers(const std::vector<BenchWorkerSpec>& workers, const TaskClaims& claims,
                                            const BenchWorkerEvents& events, double poll_s) {
  BlockedStopSignals stop_signals;  // before any worker starts: a Ctrl-C now still stops them all
  std::vector<std::unique_ptr<Subprocess>> processes;
  for (const BenchWorkerSpec& worker : workers) {
    SpawnOptions options;
    options.argv = worker.argv;
    options.environment = worker.environment;
    options.cpus = worker.cpus;
    options.output_file = worker.log;
    options.die_with_parent = true;
    auto process = Subprocess::Spawn(options);
    if (!process.ok()) {
      for (auto& started : processes) started->KillGroup();
      return process.status().WithContext("starting a bench worker");
    }
    processes.push_back(std::move(process).value());
  }
  BenchWorkersOutcome outcome;
  outcome.exits.resize(workers.size());
  std::vector<bool> running(workers.size(), true);
  ClaimsFollower follower(claims, events);
  size_t left = workers.size();
  while (left > 0) {
    if (int signal = stop_signals.Wait(poll_s); signal != 0) {
      outcome.signal = signal;
      for (auto& process : processes) process->KillGroup();
    }
    follower.Poll();
    for (size_t i = 0; i < processes.size(); ++i) {
      if (!running[i] || (processes[i]->IsRunning() && !outcome.interrupted())) continue;
      outcome.exits[i] = processes[i]->Wait();
      running[i] = false;
      --left;
      if (events.ended) events.ended(i, outcome.exits[i]);
    }
  }
  follower.Poll();
  return outcome;
}

}  // namespace kforge
