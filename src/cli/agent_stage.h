// The LLM stage of `kforge optimize --llm`, wired: the routed provider (one model per role),
// one evaluator per device slot behind a JudgePool that records every evaluation, the live
// status, and the search (search/agent_search.h: routes, pools, strategies, budgets). The stage's folder (<out>/<task>/llm/) holds stage.json (what was asked,
// so `kforge resume` can continue it), the whole-program writers' rounds and summary.json,
// parts/<group>/ (a part's task.py and its writers' rounds) and composed.py; every model call is in the store under the stage's run id,
// and every evaluation as a candidate of origin "llm:<spec>". Wiring only.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "cli/workspace.h"
#include "core/json.h"
#include "eval/evaluation.h"
#include "eval/evaluator.h"
#include "llm/call_activity.h"
#include "llm/routed_provider.h"
#include "search/agent_search.h"
#include "tasks/task.h"

namespace kforge {

struct AgentOutcome {
  Json report;                         // settings, the pool's summary, attempts, usage, best
  std::string fatal;                   // the call failure that ended the stage (see IsFatal); "" when none
  std::optional<std::string> best_source;
  std::optional<Evaluation> best_evaluation;
};

// The store's run id of the stage whose folder is `folder`: it names the task and the folder, so
// that a resumed stage keeps its calls together.
std::string StageRunId(const TaskFile& task, const std::filesystem::path& folder);

// The provider a stage's writers share, with the token budget its calls are held to.
struct StageProvider {
  std::unique_ptr<RoutedProvider> provider;  // --llm's model, and --llm-for's for their roles
  // --budget-tokens, or, for a model with no known price, --budget-usd turned into tokens at the
  // highest listed output price (so that the dollar budget cannot be overspent); 0: no limit.
  int64_t max_tokens = 0;
  std::shared_ptr<CallActivity> activity;  // its calls queued, in flight and waiting, for the live status
};

// The spec's provider, recorded to a cassette on request, behind the configured concurrency
// limit, every call accounted in the store under `run_id` (started here as `command`, its config
// naming `folder`, where the run's files go, for reports and the dashboard),
// and checked before any paid call. InvalidArgument for a bad spec or config or a missing key;
// Unavailable, with what to do, when the check shows that no call can succeed (an unreachable
// server, a refused key). Its notes, and a model without a price, are printed unless quiet.
Result<StageProvider> ConnectStageProvider(const AgentSettings& settings, Store* store,
                                                              const std::string& run_id, const std::string& command,
                                                              const std::filesystem::path& folder,
                                                              const CommonOptions& common);

// Runs (or, when `folder` holds an interrupted stage, resumes) the stage with `provider` (from
// ConnectStageProvider with StageRunId(task, folder)). InvalidArgument for a bad setting; failed
// model calls and rejected candidates are part of the outcome, and a fatal call failure (a refused
// key, an exhausted quota, an unknown model) ends the stage at once, with no fallback route, as
// the outcome's `fatal`.
Result<AgentOutcome> RunAgentStage(Workspace& workspace, const TaskFile& task, const AgentSettings& settings,
                                   const AgentStart& start, const EvalOptions& eval_options,
                                   const std::filesystem::path& folder, StageProvider& provider,
                                   const CommonOptions& common);

// `optimize --describe`: the stage's model writes a task for `description`, each version saved
// as <out_dir>/<name>.py and captured by the trusted worker until one loads; returns its path.
// The user should read it: it is the reference every candidate is judged against.
Result<std::filesystem::path> WriteDescribedTask(Workspace& workspace, const std::string& description,
                                                 const AgentSettings& settings, const std::filesystem::path& out_dir,
                                                 const CommonOptions& common);

// "30m", "90s", "2h", "600" (seconds) as seconds; InvalidArgument otherwise.
Result<double> ParseDuration(const std::string& text);

}  // namespace kforge
