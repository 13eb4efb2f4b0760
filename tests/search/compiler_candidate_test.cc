// The compiler's candidate chosen by measurement, with the writer and the evaluator replaced by
// functions that record what they were asked: the precision ladder's steps, the tile
// configurations baked in, the graph replay measured, and which source stays.
#include "search/compiler_candidate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <string>
#include <vector>

#include "core/clock.h"

namespace kforge {
namespace {

const std::string kKey(64, 'a');

Evaluation Judged(VerdictKind kind, Json evidence = Json::object(), std::optional<double> speedup = std::nullopt) {
  Evaluation evaluation;
  evaluation.verdict = MakeVerdict(kind, "");
  evaluation.evidence = std::move(evidence);
  evaluation.duration_s = 2.5;
  evaluation.reference_timing_s = 1.5;  // eager and torch.compile: not the tuning's
  if (speedup) {
    evaluation.timings_meaningful = true;
    evaluation.speedup = SpeedupEstimate{.speedup = *speedup, .ci_low = *speedup, .ci_high = *speedup, .significant = true};
  }
  return evaluation;
}

// A source for `step`: a dot in that precision; autotuned (one tuning key) unless a configuration
// is baked in.
std::string Source(const DotPrecisionStep& step, const std::map<std::string, codegen::TileChoice>& tuned, bool dot = true,
                   bool attention = false) {
  std::string text = dot ? "tl.dot(a, b, input_precision=\"" + step.gemm + "\")\n" : "x + 1\n";
  if (attention) text += "def attention_g2(q, k):\n    tl.dot(q, k, input_precision=\"" + step.attention + "\")\n";
  if (tuned.count(kKey)) return text + "# matmul_g1: tile configuration measured on this GPU (tuning key " + kKey + ").\n";
  return text + "# Tuning key of matmul_g1: " + kKey + " (the configuration measured best is stored under it).\n"
                "@triton.autotune(\n    configs=[\n"
                "        triton.Config({\"BLOCK_M\": 64, \"BLOCK_N\": 64, \"BLOCK_K\": 32, \"GROUP_M\": 8}, num_warps=4, num_stages=3),\n"
                "    ],\n)\n@triton.jit\ndef matmul_g1(a_ptr):\n";
}

// A CUDA kernel offered in two tiles (block_m 128, the rules', and 64) under kCudaKey.
const std::string kCudaKey(64, 'c');
const codegen::TileChoice kRulesTile{.block_m = 128, .block_n = 128, .block_k = 8, .warps = 8, .stages = 2};
const codegen::TileChoice kOtherTile{.block_m = 64, .block_n = 64, .block_k = 16, .warps = 8, .stages = 2};

std::string CudaSource(const std::map<std::string, codegen::TileChoice>& tuned) {
  auto tuned_tile = tuned.find(kCudaKey);
  if (tuned_tile == tuned.end()) return "# Tuning key of matmul_g2: " + kCudaKey + " (the tuner measures its 2 tiles).\ntile 128\n";
  return "# matmul_g2: tile measured fastest of 2 on this GPU (tuning key " + kCudaKey + ").\ntile " +
         std::to_string(tuned_tile->second.block_m) + "\n";
}

codegen::CudaTuning CudaJob() {
  return codegen::CudaTuning{.kernel = "matmul_g2", .key = kCudaKey, .args = {{{64, 64}, {64, 1}}},
                             .variants = {{.config = kRulesTile, .source = "tile 128"}, {.config = kOtherTile, .source = "tile 64"}}};
}

struct Recorder {
  std::vector<std::string> evaluated, kept;
  bool cuda = false;                 // the source has the CUDA kernel above
  std::optional<CudaTuningOutcome> tuner;  // what the tuner answers (an error when unset)
  int tuner_calls = 0;
  std::vector<VerdictKind> verdicts;  // given in turn
  bool dot = true;
  bool attention = false;
  bool replay_undecided = false;  // the writer's rule leaves the graph replay to measurement
  std::optional<double> direct_speedup, replayed_speedup;  // timed, when set

