// The tiles of the compiler's CUDA kernels, measured on the GPU before a candidate is evaluated.
// A CUDA kernel offered in several tiles (codegen::CudaTuning) runs its rules' tile until then;
// the candidate's own process may not time anything (the evaluator's static rules), so kforge's
// tuner worker (python/kforge_worker/cuda_tuner.py) times each tile on fresh operands of the
// kernel's layout and names the fastest whose output agrees with the others. The choice is kept in
// the store by tuning key and GPU, like @triton.autotune's, and baked into the source, which the
// evaluator then judges as any other.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/emitted_kernel.h"
#include "core/json.h"
#include "core/status.h"
#include "sandbox/worker_client.h"

namespace kforge {

struct CudaTuningOutcome {
  std::map<std::string, codegen::TileChoice> chosen;  // by tuning key; kernels without a choice absent
  // One entry a kernel: {"kernel", "key", "chosen" (index or null), "variants": [{"tile", "ms" |
  // "error" | "differs"}], "skipped"}, as the tuner answered, for report.json.
  Json kernels = Json::array();
  double seconds = 0;  // the tuner's measuring
};

// How long the tuner may take for one candidate's kernels: each tile's NVRTC compile (seconds)
// and about 25 ms of timed calls.
inline constexpr double kCudaTuningTimeoutS = 300;

// Asks `tuner` (a worker of role "tuner") to time the tiles of `jobs`. A reply that names no tile
// of a job, or one the job does not offer, chooses nothing for it. Errors: the worker's.
Result<CudaTuningOutcome> TuneCudaKernels(WorkerClient& tuner, const std::vector<codegen::CudaTuning>& jobs, double timeout_s);

}  // namespace kforge
