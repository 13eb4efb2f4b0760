// Judges a candidate against a task: static checks, the candidate in its own sandboxed process,
// comparison against the reference in the trusted worker, timing against the reference, the
// roofline and provenance. Always ends in a verdict; kforge's own failures become infra_error.
// A broken task is the user's error and is returned as a Status. Not thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/clock.h"
#include "eval/baseline_source.h"
#include "eval/evaluation.h"
#include "eval/precision.h"
#include "eval/verdict_rules.h"
#include "sandbox/worker_client.h"
#include "tasks/task.h"

namespace kforge {

struct TimingBudget {
  int warmup_calls = 3;
  double warmup_ms = 100;      // at least this long, and until per-call times settle (GPU clocks ramp)
  double max_warmup_ms = 1000;
  int min_calls = 10;
  int max_calls = 100;
  double budget_ms = 200;
  Json ToJson() const;
};

// The timing budget for a device: generous on a GPU; a token few calls on the CPU, where timings
// mean nothing and only the checks on timed calls matter.
TimingBudget TimingBudgetFor(const std::string& device);

inline constexpr double kKernelCounterSeconds = 60;

struct EvalOptions {
  std::string device = "cpu";
  Precision precision = Precision::kFp32;
  ProvenanceMode mode = ProvenanceMode::kStrict;
  int seeds = 3;
  bool distributions = true;     // extra input distributions for float inputs
  double timeout_s = 120;        // the candidate's whole process
  bool timing = true;
  bool time_compiled_reference = false;  // also time torch.compile(reference), side by side
  bool cpu_sizes = true;         // apply the task's KFORGE_CPU_SIZES on the CPU
  // On a GPU, read the candidate's kernels' hardware counters with Nsight Compute after its
  // checks (evidence.kernel_counters: advice for the LLM stage, never part of the verdict); the
  // candidate's process gets kKernelCounterSeconds more for it.
  bool kernel_counters = false;
  uint64_t memory_limit_bytes = 8ull << 30;  // the candidate's whole process tree; the CLI sets a share of the machine's
  TimingBudget budget;
  std::filesystem::path exchange_root;  // where per-evaluation folders of inputs are made
  std::string gpu_name;                 // for the roofline; empty on the CPU
  // Where the reference's timings measured earlier are found and new ones kept (none: always
  // measured), and what they are valid for besides the task (GPU, driver and software versions).
  BaselineSource* baselines = nullptr;
  std::string baseline_environment;
};

class Evaluator {
 public:
  Evaluator(WorkerSource& workers, EvalOptions options, const Clock& clock = RealClock());

  // InvalidArgument when the task itself is broken (the message says where); anything else is
  // a verdict.
  Result<Evaluation> Evaluate(const TaskFile& task, const std::filesystem::path& candidate_path);

  // Times the task's reference: eager, torch.compile (default mode), and max-autotune on request;
  // each timing measured is kept in options().baselines as an evaluation keeps it, so evaluations
  // of the task on this machine reuse it.
  // A mode whose timing options().baselines finds (a source that reuses what it holds) is taken
  // from it ("from_store"), and a task with every mode found is not even prepared.
  Result<Json> Baseline(const TaskFile& task, bool max_autotune);

  const EvalOptions& options() const { return options_; }

 private:
  EvalOptions options_;
  WorkerSource& workers_;
  const Clock& clock_;
};

}  // namespace kforge
