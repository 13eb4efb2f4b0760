// N kernel writers in parallel threads on one task, with diverse settings (temperatures spread
// over a range, a different approach hint each), sharing one provider, one judge and one budget.
// Returns the fastest accepted candidate of all, or none with what every attempt did. No
// exception leaves a writer's thread. Run() is called once; Stop() may be called from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agents/attempt.h"
#include "agents/candidate_judge.h"
#include "agents/kernel_writer.h"
#include "agents/prompt_library.h"
#include "agents/search_board.h"
#include "agents/writer_budget.h"
#include "agents/writer_prompts.h"
#include "core/clock.h"
#include "llm/provider.h"

namespace kforge {

struct PoolOptions {
  int writers = 4;
  int max_rounds = 4;
  std::string scope = "whole";  // which pool this is ("whole", or a fusion group's name), for call tags
  double min_temperature = 0.2;
  double max_temperature = 1.0;
  std::string model;           // "" = the provider's default
  int max_tokens = 0;          // 0: the provider's limit for the model
  double call_timeout_s = 300;
  int speedup_patience = 2;
  double min_gain = 0.02;
  Strategy strategy = Strategy::kGreedy;
  int beam_width = 2;          // beam: how many of the fastest accepted candidates the writers continue from;
                               // evolve: how many each island keeps
  BudgetLimits budget;
  WriterBudget* within = nullptr;  // the stage's budget, charged too (shared by pools that run at once); may be null
};

// The run so far, as a progress callback sees it after each attempt.
struct PoolProgress {
  int attempts = 0;
  int accepted = 0;
  std::optional<double> best_speedup;  // the best meaningful speedup of an accepted candidate
  int64_t tokens = 0;
  double cost_usd = 0;
};

// Called after every attempt of every writer; calls never overlap (the pool serializes them).
using ProgressCallback = std::function<void(const AttemptRecord& attempt, const PoolProgress& progress)>;

struct PoolResult {
  std::optional<AcceptedCandidate> best;
  std::vector<AttemptRecord> attempts;  // in the order they finished
  std::vector<std::string> writer_stops;  // why each writer stopped, by writer
  Status status;                          // the first writer's error that was not the model's
  std::string stop_reason;                // why the pool stopped early ("" when the writers ran out of rounds)
  std::string fatal_call;                 // the first call failure that ends the stage (IsFatal), in words; "" when none
  PoolProgress totals;
  Json search;                            // the strategy and what its board kept (SearchBoard::ToJson)
  std::vector<AcceptedCandidate> kept;    // what the board kept, fastest first (beam, evolve); empty under greedy
  double seconds = 0;

  // "7 attempts by 4 writers: 1 accepted, 2 compile_error, 1 no_code_block, ...; best 1.84x (writer 2, round 3)"
  std::string Summary() const;
  Json ToJson() const;
};

// Writer `index` (1-based) of `options.writers`: its temperature (spread evenly over the range)
// and prompt variant.
WriterSettings WriterSettingsFor(const PoolOptions& options, int index);

class WriterPool {
 public:
  // Everything passed by reference must outlive Run(); `clock` is read from every writer's thread.
  // Rounds write their files into `run_dir` by writer and round number; a run_dir left by an
  // interrupted run with the same options resumes it (recorded replies are reused, not paid again).
  WriterPool(PoolOptions options, const WriterBrief& brief, const PromptLibrary& prompts, Provider& provider,
             CandidateJudge& judge, std::filesystem::path run_dir, ProgressCallback on_progress = {},
             const Clock& clock = RealClock());

  // Runs the writers to the end and writes <run>/summary.json.
  PoolResult Run();
  // Every writer stops before its next round.
  void Stop(const std::string& reason) { budget_.Stop(reason); }

 private:
  WriterResult RunWriter(int index);
  void OnAttempt(const AttemptRecord& attempt);

  const PoolOptions options_;
  const WriterBrief& brief_;
  const PromptLibrary& prompts_;
  Provider& provider_;
  CandidateJudge& judge_;
  const std::filesystem::path run_dir_;
  const ProgressCallback on_progress_;
  const Clock& clock_;
  WriterBudget budget_;
  SearchBoard board_;
  std::mutex mutex_;
  std::vector<AttemptRecord> attempts_;  // guarded by mutex_
  PoolProgress progress_;                // guarded by mutex_
};

}  // namespace kforge
