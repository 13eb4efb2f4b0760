#include "agents/live_status.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/log.h"

namespace kforge {
namespace {

std::string Duration(double seconds) {
  if (seconds < 90) return fmt::format("{:.0f} s", seconds);
  if (seconds < 5400) return fmt::format("{:.0f} min", seconds / 60);
  return fmt::format("{:.1f} h", seconds / 3600);
}

}  // namespace

LiveStatus::LiveStatus(Store* store, std::string run_id, std::shared_ptr<CallActivity> activity, double budget_s,
                       const Clock& clock)
    : store_(store), run_id_(std::move(run_id)), activity_(std::move(activity)), budget_s_(budget_s), clock_(clock),
      started_s_(clock.NowSeconds()), pool_started_s_(started_s_) {}

LiveStatus::~LiveStatus() {
  bool unfinished = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    unfinished = state_ == "running";
    if (unfinished) state_ = "stopped";  // left by an error: no reader should wait for it
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  if (unfinished) Write();
}

void LiveStatus::StartTicking(double period_s) {
  if (ticker_.joinable() || period_s <= 0) return;
  ticker_ = std::thread([this, period_s] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::duration<double>(period_s), [this] { return stop_; });
      if (stop_) break;
      lock.unlock();
      Write();
      lock.lock();
    }
  });
}

void LiveStatus::PoolStarted(const std::string& scope, int planned) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    earlier_.attempts += pool_.attempts;
    earlier_.accepted += pool_.accepted;
    earlier_.tokens += pool_.tokens;
    earlier_.cost_usd += pool_.cost_usd;
    if (pool_.best_speedup && (!earlier_.best_speedup || *pool_.best_speedup > *earlier_.best_speedup)) {
      earlier_.best_speedup = pool_.best_speedup;
    }
    pool_ = PoolProgress{};
    scope_ = scope;
    planned_ = planned;
    pool_started_s_ = clock_.NowSeconds();
  }
  Write();
}

void LiveStatus::Attempted(const PoolProgress& progress) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pool_ = progress;
  }
  Write();
}

void LiveStatus::Finish(const std::string& state) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = state;
    stop_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  Write();
}

Json LiveStatus::Current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return CurrentLocked();
}

Json LiveStatus::CurrentLocked() const {
  double now = clock_.NowSeconds();
  std::optional<double> best = earlier_.best_speedup;
  if (pool_.best_speedup && (!best || *pool_.best_speedup > *best)) best = pool_.best_speedup;
  // Time left: the current pool's remaining attempts at the pace of its finished ones, capped by
  // the time budget; unknown until an attempt finished.
  Json eta;
  if (state_ == "running" && pool_.attempts > 0 && planned_ > 0) {
    double per_attempt = (now - pool_started_s_) / pool_.attempts;
    double left = std::max(0, planned_ - pool_.attempts) * per_attempt;
    if (budget_s_ > 0) left = std::min(left, std::max(0.0, budget_s_ - (now - started_s_)));
    eta = left;
  }
  Json calls;
  if (activity_) {
    ActivitySnapshot snapshot = activity_->Snapshot();
    calls = {{"queued", snapshot.queued},           {"in_flight", snapshot.in_flight},
             {"retry_waits", snapshot.retry_waits}, {"wait_left_s", snapshot.wait_left_s},
             {"wait_reason", snapshot.wait_reason}, {"waits_so_far", snapshot.waits_so_far},
             {"waited_s", snapshot.waited_s}};
  }
  return {{"state", state_},
          {"scope", scope_},
          {"planned_attempts", planned_},
          {"attempts", earlier_.attempts + pool_.attempts},
          {"accepted", earlier_.accepted + pool_.accepted},
          {"best_speedup", best ? Json(*best) : Json()},
          {"tokens", earlier_.tokens + pool_.tokens},
          {"cost_usd", earlier_.cost_usd + pool_.cost_usd},
          {"elapsed_s", now - started_s_},
          {"eta_s", eta},
          {"calls", calls}};
}

std::string LiveStatus::Words() const {
  Json status = Current();
  std::string out;
  const Json& calls = status["calls"];
  if (calls.is_object()) {
    out = fmt::format("{} call(s) in flight", calls["in_flight"].get<int>());
    if (calls["queued"].get<int>() > 0) out += fmt::format(", {} queued", calls["queued"].get<int>());
    if (calls["retry_waits"].get<int>() > 0) {
      out += fmt::format("; a retry waits {} ({})", Duration(calls["wait_left_s"].get<double>()),
                         calls["wait_reason"].get<std::string>());
    }
  }
  if (status["eta_s"].is_number()) out += fmt::format("{}about {} left", out.empty() ? "" : "; ", Duration(status["eta_s"].get<double>()));
  return out;
}

void LiveStatus::Write() const {
  if (store_ == nullptr) return;
  Status written = store_->RecordRunStatus(run_id_, Current());
  if (!written.ok()) LogDebug("the live status was not stored: {}", written.ToString());
}

}  // namespace kforge
