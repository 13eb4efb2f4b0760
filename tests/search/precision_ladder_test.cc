// The order of tl.dot precisions a compiled candidate is tried in.
#include "search/precision_ladder.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

TEST(PrecisionLadderTest, Fp32OnAGpuTriesAttentionInIeeeBeforeEveryDot) {
  std::vector<DotPrecisionStep> ladder = DotPrecisionLadder(Precision::kFp32, /*on_cpu=*/false);
  ASSERT_EQ(ladder.size(), 3u);
  EXPECT_EQ(ladder[0], (DotPrecisionStep{"tf32x3", "tf32x3"}));
  EXPECT_EQ(ladder[1], (DotPrecisionStep{"tf32x3", "ieee"}));
  EXPECT_EQ(ladder[2], (DotPrecisionStep{"ieee", "ieee"}));
  EXPECT_EQ(ladder[0].Label(), "tf32x3");
  EXPECT_EQ(ladder[1].Label(), "tf32x3, attention ieee");
}

TEST(PrecisionLadderTest, TheInterpreterAndADeclaredTf32PolicyHaveOneStep) {
  EXPECT_EQ(DotPrecisionLadder(Precision::kFp32, /*on_cpu=*/true), (std::vector<DotPrecisionStep>{{"ieee", "ieee"}}));
  EXPECT_EQ(DotPrecisionLadder(Precision::kTf32, /*on_cpu=*/false), (std::vector<DotPrecisionStep>{{"tf32", "tf32"}}));
}

TEST(PrecisionLadderTest, OnlyAWrongOutputWithADotIsWorthAnotherPrecision) {
  EXPECT_TRUE(WorthTheNextStep(/*wrong_output=*/true, /*uses_dot=*/true));
  EXPECT_FALSE(WorthTheNextStep(true, false));
  EXPECT_FALSE(WorthTheNextStep(false, true));
}

}  // namespace
}  // namespace kforge
