#include "cli/agent_stage.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "agents/candidate_judge.h"
#include "agents/decomposition.h"
#include "agents/feedback.h"
#include "agents/live_status.h"
#include "agents/prompt_library.h"
#include "agents/task_writer.h"
#include "agents/writer_pool.h"
#include "agents/writer_prompts.h"
#include "cli/task_compiler.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/hash.h"
#include "core/log.h"
#include "eval/roofline.h"
#include "llm/limited_provider.h"
#include "llm/llm_config.h"
#include "llm/provider_factory.h"
#include "sandbox/environment.h"

namespace kforge {
namespace {

// The prompt templates shipped with kforge (or KFORGE_PROMPTS's).
Result<PromptLibrary> LoadShippedPrompts() {
  ASSIGN_OR_RETURN(std::filesystem::path prompt_dir, FindPromptDir(ProcessEnvironment()));
  return PromptLibrary::Load(prompt_dir);
}

// Starts `run_id` in the store unless a run by that id exists (a resumed stage keeps its run).
void StartRunOnce(Store* store, const std::string& run_id, const std::string& command, const Json& config) {
  if (store != nullptr && !store->GetRun(run_id).ok()) (void)store->StartRun(run_id, command, config);
}

void PrintProgress(const std::string& label, const AttemptRecord& attempt, const PoolProgress& progress,
                   const std::string& live, bool quiet) {
  if (quiet) return;
  std::string best = progress.best_speedup ? fmt::format("{:.2f}x", *progress.best_speedup) : "-";
  LogInfo("  {}: writer {} round {}: {}{} | {} attempt(s), {} accepted, best {}, {} tokens, ${:.4f}{}{}", label,
          attempt.writer, attempt.round, attempt.verdict, attempt.reused_reply ? " (recorded reply)" : "",
          progress.attempts, progress.accepted, best, progress.tokens, progress.cost_usd, live.empty() ? "" : "; ", live);
}

// The token budget of `settings` for a model priced `price`, and what to tell the user about it.
int64_t TokenBudget(const AgentSettings& settings, const ProviderSpec& spec, const std::optional<ModelPrice>& price,
                    const LlmConfig& config, std::vector<std::string>& notes) {
  int64_t max_tokens = settings.budget_tokens;
  if (price) return max_tokens;
  if (spec.kind == "command") {
    if (settings.budget_usd > 0) notes.push_back("a command: provider reports no tokens or cost: --budget-usd cannot be enforced; use --budget");
    return max_tokens;
  }
  std::string unpriced = fmt::format("{} has no known price (none configured in prices, and not in the built-in list "
                                     "of {})", spec.argument, kBuiltInPricesDate);
  if (settings.budget_usd <= 0) {
    notes.push_back(unpriced + ": its calls show as of unknown cost; set prices." + spec.argument + " in the LLM config");
    return max_tokens;
  }
  double highest = HighestOutputPrice(WithBuiltInPrices(config.prices));
  auto tokens = static_cast<int64_t>(settings.budget_usd / highest * 1e6);
  max_tokens = max_tokens > 0 ? std::min(max_tokens, tokens) : std::max<int64_t>(tokens, 1);
  notes.push_back(fmt::format("{}: --budget-usd {:g} is enforced as a budget of {} tokens, priced at the highest listed "
                              "output price (${:g} per million); set prices.{} in the LLM config to budget in dollars",
                              unpriced, settings.budget_usd, max_tokens, highest, spec.argument));
  return max_tokens;
}

}  // namespace

std::string StageRunId(const TaskFile& task, const std::filesystem::path& folder) {
  return fmt::format("llm-{}-{}", task.path.stem().string(),
                     Sha256Hex(std::filesystem::absolute(folder).lexically_normal().string()).substr(0, 12));
}

Result<StageProvider> ConnectStageProvider(const AgentSettings& settings, Store* store, const std::string& run_id,
                                           const std::string& command, const CommonOptions& common) {
  ASSIGN_OR_RETURN(LlmConfig config, LoadLlmConfig(settings.llm_config, ProcessEnvironment()));
  ASSIGN_OR_RETURN(ProviderSpec spec, ParseProviderSpec(settings.llm));
  StartRunOnce(store, run_id, command, settings.ToJson());
  StageProvider stage;
  stage.activity = std::make_shared<CallActivity>();
  ASSIGN_OR_RETURN(stage.provider, MakeLimitedProvider(settings.llm, config, store, run_id, settings.record, stage.activity));
  ProviderCheck check = stage.provider->Check();
  if (!check.status.ok()) {
    if (store != nullptr) (void)store->FinishRun(run_id, "failed");
    return check.status.WithContext("--llm " + settings.llm);
  }
  stage.max_tokens = TokenBudget(settings, spec, PriceOfSpec(spec, config), config, check.notes);
  if (!common.quiet) {
    for (const std::string& note : check.notes) LogInfo("note: {}", note);
  }
  return stage;
}

Json AgentSettings::ToJson() const {
  return {{"llm", llm},           {"llm_config", llm_config}, {"workers", workers}, {"rounds", rounds},
          {"budget_usd", budget_usd}, {"budget_tokens", budget_tokens}, {"budget_s", budget_s},
          {"record", record},         {"route", route},           {"patience", patience},
          {"min_gain", min_gain},     {"kernel_counters", kernel_counters}, {"strategy", strategy},
          {"beam_width", beam_width}, {"budget_gpu_s", budget_gpu_s}, {"evaluators", evaluators}};
}

Status AgentSettings::Validate() const {
  if (workers < 1 || rounds < 1) return Status::InvalidArgument("--workers and --rounds must be at least 1");
  if (patience < 1) return Status::InvalidArgument("--patience must be at least 1");
  if (!ParseStrategy(strategy)) {
    return Status::InvalidArgument(fmt::format("--strategy must be greedy or beam, not '{}'", strategy));
  }
  if (beam_width < 1) return Status::InvalidArgument("--beam-width must be at least 1");
  if (!(min_gain >= 0 && min_gain < 1)) return Status::InvalidArgument("--min-gain must be at least 0 and below 1");
  if (budget_usd < 0 || budget_tokens < 0) return Status::InvalidArgument("--budget-usd and --budget-tokens cannot be negative");
  if (evaluators < 1 || evaluators > kMaxEvaluators) {
    return Status::InvalidArgument(fmt::format("--evaluators must be from 1 to {}", kMaxEvaluators));
  }
  return Status::Ok();
}

AgentSettings AgentSettings::FromJson(const Json& json) {
  AgentSettings settings;
  settings.llm = JsonGet<std::string>(json, "llm", "");
  settings.llm_config = JsonGet<std::string>(json, "llm_config", "");
  settings.workers = JsonGet<int>(json, "workers", settings.workers);
  settings.rounds = JsonGet<int>(json, "rounds", settings.rounds);
  settings.budget_usd = JsonGet<double>(json, "budget_usd", 0);
  settings.budget_tokens = JsonGet<int64_t>(json, "budget_tokens", 0);
  settings.budget_s = JsonGet<double>(json, "budget_s", 0);
  settings.record = JsonGet<std::string>(json, "record", "");
  settings.route = JsonGet<std::string>(json, "route", settings.route);
  settings.patience = JsonGet<int>(json, "patience", settings.patience);
  settings.min_gain = JsonGet<double>(json, "min_gain", settings.min_gain);
  settings.kernel_counters = JsonGet<bool>(json, "kernel_counters", settings.kernel_counters);
  settings.strategy = JsonGet<std::string>(json, "strategy", settings.strategy);
  settings.beam_width = JsonGet<int>(json, "beam_width", settings.beam_width);
  settings.budget_gpu_s = JsonGet<double>(json, "budget_gpu_s", 0);
  settings.evaluators = JsonGet<int>(json, "evaluators", settings.evaluators);
  return settings;
}

namespace {

// What every pool of one stage shares.
// How often the live status is written while nothing else happens (waits, long calls).
constexpr double kLiveStatusPeriodS = 5;

struct Stage {
  Workspace& workspace;
  const AgentSettings& settings;
  const AgentStart& start;
  const PromptLibrary& prompts;
  LimitedProvider& provider;
  CandidateJudge& judge;
  const CommonOptions& common;
  int64_t max_tokens = 0;  // the stage's token budget (StageProvider::max_tokens); 0: none
  double started_s = 0;
  LiveStatus* live = nullptr;
  std::string fatal_call;  // set by the first pool that met a fatal call failure: nothing more is asked
};

struct Candidate {
  std::string source;
  Evaluation evaluation;
};

// The budget left to the next pool: the stage's limits minus what earlier pools spent.
BudgetLimits RemainingBudget(const Stage& stage) {
  BudgetLimits limits;
  if (stage.settings.budget_s > 0) {
    limits.max_seconds = std::max(1e-3, stage.settings.budget_s - (RealClock().NowSeconds() - stage.started_s));
  }
  if (stage.settings.budget_usd > 0) {
    UsageTotals used = stage.provider.Totals();
    limits.max_usd = std::max(1e-9, stage.settings.budget_usd - used.cost_usd - used.estimated_cost_usd);
  }
  if (stage.settings.budget_gpu_s > 0) {
    limits.max_eval_seconds = std::max(1e-3, stage.settings.budget_gpu_s - stage.judge.busy_seconds());
  }
  if (stage.max_tokens > 0) {
    UsageTotals used = stage.provider.Totals();
    limits.max_tokens =
        std::max<int64_t>(1, stage.max_tokens - used.prompt_tokens - used.completion_tokens - used.estimated_tokens);
  }
  return limits;
}

bool BudgetSpent(const Stage& stage) {
  bool time = stage.settings.budget_s > 0 && RealClock().NowSeconds() - stage.started_s >= stage.settings.budget_s;
  UsageTotals used = stage.provider.Totals();
  bool money = stage.settings.budget_usd > 0 && used.cost_usd + used.estimated_cost_usd >= stage.settings.budget_usd;
  bool tokens = stage.max_tokens > 0 &&
                used.prompt_tokens + used.completion_tokens + used.estimated_tokens >= stage.max_tokens;
  bool device = stage.settings.budget_gpu_s > 0 && stage.judge.busy_seconds() >= stage.settings.budget_gpu_s;
  return time || money || tokens || device;
}

Result<PoolResult> RunPool(Stage& stage, const WriterBrief& brief, const std::filesystem::path& folder,
                           const std::string& label) {
  PoolOptions options;
  options.writers = stage.settings.workers;
  options.max_rounds = stage.settings.rounds;
  options.scope = label;
  options.speedup_patience = stage.settings.patience;
  options.min_gain = stage.settings.min_gain;
  options.strategy = ParseStrategy(stage.settings.strategy).value_or(Strategy::kGreedy);
  options.beam_width = stage.settings.beam_width;
  options.budget = RemainingBudget(stage);
  if (stage.live != nullptr) stage.live->PoolStarted(label, options.writers * options.max_rounds);
  WriterPool pool(options, brief, stage.prompts, stage.provider, stage.judge, folder,
                  [&](const AttemptRecord& attempt, const PoolProgress& progress) {
                    if (stage.live != nullptr) stage.live->Attempted(progress);
                    PrintProgress(label, attempt, progress, stage.live != nullptr ? stage.live->Words() : "",
                                  stage.common.quiet);
                  });
  PoolResult result = pool.Run();
  RETURN_IF_ERROR(result.status);
  if (stage.fatal_call.empty()) stage.fatal_call = result.fatal_call;
  return result;
}

// Each distinct fusion group as a task for its own pool, then the composition of the verified
// parts, judged on the whole task. nullopt when no composition was accepted.
Result<std::optional<Candidate>> RunDecomposition(Stage& stage, const WriterBrief& whole, const std::filesystem::path& folder,
                                                  Json& report) {
  ASSIGN_OR_RETURN(std::vector<DecompositionPart> parts, DecomposePlan(*stage.start.graph, *stage.start.plan));
  std::map<std::string, std::string> accepted;
  report["parts"] = Json::array();
  for (const DecompositionPart& part : parts) {
    if (BudgetSpent(stage) || !stage.fatal_call.empty()) break;
    const std::filesystem::path dir = folder / "parts" / part.task().group;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    RETURN_IF_ERROR(WriteFile(dir / "task.py", part.task().source));
    ASSIGN_OR_RETURN(TaskFile task, ReadTaskFile(dir / "task.py"));
    WriterBrief brief = whole;
    brief.task = task;
    brief.starting_candidate.clear();
    brief.ir_summary = fmt::format("One fused group of {} ({} of its group(s) compute exactly this).",
                                   whole.task.name, part.groups.size());
    ASSIGN_OR_RETURN(PoolResult result, RunPool(stage, brief, dir, part.task().group));
    if (result.best) accepted[part.task().signature] = result.best->source;
    report["parts"].push_back({{"groups", part.GroupNames()}, {"signature", part.task().signature}, {"folder", dir.string()},
                               {"summary", result.Summary()}, {"accepted", result.best.has_value()},
                               {"attempts", result.ToJson()["attempts"]}});
  }
  if (accepted.empty() || !stage.fatal_call.empty()) return std::optional<Candidate>();
  ASSIGN_OR_RETURN(WorkerClient * trusted, stage.workspace.workers().Trusted());
  auto rename = [trusted](const std::string& source, const std::string& prefix) -> Result<std::string> {
    ASSIGN_OR_RETURN(Json renamed, trusted->Call("prefix_names", Json{{"source", source}, {"prefix", prefix}}, 60));
    return JsonGet<std::string>(renamed, "source", "");
  };
  ASSIGN_OR_RETURN(std::string composed, ComposeModelNew(*stage.start.graph, *stage.start.plan, parts, accepted,
                                                         stage.start.writer_options, rename));
  RETURN_IF_ERROR(WriteFile(folder / "composed.py", composed));
  ASSIGN_OR_RETURN(Evaluation evaluation, stage.judge.Judge(whole.task, folder / "composed.py"));
  if (!stage.common.quiet) LogInfo("  composed from {} verified part(s): {}", accepted.size(), evaluation.verdict.ToString());
  report["composed"] = {{"path", (folder / "composed.py").string()}, {"parts_used", accepted.size()},
                        {"evaluation", evaluation.ToJson()}};
  if (!evaluation.verdict.accepted()) return std::optional<Candidate>();
  return std::optional<Candidate>(Candidate{composed, evaluation});
}

Result<std::vector<Route>> RouteOrder(const AgentSettings& settings, const AgentStart& start) {
  bool can_decompose = start.graph != nullptr && start.plan != nullptr;
  if (settings.route == "whole") return std::vector<Route>{Route::kWholeProgram};
  if (settings.route == "decompose") {
    if (!can_decompose) return Status::InvalidArgument("--route decompose needs the compiler's graph");
    return std::vector<Route>{Route::kDecomposition};
  }
  if (settings.route != "auto") return Status::InvalidArgument("--route must be auto, whole or decompose");
  if (!can_decompose) return std::vector<Route>{Route::kWholeProgram};
  Route first = ChooseRoute(*start.plan);
  Route second = first == Route::kWholeProgram ? Route::kDecomposition : Route::kWholeProgram;
  return std::vector<Route>{first, second};
}

}  // namespace

Result<AgentOutcome> RunAgentStage(Workspace& workspace, const TaskFile& task, const AgentSettings& settings,
                                   const AgentStart& start, const EvalOptions& eval_options,
                                   const std::filesystem::path& folder, StageProvider& provider,
                                   const CommonOptions& common) {
  RETURN_IF_ERROR(settings.Validate());
  ASSIGN_OR_RETURN(std::vector<Route> routes, RouteOrder(settings, start));
  ASSIGN_OR_RETURN(PromptLibrary prompts, LoadShippedPrompts());
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) return Status::IoError("cannot create " + folder.string() + ": " + ec.message());
  Json stage_file = {{"task", task.path.string()}, {"settings", settings.ToJson()}, {"mode", ToString(eval_options.mode)},
                     {"precision", ToString(eval_options.precision)}, {"timeout_s", eval_options.timeout_s},
                     {"compile_baseline", eval_options.time_compiled_reference}};
  RETURN_IF_ERROR(WriteFile(folder / "stage.json", stage_file.dump(1)));

