#include "agents/writer_pool.h"

#include <fmt/format.h>

#include <exception>
#include <map>
#include <thread>

#include "core/files.h"
#include "core/log.h"

namespace kforge {
namespace {

// "accepted", "rejected_hack", "no_code_block", "rate_limited": how a summary counts attempts.
std::string SummaryKind(const AttemptRecord& attempt) {
  if (attempt.verdict_kind) return ToString(*attempt.verdict_kind);
  return attempt.verdict.empty() ? ToString(attempt.outcome) : attempt.verdict;
}

// Evolve's islands: one per approach hint the writers' prompts carry (writer i has hint i - 1,
// modulo their number), and no more than there are writers.
int IslandCount(const PoolOptions& options, const PromptLibrary& prompts) {
  int approaches = static_cast<int>(prompts.NamesUnder("approaches/").size());
  return std::max(1, std::min(options.writers, approaches));
}

WriterResult FailedWriter(int index, const std::string& what) {
  WriterResult result;
  result.status = Status::Internal(fmt::format("writer {} failed: {}", index, what));
  result.stop_reason = result.status.ToString();
  return result;
}

}  // namespace

std::string PoolResult::Summary() const {
  std::map<std::string, int> counts;
  for (const AttemptRecord& attempt : attempts) ++counts[SummaryKind(attempt)];
  std::string out = fmt::format("{} attempt{} by {} writer{}", attempts.size(), attempts.size() == 1 ? "" : "s",
                                writer_stops.size(), writer_stops.size() == 1 ? "" : "s");
  std::string kinds;
  for (const auto& [kind, count] : counts) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", count, kind);
  if (!kinds.empty()) out += ": " + kinds;
  if (!best) return out + "; no accepted candidate";
  if (best->evaluation.timings_meaningful && best->evaluation.speedup) {
    return out + fmt::format("; best {:.2f}x (writer {}, round {})", best->speedup(), best->writer, best->round);
  }
  return out + fmt::format("; best: writer {}, round {} (not timed)", best->writer, best->round);
}

Json PoolResult::ToJson() const {
  Json attempt_list = Json::array();
  for (const AttemptRecord& attempt : attempts) attempt_list.push_back(attempt.ToJson());
  return {{"summary", Summary()},
          {"best", best ? best->ToJson() : Json()},
          {"status", status.ok() ? Json("ok") : Json(status.ToString())},
          {"stop_reason", stop_reason},
          {"fatal_call", fatal_call},
          {"search", search},
          {"writer_stops", writer_stops},
          {"attempts", attempt_list},
          {"tokens", totals.tokens},
          {"cost_usd", totals.cost_usd},
          {"seconds", seconds}};
}

WriterSettings WriterSettingsFor(const PoolOptions& options, int index) {
  WriterSettings settings;
  settings.index = index;
  settings.scope = options.scope;
  settings.max_rounds = options.max_rounds;
  settings.variant = index - 1;
  double span = options.max_temperature - options.min_temperature;
  settings.temperature = options.writers <= 1 ? options.min_temperature + span / 2
                                              : options.min_temperature + span * (index - 1) / (options.writers - 1);
  settings.model = options.model;
  settings.max_tokens = options.max_tokens;
  settings.call_timeout_s = options.call_timeout_s;
  settings.speedup_patience = options.speedup_patience;
  settings.min_gain = options.min_gain;
  return settings;
}

WriterPool::WriterPool(PoolOptions options, const WriterBrief& brief, const PromptLibrary& prompts, Provider& provider,
                       CandidateJudge& judge, std::filesystem::path run_dir, ProgressCallback on_progress,
                       const Clock& clock)
    : options_(std::move(options)), brief_(brief), prompts_(prompts), provider_(provider), judge_(judge),
      run_dir_(std::move(run_dir)), on_progress_(std::move(on_progress)), clock_(clock),
      budget_(options_.budget, clock, options_.within), board_(options_.strategy, options_.beam_width, IslandCount(options_, prompts)) {}

PoolResult WriterPool::Run() {
  double started = clock_.NowSeconds();
  int count = std::max(1, options_.writers);
  std::vector<WriterResult> results(count);
  std::vector<std::thread> threads;
  for (int i = 0; i < count; ++i) {
    try {
      threads.emplace_back([this, &results, i] { results[i] = RunWriter(i + 1); });
    } catch (const std::exception& error) {
      results[i] = FailedWriter(i + 1, std::string("cannot start its thread: ") + error.what());
    }
  }
  for (std::thread& thread : threads) thread.join();

  PoolResult pool;
  for (const WriterResult& result : results) {
    // Ties go to the lower writer index, so the choice does not depend on thread timing.
    if (result.best && IsBetter(*result.best, pool.best, 0)) pool.best = result.best;
    if (pool.status.ok() && !result.status.ok()) pool.status = result.status;
    pool.writer_stops.push_back(result.stop_reason);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pool.attempts = attempts_;
    pool.totals = progress_;
  }
  for (const AttemptRecord& attempt : pool.attempts) {
    if (attempt.outcome != AttemptOutcome::kCallFailed || !IsFatal(attempt.call_outcome)) continue;
    pool.fatal_call = fmt::format("{}: {}", attempt.verdict, attempt.message);
    break;
  }
  pool.stop_reason = budget_.stop_reason();
  pool.search = board_.ToJson();
  pool.kept = board_.Kept();
  pool.seconds = clock_.NowSeconds() - started;
  Status saved = WriteFile(run_dir_ / "summary.json", pool.ToJson().dump(2) + "\n");
  if (!saved.ok()) LogInfo("warning: the writers' summary was not saved: {}", saved.ToString());
  return pool;
}

WriterResult WriterPool::RunWriter(int index) {
  try {
    WriterSettings settings = WriterSettingsFor(options_, index);
    settings.board = &board_;
    KernelWriter writer(settings, brief_, prompts_, provider_, judge_, budget_, run_dir_,
                        [this](const AttemptRecord& attempt) { OnAttempt(attempt); }, clock_);
    return writer.Run();
  } catch (const std::exception& error) {
    budget_.Stop(fmt::format("writer {} failed: {}", index, error.what()));
    return FailedWriter(index, error.what());
  } catch (...) {
    budget_.Stop(fmt::format("writer {} failed", index));
    return FailedWriter(index, "unknown exception");
  }
}

void WriterPool::OnAttempt(const AttemptRecord& attempt) {
  std::lock_guard<std::mutex> lock(mutex_);
  attempts_.push_back(attempt);
  ++progress_.attempts;
  progress_.tokens += attempt.prompt_tokens + attempt.completion_tokens;
  progress_.cost_usd += attempt.cost_usd;
  if (attempt.accepted()) {
    ++progress_.accepted;
    if (attempt.speedup && (!progress_.best_speedup || *attempt.speedup > *progress_.best_speedup)) {
      progress_.best_speedup = attempt.speedup;
    }
  }
  if (!on_progress_) return;
  try {
    on_progress_(attempt, progress_);
  } catch (const std::exception& error) {
    LogInfo("warning: a progress callback failed: {}", error.what());
  }
}

}  // namespace kforge
