#include "sandbox/device_workers.h"

#include <utility>

#include "core/hash.h"
#include "core/log.h"
#include "sandbox/syscall_filter.h"

namespace kforge {

DeviceWorkers::DeviceWorkers(WorkerSpec base, SandboxSettings sandbox)
    : base_(std::move(base)), sandbox_(std::move(sandbox)) {}

Result<Worker*> DeviceWorkers::Ensure(std::unique_ptr<Worker>& slot, const std::string& role) {
  if (slot && slot->Running()) return slot.get();
  if (slot) LogInfo("the {} worker for {} died; starting a new one", role, base_.device);
  WorkerSpec spec = base_;
  spec.role = role;
  ASSIGN_OR_RETURN(slot, Worker::Start(spec));
  return slot.get();
}

Result<WorkerClient*> DeviceWorkers::Trusted() {
  ASSIGN_OR_RETURN(Worker * worker, Ensure(trusted_, "trusted"));
  return static_cast<WorkerClient*>(worker);
}

Result<WorkerClient*> DeviceWorkers::Tuner() {
  ASSIGN_OR_RETURN(Worker * worker, Ensure(tuner_, "tuner"));
  return static_cast<WorkerClient*>(worker);
}

Result<WorkerClient*> DeviceWorkers::Zygote() {
  bool fresh = !(zygote_ && zygote_->Running());
  ASSIGN_OR_RETURN(Worker * worker, Ensure(zygote_, "zygote"));
  if (fresh) {
    Json settings = {{"root", sandbox_.root},
                     {"env", sandbox_.candidate_environment},
                     {"user", sandbox_.user},
                     {"isolation", sandbox_.isolation},
                     {"seccomp_bpf_hex", HexBytes(sandbox_.syscall_filter)},
                     {"allow_unisolated", sandbox_.allow_unisolated},
                     {"readable", sandbox_.readable}};
    auto configured = worker->Call("configure", Json{{"sandbox", settings}}, 60);
    if (!configured.ok()) {
      zygote_.reset();  // an unconfigured zygote must not be handed out; the next call starts afresh
      return configured.status().WithContext("configuring the candidate sandbox");
    }
    isolation_ = JsonField(*configured, "isolation");
    if (!JsonGet<bool>(isolation_, "namespaces", false)) {
      LogInfo("warning: candidates run WITHOUT isolation (--unsafe-no-isolation): {}",
              JsonGet<std::string>(isolation_, "why", "?"));
    }
  }
  return static_cast<WorkerClient*>(worker);
}

Result<Json> DeviceWorkers::Fingerprint() {
  ASSIGN_OR_RETURN(Worker * worker, Ensure(trusted_, "trusted"));
  return worker->hello();
}

}  // namespace kforge
