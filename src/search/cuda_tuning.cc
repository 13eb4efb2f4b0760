#include "search/cuda_tuning.h"

#include "compiler/codegen/cuda_kernel.h"

namespace kforge {

Result<CudaTuningOutcome> TuneCudaKernels(WorkerClient& tuner, const std::vector<codegen::CudaTuning>& jobs, double timeout_s) {
  Json request = {{"jobs", Json::array()}};
  for (const codegen::CudaTuning& job : jobs) request["jobs"].push_back(codegen::CudaTuningToJson(job));
  ASSIGN_OR_RETURN(Json reply, tuner.Call("tune_cuda", request, timeout_s));
  CudaTuningOutcome outcome;
  outcome.seconds = JsonGet<double>(reply, "seconds", 0);
  const Json kernels = JsonField(reply, "kernels");
  if (!kernels.is_array() || kernels.size() != jobs.size()) {
    return Status::Internal("the tuner answered " + std::to_string(kernels.is_array() ? kernels.size() : 0) + " kernels for " +
                            std::to_string(jobs.size()));
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Json& answer = kernels[i];
    outcome.kernels.push_back(answer);
    const Json chosen = JsonField(answer, "chosen");
    if (JsonGet<std::string>(answer, "key", "") != jobs[i].key || !chosen.is_number_integer()) continue;
    const int64_t index = chosen.get<int64_t>();
    if (index < 0 || index >= static_cast<int64_t>(jobs[i].variants.size())) continue;
    outcome.chosen[jobs[i].key] = jobs[i].variants[static_cast<size_t>(index)].config;
  }
  return outcome;
}

}  // namespace kforge
