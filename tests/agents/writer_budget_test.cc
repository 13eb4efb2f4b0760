#include "agents/writer_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace kforge {
namespace {

TEST(WriterBudget, UnlimitedUntilStopped) {
  FakeClock clock;
  WriterBudget budget(BudgetLimits{}, clock);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(budget.TryStartAttempt());
  budget.Stop("user interrupt");
  budget.Stop("second reason");
  EXPECT_FALSE(budget.TryStartAttempt());
  EXPECT_EQ(budget.stop_reason(), "user interrupt");
  EXPECT_EQ(budget.attempts(), 100);
}

TEST(WriterBudget, AttemptLimit) {
  FakeClock clock;
  WriterBudget budget(BudgetLimits{.max_attempts = 2}, clock);
  EXPECT_TRUE(budget.TryStartAttempt());
  EXPECT_TRUE(budget.TryStartAttempt());
  EXPECT_FALSE(budget.TryStartAttempt());
  EXPECT_EQ(budget.stop_reason(), "the limit of 2 attempts is reached");
}

TEST(WriterBudget, DollarLimitCountsWhatWasCharged) {
  FakeClock clock;
  WriterBudget budget(BudgetLimits{.max_usd = 0.05}, clock);
  EXPECT_TRUE(budget.TryStartAttempt());
  budget.Charge(0.03, 1500);
  EXPECT_TRUE(budget.TryStartAttempt());
  budget.Charge(0.03, 1500);
  EXPECT_FALSE(budget.TryStartAttempt());
  EXPECT_EQ(budget.stop_reason(), "the budget of $0.05 is spent ($0.0600)");
  EXPECT_EQ(budget.tokens(), 3000);
  EXPECT_DOUBLE_EQ(budget.spent_usd(), 0.06);
}

TEST(WriterBudget, TokenLimitCountsWhatWasCharged) {
  FakeClock clock;
  WriterBudget budget(BudgetLimits{.max_tokens = 2000}, clock);
  EXPECT_TRUE(budget.TryStartAttempt());
  budget.Charge(0, 1500);
  EXPECT_TRUE(budget.TryStartAttempt());
  budget.Charge(0, 600);
  EXPECT_FALSE(budget.TryStartAttempt());
  EXPECT_EQ(budget.stop_reason(), "the budget of 2000 tokens is spent (2100 tokens)");
}

TEST(WriterBudget, DeviceTimeLimitCountsTheEvaluationsNotTheWallClock) {
  FakeClock clock;
  WriterBudget budget(BudgetLimits{.max_eval_seconds = 30}, clock);
  EXPECT_TRUE(budget.TryStartAttempt());
  clock.Advance(600);  // a long model call costs no device time
  budget.ChargeEvaluation(20);
  EXPECT_TRUE(budget.TryStartAttempt());
  budget.ChargeEvaluation(12.5);
  EXPECT_FALSE(budget.TryStartAttempt());
  EXPECT_EQ(budget.eval_seconds(), 32.5);
  EXPECT_EQ(budget.stop_reason(), "the device-time budget of 30 s of evaluations is spent (32 s)");
}

TEST(WriterBudget, WallTimeLimit) {
  FakeClock clock;
  clock.Advance(1000);  // the budget counts from its own start
  WriterBudget budget(BudgetLimits{.max_seconds = 60}, clock);
  EXPECT_TRUE(budget.TryStartAttempt());
  clock.Advance(59);
  EXPECT_TRUE(budget.TryStartAttempt());
  clock.Advance(1);
  EXPECT_FALSE(budget.TryStartAttempt());
  EXPECT_TRUE(budget.stopped());
  EXPECT_EQ(budget.stop_reason(), "the time budget of 60 s is spent");
}

TEST(WriterBudget, APoolsBudgetInsideTheStagesIsChargedToBothAndStopsAlone) {
  FakeClock clock;
  WriterBudget stage(BudgetLimits{.max_tokens = 1000, .max_eval_seconds = 60}, clock);
  WriterBudget first(BudgetLimits{}, clock, &stage);
  WriterBudget second(BudgetLimits{}, clock, &stage);
  EXPECT_TRUE(first.TryStartAttempt());
  EXPECT_TRUE(second.TryStartAttempt());
  EXPECT_EQ(stage.attempts(), 2);
  first.Charge(0.01, 600);
  first.ChargeEvaluation(10);
  EXPECT_EQ(stage.tokens(), 600);
  EXPECT_DOUBLE_EQ(stage.eval_seconds(), 10);
  first.Stop("writer 1 has an accepted candidate");
  EXPECT_FALSE(first.TryStartAttempt());
  EXPECT_FALSE(stage.stopped()) << "one pool stopping leaves the others running";
  EXPECT_TRUE(second.TryStartAttempt());
  second.Charge(0.01, 400);  // the stage's 1000 tokens are spent by the two pools together
  EXPECT_FALSE(second.TryStartAttempt());
  EXPECT_EQ(second.stop_reason(), "the budget of 1000 tokens is spent (1000 tokens)");
  EXPECT_TRUE(stage.Spent());
}

TEST(WriterBudget, AttemptLimitHoldsAcrossThreads) {
  WriterBudget budget(BudgetLimits{.max_attempts = 50});
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      while (budget.TryStartAttempt()) ++started;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(started.load(), 50);
  EXPECT_EQ(budget.attempts(), 50);
}

}  // namespace
}  // namespace kforge
