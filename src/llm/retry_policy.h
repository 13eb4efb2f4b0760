// When and how long to wait before trying an HTTP call again. Rate limits (429), server errors
// (5xx), timeouts and network errors are retried with exponential backoff and full jitter, or
// after the server's Retry-After when it gives one; every other failure is final at once.
// Immutable after construction and thread-safe (the sleeper and random source are shared).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "llm/http_transport.h"
#include "llm/random_source.h"
#include "llm/call_activity.h"
#include "llm/sleeper.h"

namespace kforge {

struct RetryOptions {
  int max_attempts = 5;            // attempts in all, the first included
  double base_delay_s = 1;         // the first backoff's ceiling
  double max_delay_s = 60;         // the ceiling the backoff grows to
  double max_retry_after_s = 120;  // a server's Retry-After is honoured up to this
};

// True for outcomes another attempt may cure: rate limits, server errors, timeouts, network errors.
bool IsRetryable(CallOutcome outcome);

// A Retry-After header in its seconds form; nullopt when absent or in the HTTP-date form.
std::optional<double> RetryAfterSeconds(const HttpResponse& response);

// The last response of a call and what it meant, with the number of attempts it took.
struct HttpExchange {
  HttpResponse response;
  CallOutcome outcome = CallOutcome::kOk;
  int attempts = 0;
  std::vector<CallAttempt> history;  // one per attempt, in order
};

class RetryPolicy {
 public:
  // `sleeper` and `random` are required.
  // `activity`, when given, hears of every wait before a retry.
  RetryPolicy(RetryOptions options, std::shared_ptr<Sleeper> sleeper, std::shared_ptr<RandomSource> random,
              std::shared_ptr<CallActivity> activity = nullptr);

  // The wait after failed attempt number `attempt` (from 1): the server's Retry-After capped at
  // max_retry_after_s when it sent one, else uniform in [0, min(max_delay_s, base_delay_s * 2^(attempt-1))).
  double DelayAfter(int attempt, const HttpResponse& failed) const;

  // Posts `request` until it succeeds, fails for good, or max_attempts are spent.
  HttpExchange Post(HttpTransport& transport, const HttpRequest& request) const;

  const RetryOptions& options() const { return options_; }

 private:
  RetryOptions options_;
  std::shared_ptr<Sleeper> sleeper_;
  std::shared_ptr<RandomSource> random_;
  std::shared_ptr<CallActivity> activity_;
};

}  // namespace kforge
