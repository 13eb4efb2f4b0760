#include "cli/workspace.h"
#include "search/bench_workers.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/files.h"
#include "core/log.h"
#include "sandbox/environment.h"
#include "sandbox/syscall_filter.h"

namespace kforge {
namespace {

std::string ResolveDevice(const std::string& requested) {
  if (requested != "auto") return requested;
  return access("/dev/nvidiactl", F_OK) == 0 ? "cuda:0" : "cpu";
}

// /dev/shm when it has room (inputs move through it), otherwise the workspace.
std::filesystem::path ScratchRoot(const std::filesystem::path& workspace) {
  std::error_code ec;
  auto space = std::filesystem::space("/dev/shm", ec);
  if (!ec && space.available > (8ull << 30)) return "/dev/shm/kforge-" + std::to_string(getuid());
  return workspace / "scratch";
}

// Removes exchange folders left by kforge processes that no longer run (killed mid-evaluation):
// their names carry the pid that made them ("eval-PID-XXXXXX").
void SweepStaleExchange(const std::filesystem::path& exchange_root) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(exchange_root, ec)) {
    std::string name = entry.path().filename().string();
    auto dash = name.find('-');
    auto second = name.find('-', dash + 1);
    if (dash == std::string::npos || second == std::string::npos) continue;
    std::string pid = name.substr(dash + 1, second - dash - 1);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::filesystem::exists("/proc/" + pid, ec)) continue;
    RemoveTreeQuietly(entry.path());
  }
}

// Half the memory the machine has available now (MemAvailable), the candidate's default limit:
// a fixed number would be above a small host's RAM and far below a large one's.
uint64_t CandidateMemoryDefault() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return std::max<uint64_t>(kib * 1024 / 2, 1ull << 30);
  }
  return 8ull << 30;
}

// Sets NAME=value in an environment list, replacing what the parent passed down.
void SetVariable(std::vector<std::string>& environment, const std::string& name, const std::string& value) {
  std::erase_if(environment, [&](const std::string& entry) { return entry.rfind(name + "=", 0) == 0; });
  environment.push_back(name + "=" + value);
}

}  // namespace

Result<std::unique_ptr<Workspace>> Workspace::Open(const CommonOptions& options) {
  if (options.device != "auto" && options.device != "cpu" && options.device.rfind("cuda:", 0) != 0) {
    return Status::InvalidArgument("--device must be auto, cpu or cuda:N (got '" + options.device + "')");
  }
  std::unique_ptr<Workspace> workspace(new Workspace());
  std::error_code ec;
  workspace->root_ = std::filesystem::absolute(options.workspace, ec);
  std::filesystem::create_directories(workspace->root_, ec);
  if (ec) return Status::IoError("cannot create the workspace " + workspace->root_.string() + ": " + ec.message());
  workspace->device_ = ResolveDevice(options.device);

  auto env = ProcessEnvironment();
  ASSIGN_OR_RETURN(std::string package_dir, FindWorkerPackageDir(env));
  WorkerSpec spec;
  spec.python = FindPython(options.python, env);
  spec.python_path = package_dir;
  spec.device = workspace->device_;
  spec.environment = WorkerEnvironment(env);
  if (workspace->device_ == "cpu") spec.environment.push_back("TRITON_INTERPRET=1");

  SandboxSettings sandbox;
  sandbox.root = (workspace->ScratchDir() / "sandbox").string();
  std::filesystem::create_directories(workspace->ScratchDir(), ec);
  std::filesystem::permissions(workspace->ScratchDir(), std::filesystem::perms::owner_all |
                               std::filesystem::perms::group_exec | std::filesystem::perms::others_exec, ec);
  std::filesystem::create_directories(workspace->ScratchDir() / "exchange", ec);
  SweepStaleExchange(workspace->ScratchDir() / "exchange");
  sandbox.readable = {(workspace->ScratchDir() / "exchange").string()};
  // The trusted worker's own compile caches (torch.compile baselines); candidates get theirs in
  // their private folders, so nothing they write can reach another evaluation.
  std::string trusted_cache = (workspace->root_ / "cache").string();
  std::filesystem::create_directories(trusted_cache + "/triton", ec);
  std::filesystem::create_directories(trusted_cache + "/inductor", ec);
  SetVariable(spec.environment, "TRITON_CACHE_DIR", trusted_cache + "/triton");
  SetVariable(spec.environment, "TORCHINDUCTOR_CACHE_DIR", trusted_cache + "/inductor");
  // What stays writable when the trusted worker confines its own filesystem (it imports task
  // files, some written by a model): its caches and the scratch folder, not the store.
  SetVariable(spec.environment, "KFORGE_WRITABLE", trusted_cache + ":" + workspace->ScratchDir().string());
  std::filesystem::create_directories(workspace->ScratchDir() / "tmp", ec);
  SetVariable(spec.environment, "TMPDIR", (workspace->ScratchDir() / "tmp").string());
  sandbox.user = geteuid() == 0 ? options.sandbox_user : "";
  if (options.isolation != "fork" && options.isolation != "spawn") {
    return Status::InvalidArgument("--isolation must be fork or spawn (got '" + options.isolation + "')");
  }
  sandbox.isolation = options.isolation;
  sandbox.candidate_environment = CandidateEnvironment(env, workspace->device_);
  ASSIGN_OR_RETURN(sandbox.syscall_filter, BuildSyscallFilter(SyscallPolicy{.allow_exec = workspace->device_ != "cpu"}));
  sandbox.allow_unisolated = options.unsafe_no_isolation;
  workspace->workers_ = std::make_unique<DeviceWorkers>(spec, sandbox);
  workspace->worker_spec_ = spec;
  workspace->sandbox_settings_ = sandbox;

  // A store that exists but cannot be read is never replaced: its history would be gone.
  const std::filesystem::path db_path = workspace->root_ / "kforge.db";
  if (std::filesystem::exists(db_path, ec) && std::filesystem::file_size(db_path, ec) == 0) {
    return Status::InvalidArgument(fmt::format(
        "the store {} is empty (0 bytes): it was truncated. Restore it from a copy, or move it away to start a "
        "new store in this workspace", db_path.string()));
  }
  auto store = Store::Open(db_path);
  if (!store.ok()) {
    return Status::InvalidArgument(fmt::format(
        "cannot open the store {}: {}. If it is damaged, restore it from a copy or move it away to start a new "
        "one; nothing was changed", db_path.string(), store.status().message()));
  }
  workspace->store_ = std::move(store).value();
  workspace->stored_baselines_ = StoredBaselines(workspace->store_.get(), /*reuse=*/true);
  workspace->fresh_baselines_ = StoredBaselines(workspace->store_.get(), /*reuse=*/false);
  return workspace;
}

