// The order of tl.dot precisions a compiled candidate is tried in.
#include "search/precision_ladder.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

TEST(PrecisionLadderTest, Fp32OnAGpuRaisesAttentionFirstThenTheGemms) {
  std::vector<DotPrecisionStep> ladder = DotPrecisionLadder(Precision::kFp32, /*on_cpu=*/false);
  ASSERT_EQ(ladder.size(), 7u);
  EXPECT_EQ(ladder[0], (DotPrecisionStep{"tf32x3", "tf32x3"}));
  EXPECT_EQ(ladder[1], (DotPrecisionStep{"tf32x3", "ieee"}));
  EXPECT_EQ(ladder[2], (DotPrecisionStep{"bf16x6", "ieee"}));
  // Then the products attention reads q and k from in IEEE too, then v's, the other GEMMs as before.
  EXPECT_EQ(ladder[3], (DotPrecisionStep{.gemm = "bf16x6", .attention = "ieee", .attention_inputs = "ieee"}));
  EXPECT_EQ(ladder[4], (DotPrecisionStep{.gemm = "bf16x6", .attention = "ieee", .attention_inputs = "ieee", .attention_values = "ieee"}));
  EXPECT_EQ(ladder[5], (DotPrecisionStep{"ieee", "ieee"}));
  EXPECT_TRUE(ladder[5].cuda);
  // Last, the IEEE dots as Triton's again: a CUDA kernel that fails leaves what worked before.
  EXPECT_EQ(ladder[6], (DotPrecisionStep{"ieee", "ieee", /*cuda=*/false}));
  EXPECT_EQ(ladder[5].Label(), "ieee");
  EXPECT_EQ(ladder[6].Label(), "ieee (Triton)");
  EXPECT_EQ(ladder[1].Label(/*with_attention=*/false), "tf32x3");
  EXPECT_EQ(ladder[0].Label(), "tf32x3");
  EXPECT_EQ(ladder[1].Label(), "tf32x3, attention ieee");
  EXPECT_EQ(ladder[2].Label(/*with_attention=*/false), "bf16x6");
  EXPECT_EQ(ladder[3].Label(), "bf16x6, attention and its q and k inputs ieee");
  EXPECT_EQ(ladder[4].Label(), "bf16x6, attention and its inputs ieee");
  EXPECT_EQ(ladder[3].Label(/*with_attention=*/false), "bf16x6");
  // No step is less precise than the one before it, for any kind of dot.
  auto rank = [](const std::string& precision) { return precision == "tf32x3" ? 0 : precision == "bf16x6" ? 1 : 2; };
  for (size_t i = 1; i < ladder.size(); ++i) {
    EXPECT_GE(rank(ladder[i].gemm), rank(ladder[i - 1].gemm));
    EXPECT_GE(rank(ladder[i].attention), rank(ladder[i - 1].attention));
    EXPECT_GE(rank(ladder[i].inputs()), rank(ladder[i - 1].inputs()));
    EXPECT_GE(rank(ladder[i].values()), rank(ladder[i - 1].values()));
  }
}

TEST(PrecisionLadderTest, TheInterpreterAndADeclaredTf32PolicyHaveOneStep) {
  EXPECT_EQ(DotPrecisionLadder(Precision::kFp32, /*on_cpu=*/true), (std::vector<DotPrecisionStep>{{"ieee", "ieee"}}));
  EXPECT_EQ(DotPrecisionLadder(Precision::kTf32, /*on_cpu=*/false), (std::vector<DotPrecisionStep>{{"tf32", "tf32"}}));
}

TEST(PrecisionLadderTest, AWrongOutputOrALaterPrecisionThatFailsIsWorthAnother) {
  EXPECT_TRUE(WorthTheNextStep(VerdictKind::kWrongOutput, /*uses_dot=*/true, /*first_step=*/true));
  EXPECT_FALSE(WorthTheNextStep(VerdictKind::kWrongOutput, false, true));
  EXPECT_FALSE(WorthTheNextStep(VerdictKind::kAccepted, true, false));
  // The first step failing otherwise is the kernels' own fault; a later one may be its precision's.
  EXPECT_FALSE(WorthTheNextStep(VerdictKind::kCompileError, true, true));
  EXPECT_TRUE(WorthTheNextStep(VerdictKind::kCompileError, true, false));
  EXPECT_FALSE(WorthTheNextStep(VerdictKind::kRuntimeError, false, false));
}

}  // namespace
}  // namespace kforge