  CompilerCandidateHooks Hooks() {
    CompilerCandidateHooks hooks;
    hooks.write = [this](const DotPrecisionStep& step, const std::map<std::string, codegen::TileChoice>& tuned,
                         bool replay, codegen::WriteNotes* notes) -> Result<std::string> {
      if (notes != nullptr) {
        notes->no_kernel["sort"] = "no kernel form";
        notes->replay_undecided = replay_undecided;
        if (cuda && !tuned.count(kCudaKey)) notes->cuda_tuning.push_back(CudaJob());
      }
      return Source(step, tuned, dot, attention) + (cuda ? CudaSource(tuned) : "") +
             (replay && replay_undecided ? "return self.kf_replay(self, x)\n" : "");
    };
    hooks.tune_cuda = [this](const std::vector<codegen::CudaTuning>& jobs) -> Result<CudaTuningOutcome> {
      ++tuner_calls;
      EXPECT_EQ(jobs.size(), 1u);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (!tuner) return Status::Unavailable("the tuner worker did not start");
      return *tuner;
    };
    hooks.evaluate = [this](const std::string& source) -> Result<Evaluation> {
      evaluated.push_back(source);
      VerdictKind kind = verdicts.empty() ? VerdictKind::kAccepted : verdicts.front();
      if (!verdicts.empty()) verdicts.erase(verdicts.begin());
      Json chose = {{"matmul_g1", {{"kwargs", {{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"BLOCK_K", 32}, {"GROUP_M", 8}}},
                                   {"num_warps", 4}, {"num_stages", 3}}}};
      const bool replayed = source.find("kf_replay") != std::string::npos;
      return Judged(kind, {{"tuning", chose}}, replayed ? replayed_speedup : direct_speedup);
    };
    hooks.keep = [this](const std::string& source) {
      kept.push_back(source);
      return Status::Ok();
    };
    return hooks;
  }
};

class CompilerCandidateTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = Store::OpenInMemory(clock_).value(); }
  FakeClock clock_;
  std::unique_ptr<Store> store_;
  const std::vector<DotPrecisionStep> ladder_ = DotPrecisionLadder(Precision::kFp32, /*on_cpu=*/false);
};

// Accepted at the first step: measured, baked, verified; the baked source is the choice and its
// configuration is stored, so the next choice bakes it in before evaluating.
TEST_F(CompilerCandidateTest, TheMeasuredConfigurationIsBakedInVerifiedAndStored) {
  Recorder recorder;
  Result<CompilerCandidate> chosen = ChooseCompilerCandidate(ladder_, store_.get(), "H200", recorder.Hooks());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  ASSERT_EQ(recorder.evaluated.size(), 2u);
  EXPECT_NE(recorder.evaluated[0].find("@triton.autotune"), std::string::npos);
  EXPECT_EQ(chosen->source, recorder.evaluated[1]);
  EXPECT_EQ(chosen->source.find("@triton.autotune"), std::string::npos);
  EXPECT_EQ(chosen->attempts, Json::parse(R"([{"baked": true, "verdict": "accepted"},
                                               {"dot_precision": "tf32x3", "verdict": "accepted"}])"));
  EXPECT_EQ(chosen->tuning, (TuningSummary{.kernels = 1, .from_store = 0, .measured = 1, .tuning_s = 1.0, .baked = true}));
  EXPECT_EQ(TuningSummary::FromJson(chosen->tuning.ToJson()), chosen->tuning);
  EXPECT_EQ(chosen->no_kernel.at("sort"), "no kernel form");
  EXPECT_TRUE(recorder.kept.empty());

  Recorder again;
  Result<CompilerCandidate> second = ChooseCompilerCandidate(ladder_, store_.get(), "H200", again.Hooks());
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(again.evaluated.size(), 1u);  // from the store: nothing left to tune
  EXPECT_EQ(second->tuning.from_store, 1);
  EXPECT_EQ(second->tuning.measured, 0);
  EXPECT_TRUE(second->tuning.baked);  // baked in from the store
}

