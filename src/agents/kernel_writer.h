// One kernel writer: up to `max_rounds` rounds of prompt -> model -> program -> evaluation. It
// writes a first candidate, repairs it with the evaluator's feedback until one is accepted, then
// asks for faster ones, keeping the fastest accepted candidate; it stops once `speedup_patience`
// speedup rounds in a row (failed ones included) brought no gain, or at once when timings mean
// nothing (the CPU). A reply without a program, an empty or cut-off reply is a failed attempt
// whose reason the next prompt carries; a transport failure (rate limit, timeout) leaves the
// next prompt as it was; a call that cannot succeed (bad key, bad request) stops every writer.
// Each round leaves its files in <run>/writer<i>/round<r>/: prompt.md, reply.md, completion.json
// (the model's answer, kept whenever it answered), candidate.py, verdict.json, feedback.md (what
// the next round is told). A round whose folder already holds completion.json (a resumed run)
// reuses that reply instead of calling the model again, and judges it afresh. Run() is called once, on one thread;
// the provider, judge and budget it shares are thread-safe.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agents/attempt.h"
#include "agents/candidate_judge.h"
#include "agents/prompt_library.h"
#include "agents/search_board.h"
#include "agents/writer_budget.h"
#include "agents/writer_prompts.h"
#include "core/clock.h"
#include "llm/provider.h"

namespace kforge {

struct WriterSettings {
  int index = 1;                // 1-based; names the writer's folder
  std::string scope = "whole";  // the pool it writes in, as its calls are tagged
  int max_rounds = 4;
  double temperature = 0.7;
  int variant = 0;              // picks the approach hint of the prompts
  std::string model;            // "" = the provider's default
  int max_tokens = 0;           // 0: the provider's limit for the model
  double call_timeout_s = 300;
  int speedup_patience = 2;     // speedup rounds in a row without gain before the writer stops
  double min_gain = 0.02;       // a faster candidate must beat the best by this fraction
  SearchBoard* board = nullptr; // shared with the pool's other writers (search_board.h); null: greedy
};

struct WriterResult {
  std::vector<AttemptRecord> attempts;
  std::optional<AcceptedCandidate> best;
  std::string stop_reason;  // why the writer stopped before its last round ("" when it used them all)
  Status status;            // non-OK only for failures that are not the model's: a broken task or template,
                            // a run folder that cannot be written
};

// Called after every attempt, on the writer's thread.
using AttemptObserver = std::function<void(const AttemptRecord&)>;

class KernelWriter {
 public:
  // Everything passed by reference must outlive Run().
  KernelWriter(WriterSettings settings, const WriterBrief& brief, const PromptLibrary& prompts, Provider& provider,
               CandidateJudge& judge, WriterBudget& budget, std::filesystem::path run_dir,
               AttemptObserver on_attempt = {}, const Clock& clock = RealClock());

  WriterResult Run();

 private:
  struct Memory {
    std::optional<AcceptedCandidate> best;
    std::optional<AcceptedCandidate> parent;  // evolve: this round mutates another than `best` (its island's runner-up)
    std::optional<AcceptedCandidate> mate;    // evolve: this round recombines the parent with it
    std::string previous_candidate;
    std::string previous_feedback;
    std::string reply_problem;
    int rounds_without_gain = 0;
  };

  Result<AttemptRecord> RunRound(int round);
  // Under beam and evolve: continue from the board's candidate for this writer when it beats its
  // own best; under evolve also explore from a runner-up or recombine with another island's best.
  void ContinueFromBoard(int round);
  RoundContext ContextFor(int round) const;
  // Sends the round's prompt and records what the call cost. Errors: a template, the run folder.
  Result<Completion> AskModel(const RoundContext& context, AttemptRecord& record);
  // feedback.md (what the next round is told) and verdict.json.
  Status SaveOutcome(const AttemptRecord& record) const;
  CompletionRequest Request(std::vector<Message> messages, const AttemptRecord& record) const;
  // The program in a reply, or nullopt with the reason recorded (and remembered for the next
  // prompt when the model can do something about it).
  std::optional<std::string> ProgramFrom(const Completion& completion, AttemptRecord& record);
  // Saves and judges the program; a judge failure sets fatal_. Errors: the run folder.
  Status JudgeProgram(const std::string& program, AttemptRecord& record);
  void Remember(const std::string& program, const Evaluation& evaluation, AttemptRecord& record);
  // Why the writer stops after `record`, if it does; reasons that concern every writer (an
  // untimed acceptance, a call that cannot succeed) stop the shared budget too.
  std::optional<std::string> StopAfter(const AttemptRecord& record);
  Status Save(const AttemptRecord& record, const std::string& name, const std::string& contents) const;

  const WriterSettings settings_;
  const WriterBrief& brief_;
  const PromptLibrary& prompts_;
  Provider& provider_;
  CandidateJudge& judge_;
  WriterBudget& budget_;
  const std::filesystem::path run_dir_;
  const AttemptObserver on_attempt_;
  const Clock& clock_;
  Memory memory_;
  std::optional<Evaluation> last_evaluation_;  // of the round in progress
  Status fatal_;                               // set when the writer cannot go on
};

}  // namespace kforge