Result<std::unique_ptr<Workspace>> Workspace::OpenForDevice(const CommonOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> workspace, Open(options));
  ASSIGN_OR_RETURN(Json fingerprint, workspace->Fingerprint());
  workspace->gpu_name_ = JsonGet<std::string>(fingerprint, "gpu", "");
  workspace->fingerprint_ = fingerprint;
  Json machine = Json::object();
  for (const char* key : {"device", "gpu", "driver", "cuda", "compute_capability", "torch", "triton", "cpu"}) {
    machine[key] = JsonField(fingerprint, key);
  }
  workspace->baseline_environment_ = machine.dump();
  return workspace;
}

Result<std::unique_ptr<Workspace>> Workspace::OpenForCandidates(const CommonOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> workspace, OpenForDevice(options));
  auto zygote = workspace->workers_->Zygote();
  if (!zygote.ok()) return zygote.status();
  return workspace;
}

EvalOptions Workspace::EvalDefaults(bool fresh_baselines) {
  EvalOptions options;
  options.device = device_;
  options.budget = TimingBudgetFor(device_);
  options.exchange_root = ScratchDir() / "exchange";
  options.gpu_name = gpu_name_;
  options.baselines = fresh_baselines ? &fresh_baselines_ : &stored_baselines_;
  options.baseline_environment = baseline_environment_;
  options.memory_limit_bytes = CandidateMemoryDefault();
  return options;
}

std::filesystem::path Workspace::ScratchDir() const { return ScratchRoot(root_); }

std::vector<std::string> Workspace::VisibleGpus() const {
  std::vector<std::string> gpus;
  if (device_ == "cpu") return gpus;
  // As CUDA names them: the parent's CUDA_VISIBLE_DEVICES, else 0..n-1 for the worker's GPU count.
  if (auto named = GpusNamedByEnvironment(ProcessEnvironment())) return *named;
  for (int64_t i = 0; i < JsonGet<int64_t>(fingerprint_, "gpu_count", 1); ++i) gpus.push_back(std::to_string(i));
  return gpus;
}

int Workspace::SlotCount(int asked) const {
  if (asked != 0) return asked;
  return std::max<int>(1, static_cast<int>(VisibleGpus().size()));
}