// A CUDA kernel's tiles are measured by the tuner before the first evaluation, the fastest baked
// in and stored: the next choice takes it from the store and asks the tuner nothing.
TEST_F(CompilerCandidateTest, TheTunersTileIsBakedInBeforeEvaluatingAndStored) {
  Recorder recorder;
  recorder.cuda = true;
  const Json answer = {{"kernel", "matmul_g2"}, {"key", kCudaKey}, {"chosen", 1},
                       {"variants", {{{"tile", {128, 128, 8}}, {"ms", 2.0}}, {{"tile", {64, 64, 16}}, {"ms", 1.5}}}}};
  recorder.tuner = CudaTuningOutcome{.chosen = {{kCudaKey, kOtherTile}}, .kernels = Json::array({answer}), .seconds = 3.0};
  Result<CompilerCandidate> chosen = ChooseCompilerCandidate(ladder_, store_.get(), "H200", recorder.Hooks());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(recorder.tuner_calls, 1);
  ASSERT_FALSE(recorder.evaluated.empty());
  EXPECT_NE(recorder.evaluated[0].find("tile measured fastest of 2 on this GPU (tuning key " + kCudaKey + ").\ntile 64"), std::string::npos)
      << recorder.evaluated[0];
  EXPECT_NE(chosen->source.find("\ntile 64\n"), std::string::npos);
  EXPECT_EQ(chosen->tuning.cuda_measured, 1);
  EXPECT_GE(chosen->tuning.cuda_tuning_s, 0.02);  // the tuner's wall time, not its own count (3 s)
  EXPECT_LT(chosen->tuning.cuda_tuning_s, 2.0);
  EXPECT_EQ(chosen->tuning.kernels, 2);     // the Triton kernel and the CUDA one
  EXPECT_EQ(chosen->tuning.from_store, 0);  // the CUDA tile was measured, not stored before
  EXPECT_EQ(chosen->cuda_tuning, Json::array({answer}));
  EXPECT_EQ(TuningSummary::FromJson(chosen->tuning.ToJson()), chosen->tuning);

  Recorder again;
  again.cuda = true;
  Result<CompilerCandidate> second = ChooseCompilerCandidate(ladder_, store_.get(), "H200", again.Hooks());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(again.tuner_calls, 0);
  EXPECT_NE(again.evaluated[0].find("\ntile 64\n"), std::string::npos);
  EXPECT_EQ(second->tuning.from_store, 2);
  // Stored for this GPU only.
  Recorder elsewhere;
  elsewhere.cuda = true;
  elsewhere.tuner = CudaTuningOutcome{};  // chooses nothing
  ASSERT_TRUE(ChooseCompilerCandidate(ladder_, store_.get(), "H100", elsewhere.Hooks()).ok());
  EXPECT_EQ(elsewhere.tuner_calls, 1);
  EXPECT_NE(elsewhere.evaluated[0].find("# Tuning key of matmul_g2"), std::string::npos);
}

// A tuner that fails costs the kernel its measurement, not the candidate: the rules' tile runs.
TEST_F(CompilerCandidateTest, ATunerThatFailsLeavesTheRulesTile) {
  Recorder recorder;
  recorder.cuda = true;
  Result<CompilerCandidate> chosen = ChooseCompilerCandidate(ladder_, store_.get(), "H200", recorder.Hooks());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(recorder.tuner_calls, 1);
  EXPECT_NE(chosen->source.find("# Tuning key of matmul_g2: " + kCudaKey + " (the tuner measures its 2 tiles).\ntile 128"), std::string::npos);
  EXPECT_TRUE(chosen->evaluation.verdict.accepted());
  EXPECT_EQ(chosen->tuning.cuda_measured, 0);
  ASSERT_EQ(chosen->cuda_tuning.size(), 1u);
  EXPECT_NE(chosen->cuda_tuning[0]["error"].get<std::string>().find("did not start"), std::string::npos);
}

