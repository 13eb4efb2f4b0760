// Fakes for the agents tests: a provider that answers from a script or a function and remembers
// every request, a judge that decides from markers written in the candidate's source, and small
// builders for evaluations and replies. All thread-safe.
#pragma once

#include <atomic>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agents/candidate_judge.h"
#include "core/files.h"
#include "eval/evaluation.h"
#include "llm/provider.h"

namespace kforge {

inline Completion OkReply(std::string text, int64_t prompt_tokens = 1000, int64_t completion_tokens = 500,
                          double cost_usd = 0.01) {
  Completion completion;
  completion.text = std::move(text);
  completion.prompt_tokens = prompt_tokens;
  completion.completion_tokens = completion_tokens;
  completion.cost_usd = cost_usd;
  completion.latency_s = 1.5;
  completion.attempts = 1;
  completion.finish_reason = "stop";
  return completion;
}

inline Completion FailedReply(CallOutcome outcome, std::string error, std::string text = "") {
  Completion completion = FailedCompletion(outcome, std::move(error));
  completion.text = std::move(text);
  return completion;
}

// A reply whose program carries `marker` (read by MarkerJudge), the way a model would write it.
inline std::string ProgramReply(const std::string& marker, const std::string& prose = "Here is the kernel.") {
  return prose + "\n\n```python\nimport torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n"
                 "# " + marker + "\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n```\n";
}

class ScriptedProvider : public Provider {
 public:
  using Answer = std::function<Completion(const CompletionRequest&)>;

  void Then(Completion completion) {
    std::lock_guard<std::mutex> lock(mutex_);
    script_.push_back(std::move(completion));
  }
  // Answers every request without a scripted reply.
  void AnswerWith(Answer answer) {
    std::lock_guard<std::mutex> lock(mutex_);
    answer_ = std::move(answer);
  }

  Completion Complete(const CompletionRequest& request) override {
    Answer answer;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      requests_.push_back(request);
      if (!script_.empty()) {
        Completion next = std::move(script_.front());
        script_.pop_front();
        return next;
      }
      answer = answer_;
    }
    if (answer) return answer(request);
    return FailedCompletion(CallOutcome::kNoRecording, "the scripted provider has no reply left");
  }
  std::string name() const override { return "scripted"; }

  std::vector<CompletionRequest> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }
  // The user message of request `index`.
  std::string UserText(size_t index) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return index < requests_.size() ? LastUserMessage(requests_[index].messages) : "";
  }

 private:
  mutable std::mutex mutex_;
  std::deque<Completion> script_;
  Answer answer_;
  std::vector<CompletionRequest> requests_;
};

inline Evaluation MakeEvaluation(VerdictKind kind, std::string message, std::optional<double> speedup = std::nullopt,
                                 bool timings_meaningful = true) {
  Evaluation evaluation;
  evaluation.verdict = MakeVerdict(kind, std::move(message));
  evaluation.device = timings_meaningful ? "cuda:0" : "cpu";
  evaluation.timings_meaningful = timings_meaningful;
  if (speedup) {
    evaluation.speedup = SpeedupEstimate{*speedup, *speedup * 0.99, *speedup * 1.01, true};
    evaluation.reference_ms = SampleSummary{100, 1.0, 0.99, 1.01, 0.98, 1.2};
    evaluation.candidate_ms = SampleSummary{100, 1.0 / *speedup, 0.99 / *speedup, 1.01 / *speedup, 0.98 / *speedup,
                                            1.2 / *speedup};
    evaluation.authored_share = 1.0;
  }
  return evaluation;
}

// Decides from a marker line in the candidate: "# accepted 1.5" (speedup 1.5), "# accepted cpu"
// (untimed), "# compile_error", "# wrong_output", "# memoization", "# infra_error",
// "# broken_task" (a judge error). Anything else is a runtime error.
class MarkerJudge : public CandidateJudge {
 public:
  Result<Evaluation> Judge(const TaskFile&, const std::filesystem::path& candidate) override {
    ++calls_;
    auto source = ReadFile(candidate);
    if (!source.ok()) return source.status();
    const std::string& text = *source;
    auto has = [&](const char* marker) { return text.find(marker) != std::string::npos; };
    if (has("# broken_task")) return Status::InvalidArgument("task.py:3: get_inputs() raised ValueError");
    if (has("# accepted cpu")) return MakeEvaluation(VerdictKind::kAccepted, "correct on 8 input sets", 1.0, false);
    if (size_t at = text.find("# accepted "); at != std::string::npos) {
      double speedup = std::stod(text.substr(at + 11));
      return MakeEvaluation(VerdictKind::kAccepted, "correct on 8 input sets", speedup);
    }
    if (has("# compile_error")) {
      return MakeEvaluation(VerdictKind::kCompileError,
                            "InterpreterError: AttributeError(\"module 'triton.language' has no attribute 'relu'\") (during forward)");
    }
    if (has("# wrong_output")) return MakeEvaluation(VerdictKind::kWrongOutput, "on input set seed0: output 0 differs");
    if (has("# memoization")) {
      Evaluation evaluation = MakeEvaluation(VerdictKind::kRejectedHack, "");
      evaluation.verdict = HackVerdict("memoization", "the candidate returned exactly its previous output");
      return evaluation;
    }
    if (has("# infra_error")) return MakeEvaluation(VerdictKind::kInfraError, "trusted worker died");
    return MakeEvaluation(VerdictKind::kRuntimeError, "RuntimeError: boom (during forward)");
  }
  int calls() const { return calls_; }

 private:
  std::atomic<int> calls_{0};
};

}  // namespace kforge