  const std::string run_id = StageRunId(task, folder);
  Store* store = workspace.store();

  WriterBrief brief;
  brief.task = task;
  brief.device = workspace.device();
  brief.target = TargetDescription(TargetMachine::FromFingerprint(workspace.device(), workspace.fingerprint()));
  if (auto peaks = PeaksFor(workspace.gpu_name(), eval_options.precision)) {
    // The numbers the roofline check uses: what a kernel can hope for, and what is too good to be true.
    brief.target += fmt::format(", with about {:.1f} TB/s of memory bandwidth and {:.0f} TFLOP/s of peak matrix math "
                                "at this precision policy", peaks->bytes_per_s / 1e12, peaks->flops_per_s / 1e12);
  }
  brief.mode = ToString(eval_options.mode);
  brief.precision = ToString(eval_options.precision);
  brief.ir_summary = start.ir_summary;
  brief.starting_candidate = start.compiler_candidate;
  if (start.compiler_evaluation) brief.to_beat = BaselineSummary(start.compiler_evaluation->ToJson());

  EvalOptions judged_with = eval_options;
  judged_with.kernel_counters = settings.kernel_counters;
  ASSIGN_OR_RETURN(std::vector<DeviceWorkers*> slots, workspace.EvaluatorSlots(settings.evaluators));
  std::vector<std::unique_ptr<Evaluator>> evaluators;
  std::vector<Evaluator*> judged_by;
  for (DeviceWorkers* slot : slots) {
    evaluators.push_back(std::make_unique<Evaluator>(*slot, judged_with));
    judged_by.push_back(evaluators.back().get());
  }
  const std::string origin = "llm:" + settings.llm;
  JudgePool judge(judged_by, [&](const TaskFile& judged, const std::filesystem::path& candidate, const Evaluation& evaluation) {
    auto source = ReadFile(candidate);
    if (source.ok()) (void)workspace.Record(judged, *source, origin, evaluation, brief.precision, brief.mode);
  });
  LiveStatus live(store, run_id, provider.activity, settings.budget_s);
  live.StartTicking(kLiveStatusPeriodS);
  Stage stage{workspace, settings,          start, prompts, *provider.provider, judge, common, provider.max_tokens,
              RealClock().NowSeconds(), &live, ""};
  if (!common.quiet) {
    LogInfo("LLM stage: {} writer(s) x {} round(s) with {}; {} first; {} evaluation(s) at once; rounds in {}",
            settings.workers, settings.rounds, settings.llm, ToString(routes.front()), judge.slots(), folder.string());
  }

