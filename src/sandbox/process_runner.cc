#include "sandbox/process_runner.h"

#include <unistd.h>

#include <chrono>

namespace kforge {
namespace {

class SubprocessRunner : public ProcessRunner {
 public:
  SubprocessRunner(std::vector<std::string> environment, double timeout_s)
      : environment_(std::move(environment)), timeout_s_(timeout_s) {}

  Result<ProcessOutput> Run(const std::vector<std::string>& argv) override {
    if (argv.empty()) return Status::InvalidArgument("no program to run");
    auto program = FindProgram(argv[0], environment_);
    if (!program.ok()) return program.status();
    SpawnOptions options;
    options.argv = argv;
    options.argv[0] = *program;
    options.environment = environment_;
    options.output_limit_bytes = 1 << 20;
    ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> process, Subprocess::Spawn(options));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
    while (process->IsRunning()) {
      if (std::chrono::steady_clock::now() > deadline) {
        process->KillGroup();
        process->Wait();
        return Status::Timeout(argv[0] + " did not finish within " + std::to_string(static_cast<int>(timeout_s_)) +
                               " s (it was stopped); its output: " + process->OutputTail());
      }
      usleep(10000);
    }
    ProcessOutput result;
    result.status = process->Wait();
    process->WaitForOutputEnd(5);
    result.output = process->OutputTail();
    return result;
  }

 private:
  std::vector<std::string> environment_;
  double timeout_s_;
};

}  // namespace

std::unique_ptr<ProcessRunner> MakeSubprocessRunner(std::vector<std::string> environment, double timeout_s) {
  return std::make_unique<SubprocessRunner>(std::move(environment), timeout_s);
}

}  // namespace kforge
