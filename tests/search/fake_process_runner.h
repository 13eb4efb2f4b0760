// A ProcessRunner that answers from a script: each call takes the next scripted answer (the last
// one again once they run out) and is kept for the test to inspect.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "sandbox/process_runner.h"

namespace kforge {

class FakeProcessRunner : public ProcessRunner {
 public:
  // The program ran and exited with `code`, having printed `output`.
  void Answer(int code, std::string output) {
    ProcessOutput answer;
    answer.status = ExitStatus{true, code};
    answer.output = std::move(output);
    script_.emplace_back(answer);
  }
  // Running it failed: not found, timed out.
  void Fail(Status status) { script_.emplace_back(std::move(status)); }

  Result<ProcessOutput> Run(const std::vector<std::string>& argv) override {
    calls_.push_back(argv);
    if (script_.empty()) return Status::Internal("FakeProcessRunner: nothing scripted for " + argv[0]);
    Result<ProcessOutput> answer = script_.front();
    if (script_.size() > 1) script_.pop_front();
    return answer;
  }

  const std::vector<std::vector<std::string>>& calls() const { return calls_; }

 private:
  std::deque<Result<ProcessOutput>> script_;
  std::vector<std::vector<std::string>> calls_;
};

}  // namespace kforge
