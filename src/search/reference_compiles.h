// torch.compile of many tasks' references ahead of timing them, several at once: compiling is
// CPU work that takes a network tens of seconds to minutes, and timing must run alone on the GPU.
// Each worker set compiles its next task into the workspace's shared compile caches; the timings
// that follow, one task at a time, compile from those caches in seconds. The policy (who takes
// which task, what a failure means) is here; the caller prints.
#pragma once

#include <functional>
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

}  // namespace kforge
