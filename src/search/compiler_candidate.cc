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
  return {{"kernels", kernels}, {"from_store", from_store}, {"measured", measured}, {"tuning_s", tuning_s}, {"baked", baked}};
}

TuningSummary TuningSummary::FromJson(const Json& json) {
  TuningSummary summary;
  summary.kernels = JsonGet<int64_t>(json, "kernels", 0);
  summary.from_store = JsonGet<int64_t>(json, "from_store", 0);
  summary.measured = JsonGet<int64_t>(json, "measured", 0);
  summary.tuning_s = JsonGet<double>(json, "tuning_s", 0);
  summary.baked = JsonGet<bool>(json, "baked", false);
  return summary;
}

Result<CompilerCandidate> ChooseCompilerCandidate(const std::vector<DotPrecisionStep>& ladder, Store* store,
                                                  const std::string& gpu, const CompilerCandidateHooks& hooks) {
  const Clock& clock = RealClock();
  auto log = [&hooks](const std::string& line) {
    if (hooks.log) hooks.log(line);
  };
  CompilerCandidate chosen;
  std::optional<Evaluation> evaluation;
  std::string previous_source;
  for (const DotPrecisionStep& step : ladder) {
    const double started = clock.NowSeconds();
    codegen::NoKernelReasons no_kernel;
    ASSIGN_OR_RETURN(std::string emitted, hooks.write(step, {}, &no_kernel));
    // A step that changes nothing in this candidate (attention precision without an attention
    // kernel) would be judged the same: the next.
    if (evaluation && emitted == previous_source) continue;
    previous_source = emitted;
    std::string source = std::move(emitted);
    chosen.precision = step;
    chosen.no_kernel = std::move(no_kernel);
    // Kernels measured earlier on this GPU get their configuration baked in: no tuning.
    const size_t autotuned = TuningKeys(source).size();
    std::map<std::string, codegen::TileChoice> tuned = StoredTunings(store, gpu, source);
    if (!tuned.empty()) {
      ASSIGN_OR_RETURN(source, hooks.write(step, tuned, nullptr));
    }
    chosen.codegen_s = clock.NowSeconds() - started;
    chosen.tuning = {.kernels = static_cast<int64_t>(autotuned), .from_store = static_cast<int64_t>(tuned.size())};
    ASSIGN_OR_RETURN(evaluation, hooks.evaluate(source));
    // The kernels still autotuned were measured in that evaluation: bake in what they chose and
    // verify that source in turn, keeping the autotuned one if it does not pass.
    if (evaluation->verdict.accepted() && !TuningKeys(source).empty()) {
      chosen.tuning.tuning_s = evaluation->duration_s;
      auto measured = MeasuredTunings(store, gpu, source, JsonField(evaluation->evidence, "tuning"));
      chosen.tuning.measured = static_cast<int64_t>(measured.size());
      tuned.insert(measured.begin(), measured.end());
      ASSIGN_OR_RETURN(std::string baked, hooks.write(step, tuned, nullptr));
      if (!measured.empty() && baked != source) {
        log(fmt::format("  baking the measured tile configurations of {} kernel(s) in", measured.size()));
        ASSIGN_OR_RETURN(Evaluation verified, hooks.evaluate(baked));
        chosen.attempts.push_back({{"baked", true}, {"verdict", ToString(verified.verdict.kind)}});
        if (verified.verdict.accepted()) {
          source = std::move(baked);
          evaluation = std::move(verified);
        } else {
          RETURN_IF_ERROR(hooks.keep(source));
        }
      }
    }
    chosen.tuning.baked = TuningKeys(source).empty() && autotuned > 0;
    const bool uses_dot = UsesDot(source);
    const std::string label = step.Label(codegen::HasAttentionKernel(source));
    chosen.attempts.push_back({{"dot_precision", uses_dot ? label : "none"}, {"verdict", ToString(evaluation->verdict.kind)}});
    chosen.source = std::move(source);
    if (!WorthTheNextStep(evaluation->verdict.kind, uses_dot, &step == &ladder.front())) break;
    log(fmt::format("  {} with tl.dot in {}; trying the next precision", ToString(evaluation->verdict.kind), label));
  }
  if (!evaluation) return Status::Internal("the precision ladder has no step");
  chosen.evaluation = std::move(*evaluation);
  return chosen;
}

}  // namespace kforge
