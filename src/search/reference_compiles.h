// torch.compile of many tasks' references ahead of timing them, several at once: compiling is
// CPU work that takes a network tens of seconds to minutes, and timing must run alone on the GPU.
// Each worker set compiles its next task into the workspace's shared compile caches; the timings
// that follow, one task at a time, compile from those caches in seconds. The worker sets must be
// gone (their processes exited, their CUDA contexts and compile pools with them) before anything
// is timed: a timing taken while they lived ran up to 1.5x slower on an H100 (bench/RESULTS.md).
// The policy (who takes which task, what a failure means) is here; the caller prints.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eval/evaluator.h"
#include "sandbox/worker_client.h"
#include "tasks/task.h"

namespace kforge {

struct ReferenceCompile {
  std::string task;     // the task's name
  Status status;        // why it did not compile (the timing then compiles it as it would have)
  double compile_s = 0;
};

// Compiles each of `tasks` in one of `slots` (each slot one task at a time, the next unclaimed
// task when it is free); `done` is called as each ends, from the slot's thread, one call at a
// time. Returns one entry a task, in the tasks' order. A failure is an entry, never an error: it
// costs only the time the later timing spends compiling.
std::vector<ReferenceCompile> CompileReferences(const std::vector<TaskFile>& tasks, const std::vector<WorkerSource*>& slots,
                                                const EvalOptions& options,
                                                const std::function<void(const ReferenceCompile&)>& done = nullptr);

// The tasks of `tasks` whose torch.compile timing `evaluator` would measure (its baselines lack
// it), compiled ahead in `jobs` worker sets made by `make_sets` at once; the sets are dropped, and
// their processes gone, before this returns, so the timings that follow run alone. Nothing is
// compiled (and no set made) when fewer than two tasks need it or `jobs` is below 2.
std::vector<ReferenceCompile> CompileAhead(
    const std::vector<TaskFile>& tasks, const Evaluator& evaluator, int jobs,
    const std::function<std::vector<std::unique_ptr<WorkerSource>>(int count)>& make_sets,
    const std::function<void(const ReferenceCompile&)>& done = nullptr);

}  // namespace kforge
