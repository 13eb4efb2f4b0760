// The LLM stage's search policy: which route first (the whole program, or each fusion group as a
// task of its own), pools of kernel writers under a strategy (greedy, beam, evolve), the parts of
// a decomposition searched at once, their verified programs composed into one ModelNew and judged
// end to end (under evolve several compositions of the parts' candidates, the fastest kept), and
// budgets (wall time, dollars, tokens, device time) held over every pool. It is handed its
// services (prompts, the routed provider, the judge, the trusted worker's renamer, the live
// status); the CLI wires them (cli/agent_stage.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agents/candidate_judge.h"
#include "agents/decomposition.h"
#include "agents/live_status.h"
#include "agents/prompt_library.h"
#include "agents/writer_prompts.h"
#include "compiler/codegen/model_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"
#include "core/json.h"
#include "eval/evaluation.h"
#include "llm/llm_config.h"
#include "llm/provider_factory.h"
#include "llm/routed_provider.h"

namespace kforge {

// The most evaluations at once: one per GPU of the largest hosts.
constexpr int kMaxEvaluators = 16;

// The roles a model can be given (--llm-for ROLE=SPEC), with the call tag kinds each answers:
// write (the first program and its repairs), optimize (speed-ups and recombinations), describe
// (a task from a description). A role without a model of its own uses --llm's.
const std::map<std::string, std::vector<std::string>>& LlmRoles();

struct AgentSettings {
  std::string llm;          // provider spec ("openai:gpt-4o", "replay:FILE", ...); empty: no LLM stage
  std::map<std::string, std::string> role_llms;  // role -> spec, for the roles with a model of their own
  std::string llm_config;   // JSON config file (keys, base URLs, prices, concurrency); optional
  int workers = 4;
  int rounds = 4;
  double budget_usd = 0;    // 0: no limit
  int64_t budget_tokens = 0;  // prompt and completion tokens of every call; 0: no limit
  double budget_s = 0;      // wall seconds for the whole stage; 0: no limit
  double budget_gpu_s = 0;  // device seconds the stage's evaluations may take, over every evaluator; 0: no limit
  int evaluators = 1;       // evaluations at once: one per GPU (one on the CPU unless asked)
  std::string record;       // also write every call to this cassette (replayable with replay:FILE)
  std::string route = "auto";  // auto (the router decides), whole (program) or decompose (per fusion group)
  std::string strategy = "greedy";  // greedy, beam or evolve (search_board.h)
  int beam_width = 2;       // beam: candidates kept; evolve: candidates kept per island
  int patience = 2;         // speed-up rounds in a row without gain before a writer stops
  double min_gain = 0.02;   // a faster candidate must beat the best by this fraction
  bool kernel_counters = true;  // on a GPU, hardware counters of each candidate's kernels into the speed-up prompt

  Json ToJson() const;
  static AgentSettings FromJson(const Json& json);
  // InvalidArgument naming the flag when a setting is out of range.
  Status Validate() const;
  // The call tag kinds answered by a model other than --llm's, with its spec (MakeRoutedProvider).
  std::map<std::string, std::string> SpecsByCallKind() const;
};

// The token budget the stage holds its calls to: the tightest any of the models `specs` needs. A
// model without a known price turns --budget-usd into tokens at the highest listed output price;
// `notes` gets what the user should know (a budget that cannot be enforced, an unpriced model).
// 0: no limit.
int64_t StageTokenBudget(const AgentSettings& settings, const std::vector<ProviderSpec>& specs, const LlmConfig& config,
                         std::vector<std::string>& notes);

// What the stage starts from.
struct AgentStart {
  std::string ir_summary;          // the captured graph and its fusion groups
  std::string compiler_candidate;  // the built-in compiler's ModelNew ("" when it had none)
  std::optional<Evaluation> compiler_evaluation;  // its evaluation, for the times to beat
  // For decomposition (null: whole-program generation only): the graph after the passes, its
  // plan, and how the compiler wrote its candidate (groups without a verified part keep that).
  const ir::Graph* graph = nullptr;
  const passes::FusionPlan* plan = nullptr;
  codegen::ModelWriterOptions writer_options;
};

// What the search uses, owned by the caller and shared by every pool.
struct SearchServices {
  const PromptLibrary& prompts;
  RoutedProvider& provider;
  CandidateJudge& judge;
  ModuleRenamer rename;           // the trusted worker's prefix_names, for composition
  LiveStatus* live = nullptr;     // may be null
  int64_t max_tokens = 0;         // the token budget (from --budget-tokens, or --budget-usd without a price); 0: none
  bool quiet = false;
};

struct SearchOutcome {
  Json report;                         // routes, pools, decomposition, stop reason
  std::vector<std::string> summaries;  // one line per route tried
  std::string fatal;                   // the call failure that ended the search (IsFatal); "" when none
  std::optional<std::string> best_source;
  std::optional<Evaluation> best_evaluation;
};

// The routes in the order they are tried: --route's, or the router's choice then the other.
Result<std::vector<Route>> RouteOrder(const AgentSettings& settings, const AgentStart& start);

// Runs the routes in `folder` (the whole program's writers in it, a part's in parts/<group>/, the
// composition as composed.py) until one gives an accepted candidate, a budget is spent or a call
// fails for good. InvalidArgument for a bad setting; failed calls and rejected candidates are
// part of the outcome.
Result<SearchOutcome> RunAgentSearch(const AgentSettings& settings, const AgentStart& start, const WriterBrief& brief,
                                     const std::filesystem::path& folder, SearchServices& services);

}  // namespace kforge
