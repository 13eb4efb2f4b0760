// What every subcommand shares: the workspace folder (.kforge/: the store, caches, scratch),
// the store, and the workers of the chosen device. Wiring only.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "core/json.h"
#include "eval/evaluation.h"
#include "eval/evaluator.h"
#include "sandbox/device_workers.h"
#include "search/stored_baselines.h"
#include "store/store.h"
#include "tasks/task.h"

namespace kforge {

struct CommonOptions {
  std::string device = "auto";
  std::string precision = "fp32";
  std::string python;
  std::string workspace = ".kforge";
  std::string sandbox_user = "nobody";
  std::string isolation = "fork";
  bool unsafe_no_isolation = false;  // run candidates even where the kernel cannot isolate them
  bool verbose = false;
  bool quiet = false;
};

class Workspace {
 public:
  // Resolves the device, opens the store and prepares (but does not start) the workers.
  static Result<std::unique_ptr<Workspace>> Open(const CommonOptions& options);
  // Open, then start the trusted worker and check that its torch sees the chosen device.
  static Result<std::unique_ptr<Workspace>> OpenForDevice(const CommonOptions& options);
  // OpenForDevice, then start the candidate sandbox: a machine that cannot isolate candidates is
  // an error here (unless --unsafe-no-isolation), before anything is evaluated or stored.
  static Result<std::unique_ptr<Workspace>> OpenForCandidates(const CommonOptions& options);

  const std::string& device() const { return device_; }
  DeviceWorkers& workers() { return *workers_; }
  // Worker sets for `count` evaluations at once (after OpenForDevice): {&workers()} for one; for
  // more, one set per GPU, each seeing only its GPU (CUDA_VISIBLE_DEVICES, candidates too), or on
  // the CPU that many independent sets. InvalidArgument when the machine has fewer GPUs.
  Result<std::vector<DeviceWorkers*>> EvaluatorSlots(int count);
  // The GPUs this process may use, as CUDA names them (none on the CPU; after OpenForDevice).
  std::vector<std::string> VisibleGpus() const;
  // `asked` worker slots, where 0 asks for one per visible GPU (one on the CPU).
  int SlotCount(int asked) const;
  Store* store() { return store_.get(); }  // never null once Open succeeded
  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path ScratchDir() const;
  Result<Json> Fingerprint();
  // The GPU's name from the fingerprint ("" on the CPU or before OpenForDevice).
  const std::string& gpu_name() const { return gpu_name_; }
  // The worker's environment fingerprint (env_info.py; null before OpenForDevice).
  const Json& fingerprint() const { return fingerprint_; }

  // The evaluator's options for this workspace's device (exchange folder, GPU, timing budget, the
  // stored baselines; `fresh_baselines`: measured again and replaced); callers set the rest.
  EvalOptions EvalDefaults(bool fresh_baselines);
  // What a stored baseline is valid for besides its task: the device, GPU, driver, CUDA, torch and
  // triton versions (empty before OpenForDevice).
  const std::string& baseline_environment() const { return baseline_environment_; }

  // Records an evaluation with its task, candidate and environment (this machine's, or the
  // `fingerprint` of the machine that evaluated it); a failure is reported and returned but never
  // loses the evaluation already printed.
  Result<int64_t> Record(const TaskFile& task, const std::string& candidate_source, const std::string& origin,
                         const Evaluation& evaluation, const std::string& precision, const std::string& mode,
                         const Json& fingerprint = Json());

 private:
  std::filesystem::path root_;
  std::string device_;
  std::string gpu_name_;
  Json fingerprint_;
  std::string baseline_environment_;
  std::unique_ptr<DeviceWorkers> workers_;
  WorkerSpec worker_spec_;           // what workers_ was made from: EvaluatorSlots copies it
  SandboxSettings sandbox_settings_;
  std::vector<std::unique_ptr<DeviceWorkers>> slot_workers_;  // EvaluatorSlots' sets, one per GPU
  std::unique_ptr<Store> store_;
  StoredBaselines stored_baselines_{nullptr, true};  // over store_: reused, or measured again
  StoredBaselines fresh_baselines_{nullptr, false};
};

}  // namespace kforge
