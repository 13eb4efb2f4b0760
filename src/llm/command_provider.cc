#include "llm/command_provider.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "core/files.h"
#include "sandbox/environment.h"
#include "sandbox/subprocess.h"

namespace kforge {
namespace {

// Connects the user's command to the prompt and reply files without quoting it: the shell
// receives the paths and the command line as positional parameters.
constexpr char kWrapper[] = "exec <\"$1\" >\"$2\" 2>\"$3\" && eval \"$4\"";
constexpr size_t kStderrTail = 1500;

std::string Tail(const std::string& text, size_t limit) {
  return text.size() <= limit ? text : "..." + text.substr(text.size() - limit);
}

// Polls until the process ends or the deadline passes; whether it ended.
bool WaitUntilDone(Subprocess& process, std::chrono::steady_clock::time_point deadline) {
  auto pause = std::chrono::milliseconds(1);
  while (process.IsRunning()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(25));
  }
  return true;
}

std::string ReadOrEmpty(const std::filesystem::path& path) {
  auto text = ReadFile(path);
  return text.ok() ? *text : "";
}

}  // namespace

CommandProvider::CommandProvider(CommandOptions options) : options_(std::move(options)) {
  for (const auto& [name, value] : options_.environment) {
    if (!LooksSecret(name)) child_environment_.push_back(name + "=" + value);
  }
}

Completion CommandProvider::Complete(const CompletionRequest& request) {
  auto start = std::chrono::steady_clock::now();
  auto dir = MakeTempDir(options_.temp_parent, "kforge_command_");
  Completion completion = dir.ok() ? Run(*dir, request)
                                   : FailedCompletion(CallOutcome::kCommandFailed, dir.status().message());
  if (dir.ok()) RemoveTreeQuietly(*dir);
  completion.model = request.model;
  completion.attempts = 1;
  completion.cost_known = false;
  completion.latency_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return completion;
}

Completion CommandProvider::Run(const std::filesystem::path& dir, const CompletionRequest& request) const {
  auto process = Start(dir, request);
  if (!process.ok()) return FailedCompletion(CallOutcome::kCommandFailed, process.status().message());
  double timeout_s = options_.timeout_s.value_or(request.timeout_s);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
  if (!WaitUntilDone(**process, deadline)) {
    (*process)->KillGroup();
    (*process)->Wait();
    return FailedCompletion(CallOutcome::kTimeout, Named() + " did not finish within " +
                                                       fmt::format("{:g}", timeout_s) + " s and was stopped");
  }
  ExitStatus exit = (*process)->Wait();
  if (!exit.exited || exit.code != 0) {
    (*process)->WaitForOutputEnd(1);
    std::string stderr_text = Tail(ReadOrEmpty(dir / "stderr.txt"), kStderrTail) + (*process)->OutputTail();
    return FailedCompletion(CallOutcome::kCommandFailed, Named() + " " + exit.ToString() + ": " + Tail(stderr_text, kStderrTail));
  }
  return ReadReply(dir / "reply.txt");
}

Result<std::unique_ptr<Subprocess>> CommandProvider::Start(const std::filesystem::path& dir,
                                                           const CompletionRequest& request) const {
  RETURN_IF_ERROR(WriteFile(dir / "prompt.txt", RenderPrompt(request.messages)));
  SpawnOptions spawn;
  spawn.argv = {"/bin/sh", "-c", kWrapper, "kforge-command", (dir / "prompt.txt").string(),
                (dir / "reply.txt").string(), (dir / "stderr.txt").string(), options_.command};
  spawn.environment = child_environment_;
  return Subprocess::Spawn(spawn);
}

Completion CommandProvider::ReadReply(const std::filesystem::path& reply_path) const {
  std::error_code size_error;
  uintmax_t reply_bytes = std::filesystem::file_size(reply_path, size_error);
  if (!size_error && reply_bytes > options_.max_reply_bytes) {
    return FailedCompletion(CallOutcome::kCommandFailed,
                            Named() + " printed more than " + std::to_string(options_.max_reply_bytes) + " bytes");
  }
  Completion completion;
  completion.text = ReadOrEmpty(reply_path);
  ClassifyReplyText(completion, /*hit_token_limit=*/false);
  if (completion.outcome == CallOutcome::kEmptyReply) completion.error = Named() + " printed nothing";
  return completion;
}

std::string CommandProvider::Named() const { return "the command `" + options_.command + "`"; }

}  // namespace kforge
