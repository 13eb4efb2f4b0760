#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "core/files.h"
#include "core/log.h"
#include "report/text_report.h"

namespace kforge {
namespace {

struct EvalFlags {
  std::string task;
  std::vector<std::string> candidates;
  std::string mode = "strict";
  int seeds = 3;
  double timeout_s = 120;
  double memory_limit_gib = 0;  // 0: half the memory available when kforge starts
  bool json = false;
  bool no_timing = false;
  bool kernel_counters = false;
  bool full_size = false;
  bool fresh_baselines = false;
};

int RunEval(const EvalFlags& flags, const CommonOptions& common) {
  auto precision = ParsePrecision(common.precision);
  if (!precision) return UsageError("--precision must be fp32, tf32 or bf16");
  auto mode = ParseProvenanceMode(flags.mode);
  if (!mode) return UsageError("--mode must be strict or partial");
  if (flags.seeds < 1 || flags.seeds > 64) return UsageError("--seeds must be between 1 and 64");
  if (flags.timeout_s <= 0) return UsageError("--timeout must be positive");
  auto task = ReadTaskFile(flags.task);
  if (!task.ok()) return UsageError(task.status().message());
  auto workspace = Workspace::OpenForCandidates(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());

  EvalOptions options = (*workspace)->EvalDefaults(flags.fresh_baselines);
  options.precision = *precision;
  options.mode = *mode;
  options.seeds = flags.seeds;
  options.timeout_s = flags.timeout_s;
  options.timing = !flags.no_timing;
  options.kernel_counters = flags.kernel_counters;
  options.cpu_sizes = !flags.full_size;
  if (flags.memory_limit_gib > 0) options.memory_limit_bytes = static_cast<uint64_t>(flags.memory_limit_gib * (1ull << 30));
  if (options.device == "cpu" && !common.quiet) {
    LogInfo("running on the CPU through Triton's interpreter: verdicts hold, timings mean nothing");
  }

  Evaluator evaluator((*workspace)->workers(), options);
  int exit_code = 0;
  for (const std::string& candidate : flags.candidates) {
    auto source = ReadFile(candidate);
    if (!source.ok()) return UsageError(source.status().message());
    if (!common.quiet) LogInfo("evaluating {} against {}", candidate, task->name);
    auto evaluation = evaluator.Evaluate(*task, candidate);
    if (!evaluation.ok()) return UsageError(evaluation.status().message());
    auto stored = (*workspace)->Record(*task, *source, "file:" + candidate, *evaluation, common.precision, flags.mode);
    if (!stored.ok() && (*workspace)->store()) LogInfo("warning: the evaluation was not stored: {}", stored.status().ToString());
    if (flags.json) {
      Json json = evaluation->ToJson();
      if (stored.ok()) json["id"] = *stored;
      std::printf("%s\n", json.dump().c_str());
    } else {
      std::printf("%s%s\n", FormatEvaluation(*evaluation).c_str(),
                  stored.ok() ? ("stored as evaluation " + std::to_string(*stored) + "\n").c_str() : "");
    }
    std::fflush(stdout);
    VerdictKind kind = evaluation->verdict.kind;
    if (kind == VerdictKind::kInfraError) exit_code = 2;
    else if (kind != VerdictKind::kAccepted && exit_code == 0) exit_code = 1;
  }
  return exit_code;
}

}  // namespace

CommandRunner AttachEval(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<EvalFlags>();
  app.add_option("task", flags->task, "KernelBench-format task file (Model, get_inputs, get_init_inputs)")->required();
  app.add_option("candidates", flags->candidates, "candidate file(s) defining ModelNew")->required();
  app.add_option("--mode", flags->mode, "strict: every FLOP in authored kernels; partial: library compute allowed")
      ->capture_default_str();
  app.add_option("--seeds", flags->seeds, "fresh random input sets to check")->capture_default_str();
  app.add_option("--timeout", flags->timeout_s, "seconds the candidate's process may run")->capture_default_str();
  app.add_option("--memory-limit", flags->memory_limit_gib,
                 "GiB of host memory the candidate's processes may use together (default: half of what the machine "
                 "has available)");
  app.add_flag("--json", flags->json, "print each evaluation as one line of JSON");
  app.add_flag("--no-timing", flags->no_timing, "check correctness only");
  app.add_flag("--kernel-counters", flags->kernel_counters,
               "on a GPU, also read the candidate's kernels' hardware counters with Nsight Compute (advice only: "
               "what bounds each kernel, in evidence.kernel_counters)");
  app.add_flag("--full-size", flags->full_size, "on the CPU, keep the task's full sizes");
  app.add_flag("--fresh-baselines", flags->fresh_baselines,
               "time the reference again instead of reusing its stored timing from this machine");
  return [flags, &common] { return RunEval(*flags, common); };
}

int UsageError(const std::string& message) {
  std::fprintf(stderr, "kforge: error: %s\n", message.c_str());
  return 2;
}

}  // namespace kforge
