// Runs an outside tool to its end and returns what it printed: how kforge asks nvidia-smi, sbatch
// and squeue. Behind an interface so that tests script the tools' answers (FakeProcessRunner in
// tests). Implementations are thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "sandbox/subprocess.h"

namespace kforge {

struct ProcessOutput {
  ExitStatus status;
  std::string output;  // stdout and stderr as the tool interleaved them
  bool ok() const { return status.exited && status.code == 0; }
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // Runs `argv` (argv[0] looked up on the PATH) with stdin from /dev/null. NotFound when the
  // program is not there; Timeout when it ran too long (it is killed). A tool that runs and fails
  // is a result, not an error.
  virtual Result<ProcessOutput> Run(const std::vector<std::string>& argv) = 0;
};

// Runs tools for real, each in its own process group, with `environment` ("NAME=value", the
// tool's whole environment), for at most `timeout_s` seconds each.
std::unique_ptr<ProcessRunner> MakeSubprocessRunner(std::vector<std::string> environment, double timeout_s);

}  // namespace kforge