Result<std::vector<DeviceWorkers*>> Workspace::EvaluatorSlots(int count) {
  if (count < 1) return Status::InvalidArgument(fmt::format("--evaluators must be at least 1 (got {})", count));
  if (count == 1) return std::vector<DeviceWorkers*>{workers_.get()};
  std::vector<std::string> gpus;
  if (device_ != "cpu") {
    if (device_ != "cuda:0") {
      return Status::InvalidArgument("--evaluators " + std::to_string(count) + " with --device " + device_ +
                                     ": pick the GPUs with CUDA_VISIBLE_DEVICES instead");
    }
    gpus = VisibleGpus();
    if (static_cast<int>(gpus.size()) < count) {
      return Status::InvalidArgument(fmt::format(
          "--evaluators {}: this machine shows {} GPU(s); evaluations sharing a GPU would time each other", count,
          gpus.size()));
    }
  }
  std::vector<DeviceWorkers*> slots;
  for (int slot = 0; slot < count; ++slot) {
    if (slot_workers_.size() <= static_cast<size_t>(slot)) {
      WorkerSpec spec = worker_spec_;
      SandboxSettings sandbox = sandbox_settings_;
      if (!gpus.empty()) {
        SetVariable(spec.environment, "CUDA_VISIBLE_DEVICES", gpus[slot]);
        sandbox.candidate_environment["CUDA_VISIBLE_DEVICES"] = gpus[slot];
      }
      slot_workers_.push_back(std::make_unique<DeviceWorkers>(spec, sandbox));
    }
    slots.push_back(slot_workers_[slot].get());
  }
  return slots;
}

Result<Json> Workspace::Fingerprint() {
  ASSIGN_OR_RETURN(Json fingerprint, workers_->Fingerprint());
  if (device_ != "cpu" && !JsonGet<bool>(fingerprint, "cuda_available", false)) {
    return Status::InvalidArgument("--device " + device_ + ": the worker's torch (" +
                                   JsonGet<std::string>(fingerprint, "executable", "python") +
                                   ") sees no CUDA device; use --device cpu or a machine with a GPU");
  }
  fingerprint["kforge"] = KFORGE_VERSION;
  return fingerprint;
}

Result<int64_t> Workspace::Record(const TaskFile& task, const std::string& candidate_source, const std::string& origin,
                                  const Evaluation& evaluation, const std::string& precision, const std::string& mode,
                                  const Json& fingerprint) {
  if (!store_) return Status::Unavailable("no store");
  Json environment = fingerprint;
  if (!environment.is_object()) {
    ASSIGN_OR_RETURN(environment, Fingerprint());
  }
  ASSIGN_OR_RETURN(int64_t environment_id, store_->RecordEnvironment(environment));
  ASSIGN_OR_RETURN(std::string task_hash, store_->RecordTask(task.path.string(), task.name, task.source));
  ASSIGN_OR_RETURN(std::string candidate_hash, store_->RecordCandidate(candidate_source, origin));
  EvaluationRecord record;
  record.task_hash = task_hash;
  record.candidate_hash = candidate_hash;
  record.environment_id = environment_id;
  record.kind = EvaluationKind::kCandidate;
  record.device = evaluation.device;
  record.precision = precision;
  record.mode = mode;
  record.verdict = evaluation.verdict.ToString();
  record.verdict_kind = ToString(evaluation.verdict.kind);
  if (!evaluation.verdict.check.empty()) record.check_name = evaluation.verdict.check;
  record.message = evaluation.verdict.message;
  if (evaluation.speedup) record.speedup = evaluation.speedup->speedup;
  if (evaluation.candidate_ms) record.candidate_ms = evaluation.candidate_ms->median;
  if (evaluation.reference_ms) record.reference_ms = evaluation.reference_ms->median;
  record.duration_s = evaluation.duration_s;
  record.evidence = evaluation.ToJson();
  const Json& timing = JsonField(evaluation.evidence, "timing");
  auto measurement = [&](const char* name, const std::optional<SampleSummary>& summary, const char* samples_key) {
    if (!summary) return;
    record.measurements.push_back({name, JsonGet<std::vector<double>>(timing, samples_key, {}), summary->median,
                                   summary->ci_low, summary->ci_high, "ms"});
  };
  measurement("candidate_ms", evaluation.candidate_ms, "candidate_samples_ms");
  measurement("reference_eager_ms", evaluation.reference_ms, "reference_samples_ms");
  return store_->RecordEvaluation(record);
}

}  // namespace kforge