  AgentOutcome outcome;
  outcome.report = {{"settings", settings.ToJson()}, {"folder", folder.string()}, {"run_id", run_id}, {"routes", Json::array()}};
  std::optional<Candidate> best;
  std::vector<std::string> summaries;
  Status status = Status::Ok();
  for (Route route : routes) {
    if (BudgetSpent(stage) || !stage.fatal_call.empty()) break;
    outcome.report["routes"].push_back(ToString(route));
    if (route == Route::kWholeProgram) {
      auto result = RunPool(stage, brief, folder, "whole");
      if (!result.ok()) { status = result.status(); break; }
      outcome.report["pool"] = result->ToJson();
      outcome.report["stop_reason"] = result->stop_reason;
      summaries.push_back("whole program: " + result->Summary());
      if (result->best) best = Candidate{result->best->source, result->best->evaluation};
    } else {
      Json decomposition = Json::object();
      auto composed = RunDecomposition(stage, brief, folder, decomposition);
      outcome.report["decomposition"] = decomposition;
      if (!composed.ok()) { status = composed.status(); break; }
      summaries.push_back(fmt::format("decomposition: {} part(s), composition {}", decomposition["parts"].size(),
                                      decomposition.contains("composed")
                                          ? JsonGet<std::string>(decomposition["composed"]["evaluation"], "verdict", "?")
                                          : "not tried"));
      best = *composed;
    }
    if (best) break;  // the other route is the fallback, not a second try
  }
  outcome.fatal = stage.fatal_call;
  if (!outcome.fatal.empty()) {
    summaries.push_back("stopped: " + outcome.fatal);
    outcome.report["fatal"] = outcome.fatal;
  }
  live.Finish(status.ok() && outcome.fatal.empty() ? "finished" : "failed");
  if (store != nullptr) (void)store->FinishRun(run_id, status.ok() && outcome.fatal.empty() ? "succeeded" : "failed");
  RETURN_IF_ERROR(status);

