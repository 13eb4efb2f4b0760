#include "llm/retry_policy.h"

#include <gtest/gtest.h>

#include "core/clock.h"
#include "fakes.h"

namespace kforge {
namespace {

class RetryPolicyTest : public ::testing::Test {
 protected:
  RetryPolicy Policy(std::vector<double> random = {0.5}, RetryOptions options = {}) {
    return RetryPolicy(options, sleeper_, std::make_shared<ScriptedRandom>(std::move(random)));
  }
  HttpExchange Post(const RetryPolicy& policy) { return policy.Post(transport_, HttpRequest{"http://llm/x", {}, "{}", 1}); }

  FakeTransport transport_;
  std::shared_ptr<FakeSleeper> sleeper_ = std::make_shared<FakeSleeper>();
};

TEST_F(RetryPolicyTest, RateLimitWaitsExactlyTheRetryAfterThenSucceeds) {
  transport_.Reply(429, R"({"error": {"message": "slow down"}})", {{"retry-after", "7"}});
  transport_.Reply(200, "{}");
  HttpExchange exchange = Post(Policy());
  EXPECT_EQ(exchange.outcome, CallOutcome::kOk);
  EXPECT_EQ(exchange.attempts, 2);
  EXPECT_EQ(sleeper_->sleeps(), std::vector<double>({7.0}));
}

TEST_F(RetryPolicyTest, EveryWaitIsToldToTheCallActivity) {
  FakeClock clock;
  auto activity = std::make_shared<CallActivity>(clock);
  transport_.Reply(429, "", {{"retry-after", "7"}});
  transport_.Reply(200, "{}");
  RetryPolicy policy({}, sleeper_, std::make_shared<ScriptedRandom>(std::vector<double>{0.5}), activity);
  activity->Queued();
  activity->Started();
  Post(policy);
  ActivitySnapshot during = activity->Snapshot();  // the fake sleeper did not advance the clock
  EXPECT_EQ(during.in_flight, 1);
  EXPECT_EQ(during.retry_waits, 1);
  EXPECT_DOUBLE_EQ(during.wait_left_s, 7.0);
  EXPECT_EQ(during.wait_reason, "rate_limited");
  clock.Advance(7);
  activity->Finished();
  ActivitySnapshot after = activity->Snapshot();
  EXPECT_EQ(after.in_flight, 0);
  EXPECT_EQ(after.retry_waits, 0);  // over
  EXPECT_EQ(after.waits_so_far, 1);
  EXPECT_DOUBLE_EQ(after.waited_s, 7.0);
}

TEST_F(RetryPolicyTest, RetryAfterIsCapped) {
  RetryOptions options;
  options.max_retry_after_s = 30;
  transport_.Reply(429, "", {{"retry-after", "3600"}});
  transport_.Reply(200, "{}");
  Post(Policy({0.5}, options));
  EXPECT_EQ(sleeper_->sleeps(), std::vector<double>({30.0}));
}

TEST_F(RetryPolicyTest, RetryAfterAsADateFallsBackToBackoff) {
  transport_.Reply(503, "", {{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}});
  transport_.Reply(200, "{}");
  Post(Policy({0.25}));
  EXPECT_EQ(sleeper_->sleeps(), std::vector<double>({0.25}));
}

TEST_F(RetryPolicyTest, ServerErrorsBackOffExponentiallyWithFullJitter) {
  for (int i = 0; i < 4; ++i) transport_.Reply(500, "oops");
  transport_.Reply(200, "{}");
  RetryOptions options;
  options.base_delay_s = 1;
  options.max_delay_s = 5;
  HttpExchange exchange = Post(Policy({0.5, 0.25, 0.75, 0.5}, options));
  EXPECT_EQ(exchange.outcome, CallOutcome::kOk);
  EXPECT_EQ(exchange.attempts, 5);
  // Ceilings 1, 2, 4, then 8 capped at 5; each delay is the scripted fraction of its ceiling.
  EXPECT_EQ(sleeper_->sleeps(), std::vector<double>({0.5, 0.5, 3.0, 2.5}));
}

TEST_F(RetryPolicyTest, SeededJitterStaysWithinTheGrowingCeiling) {
  RetryOptions options;
  options.max_attempts = 10;
  options.base_delay_s = 0.5;
  options.max_delay_s = 20;
  RetryPolicy policy(options, sleeper_, std::make_shared<SeededRandom>(42));
  for (int i = 0; i < 10; ++i) transport_.Reply(502, "");
  HttpExchange exchange = Post(policy);
  EXPECT_EQ(exchange.outcome, CallOutcome::kServerError);
  std::vector<double> sleeps = sleeper_->sleeps();
  ASSERT_EQ(sleeps.size(), 9u);
  double distinct_sum = 0;
  for (size_t i = 0; i < sleeps.size(); ++i) {
    double ceiling = std::min(20.0, 0.5 * (1 << i));
    EXPECT_GE(sleeps[i], 0);
    EXPECT_LT(sleeps[i], ceiling) << "attempt " << i + 1;
    distinct_sum += sleeps[i];
  }
  EXPECT_GT(distinct_sum, 0);
}

TEST_F(RetryPolicyTest, SameSeedSameDelays) {
  SeededRandom a(7), b(7);
  for (int i = 0; i < 5; ++i) {
    double value = a.Uniform01();
    EXPECT_EQ(value, b.Uniform01());
    EXPECT_GE(value, 0);
    EXPECT_LT(value, 1);
  }
}

TEST_F(RetryPolicyTest, GivesUpAfterMaxAttemptsWithTheLastOutcome) {
  RetryOptions options;
  options.max_attempts = 3;
  transport_.Reply(500, "");
  transport_.Reply(503, "");
  transport_.Reply(429, "");
  HttpExchange exchange = Post(Policy({0.5}, options));
  EXPECT_EQ(exchange.outcome, CallOutcome::kRateLimited);
  EXPECT_EQ(exchange.response.status, 429);
  EXPECT_EQ(exchange.attempts, 3);
  EXPECT_EQ(sleeper_->sleeps().size(), 2u);
  EXPECT_EQ(transport_.requests().size(), 3u);
}

TEST_F(RetryPolicyTest, TimeoutsAndNetworkErrorsAreRetried) {
  transport_.Fail(CallOutcome::kTimeout, "too slow");
  transport_.Fail(CallOutcome::kNetworkError, "connection refused");
  transport_.Reply(200, "{}");
  HttpExchange exchange = Post(Policy());
  EXPECT_EQ(exchange.outcome, CallOutcome::kOk);
  EXPECT_EQ(exchange.attempts, 3);
}

struct FinalCase {
  int status;
  CallOutcome outcome;
};

void PrintTo(const FinalCase& c, std::ostream* out) { *out << "HTTP " << c.status; }

class RetryPolicyFinalTest : public RetryPolicyTest, public ::testing::WithParamInterface<FinalCase> {};

TEST_P(RetryPolicyFinalTest, ClientErrorsAreNeverRetried) {
  transport_.Reply(GetParam().status, R"({"error": {"message": "no"}})");
  transport_.Reply(200, "{}");
  HttpExchange exchange = Post(Policy());
  EXPECT_EQ(exchange.outcome, GetParam().outcome);
  EXPECT_EQ(exchange.attempts, 1);
  EXPECT_TRUE(sleeper_->sleeps().empty());
}

INSTANTIATE_TEST_SUITE_P(Statuses, RetryPolicyFinalTest,
                         ::testing::Values(FinalCase{400, CallOutcome::kClientError},
                                           FinalCase{401, CallOutcome::kAuthError},
                                           FinalCase{403, CallOutcome::kAuthError},
                                           FinalCase{404, CallOutcome::kClientError}),
                         [](const auto& info) { return "Http" + std::to_string(info.param.status); });

TEST(RetryAfterSecondsTest, ParsesOnlyTheSecondsForm) {
  auto with = [](std::string value) {
    HttpResponse response;
    response.headers = {{"retry-after", std::move(value)}};
    return RetryAfterSeconds(response);
  };
  EXPECT_EQ(with("12"), 12.0);
  EXPECT_EQ(with("0.5"), 0.5);
  EXPECT_EQ(with("-3"), std::nullopt);
  EXPECT_EQ(with("soon"), std::nullopt);
  EXPECT_EQ(RetryAfterSeconds(HttpResponse{}), std::nullopt);
}

}  // namespace
}  // namespace kforge
