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

Json RunStatus::ToJson() const {
  Json out = {{"state", state},
              {"scopes", scopes},
              {"planned_attempts", planned_attempts},
              {"attempts", attempts},
              {"accepted", accepted},
              {"best_speedup", JsonOrNull(best_speedup)},
              {"tokens", tokens},
              {"cost_usd", cost_usd},
              {"elapsed_s", elapsed_s},
              {"eta_s", JsonOrNull(eta_s)},
              {"calls", Json()}};
  if (!updated_at.empty()) out["updated_at"] = updated_at;
  if (calls) {
    out["calls"] = {{"queued", calls->queued},           {"in_flight", calls->in_flight},
                    {"retry_waits", calls->retry_waits}, {"wait_left_s", calls->wait_left_s},
                    {"wait_reason", calls->wait_reason}, {"waits_so_far", calls->waits_so_far},
                    {"waited_s", calls->waited_s}};
  }
  return out;
}

RunStatus RunStatus::FromJson(const Json& json) {
  RunStatus status;
  status.state = JsonGet<std::string>(json, "state", "?");
  status.updated_at = JsonGet<std::string>(json, "updated_at", "");
  const Json& scopes = JsonField(json, "scopes");
  if (scopes.is_array()) {
    for (const Json& scope : scopes) {
      if (scope.is_string()) status.scopes.push_back(scope.get<std::string>());
    }
  }
  status.planned_attempts = JsonGet<int>(json, "planned_attempts", 0);
  status.attempts = JsonGet<int>(json, "attempts", 0);
  status.accepted = JsonGet<int>(json, "accepted", 0);
  status.best_speedup = JsonNumber(json, "best_speedup");
  status.tokens = JsonGet<int64_t>(json, "tokens", 0);
  status.cost_usd = JsonGet<double>(json, "cost_usd", 0);
  status.elapsed_s = JsonGet<double>(json, "elapsed_s", 0);
  status.eta_s = JsonNumber(json, "eta_s");
  const Json& calls = JsonField(json, "calls");
  if (calls.is_object()) {
    ActivitySnapshot read;
    read.queued = JsonGet<int>(calls, "queued", 0);
    read.in_flight = JsonGet<int>(calls, "in_flight", 0);
    read.retry_waits = JsonGet<int>(calls, "retry_waits", 0);
    read.wait_left_s = JsonGet<double>(calls, "wait_left_s", 0);
    read.wait_reason = JsonGet<std::string>(calls, "wait_reason", "");
    read.waits_so_far = JsonGet<int64_t>(calls, "waits_so_far", 0);
    read.waited_s = JsonGet<double>(calls, "waited_s", 0);
    status.calls = read;
  }
  return status;
}

std::string RunStatus::Brief() const {
  std::string out;
  if (calls) {
    out = fmt::format("{} call(s) in flight", calls->in_flight);
    if (calls->queued > 0) out += fmt::format(", {} queued", calls->queued);
    if (calls->retry_waits > 0) {
      out += fmt::format("; a retry waits {} ({})", Duration(calls->wait_left_s), calls->wait_reason);
    }
  }
  if (eta_s) out += fmt::format("{}about {} left", out.empty() ? "" : "; ", Duration(*eta_s));
  return out;
}

std::string RunStatus::Words() const {
  std::string best = best_speedup ? fmt::format("{:.2f}x", *best_speedup) : "-";
  std::string in = scopes.empty() ? "-" : fmt::format("{}", fmt::join(scopes, ", "));
  std::string out = fmt::format("status ({}, {}): {} of {} attempt(s) in {}, {} accepted, best {}, {} tokens, ${:.4f}, {:.0f} s",
                                state, updated_at.empty() ? "?" : updated_at, attempts, planned_attempts, in, accepted,
                                best, tokens, cost_usd, elapsed_s);
  if (calls) {
    out += fmt::format("; calls: {} in flight, {} queued, {} waiting to retry; {} retry wait(s) so far ({:.0f} s)",
                       calls->in_flight, calls->queued, calls->retry_waits, calls->waits_so_far, calls->waited_s);
  }
  if (eta_s) out += fmt::format("; about {:.0f} s left", *eta_s);
  return out;
}

LiveStatus::LiveStatus(Store* store, std::string run_id, std::shared_ptr<CallActivity> activity, double budget_s,
                       const Clock& clock)
    : store_(store), run_id_(std::move(run_id)), activity_(std::move(activity)), budget_s_(budget_s), clock_(clock),
      started_s_(clock.NowSeconds()) {}

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
    Pool& pool = pools_[scope];
    pool.planned = planned;
    pool.running = true;
  }
  Write();
}

void LiveStatus::Attempted(const std::string& scope, const PoolProgress& progress) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pools_[scope].progress = progress;
  }
  Write();
}

void LiveStatus::PoolEnded(const std::string& scope) {
  std::lock_guard<std::mutex> lock(mutex_);
  pools_[scope].running = false;
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

RunStatus LiveStatus::Current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  double now = clock_.NowSeconds();
  RunStatus status;
  status.state = state_;
  status.elapsed_s = now - started_s_;
  int left_to_try = 0;
  for (const auto& [scope, pool] : pools_) {
    status.attempts += pool.progress.attempts;
    status.accepted += pool.progress.accepted;
    status.tokens += pool.progress.tokens;
    status.cost_usd += pool.progress.cost_usd;
    const std::optional<double>& best = pool.progress.best_speedup;
    if (best && (!status.best_speedup || *best > *status.best_speedup)) status.best_speedup = best;
    if (!pool.running) continue;
    status.scopes.push_back(scope);
    status.planned_attempts += pool.planned;
    left_to_try += std::max(0, pool.planned - pool.progress.attempts);
  }
  // Time left: the running pools' remaining attempts at the stage's pace so far (attempts per
  // second, pools at once included), capped by the time budget; unknown until an attempt finished.
  if (state_ == "running" && status.attempts > 0 && !status.scopes.empty()) {
    double left = left_to_try * status.elapsed_s / status.attempts;
    if (budget_s_ > 0) left = std::min(left, std::max(0.0, budget_s_ - status.elapsed_s));
    status.eta_s = left;
  }
  if (activity_) status.calls = activity_->Snapshot();
  return status;
}

void LiveStatus::Write() const {
  const RunStatus status = Current();
  // On a terminal the stage keeps one progress line under its log; elsewhere the attempt lines say it.
  if (status.state == "running") {
    SetStatusLine(fmt::format("[{}/{} attempts, {} accepted, best {}] {}", status.attempts, status.planned_attempts,
                              status.accepted, status.best_speedup ? fmt::format("{:.2f}x", *status.best_speedup) : "-",
                              status.Brief()),
                  /*plain_elsewhere=*/false);
  } else {
    SetStatusLine("", false);
  }
  if (store_ == nullptr) return;
  Status written = store_->RecordRunStatus(run_id_, status.ToJson());
  if (!written.ok()) LogDebug("the live status was not stored: {}", written.ToString());
}

}  // namespace kforge
