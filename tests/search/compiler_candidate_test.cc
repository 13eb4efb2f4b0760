// The compiler's candidate chosen by measurement, with the writer and the evaluator replaced by
// functions that record what they were asked: the precision ladder's steps, the tile
// configurations baked in, and which source stays.
#include "search/compiler_candidate.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"

namespace kforge {
namespace {

const std::string kKey(64, 'a');

Evaluation Judged(VerdictKind kind, Json evidence = Json::object()) {
  Evaluation evaluation;
  evaluation.verdict = MakeVerdict(kind, "");
  evaluation.evidence = std::move(evidence);
  evaluation.duration_s = 2.5;
  return evaluation;
}

// A source for `step`: a dot in that precision; autotuned (one tuning key) unless a configuration
// is baked in.
std::string Source(const DotPrecisionStep& step, const std::map<std::string, codegen::TileChoice>& tuned, bool dot = true,
                   bool attention = false) {
  std::string text = dot ? "tl.dot(a, b, input_precision=\"" + step.gemm + "\")\n" : "x + 1\n";
  if (attention) text += "def attention_g2(q, k):\n    tl.dot(q, k, input_precision=\"" + step.attention + "\")\n";
  if (tuned.count(kKey)) return text + "# matmul_g1: tile configuration measured on this GPU (tuning key " + kKey + ").\n";
  return text + "# Tuning key of matmul_g1: " + kKey + " (the configuration measured best is stored under it).\n@triton.autotune(\n";
}

struct Recorder {
  std::vector<std::string> evaluated, kept;
  std::vector<VerdictKind> verdicts;  // given in turn
  bool dot = true;
  bool attention = false;

  CompilerCandidateHooks Hooks() {
    CompilerCandidateHooks hooks;
    hooks.write = [this](const DotPrecisionStep& step, const std::map<std::string, codegen::TileChoice>& tuned,
                         codegen::NoKernelReasons* no_kernel) -> Result<std::string> {
      if (no_kernel != nullptr) (*no_kernel)["sort"] = "no kernel form";
      return Source(step, tuned, dot, attention);
    };
    hooks.evaluate = [this](const std::string& source) -> Result<Evaluation> {
      evaluated.push_back(source);
      VerdictKind kind = verdicts.empty() ? VerdictKind::kAccepted : verdicts.front();
      if (!verdicts.empty()) verdicts.erase(verdicts.begin());
      Json chose = {{"matmul_g1", {{"kwargs", {{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"BLOCK_K", 32}, {"GROUP_M", 8}}},
                                   {"num_warps", 4}, {"num_stages", 3}}}};
      return Judged(kind, {{"tuning", chose}});
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
  EXPECT_EQ(chosen->tuning, (TuningSummary{.kernels = 1, .from_store = 0, .measured = 1, .tuning_s = 2.5, .baked = true}));
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

}  // namespace
}  // namespace kforge
