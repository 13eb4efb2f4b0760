// An LLM stage as its pages show it: every attempt (part, writer, round, prompt, verdict, speedup,
// tokens, cost, when it finished), the spend against the budget, the model calls over time and the
// live status while it runs. Read once from wherever the stage left it: a finished task's
// report.json, or, while it runs, the rounds' verdict.json files and the store.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "store/store.h"

namespace kforge {

struct LlmAttempt {
  std::string scope = "whole";  // the pool: the whole program or a decomposition part
  int writer = 0, round = 0;
  std::string prompt;   // write, repair, speedup, recombine
  std::string verdict;
  std::string message;
  std::optional<double> speedup;  // over eager, for a judged and timed candidate
  int64_t tokens = 0;
  double cost_usd = 0;
  double seconds = 0;
  std::optional<double> finished_s;  // since the stage's first attempt finished (folder scans only)

  static LlmAttempt FromJson(const Json& attempt, const std::string& scope);
};

struct LlmCallPoint {
  double at_s = 0;  // since the run's first call
  int64_t tokens = 0;
  double cost_usd = 0;
  std::string model, status;
  double latency_s = 0;
};

struct LlmRunView {
  std::string run_id;
  std::string state;  // running, finished, failed, stopped; "" when unknown
  std::string summary, stop_reason;
  std::vector<LlmAttempt> attempts;  // in the order they finished
  std::vector<LlmCallPoint> calls;   // oldest first; empty when the store was not read
  int64_t tokens = 0;
  double cost_usd = 0;
  int64_t budget_tokens = 0;
  double budget_usd = 0;
  Json status;  // the live status (run_status), when the store has one
};

// One round of an LLM stage as its folder holds it: <stage>/[<part>/]writer<i>/round<r>/, with
// prompt.md, reply.md, candidate.py, feedback.md and verdict.json.
struct RoundFolder {
  std::filesystem::path path;
  std::string scope;  // the pool: "whole", or the decomposition part the round belongs to
  std::filesystem::file_time_type finished;  // when its verdict.json was written
};
// Every finished round (one with a verdict.json) under `stage`, in path order.
std::vector<RoundFolder> RoundFoldersUnder(const std::filesystem::path& stage);

// From a task report's "llm" section.
LlmRunView LlmRunFromReport(const Json& llm);
// From the store's run `run_id` (its calls and live status) and the stage folder its config names
// (each round's verdict.json); the folder's stage report is used when the stage has finished.
Result<LlmRunView> LoadLlmRun(Store& store, const std::string& run_id);

// The stage's section of a page: headline, attempts and best-so-far chart, spend over time against
// the budget, each writer's path through its rounds, and every attempt.
std::string LlmRunBody(const LlmRunView& run);
std::string LlmRunReportHtml(const LlmRunView& run);

}  // namespace kforge
