// The conversation a kernel writer sends each round: the system prompt (role, target, the
// evaluator's rules, our example kernels) and one user prompt that writes, repairs or speeds up
// a candidate. Built from the prompt library's templates; a template error is an InvalidArgument.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agents/attempt.h"
#include "agents/prompt_library.h"
#include "core/json.h"
#include "llm/message.h"
#include "tasks/task.h"

namespace kforge {

// What every round of every writer knows about the job.
struct WriterBrief {
  TaskFile task;
  std::string device = "cpu";          // "cpu" or "cuda:N"
  std::string target;                  // "the NVIDIA H200 GPU (cuda:0)"; see TargetDescription
  std::string mode = "strict";         // provenance mode: strict or partial
  std::string precision = "fp32";
  std::string ir_summary;              // the captured graph and its fusion groups, when known
  std::string starting_candidate;      // the built-in compiler's ModelNew, when there is one
  std::string to_beat;                 // the times to beat (BaselineSummary), when measured
};

// What a round builds on: the writer's memory of earlier rounds.
struct RoundContext {
  PromptKind kind = PromptKind::kWrite;
  int round = 1;
  std::string previous_candidate;  // the last program judged (and not the best)
  std::string previous_feedback;   // the evaluator's feedback on it
  std::string reply_problem;       // why the last reply gave nothing to judge ("" when it did)
  const AcceptedCandidate* best = nullptr;  // for kSpeedup and kRecombine: the candidate to improve
  const AcceptedCandidate* mate = nullptr;  // for kRecombine: another island's candidate to combine it with
  std::string others_failures;     // how the other writers' attempts failed (beam), "" when none
};

// "the NVIDIA H200 GPU (cuda:0)" from a device and the GPU's name; the CPU says it runs the interpreter.
std::string TargetDescription(const std::string& device, const std::string& gpu_name);

// What a kernel writer is told about the machine and the software its kernels run on, read once
// from the worker's environment fingerprint (env_info.py); unknown facts stay 0 or "".
struct TargetMachine {
  std::string device;  // "cpu" or "cuda:N"
  std::string gpu, compute_capability, cuda, driver, torch, triton, python;
  int sm_count = 0;
  int64_t memory_bytes = 0, l2_bytes = 0, shared_memory_per_block = 0, shared_memory_per_sm = 0;
  int registers_per_sm = 0;

  static TargetMachine FromFingerprint(const std::string& device, const Json& fingerprint);
};

// TargetDescription's words followed by every known fact: "the NVIDIA H200 GPU (cuda:0): compute
// capability 9.0, 132 SMs, 139.8 GiB of memory, 60 MiB of L2 cache, up to 227 KiB of shared memory
// per block (228 KiB per SM), 65536 registers per SM; CUDA 13.0, torch 2.11.0, Triton 3.6.0, Python 3.12.3".
std::string TargetDescription(const TargetMachine& machine);

// The system message: system.md with the knowledge folder's examples.
Result<std::string> SystemPrompt(const PromptLibrary& prompts, const WriterBrief& brief);

// The user message for a round: write.md, repair.md, speedup.md or recombine.md; `variant` picks one of the
// approaches/ hints (modulo their number) so that parallel writers try different things.
Result<std::string> RoundPrompt(const PromptLibrary& prompts, const WriterBrief& brief, const RoundContext& context,
                                int variant);

Result<std::vector<Message>> RoundMessages(const PromptLibrary& prompts, const WriterBrief& brief,
                                           const RoundContext& context, int variant);

}  // namespace kforge