// A baked source that fails leaves the autotuned one, written back by `keep`.
TEST_F(CompilerCandidateTest, ABakedSourceThatFailsKeepsTheAutotunedOne) {
  Recorder recorder;
  recorder.verdicts = {VerdictKind::kAccepted, VerdictKind::kRuntimeError};
  Result<CompilerCandidate> chosen = ChooseCompilerCandidate(ladder_, nullptr, "H200", recorder.Hooks());
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->source, recorder.evaluated[0]);
  EXPECT_TRUE(chosen->evaluation.verdict.accepted());
  ASSERT_EQ(recorder.kept.size(), 1u);
  EXPECT_EQ(recorder.kept[0], recorder.evaluated[0]);
}

// A baked source wrong on its own fresh inputs, with the configuration the autotuned source
// chose, shows that source passed by luck: the step is judged wrong and the ladder goes on.
TEST_F(CompilerCandidateTest, ABakedSourceWrongOnOtherInputsClimbsTheLadder) {
  Recorder recorder;
  recorder.verdicts = {VerdictKind::kAccepted, VerdictKind::kWrongOutput, VerdictKind::kAccepted, VerdictKind::kAccepted};
  Result<CompilerCandidate> chosen = ChooseCompilerCandidate(ladder_, nullptr, "H200", recorder.Hooks());
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->precision.gemm, "bf16x6");
  EXPECT_TRUE(chosen->evaluation.verdict.accepted());
  EXPECT_TRUE(recorder.kept.empty());
  EXPECT_EQ(chosen->attempts, Json::parse(R"([{"baked": true, "verdict": "wrong_output"},
                                               {"dot_precision": "tf32x3", "verdict": "wrong_output"},
                                               {"baked": true, "verdict": "accepted"},
                                               {"dot_precision": "bf16x6", "verdict": "accepted"}])"));
}

// Wrong output with dots climbs the ladder to six-pass BF16; the attention step, which changes
// nothing without an attention kernel, is skipped.
TEST_F(CompilerCandidateTest, WrongOutputClimbsTheLadderSkippingStepsThatChangeNothing) {
  Recorder recorder;
  recorder.verdicts = {VerdictKind::kWrongOutput, VerdictKind::kAccepted, VerdictKind::kAccepted};
  Result<CompilerCandidate> chosen = ChooseCompilerCandidate(ladder_, nullptr, "H200", recorder.Hooks());
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->precision.gemm, "bf16x6");
  EXPECT_NE(chosen->source.find("input_precision=\"bf16x6\""), std::string::npos);
  EXPECT_EQ(chosen->attempts, Json::parse(R"([{"dot_precision": "tf32x3", "verdict": "wrong_output"},
                                               {"baked": true, "verdict": "accepted"},
                                               {"dot_precision": "bf16x6", "verdict": "accepted"}])"));
}

// With an attention kernel, its dots alone go IEEE first, the GEMMs staying three-pass TF32; then
// the GEMMs go six-pass BF16, named with the attention's precision.
TEST_F(CompilerCandidateTest, AnAttentionKernelRaisesItsOwnDotsFirst) {
  Recorder recorder;
  recorder.attention = true;
  recorder.verdicts = {VerdictKind::kWrongOutput, VerdictKind::kWrongOutput, VerdictKind::kAccepted, VerdictKind::kAccepted};
  Result<CompilerCandidate> chosen = ChooseCompilerCandidate(ladder_, nullptr, "H200", recorder.Hooks());
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->precision, (DotPrecisionStep{"bf16x6", "ieee"}));
  EXPECT_NE(chosen->source.find("input_precision=\"bf16x6\""), std::string::npos);
  EXPECT_EQ(chosen->attempts, Json::parse(R"([{"dot_precision": "tf32x3", "verdict": "wrong_output"},
                                               {"dot_precision": "tf32x3, attention ieee", "verdict": "wrong_output"},
                                               {"baked": true, "verdict": "accepted"},
                                               {"dot_precision": "bf16x6, attention ieee", "verdict": "accepted"}])"));
}

