// How far a bench run has got: tasks done of the total, the one in progress, the latest verdicts
// and an estimate of the time left. Kept in the run folder (progress.json, replaced atomically
// after every step) so that `kforge serve` can follow a bench another process runs, and said on
// the console as one progress line. Several tasks may be in progress at once (bench --gpus).
// Thread-compatible (one writer).
#pragma once

#include <deque>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/status.h"

namespace kforge {

struct BenchProgress {
  std::string state = "running";  // running, finished
  int total = 0;
  int done = 0;      // tasks with a verdict (an error included), reused ones too
  int reused = 0;    // done earlier: a stored report answered
  int accepted = 0;
  std::string current;  // the tasks being optimized now, in the order they started, ", "-separated
  std::string started_at, updated_at;
  double elapsed_s = 0;
  std::optional<double> eta_s;  // from the tasks run (not reused) so far
  struct Latest {
    std::string task, verdict;
    std::optional<double> speedup_vs_eager;
  };
  std::deque<Latest> latest;  // newest first, at most kLatest

  static constexpr size_t kLatest = 8;

  Json ToJson() const;
  static BenchProgress FromJson(const Json& json);
  // "[12/60] 1 reused, 10 accepted; now level1/19_ReLU; about 4 min left".
  std::string Line() const;
};

// Follows a bench run and writes its progress to `path` (empty: nowhere) after every step.
class BenchProgressWriter {
 public:
  BenchProgressWriter(std::filesystem::path path, int total, const Clock& clock = RealClock());

  // Tasks run `workers` at a time: the estimate of the time left divides by it.
  void SetWorkers(int workers);
  void Started(const std::string& task);
  // A task got its verdict; `reused` when a stored report answered without running it.
  void Finished(const std::string& task, const std::string& verdict, std::optional<double> speedup_vs_eager, bool reused);
  void AllDone();
  const BenchProgress& progress() const { return progress_; }

 private:
  void Write();
  void UpdateCurrent();

  std::filesystem::path path_;
  const Clock& clock_;
  double start_s_ = 0;
  double run_s_ = 0;  // seconds spent on tasks that ran
  int run_ = 0;       // tasks that ran
  int workers_ = 1;
  std::vector<std::pair<std::string, double>> in_progress_;  // task, start time; oldest first
  BenchProgress progress_;
};

// The progress file of bench folder `folder`; NotFound when there is none.
Result<BenchProgress> ReadBenchProgress(const std::filesystem::path& folder);

// "4 min", "35 s", "1 h 5 min".
std::string FormatDuration(double seconds);

}  // namespace kforge
