#include "agents/writer_budget.h"

#include <fmt/format.h>

namespace kforge {

WriterBudget::WriterBudget(BudgetLimits limits, const Clock& clock, WriterBudget* outer)
    : limits_(limits), clock_(clock), outer_(outer), started_(clock.NowSeconds()) {}

std::string WriterBudget::LimitReachedLocked() const {
  double elapsed = clock_.NowSeconds() - started_;
  if (limits_.max_seconds > 0 && elapsed >= limits_.max_seconds) {
    return fmt::format("the time budget of {:g} s is spent", limits_.max_seconds);
  }
  if (limits_.max_usd > 0 && spent_usd_ >= limits_.max_usd) {
    return fmt::format("the budget of ${:.2f} is spent (${:.4f})", limits_.max_usd, spent_usd_);
  }
  if (limits_.max_tokens > 0 && tokens_ >= limits_.max_tokens) {
    return fmt::format("the budget of {} tokens is spent ({} tokens)", limits_.max_tokens, tokens_);
  }
  if (limits_.max_eval_seconds > 0 && eval_seconds_ >= limits_.max_eval_seconds) {
    return fmt::format("the device-time budget of {:g} s of evaluations is spent ({:.0f} s)", limits_.max_eval_seconds,
                       eval_seconds_);
  }
  if (limits_.max_attempts > 0 && attempts_ >= limits_.max_attempts) {
    return fmt::format("the limit of {} attempts is reached", limits_.max_attempts);
  }
  return "";
}

bool WriterBudget::TryStartAttempt() {
  if (outer_ != nullptr && outer_->Spent()) {
    Stop(outer_->stop_reason());
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) return false;
    std::string reason = LimitReachedLocked();
    if (!reason.empty()) {
      StopLocked(reason);
      return false;
    }
    ++attempts_;
  }
  if (outer_ != nullptr && !outer_->TryStartAttempt()) {
    Stop(outer_->stop_reason());
    return false;
  }
  return true;
}

bool WriterBudget::Spent() {
  if (outer_ != nullptr && outer_->Spent()) Stop(outer_->stop_reason());
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopped_) return true;
  std::string reason = LimitReachedLocked();
  if (!reason.empty()) StopLocked(reason);
  return stopped_;
}

void WriterBudget::Charge(double cost_usd, int64_t tokens) {
  if (outer_ != nullptr) outer_->Charge(cost_usd, tokens);
  std::lock_guard<std::mutex> lock(mutex_);
  spent_usd_ += cost_usd;
  tokens_ += tokens;
}

void WriterBudget::ChargeEvaluation(double seconds) {
  if (outer_ != nullptr) outer_->ChargeEvaluation(seconds);
  std::lock_guard<std::mutex> lock(mutex_);
  eval_seconds_ += seconds;
}

void WriterBudget::Stop(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  StopLocked(reason);
}

void WriterBudget::StopLocked(const std::string& reason) {
  if (stopped_) return;
  stopped_ = true;
  stop_reason_ = reason;
}

bool WriterBudget::stopped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stopped_;
}

std::string WriterBudget::stop_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stop_reason_;
}

double WriterBudget::spent_usd() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return spent_usd_;
}

int64_t WriterBudget::tokens() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tokens_;
}

int WriterBudget::attempts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return attempts_;
}

double WriterBudget::eval_seconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return eval_seconds_;
}

double WriterBudget::elapsed_seconds() const { return clock_.NowSeconds() - started_; }

}  // namespace kforge