// A later precision that does not build hands on to IEEE.
TEST_F(CompilerCandidateTest, ALaterPrecisionThatDoesNotBuildHandsOnToIeee) {
  Recorder recorder;
  recorder.verdicts = {VerdictKind::kWrongOutput, VerdictKind::kCompileError, VerdictKind::kAccepted, VerdictKind::kAccepted};
  Result<CompilerCandidate> chosen = ChooseCompilerCandidate(ladder_, nullptr, "H200", recorder.Hooks());
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->precision.gemm, "ieee");
  EXPECT_TRUE(chosen->evaluation.verdict.accepted());
  EXPECT_EQ(chosen->attempts, Json::parse(R"([{"dot_precision": "tf32x3", "verdict": "wrong_output"},
                                               {"dot_precision": "bf16x6", "verdict": "compile_error"},
                                               {"baked": true, "verdict": "accepted"},
                                               {"dot_precision": "ieee", "verdict": "accepted"}])"));
}

// Without a dot another precision cannot mend a wrong output: one step.
TEST_F(CompilerCandidateTest, WrongOutputWithoutDotsStopsAtTheFirstStep) {
  Recorder recorder;
  recorder.dot = false;
  recorder.verdicts = {VerdictKind::kWrongOutput};
  Result<CompilerCandidate> chosen = ChooseCompilerCandidate(ladder_, nullptr, "H200", recorder.Hooks());
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(recorder.evaluated.size(), 1u);
  EXPECT_EQ(chosen->evaluation.verdict.kind, VerdictKind::kWrongOutput);
  EXPECT_EQ(chosen->attempts, Json::parse(R"([{"dot_precision": "none", "verdict": "wrong_output"}])"));
}

// A forward the rule leaves undecided is evaluated replayed too, with the direct form's tile
// configurations; the replayed form is kept when it is measurably faster.
TEST_F(CompilerCandidateTest, AnUndecidedForwardKeepsTheReplayWhenItIsFaster) {
  Recorder recorder;
  recorder.replay_undecided = true;
  recorder.direct_speedup = 0.9;
  recorder.replayed_speedup = 1.4;
  Result<CompilerCandidate> chosen = ChooseCompilerCandidate(ladder_, nullptr, "H200", recorder.Hooks());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  ASSERT_EQ(recorder.evaluated.size(), 3u);  // autotuned, baked, baked and replayed
  EXPECT_EQ(recorder.evaluated[2].find("@triton.autotune"), std::string::npos);
  EXPECT_EQ(chosen->source, recorder.evaluated[2]);
  EXPECT_NE(chosen->source.find("kf_replay"), std::string::npos);
  EXPECT_DOUBLE_EQ(chosen->evaluation.speedup->speedup, 1.4);
  EXPECT_EQ(chosen->attempts.back(), Json::parse(R"({"graph_replay": true, "verdict": "accepted", "kept": true,
                                                     "speedup": 1.4, "direct_speedup": 0.9})"));
  EXPECT_TRUE(recorder.kept.empty());
}

// At a tie (within kReplayMinGain) the direct form stays, written back by `keep`; a replay that
// fails stays out too.
TEST_F(CompilerCandidateTest, AnUndecidedForwardStaysDirectAtATieOrWhenTheReplayFails) {
  Recorder tie;
  tie.replay_undecided = true;
  tie.direct_speedup = 1.0;
  tie.replayed_speedup = 1.0 + kReplayMinGain / 2;
  Result<CompilerCandidate> chosen = ChooseCompilerCandidate(ladder_, nullptr, "H200", tie.Hooks());
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->source.find("kf_replay"), std::string::npos);
  EXPECT_DOUBLE_EQ(chosen->evaluation.speedup->speedup, 1.0);
  EXPECT_EQ(chosen->attempts.back()["kept"], false);
  ASSERT_EQ(tie.kept.size(), 1u);
  EXPECT_EQ(tie.kept[0], chosen->source);

  Recorder broken;
  broken.replay_undecided = true;
  broken.direct_speedup = 1.0;
  broken.replayed_speedup = 3.0;
  broken.verdicts = {VerdictKind::kAccepted, VerdictKind::kAccepted, VerdictKind::kRuntimeError};
  chosen = ChooseCompilerCandidate(ladder_, nullptr, "H200", broken.Hooks());
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->source.find("kf_replay"), std::string::npos);
  EXPECT_TRUE(chosen->evaluation.verdict.accepted());
  EXPECT_EQ(chosen->attempts.back()["verdict"], "runtime_error");
}

