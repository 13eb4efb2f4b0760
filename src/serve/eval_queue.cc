#include "serve/eval_queue.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

namespace kforge {

const char* ToString(EvalJobState state) {
  switch (state) {
    case EvalJobState::kQueued: return "queued";
    case EvalJobState::kRunning: return "running";
    case EvalJobState::kDone: return "done";
    case EvalJobState::kExpired: return "expired";
  }
  return "unknown";
}

namespace {

double Percentile(std::vector<double> values, double share) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t index = std::min(values.size() - 1, static_cast<size_t>(share * (values.size() - 1) + 0.5));
  return values[index];
}

}  // namespace

Json QueueStats::ToJson() const {
  Json per_client = Json::object();
  for (const auto& [name, client] : clients) {
    per_client[name] = {{"queued", client.queued}, {"running", client.running}, {"done", client.done}};
  }
  return {{"queued", queued},
          {"running", running},
          {"done", done},
          {"clients", per_client},
          {"since_s", since_s},
          {"evaluations_per_hour", since_s > 0 ? done * 3600.0 / since_s : 0.0},
          {"latency_s", {{"p50", Percentile(latencies_s, 0.5)}, {"p90", Percentile(latencies_s, 0.9)},
                         {"p99", Percentile(latencies_s, 0.99)}, {"count", latencies_s.size()}}}};
}

EvalQueue::EvalQueue(EvalQueueLimits limits, const Clock& clock)
    : limits_(limits), clock_(clock), opened_(clock.NowSeconds()) {}

Result<std::vector<int64_t>> EvalQueue::Submit(const std::string& client, std::vector<EvalJobSpec> specs) {
  std::vector<int64_t> ids;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return Status::Unavailable("the service is shutting down");
    const int64_t pending = pending_[client];
    if (pending + static_cast<int64_t>(specs.size()) > limits_.max_pending_per_client) {
      return Status::ResourceExhausted(fmt::format(
          "client '{}' has {} evaluation(s) waiting or running; {} more would pass its limit of {}", client, pending,
          specs.size(), limits_.max_pending_per_client));
    }
    const double now = clock_.NowSeconds();
    for (EvalJobSpec& spec : specs) {
      const int64_t id = next_id_++;
      Entry entry;
      entry.job = {id, client, std::move(spec)};
      entry.submitted = now;
      jobs_.emplace(id, std::move(entry));
      waiting_[client].push_back(id);
      ids.push_back(id);
    }
    pending_[client] += static_cast<int64_t>(ids.size());
  }
  work_.notify_all();
  return ids;
}

std::optional<EvalJob> EvalQueue::Next(std::optional<double> timeout_s) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto ready = [this] { return closed_ || !waiting_.empty(); };
  if (timeout_s) {
    work_.wait_for(lock, std::chrono::duration<double>(*timeout_s), ready);
  } else {
    work_.wait(lock, ready);
  }
  if (closed_ || waiting_.empty()) return std::nullopt;
  // Round robin: the first client after the one served last, wrapping around.
  auto it = waiting_.upper_bound(last_served_);
  if (it == waiting_.end()) it = waiting_.begin();
  const int64_t id = it->second.front();
  it->second.pop_front();
  last_served_ = it->first;
  if (it->second.empty()) waiting_.erase(it);
  Entry& entry = jobs_.at(id);
  entry.state = EvalJobState::kRunning;
  entry.started = clock_.NowSeconds();
  return entry.job;
}

void EvalQueue::Finish(int64_t id, Json result) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = jobs_.find(id);
    if (it == jobs_.end() || it->second.state != EvalJobState::kRunning) return;
    Entry& entry = it->second;
    entry.state = EvalJobState::kDone;
    entry.finished = clock_.NowSeconds();
    entry.result = std::move(result);
    std::string().swap(entry.job.spec.candidate);  // judged and stored: its memory goes back
    --pending_[entry.job.client];
    ++done_count_[entry.job.client];
    finished_order_.push_back(id);
    Forget();
  }
  done_.notify_all();
}

// Past the limit, the oldest finished results shrink to the stored evaluation's id.
void EvalQueue::Forget() {
  while (finished_order_.size() > limits_.max_kept_results) {
    Entry& old = jobs_.at(finished_order_.front());
    finished_order_.pop_front();
    old.state = EvalJobState::kExpired;
    old.result = {{"evaluation_id", JsonField(old.result, "evaluation_id")}};
  }
}

EvalJobView EvalQueue::ViewOf(const Entry& entry) const {
  EvalJobView view;
  view.id = entry.job.id;
  view.client = entry.job.client;
  view.state = entry.state;
  view.task_hash = entry.job.spec.task_hash;
  const double now = clock_.NowSeconds();
  view.queued_s = (entry.state == EvalJobState::kQueued ? now : entry.started) - entry.submitted;
  if (entry.state != EvalJobState::kQueued) {
    view.run_s = (entry.state == EvalJobState::kRunning ? now : entry.finished) - entry.started;
  }
  view.result = entry.result;
  return view;
}

std::optional<EvalJobView> EvalQueue::Get(int64_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return ViewOf(it->second);
}

bool EvalQueue::AllDone(const std::vector<int64_t>& ids) const {
  for (int64_t id : ids) {
    auto it = jobs_.find(id);
    if (it != jobs_.end() && (it->second.state == EvalJobState::kQueued || it->second.state == EvalJobState::kRunning)) {
      return false;
    }
  }
  return true;
}

std::vector<EvalJobView> EvalQueue::WaitDone(const std::vector<int64_t>& ids, double timeout_s) const {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout_s > 0) {
    done_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return closed_ || AllDone(ids); });
  }
  std::vector<EvalJobView> views;
  for (int64_t id : ids) {
    if (auto it = jobs_.find(id); it != jobs_.end()) views.push_back(ViewOf(it->second));
  }
  return views;
}

QueueStats EvalQueue::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  QueueStats stats;
  for (const auto& [id, entry] : jobs_) {
    QueueStats::Client& client = stats.clients[entry.job.client];
    switch (entry.state) {
      case EvalJobState::kQueued: ++stats.queued, ++client.queued; break;
      case EvalJobState::kRunning: ++stats.running, ++client.running; break;
      case EvalJobState::kDone: stats.latencies_s.push_back(entry.finished - entry.submitted); [[fallthrough]];
      case EvalJobState::kExpired: ++stats.done, ++client.done; break;
    }
  }
  stats.since_s = clock_.NowSeconds() - opened_;
  return stats;
}

size_t EvalQueue::Close() {
  size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    for (auto& [client, ids] : waiting_) {
      for (int64_t id : ids) {
        Entry& entry = jobs_.at(id);
        entry.state = EvalJobState::kDone;
        entry.result = {{"status", "error"}, {"error", "the service shut down before this evaluation started"}};
        ++dropped;
      }
      pending_[client] -= static_cast<int64_t>(ids.size());
    }
    waiting_.clear();
  }
  work_.notify_all();
  done_.notify_all();
  return dropped;
}

}  // namespace kforge