  UsageTotals usage = provider.provider->Totals();
  outcome.report["summary"] = fmt::format("{}", fmt::join(summaries, "; "));
  outcome.report["usage"] = {{"calls", usage.calls}, {"failures", usage.failures}, {"prompt_tokens", usage.prompt_tokens},
                             {"completion_tokens", usage.completion_tokens}, {"cost_usd", usage.cost_usd},
                             {"unpriced_calls", usage.unpriced_calls},
                             // what attempts without a usage report (timeouts) may have been billed: an estimate
                             {"estimated_tokens", usage.estimated_tokens}, {"estimated_cost_usd", usage.estimated_cost_usd}};
  outcome.report["evaluators"] = {{"slots", judge.slots()}, {"peak_at_once", judge.peak_concurrency()},
                                  {"device_seconds", judge.busy_seconds()}};
  if (best) {
    outcome.best_source = best->source;
    outcome.best_evaluation = best->evaluation;
  }
  if (!common.quiet) LogInfo("LLM stage: {}", outcome.report["summary"].get<std::string>());
  return outcome;
}

Result<std::filesystem::path> WriteDescribedTask(Workspace& workspace, const std::string& description,
                                                 const AgentSettings& settings, const std::filesystem::path& out_dir,
                                                 const CommonOptions& common) {
  ASSIGN_OR_RETURN(PromptLibrary prompts, LoadShippedPrompts());
  const std::string name = TaskNameFor(description);
  const std::filesystem::path path = out_dir / (name + ".py");
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  const std::string run_id = "describe-" + name;
  Store* store = workspace.store();
  ASSIGN_OR_RETURN(StageProvider provider, ConnectStageProvider(settings, store, run_id, "optimize --describe", common));
  ASSIGN_OR_RETURN(WorkerClient * trusted, workspace.workers().Trusted());
  // A version passes when the trusted worker can load, run and capture it like any task.
  auto check = [&](const std::string& source) -> Status {
    RETURN_IF_ERROR(WriteFile(path, source));
    ASSIGN_OR_RETURN(TaskFile task, ReadTaskFile(path));
    auto captured = CaptureTask(*trusted, task, workspace.device() == "cpu", /*fallback=*/false);
    return captured.ok() ? Status::Ok() : captured.status();
  };
  if (!common.quiet) LogInfo("asking {} to write the task \"{}\"", settings.llm, description);
  auto written = WriteTaskFromDescription(description, prompts, *provider.provider, check);
  if (store != nullptr) (void)store->FinishRun(run_id, written.ok() ? "succeeded" : "failed");
  if (!written.ok()) return written.status();
  if (!common.quiet) {
    LogInfo("wrote the reference to {} ({} attempt(s)); read it: every candidate is judged against it", path.string(),
            written->attempts);
  }
  return path;
}

Result<double> ParseDuration(const std::string& text) {
  if (text.empty()) return Status::InvalidArgument("an empty duration");
  double scale = 1;
  std::string number = text;
  switch (text.back()) {
    case 's': number.pop_back(); break;
    case 'm': scale = 60; number.pop_back(); break;
    case 'h': scale = 3600; number.pop_back(); break;
    default: break;
  }
  try {
    size_t used = 0;
    double value = std::stod(number, &used);
    if (used != number.size() || value < 0) throw std::invalid_argument(text);
    return value * scale;
  } catch (const std::exception&) {
    return Status::InvalidArgument(fmt::format("'{}' is not a duration: write 90s, 30m or 2h", text));
  }
}

}  // namespace kforge
