// The workers serving one device: a trusted worker (tasks, references, comparisons), a zygote
// (forks the sandboxed candidate processes) and, while the compiler tunes, a tuner. Each is
// started on first use and started again when it has died. Not thread-safe: one evaluation at a
// time per device.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/worker.h"

namespace kforge {

struct SandboxSettings {
  std::string root;                 // private folders of candidate processes are made here
  std::string user;                 // unprivileged user for candidates when running as root; "" = none
  std::string isolation = "fork";   // "fork": warm forked processes; "spawn": a fresh interpreter each
  std::map<std::string, std::string> candidate_environment;
  std::vector<std::string> readable;  // folders candidates read beside the read-only system (the exchange)
  std::string syscall_filter;       // the seccomp program (raw BPF) candidates run under
  bool allow_unisolated = false;    // run candidates where the machine offers no namespaces
};

class DeviceWorkers : public WorkerSource {
 public:
  DeviceWorkers(WorkerSpec base, SandboxSettings sandbox);

  Result<WorkerClient*> Trusted() override;
  Result<WorkerClient*> Zygote() override;
  // A worker that times the tiles of the compiler's CUDA kernels (role "tuner"), started on first
  // use; ReleaseTuner ends it, so its GPU memory and context go back before a candidate runs.
  Result<WorkerClient*> Tuner();
  void ReleaseTuner() { tuner_.reset(); }
  // The trusted worker's hello: the environment fingerprint.
  Result<Json> Fingerprint();
  const std::string& device() const { return base_.device; }
  // What the zygote found the machine allows for isolating candidates (null before it started).
  const Json& isolation() const { return isolation_; }

 private:
  Result<Worker*> Ensure(std::unique_ptr<Worker>& slot, const std::string& role);

  WorkerSpec base_;
  SandboxSettings sandbox_;
  std::unique_ptr<Worker> trusted_;
  std::unique_ptr<Worker> zygote_;
  std::unique_ptr<Worker> tuner_;
  Json isolation_;
};

}  // namespace kforge
