// Where the evaluator finds the reference's timings (eager, torch.compile) measured earlier on
// the same machine, and keeps the ones it measures: torch.compile alone takes 10-17 s per task,
// most of a bench's cost, and its answer does not change while the task, the GPU, the software
// and the timing method do not. Implementations decide where they live and whether to reuse them.
#pragma once

#include <optional>
#include <string>

#include "core/json.h"

namespace kforge {

// What a stored timing is valid for.
struct BaselineKey {
  std::string task_hash;
  std::string environment;  // GPU and driver, CUDA, torch and triton versions (Workspace::BaselineEnvironment)
  std::string precision;
  std::string mode;         // "eager", "compile", "compile_max_autotune"
  Json budget;              // the timing method's budget (TimingBudget::ToJson)

  // A stable digest of every field.
  std::string Digest() const;
};

class BaselineSource {
 public:
  virtual ~BaselineSource() = default;
  // The trusted worker's time_reference reply stored under `key`, or nullopt.
  virtual std::optional<Json> Find(const BaselineKey& key) = 0;
  // Keeps a reply just measured; a failure to keep it loses nothing but the reuse.
  virtual void Keep(const BaselineKey& key, const Json& timing) = 0;
};

}  // namespace kforge