// Untimed evaluations (the CPU) or a decided rule measure no replay.
TEST_F(CompilerCandidateTest, NoReplayIsMeasuredUntimedOrWhenTheRuleDecides) {
  Recorder untimed;
  untimed.replay_undecided = true;
  ASSERT_TRUE(ChooseCompilerCandidate(ladder_, nullptr, "H200", untimed.Hooks()).ok());
  EXPECT_EQ(untimed.evaluated.size(), 2u);

  Recorder decided;
  decided.direct_speedup = decided.replayed_speedup = 1.0;
  ASSERT_TRUE(ChooseCompilerCandidate(ladder_, nullptr, "H200", decided.Hooks()).ok());
  EXPECT_EQ(decided.evaluated.size(), 2u);
}

// Another candidate replaces the compiler's only when accepted, and faster or facing a rejected one;
// untimed (CPU) evaluations decide nothing between two accepted candidates.
TEST(ReplacesCompilerCandidateTest, AcceptedAndFasterOrFacingARejectedOne) {
  const Evaluation fast = Judged(VerdictKind::kAccepted, Json::object(), 2.0);
  const Evaluation slow = Judged(VerdictKind::kAccepted, Json::object(), 1.5);
  const Evaluation wrong = Judged(VerdictKind::kWrongOutput);
  const Evaluation untimed = Judged(VerdictKind::kAccepted);
  EXPECT_TRUE(ReplacesCompilerCandidate(fast, slow));
  EXPECT_FALSE(ReplacesCompilerCandidate(slow, fast));
  EXPECT_TRUE(ReplacesCompilerCandidate(slow, wrong));
  EXPECT_FALSE(ReplacesCompilerCandidate(wrong, slow));
  EXPECT_FALSE(ReplacesCompilerCandidate(untimed, untimed));
  EXPECT_TRUE(ReplacesCompilerCandidate(untimed, wrong));
}

// The words say the same choice ReplacesCompilerCandidate makes, and why.
TEST(ExplainCandidateChoiceTest, SaysWhichCandidateWonAndWhy) {
  const Evaluation fast = Judged(VerdictKind::kAccepted, Json::object(), 2.0);
  const Evaluation slow = Judged(VerdictKind::kAccepted, Json::object(), 1.5);
  const Evaluation wrong = Judged(VerdictKind::kWrongOutput);
  const Evaluation untimed = Judged(VerdictKind::kAccepted);
  EXPECT_EQ(ExplainCandidateChoice(fast, slow),
            "the LLM stage's best (2.00x of eager) is measurably faster than the compiler's (1.50x of eager)");
  EXPECT_EQ(ExplainCandidateChoice(slow, fast),
            "the compiler's candidate (2.00x of eager) stays: the LLM stage's best (1.50x of eager) is not measurably faster");
  EXPECT_EQ(ExplainCandidateChoice(slow, wrong).rfind("the compiler's candidate was wrong_output; the LLM stage's best was accepted", 0), 0u);
  EXPECT_EQ(ExplainCandidateChoice(std::nullopt, slow),
            "the LLM stage had no accepted candidate; the compiler's was accepted (1.50x of eager)");
  EXPECT_EQ(ExplainCandidateChoice(std::nullopt, wrong), "neither the compiler nor the LLM stage had an accepted candidate");
  EXPECT_EQ(ExplainCandidateChoice(untimed, untimed).rfind("both were accepted and timings here mean nothing", 0), 0u);
}

}  // namespace
}  // namespace kforge
