#include "llm/retry_policy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "core/log.h"

namespace kforge {

bool IsRetryable(CallOutcome outcome) {
  switch (outcome) {
    case CallOutcome::kRateLimited:
    case CallOutcome::kServerError:
    case CallOutcome::kTimeout:
    case CallOutcome::kNetworkError: return true;
    default: return false;
  }
}

std::optional<double> RetryAfterSeconds(const HttpResponse& response) {
  std::optional<std::string> value = response.Header("retry-after");
  if (!value || value->empty()) return std::nullopt;
  char* end = nullptr;
  double seconds = std::strtod(value->c_str(), &end);
  while (end && (*end == ' ' || *end == '\t')) ++end;
  if (end == value->c_str() || *end != '\0' || !std::isfinite(seconds) || seconds < 0) return std::nullopt;
  return seconds;
}

RetryPolicy::RetryPolicy(RetryOptions options, std::shared_ptr<Sleeper> sleeper, std::shared_ptr<RandomSource> random,
                         std::shared_ptr<CallActivity> activity)
    : options_(options), sleeper_(std::move(sleeper)), random_(std::move(random)), activity_(std::move(activity)) {
  options_.max_attempts = std::max(1, options_.max_attempts);
}

double RetryPolicy::DelayAfter(int attempt, const HttpResponse& failed) const {
  if (std::optional<double> retry_after = RetryAfterSeconds(failed)) {
    return std::min(*retry_after, options_.max_retry_after_s);
  }
  double ceiling = options_.base_delay_s * std::ldexp(1.0, std::max(0, attempt - 1));
  return random_->Uniform01() * std::min(options_.max_delay_s, ceiling);
}

HttpExchange RetryPolicy::Post(HttpTransport& transport, const HttpRequest& request) const {
  HttpExchange exchange;
  while (true) {
    auto started = std::chrono::steady_clock::now();
    exchange.response = transport.Post(request);
    exchange.outcome = OutcomeOf(exchange.response);
    ++exchange.attempts;
    CallAttempt& attempt = exchange.history.emplace_back();
    attempt.http_status = exchange.response.status;
    attempt.outcome = exchange.outcome;
    attempt.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    attempt.maybe_billed = exchange.response.status == 0 && exchange.response.request_sent;
    attempt.error = exchange.response.transport_error;
    if (!IsRetryable(exchange.outcome) || exchange.attempts >= options_.max_attempts) return exchange;
    double delay = DelayAfter(exchange.attempts, exchange.response);
    attempt.waited_s = delay;
    LogDebug("POST {}: {} on attempt {} of {}; retrying in {:.2f} s", request.url, ToString(exchange.outcome),
             exchange.attempts, options_.max_attempts, delay);
    if (activity_) activity_->RetryWait(delay, exchange.outcome);
    if (delay >= 1) {
      LogInfo("  the model's server answered {} (attempt {} of {}); retrying in {:.0f} s{}", ToString(exchange.outcome),
              exchange.attempts, options_.max_attempts, delay, RetryAfterSeconds(exchange.response) ? " as its Retry-After asks" : "");
    }
    sleeper_->Sleep(delay);
  }
}

}  // namespace kforge
