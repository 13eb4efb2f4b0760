#include <unistd.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/given_options.h"
#include "core/files.h"
#include "core/log.h"
#include "sandbox/environment.h"
#include "sandbox/process_runner.h"
#include "sandbox/stop_signals.h"
#include "search/slurm_array.h"
#include "serve/access_tokens.h"
#include "serve/dashboard.h"
#include "serve/eval_service.h"
#include "serve/service_judge.h"

namespace kforge {
namespace {

struct ServeFlags {
  std::vector<std::string> benches;
  std::string bind = "127.0.0.1";
  int port = 8765;
  std::string token_file;
  bool eval = false;
  int gpus = 1;  // worker slots of the evaluation service; 0: every GPU visible
  int max_pending_per_client = 1000;
  double max_timeout_s = 600;
  bool remote_workers = false;  // also deal jobs to `kforge worker --connect` processes
  bool no_local_slots = false;  // only remote workers judge (a head node without a GPU)
  double lease_margin_s = 300;  // a remote job's lease beyond its timeout
  int slurm_workers = 0;        // remote workers placed as a Slurm job array
  std::vector<std::string> sbatch_args;
  std::string advertise;        // the address workers connect to
};

// Global options the workers get again (the workspace and interpreter are set apart).
const std::set<std::string> kWorkerPathOptions = {"--workspace", "--python"};

// Gives the Slurm-placed workers a token of their own (when the service has tokens), before the
// server starts reading them: written to folder/worker.token, readable by its owner only.
Result<std::filesystem::path> MakeWorkerToken(AccessTokens& tokens, const std::filesystem::path& folder) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  ASSIGN_OR_RETURN(std::string token, NewToken());
  RETURN_IF_ERROR(tokens.Add("slurm-workers", token, true));
  const std::filesystem::path token_file = folder / "worker.token";
  RETURN_IF_ERROR(WriteFile(token_file, ""));
  std::filesystem::permissions(token_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::replace, ec);
  RETURN_IF_ERROR(WriteFile(token_file, token + "\n"));
  return token_file;
}

// The Slurm-placed workers: an array of `kforge worker --connect URL` (with `token_file` when not
// empty), their logs and workspaces under `folder`.
Result<std::string> PlaceSlurmWorkers(const ServeFlags& flags, const CommonOptions& common, const CLI::App& command,
                                      const std::string& url, const std::filesystem::path& token_file,
                                      const std::filesystem::path& folder, ProcessRunner& runner) {
  std::error_code ec;
  std::vector<std::string> argv = {std::filesystem::read_symlink("/proc/self/exe", ec).string()};
  for (std::string& option : GivenOptions(*command.get_parent(), kWorkerPathOptions)) argv.push_back(std::move(option));
  argv.push_back("--workspace=" + (folder / "workspace-").string() + kArrayTaskId);
  argv.push_back("--python=" + AbsolutePython(common, ProcessEnvironment()));
  argv.insert(argv.end(), {"worker", "--connect=" + url, std::string("--name=slurm-") + kArrayTaskId, "--gpus=all"});
  if (!token_file.empty()) argv.push_back("--token-file=" + token_file.string());
  SlurmWorkerPlan plan{std::filesystem::absolute(folder).lexically_normal(), flags.slurm_workers, argv, flags.sbatch_args};
  return SubmitSlurmWorkers(plan, runner);
}

// The address remote workers reach this service at.
std::string AdvertisedUrl(const ServeFlags& flags, int port) {
  std::string host = flags.advertise;
  if (host.empty() && (flags.bind == "0.0.0.0" || flags.bind == "::")) {
    char name[256] = {};
    gethostname(name, sizeof(name) - 1);
    host = name;
  }
  if (host.empty()) host = flags.bind;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return fmt::format("http://{}:{}", host, port);
}

// Stores the service's evaluations, local and remote, through the workspace, one at a time.
EvaluationRecorder ServiceRecorder(Workspace& workspace) {
  return [&workspace, mutex = std::make_shared<std::mutex>()](
             const TaskFile& task, const std::string& source, const std::string& origin, const Evaluation& evaluation,
             const std::string& precision, const std::string& mode, const Json& fingerprint) -> Result<int64_t> {
    std::lock_guard<std::mutex> lock(*mutex);
    return workspace.Record(task, source, origin, evaluation, precision, mode, fingerprint);
  };
}

// One runner per worker slot, each judging on its own workers and recording through `record`.
Result<std::vector<EvalJobRunner>> ServiceRunners(Workspace& workspace, int gpus, const EvaluationRecorder& record,
                                                  std::vector<std::unique_ptr<ServiceJudge>>& judges) {
  ASSIGN_OR_RETURN(std::vector<DeviceWorkers*> slots, workspace.EvaluatorSlots(workspace.SlotCount(gpus)));
  std::vector<EvalJobRunner> runners;
  for (size_t slot = 0; slot < slots.size(); ++slot) {
    judges.push_back(std::make_unique<ServiceJudge>(*slots[slot], workspace.EvalDefaults(false),
                                                    workspace.ScratchDir() / "service" / fmt::format("slot{}", slot), record));
    ServiceJudge* judge = judges.back().get();
    runners.push_back([judge](const EvalJob& job, const TaskFile& task) { return judge->Run(job, task); });
  }
  return runners;
}

int Serve(const ServeFlags& flags, const CommonOptions& common, const CLI::App& command) {
  const bool local = IsLoopback(flags.bind);
  if (flags.eval && !local && flags.token_file.empty()) {
    return UsageError(fmt::format("serving the evaluator on {} needs --token-file: anyone reaching it could run code "
                                  "on this machine's GPUs", flags.bind));
  }
  if (flags.gpus < 0) return UsageError("--gpus must be 0 (every GPU) or more");
  if (flags.max_pending_per_client < 1) return UsageError("--max-pending-per-client must be at least 1");
  std::unique_ptr<AccessTokens> tokens;
  if (!flags.token_file.empty()) {
    auto loaded = AccessTokens::Load(flags.token_file);
    if (!loaded.ok()) return UsageError(loaded.status().message());
    tokens = std::make_unique<AccessTokens>(std::move(loaded).value());
  } else if (!local) {
    std::fprintf(stderr, "kforge: serving on %s: anyone who can reach this address can read the store (task sources, "
                 "prompts and replies); --token-file restricts it\n", flags.bind.c_str());
  }
  const bool local_slots = flags.eval && !flags.no_local_slots;
  const bool remote_workers = flags.remote_workers || flags.slurm_workers > 0;
  if (flags.slurm_workers < 0) return UsageError("--slurm-workers must be 0 or more");
  if (flags.slurm_workers > 0 && !flags.eval) return UsageError("--slurm-workers needs --eval");
  if (flags.no_local_slots && !remote_workers) {
    return UsageError("--no-local-slots needs --remote-workers: someone has to judge the candidates");
  }
  auto workspace = local_slots ? Workspace::OpenForCandidates(common) : Workspace::Open(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());

  const std::filesystem::path slurm_folder = (*workspace)->root() / "service" / "slurm";
  std::filesystem::path worker_token;
  if (flags.slurm_workers > 0 && tokens) {
    auto made = MakeWorkerToken(*tokens, slurm_folder);
    if (!made.ok()) return UsageError(made.status().message());
    worker_token = *made;
  }
  BlockedStopSignals stop_signals;  // before the service's and the server's threads start: they inherit the block
  std::vector<std::unique_ptr<ServiceJudge>> judges;
  std::unique_ptr<EvalService> service;
  DashboardOptions options;
  for (const std::string& bench : flags.benches) options.bench_folders.push_back(bench);
  options.tokens = tokens.get();
  if (flags.eval) {
    const EvaluationRecorder record = ServiceRecorder(**workspace);
    std::vector<EvalJobRunner> runners;
    if (local_slots) {
      auto made = ServiceRunners(**workspace, flags.gpus, record, judges);
      if (!made.ok()) return UsageError(made.status().message());
      runners = std::move(made).value();
    }
    EvalServiceOptions service_options;
    service_options.remote_workers = remote_workers;
    service_options.lease_margin_s = flags.lease_margin_s;
    service_options.record_remote = record;
    service_options.queue.max_pending_per_client = flags.max_pending_per_client;
    service_options.limits.max_timeout_s = flags.max_timeout_s;
    service_options.task_folder = (*workspace)->root() / "service" / "tasks";
    service_options.info = {{"device", (*workspace)->device()}, {"gpu", (*workspace)->gpu_name()}};
    service = std::make_unique<EvalService>((*workspace)->store(), tokens.get(), service_options, std::move(runners));
    options.extend = [&service](httplib::Server& server) { service->Install(server); };
    options.threads = 64;
  }
  Dashboard dashboard((*workspace)->store(), options);
  if (Status started = dashboard.Start(flags.bind, flags.port); !started.ok()) return UsageError(started.message());
  if (service) service->Start();
  const std::string host = flags.bind.find(':') != std::string::npos ? "[" + flags.bind + "]" : flags.bind;
  std::printf("serving http://%s:%d/%s (Ctrl-C stops)\n", host.c_str(), dashboard.port(),
              service ? fmt::format(" with the evaluation service (/v1/, {} local worker slot(s){}{})", judges.size(),
                                    local_slots ? " on " + (*workspace)->device() : "",
                                    remote_workers ? ", remote workers welcome" : "").c_str()
                      : "");
  std::fflush(stdout);
  auto runner = MakeSubprocessRunner(AsEnvironmentList(ProcessEnvironment()), 120);
  std::string slurm_job;
  if (flags.slurm_workers > 0) {
    const std::string url = AdvertisedUrl(flags, dashboard.port());
    auto submitted = PlaceSlurmWorkers(flags, common, command, url, worker_token, slurm_folder, *runner);
    if (!submitted.ok()) {
      service->Shutdown();
      dashboard.Stop();
      return UsageError(submitted.status().message());
    }
    slurm_job = *submitted;
    std::printf("placed %d worker(s) as Slurm job array %s, connecting to %s (logs in %s)\n", flags.slurm_workers,
                slurm_job.c_str(), url.c_str(), slurm_folder.string().c_str());
    std::fflush(stdout);
  }
  stop_signals.Wait();
  if (!slurm_job.empty()) {
    if (Status cancelled = CancelSlurmJob(slurm_job, *runner); !cancelled.ok()) LogInfo("warning: {}", cancelled.message());
  }
  if (service) {
    LogInfo("stopping: waiting for the evaluations in progress");
    const size_t dropped = service->Shutdown();
    if (dropped > 0) LogInfo("{} queued evaluation(s) were not started and are not stored", dropped);
  }
  dashboard.Stop();
  return 0;
}

}  // namespace

