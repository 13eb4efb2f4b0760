#include "report/bench_progress.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/files.h"

namespace kforge {

Json BenchProgress::ToJson() const {
  Json latest_json = Json::array();
  for (const Latest& entry : latest) {
    latest_json.push_back({{"task", entry.task},
                           {"verdict", entry.verdict},
                           {"speedup_vs_eager", JsonOrNull(entry.speedup_vs_eager)}});
  }
  return {{"state", state},     {"total", total},         {"done", done},
          {"reused", reused},   {"accepted", accepted},   {"current", current},
          {"started_at", started_at}, {"updated_at", updated_at}, {"elapsed_s", elapsed_s},
          {"eta_s", JsonOrNull(eta_s)}, {"latest", latest_json}};
}

BenchProgress BenchProgress::FromJson(const Json& json) {
  BenchProgress progress;
  progress.state = JsonGet<std::string>(json, "state", "running");
  progress.total = JsonGet<int>(json, "total", 0);
  progress.done = JsonGet<int>(json, "done", 0);
  progress.reused = JsonGet<int>(json, "reused", 0);
  progress.accepted = JsonGet<int>(json, "accepted", 0);
  progress.current = JsonGet<std::string>(json, "current", "");
  progress.started_at = JsonGet<std::string>(json, "started_at", "");
  progress.updated_at = JsonGet<std::string>(json, "updated_at", "");
  progress.elapsed_s = JsonGet<double>(json, "elapsed_s", 0);
  progress.eta_s = JsonNumber(json, "eta_s");
  for (const Json& entry : JsonField(json, "latest")) {
    progress.latest.push_back({JsonGet<std::string>(entry, "task", "?"), JsonGet<std::string>(entry, "verdict", "?"),
                               JsonNumber(entry, "speedup_vs_eager")});
  }
  return progress;
}

std::string BenchProgress::Line() const {
  std::string line = fmt::format("[{}/{}] {} accepted", done, total, accepted);
  if (reused > 0) line += fmt::format(", {} reused", reused);
  if (!current.empty()) line += "; now " + current;
  if (state == "finished") return line + fmt::format("; finished in {}", FormatDuration(elapsed_s));
  if (eta_s) line += fmt::format("; about {} left", FormatDuration(*eta_s));
  return line;
}

BenchProgressWriter::BenchProgressWriter(std::filesystem::path path, int total, const Clock& clock)
    : path_(std::move(path)), clock_(clock), start_s_(clock.NowSeconds()) {
  progress_.total = total;
  progress_.started_at = clock.NowIso8601();
  Write();
}

void BenchProgressWriter::SetWorkers(int workers) {
  workers_ = std::max(workers, 1);
  Write();
}

void BenchProgressWriter::Started(const std::string& task) {
  in_progress_.emplace_back(task, clock_.NowSeconds());
  UpdateCurrent();
  Write();
}

void BenchProgressWriter::Finished(const std::string& task, const std::string& verdict,
                                   std::optional<double> speedup_vs_eager, bool reused) {
  ++progress_.done;
  auto started = std::find_if(in_progress_.begin(), in_progress_.end(), [&](const auto& entry) { return entry.first == task; });
  if (reused) {
    ++progress_.reused;
  } else {
    ++run_;
    if (started != in_progress_.end()) run_s_ += clock_.NowSeconds() - started->second;
  }
  if (started != in_progress_.end()) in_progress_.erase(started);
  if (verdict == "accepted") ++progress_.accepted;
  UpdateCurrent();
  progress_.latest.push_front({task, verdict, speedup_vs_eager});
  if (progress_.latest.size() > BenchProgress::kLatest) progress_.latest.pop_back();
  Write();
}

void BenchProgressWriter::AllDone() {
  progress_.state = "finished";
  in_progress_.clear();
  UpdateCurrent();
  Write();
}

void BenchProgressWriter::UpdateCurrent() {
  progress_.current.clear();
  for (const auto& [task, start_s] : in_progress_) progress_.current += (progress_.current.empty() ? "" : ", ") + task;
}

void BenchProgressWriter::Write() {
  progress_.updated_at = clock_.NowIso8601();
  progress_.elapsed_s = clock_.NowSeconds() - start_s_;
  const int left = progress_.total - progress_.done;
  if (run_ > 0 && progress_.state == "running") {
    // Tasks in progress count as whole ones left: an estimate errs on the long side.
    progress_.eta_s = run_s_ / run_ * left / workers_;
  } else {
    progress_.eta_s.reset();
  }
  if (path_.empty()) return;
  (void)WriteFileAtomically(path_, progress_.ToJson().dump(1));  // progress is advisory: a full disk must not stop the bench
}

Result<BenchProgress> ReadBenchProgress(const std::filesystem::path& folder) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(folder / "progress.json"));
  ASSIGN_OR_RETURN(Json json, ParseJson(text, (folder / "progress.json").string()));
  return BenchProgress::FromJson(json);
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  if (seconds < 90) return fmt::format("{:.0f} s", seconds);
  const long minutes = std::lround(seconds / 60);
  if (minutes < 90) return fmt::format("{} min", minutes);
  return fmt::format("{} h {} min", minutes / 60, minutes % 60);
}

}  // namespace kforge
