#include "eval/verdict.h"

#include <gtest/gtest.h>

#include "eval/precision.h"

namespace kforge {
namespace {

TEST(VerdictTest, StringsAreTheArchitectureNames) {
  EXPECT_EQ(MakeVerdict(VerdictKind::kAccepted, "").ToString(), "accepted");
  EXPECT_EQ(MakeVerdict(VerdictKind::kWrongOutput, "").ToString(), "wrong_output");
  EXPECT_EQ(HackVerdict("input_mutation", "").ToString(), "rejected_hack(input_mutation)");
  EXPECT_EQ(MakeVerdict(VerdictKind::kInfraError, "").ToString(), "infra_error");
}

TEST(VerdictTest, EveryKindRoundTrips) {
  for (VerdictKind kind : {VerdictKind::kAccepted, VerdictKind::kCompileError, VerdictKind::kRuntimeError,
                           VerdictKind::kTimeout, VerdictKind::kCrashed, VerdictKind::kWrongOutput,
                           VerdictKind::kRejectedHack, VerdictKind::kInfraError}) {
    EXPECT_EQ(ParseVerdictKind(ToString(kind)), kind);
  }
  EXPECT_EQ(ParseVerdictKind("fast"), std::nullopt);
}

TEST(PrecisionTest, ParsesAndOrdersTolerances) {
  EXPECT_EQ(ParsePrecision("fp32"), Precision::kFp32);
  EXPECT_EQ(ParsePrecision("tf32"), Precision::kTf32);
  EXPECT_EQ(ParsePrecision("bf16"), Precision::kBf16);
  EXPECT_EQ(ParsePrecision("fp16"), std::nullopt);
  EXPECT_LT(ToleranceFor(Precision::kFp32).atol, ToleranceFor(Precision::kTf32).atol);
  EXPECT_LT(ToleranceFor(Precision::kTf32).atol, ToleranceFor(Precision::kBf16).atol);
  // fp32 strict must be far tighter than KernelBench's 1e-2: a GELU tanh approximation (~5e-4
  // of the output's rms) must fail it.
  EXPECT_LT(ToleranceFor(Precision::kFp32).atol, 5e-4);
}

}  // namespace
}  // namespace kforge