CommandRunner AttachServe(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<ServeFlags>();
  app.add_option("--bench", flags->benches, "a `kforge bench --out` folder to follow (repeat for several)");
  app.add_option("--bind", flags->bind, "address to listen on (other than localhost: readable by anyone who reaches it, "
                 "unless --token-file)")->capture_default_str();
  app.add_option("--port", flags->port, "port (0: any free one, printed)")->capture_default_str();
  app.add_option("--token-file", flags->token_file,
                 "file of \"<client-name> <token>\" lines: every request must then carry \"Authorization: Bearer "
                 "<token>\" (required with --eval on an address other than localhost)");
  app.add_flag("--eval", flags->eval,
               "also serve the evaluator over HTTP/JSON at /v1/ (tasks, evaluations, batches, results, queue; see "
               "docs/service.md)");
  app.add_option("--gpus", flags->gpus,
                 "with --eval: worker slots, one per GPU (all, or 0: every GPU visible); on the CPU, that many CPU workers")
      ->transform(CLI::Transformer({{"all", "0"}}))
      ->capture_default_str();
  app.add_option("--max-pending-per-client", flags->max_pending_per_client,
                 "with --eval: evaluations one client may have waiting or running (more are refused with 429)")
      ->capture_default_str();
  app.add_option("--max-timeout", flags->max_timeout_s, "with --eval: the longest timeout_s a client may ask for")
      ->capture_default_str();
  app.add_flag("--remote-workers", flags->remote_workers,
               "with --eval: also deal jobs to `kforge worker --connect URL` processes on other machines (with "
               "--token-file, their tokens are marked \"worker\")");
  app.add_option("--lease-margin", flags->lease_margin_s,
                 "with --remote-workers: seconds beyond a job's timeout a remote worker has to answer before the job "
                 "ends with an error")
      ->capture_default_str();
  app.add_flag("--no-local-slots", flags->no_local_slots,
               "with --remote-workers: judge nothing here (no GPU on this machine); only remote workers do");
  app.add_option("--slurm-workers", flags->slurm_workers,
                 "with --eval: place this many remote workers as a Slurm job array (sbatch; the workspace must be on "
                 "a filesystem the nodes share); they are cancelled when the service stops")
      ->capture_default_str();
  app.add_option("--sbatch-arg", flags->sbatch_args,
                 "with --slurm-workers: an sbatch argument, written with '=' (--sbatch-arg=--gres=gpu:1); repeat for "
                 "several");
  app.add_option("--advertise", flags->advertise,
                 "with --slurm-workers: the host name or address workers connect to (default: the --bind address, or "
                 "this machine's name when bound to every address)");
  return [flags, &common, &app] { return Serve(*flags, common, app); };
}

}  // namespace kforge
