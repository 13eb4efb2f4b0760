#include "eval/evaluation.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

TEST(EvaluationJsonTest, ReadsBackWhatItWrote) {
  Evaluation evaluation;
  evaluation.verdict = {VerdictKind::kRejectedHack, "memoization", "same output for new inputs"};
  evaluation.device = "cuda:0";
  evaluation.timings_meaningful = true;
  evaluation.candidate_ms = SampleSummary{10, 1.5, 1.4, 1.6, 1.3, 1.9};
  evaluation.reference_ms = SampleSummary{10, 3.0, 2.9, 3.1, 2.8, 3.3};
  evaluation.speedup = SpeedupEstimate{2.0, 1.8, 2.2, true};
  evaluation.authored_share = 0.97;
  evaluation.duration_s = 4.5;
  evaluation.reference_timing_s = 3.25;
  evaluation.evidence = {{"timing", {{"calls", 10}}}};
  auto read = EvaluationFromJson(evaluation.ToJson());
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->ToJson(), evaluation.ToJson());
  EXPECT_EQ(read->verdict.ToString(), "rejected_hack(memoization)");
  EXPECT_EQ(read->reference_timing_s, 3.25);
}

TEST(EvaluationJsonTest, RefusesWhatIsNotAnEvaluation) {
  EXPECT_FALSE(EvaluationFromJson(Json::array()).ok());
  EXPECT_FALSE(EvaluationFromJson({{"verdict_kind", "accepted"}}).ok());  // no evidence
  EXPECT_NE(EvaluationFromJson({{"verdict_kind", "great"}, {"evidence", Json::object()}}).status().message().find("great"),
            std::string::npos);
  auto untimed = EvaluationFromJson({{"verdict_kind", "timeout"}, {"evidence", Json::object()}});
  ASSERT_TRUE(untimed.ok());
  EXPECT_FALSE(untimed->speedup.has_value());
  EXPECT_FALSE(untimed->candidate_ms.has_value());
}

}  // namespace
}  // namespace kforge
