#include <csignal>
#include <cstdio>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/log.h"
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
};

// Blocks SIGINT and SIGTERM so that they are waited for, not handled.
sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// One runner per worker slot, each judging on its own workers and recording into the one store.
Result<std::vector<EvalJobRunner>> ServiceRunners(Workspace& workspace, int gpus, std::vector<std::unique_ptr<ServiceJudge>>& judges) {
  ASSIGN_OR_RETURN(std::vector<DeviceWorkers*> slots, workspace.EvaluatorSlots(workspace.SlotCount(gpus)));
  auto record_mutex = std::make_shared<std::mutex>();
  EvaluationRecorder record = [&workspace, record_mutex](const TaskFile& task, const std::string& source,
                                                         const std::string& origin, const Evaluation& evaluation,
                                                         const std::string& precision, const std::string& mode) {
    std::lock_guard<std::mutex> lock(*record_mutex);
    return workspace.Record(task, source, origin, evaluation, precision, mode);
  };
  std::vector<EvalJobRunner> runners;
  for (size_t slot = 0; slot < slots.size(); ++slot) {
    judges.push_back(std::make_unique<ServiceJudge>(*slots[slot], workspace.EvalDefaults(false),
                                                    workspace.ScratchDir() / "service" / fmt::format("slot{}", slot), record));
    ServiceJudge* judge = judges.back().get();
    runners.push_back([judge](const EvalJob& job, const TaskFile& task) { return judge->Run(job, task); });
  }
  return runners;
}

int Serve(const ServeFlags& flags, const CommonOptions& common) {
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
  if (flags.no_local_slots && !flags.remote_workers) {
    return UsageError("--no-local-slots needs --remote-workers: someone has to judge the candidates");
  }
  auto workspace = local_slots ? Workspace::OpenForCandidates(common) : Workspace::Open(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());

  const sigset_t signals = BlockStopSignals();
  std::vector<std::unique_ptr<ServiceJudge>> judges;
  std::unique_ptr<EvalService> service;
  DashboardOptions options;
  for (const std::string& bench : flags.benches) options.bench_folders.push_back(bench);
  options.tokens = tokens.get();
  if (flags.eval) {
    std::vector<EvalJobRunner> runners;
    if (local_slots) {
      auto made = ServiceRunners(**workspace, flags.gpus, judges);
      if (!made.ok()) return UsageError(made.status().message());
      runners = std::move(made).value();
    }
    EvalServiceOptions service_options;
    service_options.remote_workers = flags.remote_workers;
    service_options.lease_margin_s = flags.lease_margin_s;
    service_options.record_remote = [workspace = workspace->get(), mutex = std::make_shared<std::mutex>()](
                                        const TaskFile& task, const std::string& source, const std::string& origin,
                                        const Evaluation& evaluation, const std::string& precision,
                                        const std::string& mode, const Json& fingerprint) -> Result<int64_t> {
      std::lock_guard<std::mutex> lock(*mutex);
      return workspace->Record(task, source, origin, evaluation, precision, mode,
                               fingerprint.is_object() ? fingerprint : Json{{"remote", "unknown"}});
    };
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
                                    flags.remote_workers ? ", remote workers welcome" : "").c_str()
                      : "");
  std::fflush(stdout);
  int signal = 0;
  sigwait(&signals, &signal);
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
                 "with --eval: worker slots, one per GPU (0: every GPU visible); on the CPU, that many CPU workers")
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
  return [flags, &common] { return Serve(*flags, common); };
}

}  // namespace kforge
