#include "cli/workspace.h"

#include <unistd.h>

#include "core/log.h"
#include "sandbox/environment.h"

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

// Whether the unprivileged sandbox user can reach `path`: every folder above it must let others in.
bool ReachableByOthers(const std::filesystem::path& path) {
  for (auto dir = path; !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
    std::error_code ec;
    auto perms = std::filesystem::status(dir, ec).permissions();
    if (!ec && (perms & std::filesystem::perms::others_exec) == std::filesystem::perms::none) return false;
  }
  return true;
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
  // Compile caches persist in the workspace when the sandbox user can reach it there, otherwise
  // they live beside the sandbox folders.
  sandbox.cache_dir = (workspace->root_ / "cache").string();
  std::filesystem::create_directories(workspace->ScratchDir(), ec);
  std::filesystem::permissions(workspace->ScratchDir(), std::filesystem::perms::owner_all |
                               std::filesystem::perms::group_exec | std::filesystem::perms::others_exec, ec);
  if (geteuid() == 0 && !options.sandbox_user.empty() && !ReachableByOthers(workspace->root_)) {
    sandbox.cache_dir = (workspace->ScratchDir() / "cache").string();
  }
  std::filesystem::create_directories(sandbox.cache_dir + "/triton", ec);
  std::filesystem::create_directories(sandbox.cache_dir + "/torch_extensions", ec);
  // Shared compile caches: the unprivileged candidate user writes there too.
  for (const char* sub : {"", "/triton", "/torch_extensions"}) {
    std::filesystem::permissions(sandbox.cache_dir + sub, std::filesystem::perms::all, ec);
  }
  sandbox.user = geteuid() == 0 ? options.sandbox_user : "";
  if (options.isolation != "fork" && options.isolation != "spawn") {
    return Status::InvalidArgument("--isolation must be fork or spawn (got '" + options.isolation + "')");
  }
  sandbox.isolation = options.isolation;
  sandbox.candidate_environment = CandidateEnvironment(env, workspace->device_, sandbox.cache_dir);
  workspace->workers_ = std::make_unique<DeviceWorkers>(spec, sandbox);

  auto store = Store::Open(workspace->root_ / "kforge.db");
  if (store.ok()) {
    workspace->store_ = std::move(store).value();
  } else {
    LogInfo("warning: results will not be stored: {}", store.status().ToString());
  }
  workspace->stored_baselines_ = StoredBaselines(workspace->store_.get(), /*reuse=*/true);
  workspace->fresh_baselines_ = StoredBaselines(workspace->store_.get(), /*reuse=*/false);
  return workspace;
}

Result<std::unique_ptr<Workspace>> Workspace::OpenForDevice(const CommonOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> workspace, Open(options));
  ASSIGN_OR_RETURN(Json fingerprint, workspace->Fingerprint());
  workspace->gpu_name_ = JsonGet<std::string>(fingerprint, "gpu", "");
  Json machine = Json::object();
  for (const char* key : {"device", "gpu", "driver", "cuda", "compute_capability", "torch", "triton", "cpu"}) {
    machine[key] = JsonField(fingerprint, key);
  }
  workspace->baseline_environment_ = machine.dump();
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
  return options;
}

std::filesystem::path Workspace::ScratchDir() const { return ScratchRoot(root_); }

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
                                  const Evaluation& evaluation, const std::string& precision, const std::string& mode) {
  if (!store_) return Status::Unavailable("no store");
  ASSIGN_OR_RETURN(Json fingerprint, Fingerprint());
  ASSIGN_OR_RETURN(int64_t environment_id, store_->RecordEnvironment(fingerprint));
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
