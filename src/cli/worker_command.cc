#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/files.h"
#include "core/log.h"
#include "sandbox/stop_signals.h"
#include "serve/remote_worker.h"
#include "serve/service_judge.h"

namespace kforge {
namespace {

struct WorkerFlags {
  std::string connect;
  std::string token_file;
  std::string name;
  int gpus = 1;  // slots: one per GPU; 0: every GPU visible
};

// The token: the token file's first word, else $KFORGE_SERVICE_TOKEN, else none.
Result<std::string> WorkerToken(const std::string& token_file) {
  if (token_file.empty()) {
    const char* token = std::getenv("KFORGE_SERVICE_TOKEN");
    return std::string(token != nullptr ? token : "");
  }
  ASSIGN_OR_RETURN(std::string text, ReadFile(token_file));
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return Status::InvalidArgument(token_file + " holds no token");
  return text.substr(begin, text.find_first_of(" \t\r\n", begin) - begin);
}

int RunWorker(const WorkerFlags& flags, const CommonOptions& common) {
  if (flags.gpus < 0) return UsageError("--gpus must be 0 (every GPU) or more");
  auto token = WorkerToken(flags.token_file);
  if (!token.ok()) return UsageError(token.status().message());
  auto workspace = Workspace::OpenForCandidates(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());
  auto slots = (*workspace)->EvaluatorSlots((*workspace)->SlotCount(flags.gpus));
  if (!slots.ok()) return UsageError(slots.status().message());
  auto fingerprint = (*workspace)->Fingerprint();
  if (!fingerprint.ok()) return UsageError(fingerprint.status().message());

  std::vector<std::unique_ptr<ServiceJudge>> judges;
  std::vector<ServiceJudge*> judged_by;
  for (size_t slot = 0; slot < slots->size(); ++slot) {
    // Stored by the service, not here: no recorder.
    judges.push_back(std::make_unique<ServiceJudge>(*(*slots)[slot], (*workspace)->EvalDefaults(false),
                                                    (*workspace)->ScratchDir() / "worker" / fmt::format("slot{}", slot),
                                                    EvaluationRecorder()));
    judged_by.push_back(judges.back().get());
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  RemoteWorkerOptions options;
  options.url = flags.connect;
  options.token = *token;
  options.name = flags.name.empty() ? std::string(host) : flags.name;
  options.task_folder = (*workspace)->root() / "worker" / "tasks";
  options.fingerprint = *fingerprint;

  // SIGINT and SIGTERM (what Slurm sends at the end of a job) stop it after the jobs in hand.
  BlockedStopSignals stop_signals;
  std::atomic<bool> stop{false};
  std::atomic<bool> ended{false};
  std::thread waiter([&] {
    while (!ended && !stop) stop = stop_signals.Wait(0.5) != 0;
  });
  if (!common.quiet) {
    LogInfo("worker {}: {} slot(s) on {}, taking jobs from {}", options.name, judges.size(), (*workspace)->device(), flags.connect);
  }
  RemoteWorker worker(options, judged_by);
  auto judged = worker.Run(stop);
  ended = true;  // also when a refused token ended it
  waiter.join();
  if (!judged.ok()) return UsageError(judged.status().message());
  if (!common.quiet) LogInfo("worker {}: stopped after {} job(s)", options.name, *judged);
  return 0;
}

}  // namespace

CommandRunner AttachWorker(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<WorkerFlags>();
  app.add_option("--connect", flags->connect, "the evaluation service: http://host:port of `kforge serve --eval --remote-workers`")
      ->required();
  app.add_option("--token-file", flags->token_file,
                 "file whose first word is this worker's token (default: $KFORGE_SERVICE_TOKEN; none on an open "
                 "localhost service)");
  app.add_option("--name", flags->name, "how the service names this worker (default: the host name)");
  app.add_option("--gpus", flags->gpus, "slots, one per GPU (all, or 0: every GPU visible; on the CPU, that many)")
      ->transform(CLI::Transformer({{"all", "0"}}))
      ->capture_default_str();
  return [flags, &common] { return RunWorker(*flags, common); };
}

}  // namespace kforge
