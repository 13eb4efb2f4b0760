#include "search/compiler_candidate.h"

#include <optional>

#include <fmt/format.h>

#include "compiler/codegen/triton_attention.h"
#include "core/clock.h"
#include "search/kernel_tuning.h"

namespace kforge {
namespace {

bool UsesDot(const std::string& source) { return source.find("tl.dot(") != std::string::npos; }

}  // namespace

Json TuningSummary::ToJson() const {
  return {{"kernels", kernels}, {"from_store", from_store}, {"measured", measured}, {"tuning_s", tuning_s}, {"baked", baked},
          {"cuda_measured", cuda_measured}, {"cuda_tuning_s", cuda_tuning_s}};
}

TuningSummary TuningSummary::FromJson(const Json& json) {
  TuningSummary summary;
  summary.kernels = JsonGet<int64_t>(json, "kernels", 0);
  summary.from_store = JsonGet<int64_t>(json, "from_store", 0);
  summary.measured = JsonGet<int64_t>(json, "measured", 0);
  summary.tuning_s = JsonGet<double>(json, "tuning_s", 0);
  summary.baked = JsonGet<bool>(json, "baked", false);
  summary.cuda_measured = JsonGet<int64_t>(json, "cuda_measured", 0);
  summary.cuda_tuning_s = JsonGet<double>(json, "cuda_tuning_s", 0);
  return summary;
}

namespace {

// The undecided forward replayed as a CUDA graph, evaluated beside the chosen direct form; the
// faster kept (the direct one at a tie).
Status MeasureReplay(const CompilerCandidateHooks& hooks, const std::map<std::string, codegen::TileChoice>& tuned,
                     CompilerCandidate& chosen, Evaluation& evaluation) {
  ASSIGN_OR_RETURN(std::string replayed, hooks.write(chosen.precision, tuned, /*replay_undecided=*/true, nullptr));
  if (replayed == chosen.source) return Status::Ok();
  if (hooks.log) hooks.log("  a few launches with cheap copies: timing the forward replayed as a CUDA graph too");
  ASSIGN_OR_RETURN(Evaluation measured, hooks.evaluate(replayed));
  const bool faster = measured.verdict.accepted() && MeasurablyFaster(measured, evaluation, kReplayMinGain);
  Json attempt = {{"graph_replay", true}, {"verdict", ToString(measured.verdict.kind)}, {"kept", faster}};
  if (measured.speedup) attempt["speedup"] = measured.speedup->speedup;
  if (evaluation.speedup) attempt["direct_speedup"] = evaluation.speedup->speedup;
  chosen.attempts.push_back(std::move(attempt));
  if (!faster) return hooks.keep(chosen.source);
  chosen.source = std::move(replayed);
  evaluation = std::move(measured);
  return Status::Ok();
}

// The tiles of the CUDA kernels in `jobs` that `tuned` (the store's) lacks, measured by the tuner
// and recorded: added to `tuned`, the tuner's answers to `answers`. Returns how many were chosen
// and the seconds it took, the tuner's start included; a tuner that fails leaves the rules' tiles
// (logged, not an error).
std::pair<int64_t, double> MeasureCudaTiles(const CompilerCandidateHooks& hooks, const std::vector<codegen::CudaTuning>& jobs, Store* store,
                                           const std::string& gpu, std::map<std::string, codegen::TileChoice>& tuned, Json& answers) {
  std::vector<codegen::CudaTuning> untuned;
  for (const codegen::CudaTuning& job : jobs) {
    if (!tuned.count(job.key)) untuned.push_back(job);
  }
  if (untuned.empty() || !hooks.tune_cuda) return {0, 0};
  if (hooks.log) hooks.log(fmt::format("  timing the tiles of {} CUDA kernel(s) on the GPU", untuned.size()));
  const double started = RealClock().NowSeconds();
  Result<CudaTuningOutcome> outcome = hooks.tune_cuda(untuned);
  const double seconds = RealClock().NowSeconds() - started;
  if (!outcome.ok()) {
    if (hooks.log) hooks.log("  tuning the CUDA kernels failed; they keep the rules' tiles: " + outcome.status().ToString());
    answers.push_back({{"error", outcome.status().ToString()}});
    return {0, seconds};
  }
  if (hooks.log) {
    hooks.log(fmt::format("  the tuner chose the tiles of {} of them, measuring for {:.1f} s of {:.1f}", outcome->chosen.size(),
                          outcome->seconds, seconds));
  }
  RecordTunings(store, gpu, outcome->chosen);
  tuned.insert(outcome->chosen.begin(), outcome->chosen.end());
  for (const Json& answer : outcome->kernels) answers.push_back(answer);
  return {static_cast<int64_t>(outcome->chosen.size()), seconds};
}

}  // namespace

Result<CompilerCandidate> ChooseCompilerCandidate(const std::vector<DotPrecisionStep>& ladder, Store* store,
                                                  const std::string& gpu, const CompilerCandidateHooks& hooks) {
  const Clock& clock = RealClock();
  auto log = [&hooks](const std::string& line) {
    if (hooks.log) hooks.log(line);
  };
  CompilerCandidate chosen;
  std::optional<Evaluation> evaluation;
  std::string previous_source;
  std::map<std::string, codegen::TileChoice> chosen_tuned;  // the configurations chosen.source was written with
  bool replay_undecided = false;
  for (const DotPrecisionStep& step : ladder) {
    const double started = clock.NowSeconds();
    codegen::WriteNotes notes;
    ASSIGN_OR_RETURN(std::string emitted, hooks.write(step, {}, /*replay_undecided=*/false, &notes));
    // A step that changes nothing in this candidate (attention precision without an attention
    // kernel) would be judged the same: the next.
    if (evaluation && emitted == previous_source) continue;
    previous_source = emitted;
    std::string source = std::move(emitted);
    chosen.precision = step;
    chosen.no_kernel = std::move(notes.no_kernel);
    replay_undecided = notes.replay_undecided;
    // Kernels measured earlier on this GPU get their configuration baked in: no tuning.
    const size_t autotuned = TuningKeys(source).size();
    std::map<std::string, codegen::TileChoice> tuned = StoredTunings(store, gpu, source);
    const auto [cuda_measured, cuda_s] = MeasureCudaTiles(hooks, notes.cuda_tuning, store, gpu, tuned, chosen.cuda_tuning);
    if (!tuned.empty()) {
      ASSIGN_OR_RETURN(source, hooks.write(step, tuned, /*replay_undecided=*/false, nullptr));
    }
    chosen_tuned = tuned;
    chosen.codegen_s = clock.NowSeconds() - started - cuda_s;
    chosen.tuning = {.kernels = static_cast<int64_t>(autotuned), .from_store = static_cast<int64_t>(tuned.size()) - cuda_measured,
                     .cuda_measured = cuda_measured, .cuda_tuning_s = cuda_s};
    ASSIGN_OR_RETURN(evaluation, hooks.evaluate(source));
    // The kernels still autotuned were measured in that evaluation: bake in what they chose and
    // verify that source in turn, keeping the autotuned one if it does not pass.
    if (evaluation->verdict.accepted() && !TuningKeys(source).empty()) {
      chosen.tuning.tuning_s = evaluation->duration_s - evaluation->reference_timing_s;
      auto measured = MeasuredTunings(store, gpu, source, JsonField(evaluation->evidence, "tuning"));
      chosen.tuning.measured = static_cast<int64_t>(measured.size());
      tuned.insert(measured.begin(), measured.end());
      ASSIGN_OR_RETURN(std::string baked, hooks.write(step, tuned, /*replay_undecided=*/false, nullptr));
      if (!measured.empty() && baked != source) {
        log(fmt::format("  baking the measured tile configurations of {} kernel(s) in", measured.size()));
        ASSIGN_OR_RETURN(Evaluation verified, hooks.evaluate(baked));
        chosen.attempts.push_back({{"baked", true}, {"verdict", ToString(verified.verdict.kind)}});
        if (verified.verdict.accepted()) {
          source = std::move(baked);
          evaluation = std::move(verified);
          chosen_tuned = tuned;
        } else if (verified.verdict.kind == VerdictKind::kWrongOutput) {
          // Wrong on other fresh inputs with the configuration the autotuned source chose: that
          // source passed by luck, and the step's precision is not enough (the ladder goes on).
          source = std::move(baked);
          evaluation = std::move(verified);
        } else {
          RETURN_IF_ERROR(hooks.keep(source));
        }
      }
    }
    chosen.tuning.baked = source.find("@triton.autotune") == std::string::npos && autotuned > 0;
    const bool uses_dot = UsesDot(source);
    const std::string label = step.Label(codegen::HasAttentionKernel(source));
    chosen.attempts.push_back({{"dot_precision", uses_dot ? label : "none"}, {"verdict", ToString(evaluation->verdict.kind)}});
    chosen.source = std::move(source);
    if (!WorthTheNextStep(evaluation->verdict.kind, uses_dot, &step == &ladder.front())) break;
    log(fmt::format("  {} with tl.dot in {}; trying the next precision", ToString(evaluation->verdict.kind), label));
  }
  if (!evaluation) return Status::Internal("the precision ladder has no step");
  if (replay_undecided && evaluation->verdict.accepted() && evaluation->timings_meaningful) {
    RETURN_IF_ERROR(MeasureReplay(hooks, chosen_tuned, chosen, *evaluation));
  }
  chosen.evaluation = std::move(*evaluation);
  return chosen;
}

bool ReplacesCompilerCandidate(const Evaluation& challenger, const Evaluation& compiler) {
  if (!challenger.verdict.accepted()) return false;
  return !compiler.verdict.accepted() || MeasurablyFaster(challenger, compiler, /*min_gain=*/0);
}

std::string ExplainCandidateChoice(const std::optional<Evaluation>& challenger, const Evaluation& compiler) {
  auto speed = [](const Evaluation& evaluation) {
    return evaluation.timings_meaningful && evaluation.speedup ? fmt::format("{:.2f}x of eager", evaluation.speedup->speedup)
                                                               : std::string("not timed");
  };
  if (!challenger || !challenger->verdict.accepted()) {
    return compiler.verdict.accepted()
               ? fmt::format("the LLM stage had no accepted candidate; the compiler's was accepted ({})", speed(compiler))
               : "neither the compiler nor the LLM stage had an accepted candidate";
  }
  if (ReplacesCompilerCandidate(*challenger, compiler)) {
    if (!compiler.verdict.accepted()) {
      return fmt::format("the compiler's candidate was {}; the LLM stage's best was accepted ({})",
                         compiler.verdict.ToString(), speed(*challenger));
    }
    return fmt::format("the LLM stage's best ({}) is measurably faster than the compiler's ({})", speed(*challenger),
                       speed(compiler));
  }
  if (!challenger->timings_meaningful || !compiler.timings_meaningful) {
    return "both were accepted and timings here mean nothing (the CPU): the compiler's candidate stays";
  }
  return fmt::format("the compiler's candidate ({}) stays: the LLM stage's best ({}) is not measurably faster",
                     speed(compiler), speed(*challenger));
}

}  // namespace kforge
