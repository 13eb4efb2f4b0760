#include "eval/statistics.h"

#include <gtest/gtest.h>

#include <random>

namespace kforge {
namespace {

TEST(MedianTest, OddEvenAndEmpty) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({}), 0);
}

TEST(SummarizeTest, IntervalContainsMedianAndIsDeterministic) {
  std::vector<double> samples;
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(1.0, 0.05);
  for (int i = 0; i < 200; ++i) samples.push_back(noise(rng));
  SampleSummary a = Summarize(samples, 3);
  SampleSummary b = Summarize(samples, 3);
  EXPECT_EQ(a.count, 200);
  EXPECT_LE(a.ci_low, a.median);
  EXPECT_GE(a.ci_high, a.median);
  EXPECT_LT(a.relative_spread(), 0.05);
  EXPECT_DOUBLE_EQ(a.ci_low, b.ci_low);
  EXPECT_DOUBLE_EQ(a.ci_high, b.ci_high);
}

TEST(SpeedupTest, ClearSpeedupIsSignificant) {
  std::vector<double> reference(50, 2.0), candidate(50, 1.0);
  for (int i = 0; i < 50; ++i) {
    reference[i] += 0.01 * (i % 5);
    candidate[i] += 0.01 * (i % 7);
  }
  SpeedupEstimate estimate = EstimateSpeedup(reference, candidate);
  EXPECT_NEAR(estimate.speedup, 2.0, 0.05);
  EXPECT_TRUE(estimate.significant);
  EXPECT_GT(estimate.ci_low, 1.0);
}

TEST(SpeedupTest, DifferenceInsideNoiseIsNotSignificant) {
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(1.0, 0.2);
  std::vector<double> reference, candidate;
  for (int i = 0; i < 30; ++i) {
    reference.push_back(noise(rng));
    candidate.push_back(noise(rng) * 0.99);
  }
  SpeedupEstimate estimate = EstimateSpeedup(reference, candidate);
  EXPECT_FALSE(estimate.significant);
  EXPECT_LE(estimate.ci_low, 1.0);
  EXPECT_GE(estimate.ci_high, 1.0);
}

TEST(SpeedupTest, EmptyOrZeroSamplesGiveNoEstimate) {
  EXPECT_EQ(EstimateSpeedup({}, {1.0}).speedup, 0);
  EXPECT_EQ(EstimateSpeedup({1.0}, {0.0}).speedup, 0);
  EXPECT_FALSE(EstimateSpeedup({1.0}, {0.0}).significant);
}

}  // namespace
}  // namespace kforge
