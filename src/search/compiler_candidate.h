// Which of the compiler's candidates a task gets, chosen by measurement. For each step of the
// dot-precision ladder (precision_ladder.h) the generated source, with the tile configurations
// stored for this GPU baked in (the CUDA kernels' tiles the store lacks measured by the tuner
// first, cuda_tuning.h), is evaluated; the kernels it still autotunes are measured in that
// evaluation, their configurations stored and baked in, and the baked source verified in turn
// on other fresh inputs: wrong there, the step is judged wrong (the autotuned source passed by
// luck); failing otherwise, the autotuned one is kept. The ladder goes on only while a candidate is
// wrong for a dot's accuracy, and a step that changes nothing in the source is skipped. A forward
// whose graph replay the writer's rule leaves to measurement (a few launches, cheap copies) is
// evaluated replayed too, and the replayed form kept when it is measurably faster.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/codegen/model_writer.h"
#include "core/json.h"
#include "core/status.h"
#include "eval/evaluation.h"
#include "search/cuda_tuning.h"
#include "search/precision_ladder.h"
#include "store/store.h"

namespace kforge {

// What the search needs from its caller: writing, judging and keeping a candidate.
struct CompilerCandidateHooks {
  // The candidate's source for a ladder step with these tile configurations baked in, its
  // undecided forwards replayed as CUDA graphs or not (ModelWriterOptions::replay_undecided);
  // `notes` (may be null) receives why groups stayed ATen calls and whether a replay was undecided.
  std::function<Result<std::string>(const DotPrecisionStep&, const std::map<std::string, codegen::TileChoice>& tuned,
                                    bool replay_undecided, codegen::WriteNotes* notes)>
      write;
  std::function<Result<Evaluation>(const std::string& source)> evaluate;  // also stores it
  std::function<Status(const std::string& source)> keep;  // the source that stays when a baked one fails
  std::function<void(const std::string& line)> log;       // progress; may be empty
  // Times the tiles of CUDA kernels the store has no configuration for (cuda_tuning.h); may be
  // empty (the CPU, where no CUDA kernel is written): their rules' tiles run.
  std::function<Result<CudaTuningOutcome>(const std::vector<codegen::CudaTuning>& jobs)> tune_cuda;
};

// How a candidate's autotuned kernels got their tile configurations; written to report.json's
// compile.tuning by ToJson and read back (by the optimize summary) only through FromJson.
struct TuningSummary {
  int64_t kernels = 0;     // autotuned kernels of the source before any configuration was baked in
  int64_t from_store = 0;  // configurations taken from the store (measured earlier on this GPU)
  int64_t measured = 0;    // configurations measured by this evaluation and stored
  double tuning_s = 0;     // the evaluation that measured them, less its timing of the reference
  bool baked = false;      // the chosen source autotunes nothing in its own process (@triton.autotune)
  int64_t cuda_measured = 0;  // CUDA kernels whose tiles the tuner measured (and stored)
  double cuda_tuning_s = 0;   // the tuner's time, its start included (not in CompilerCandidate::codegen_s)

  Json ToJson() const;
  static TuningSummary FromJson(const Json& json);  // absent fields keep their defaults
  bool operator==(const TuningSummary&) const = default;
};

struct CompilerCandidate {
  std::string source;
  Evaluation evaluation;
  DotPrecisionStep precision;         // the step the source was written for
  codegen::NoKernelReasons no_kernel;  // of that source
  // [{"dot_precision", "verdict"} | {"baked": true, "verdict"} | {"graph_replay": true, "verdict",
  // "speedup", "kept"}], in the order they were judged.
  Json attempts = Json::array();
  TuningSummary tuning;
  Json cuda_tuning = Json::array();  // the tuner's answers (CudaTuningOutcome::kernels), every step's
  double codegen_s = 0;  // writing the last step's source
};

// How much faster (a fraction) the replayed form of an undecided forward must measure to be kept:
// at a tie the direct form wins, as it copies nothing.
inline constexpr double kReplayMinGain = 0.03;

// Runs the ladder; `store` (may be null) keeps the measured configurations by tuning key and `gpu`.
Result<CompilerCandidate> ChooseCompilerCandidate(const std::vector<DotPrecisionStep>& ladder, Store* store,
                                                  const std::string& gpu, const CompilerCandidateHooks& hooks);

// Whether another candidate (the LLM stage's best) replaces the compiler's: it is accepted, and the
// compiler's is not or is measurably slower (timings that mean nothing, on the CPU, decide nothing).
bool ReplacesCompilerCandidate(const Evaluation& challenger, const Evaluation& compiler);
// Why the candidate ReplacesCompilerCandidate chose won, in words for the console and report.json
// ("the LLM stage's best (1.42x of eager) is measurably faster than the compiler's (1.10x)").
// `challenger` is the LLM stage's best accepted candidate, if it had one.
std::string ExplainCandidateChoice(const std::optional<Evaluation>& challenger, const Evaluation& compiler);

}  // namespace kforge
