#include "search/agent_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>

#include "agents/search_board.h"
#include "agents/writer_budget.h"
#include "agents/writer_pool.h"
#include "core/files.h"
#include "core/log.h"
#include "llm/pricing.h"
#include "tasks/task.h"

namespace kforge {

const std::map<std::string, std::vector<std::string>>& LlmRoles() {
  static const std::map<std::string, std::vector<std::string>> roles = {
      {"write", {"write", "repair"}}, {"optimize", {"speedup", "recombine"}}, {"describe", {"describe"}}};
  return roles;
}

Json AgentSettings::ToJson() const {
  return {{"llm", llm},           {"llm_config", llm_config}, {"workers", workers}, {"rounds", rounds},
          {"budget_usd", budget_usd}, {"budget_tokens", budget_tokens}, {"budget_s", budget_s},
          {"record", record},         {"route", route},           {"patience", patience},
          {"min_gain", min_gain},     {"kernel_counters", kernel_counters}, {"strategy", strategy},
          {"beam_width", beam_width}, {"budget_gpu_s", budget_gpu_s}, {"evaluators", evaluators},
          {"role_llms", role_llms}};
}

Status AgentSettings::Validate() const {
  if (workers < 1 || rounds < 1) return Status::InvalidArgument("--workers and --rounds must be at least 1");
  if (patience < 1) return Status::InvalidArgument("--patience must be at least 1");
  if (!ParseStrategy(strategy)) {
    return Status::InvalidArgument(fmt::format("--strategy must be greedy, beam or evolve, not '{}'", strategy));
  }
  if (beam_width < 1) return Status::InvalidArgument("--beam-width must be at least 1");
  if (!(min_gain >= 0 && min_gain < 1)) return Status::InvalidArgument("--min-gain must be at least 0 and below 1");
  if (budget_usd < 0 || budget_tokens < 0) return Status::InvalidArgument("--budget-usd and --budget-tokens cannot be negative");
  if (evaluators < 0 || evaluators > kMaxEvaluators) {
    return Status::InvalidArgument(fmt::format("--evaluators must be from 1 to {} (0: one per GPU)", kMaxEvaluators));
  }
  for (const auto& [role, spec] : role_llms) {
    if (LlmRoles().count(role) == 0) {
      return Status::InvalidArgument(fmt::format("--llm-for: there is no role '{}'; the roles are write, optimize and describe", role));
    }
    if (spec.empty()) return Status::InvalidArgument(fmt::format("--llm-for {}= names no model", role));
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
  const Json& roles = JsonField(json, "role_llms");
  if (roles.is_object()) {
    for (const auto& [role, spec] : roles.items()) {
      if (spec.is_string()) settings.role_llms[role] = spec.get<std::string>();
    }
  }
  return settings;
}

std::map<std::string, std::string> AgentSettings::SpecsByCallKind() const {
  std::map<std::string, std::string> specs;
  for (const auto& [role, spec] : role_llms) {
    auto kinds = LlmRoles().find(role);
    if (kinds == LlmRoles().end() || spec == llm) continue;
    for (const std::string& kind : kinds->second) specs[kind] = spec;
  }
  return specs;
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

namespace {

struct Candidate {
  std::string source;
  Evaluation evaluation;
};

// The stage's limits, held over every pool (pools that run at once share them).
BudgetLimits StageLimits(const AgentSettings& settings, int64_t max_tokens) {
  BudgetLimits limits;
  limits.max_seconds = settings.budget_s;
  limits.max_usd = settings.budget_usd;
  limits.max_tokens = max_tokens;
  limits.max_eval_seconds = settings.budget_gpu_s;
  return limits;
}

void PrintProgress(const std::string& label, const AttemptRecord& attempt, const PoolProgress& progress,
                   const std::string& live, bool quiet) {
  if (quiet) return;
  std::string best = progress.best_speedup ? fmt::format("{:.2f}x", *progress.best_speedup) : "-";
  LogInfo("  {}: writer {} round {}: {}{} | {} attempt(s), {} accepted, best {}, {} tokens, ${:.4f}{}{}", label,
          attempt.writer, attempt.round, attempt.verdict, attempt.reused_reply ? " (recorded reply)" : "",
          progress.attempts, progress.accepted, best, progress.tokens, progress.cost_usd, live.empty() ? "" : "; ", live);
}

// A part's pool, or why it could not run.
struct PartRun {
  std::filesystem::path folder;
  Result<PoolResult> result = Status::Internal("the part's pool did not run");
};

class Search {
 public:
  Search(const AgentSettings& settings, const AgentStart& start, const std::filesystem::path& folder,
         SearchServices& services)
      : settings_(settings), start_(start), folder_(folder), services_(services),
        budget_(StageLimits(settings, services.max_tokens)) {}

  Result<SearchOutcome> Run(const WriterBrief& brief);

 private:
  bool Over() { return budget_.Spent() || !fatal().empty(); }
  std::string fatal() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return fatal_call_;
  }
  Result<PoolResult> RunPool(const WriterBrief& brief, const std::filesystem::path& folder, const std::string& label);
  PartRun RunPart(const DecompositionPart& part, const WriterBrief& whole);
  Result<std::optional<Candidate>> RunDecomposition(const WriterBrief& whole, Json& report);
  // The compositions to judge: the fastest program of every part, then (evolve) the same with one
  // part's runner-up swapped in, for up to beam_width parts: the parts are the units of crossover,
  // and the end-to-end time is the fitness.
  std::vector<std::map<std::string, std::string>> Compositions(
      const std::map<std::string, std::vector<std::string>>& programs) const;

  const AgentSettings& settings_;
  const AgentStart& start_;
  const std::filesystem::path folder_;
  SearchServices& services_;
  WriterBudget budget_;
  mutable std::mutex mutex_;
  std::string fatal_call_;  // the first pool's fatal call failure: nothing more is asked; guarded by mutex_
};

Result<PoolResult> Search::RunPool(const WriterBrief& brief, const std::filesystem::path& folder, const std::string& label) {
  PoolOptions options;
  options.writers = settings_.workers;
  options.max_rounds = settings_.rounds;
  options.scope = label;
  options.speedup_patience = settings_.patience;
  options.min_gain = settings_.min_gain;
  options.strategy = ParseStrategy(settings_.strategy).value_or(Strategy::kGreedy);
  options.beam_width = settings_.beam_width;
  options.within = &budget_;
  LiveStatus* live = services_.live;
  if (live != nullptr) live->PoolStarted(label, options.writers * options.max_rounds);
  WriterPool pool(options, brief, services_.prompts, services_.provider, services_.judge, folder,
                  [&](const AttemptRecord& attempt, const PoolProgress& progress) {
                    if (live != nullptr) live->Attempted(label, progress);
                    PrintProgress(label, attempt, progress, live != nullptr ? live->Current().Brief() : "",
                                  services_.quiet);
                  });
  PoolResult result = pool.Run();
  if (live != nullptr) live->PoolEnded(label);
  RETURN_IF_ERROR(result.status);
  std::lock_guard<std::mutex> lock(mutex_);
  if (fatal_call_.empty()) fatal_call_ = result.fatal_call;
  return result;
}

PartRun Search::RunPart(const DecompositionPart& part, const WriterBrief& whole) {
  PartRun run;
  run.folder = folder_ / "parts" / part.task().group;
  try {
    std::error_code ec;
    std::filesystem::create_directories(run.folder, ec);
    if (Status written = WriteFile(run.folder / "task.py", part.task().source); !written.ok()) {
      run.result = written;
      return run;
    }
    Result<TaskFile> task = ReadTaskFile(run.folder / "task.py");
    if (!task.ok()) {
      run.result = task.status();
      return run;
    }
    WriterBrief brief = whole;
    brief.task = *task;
    brief.starting_candidate.clear();
    brief.ir_summary = fmt::format("One fused group of {} ({} of its group(s) compute exactly this).", whole.task.name,
                                   part.groups.size());
    run.result = RunPool(brief, run.folder, part.task().group);
  } catch (const std::exception& error) {
    run.result = Status::Internal(fmt::format("the pool of {} failed: {}", part.task().group, error.what()));
  }
  return run;
}

std::vector<std::map<std::string, std::string>> Search::Compositions(
    const std::map<std::string, std::vector<std::string>>& programs) const {
  std::map<std::string, std::string> fastest;
  for (const auto& [signature, list] : programs) fastest[signature] = list.front();
  std::vector<std::map<std::string, std::string>> out = {fastest};
  if (ParseStrategy(settings_.strategy) != Strategy::kEvolve) return out;
  for (const auto& [signature, list] : programs) {
    if (static_cast<int>(out.size()) > settings_.beam_width) break;
    if (list.size() < 2) continue;
    std::map<std::string, std::string> crossed = fastest;
    crossed[signature] = list[1];
    out.push_back(crossed);
  }
  return out;
}

// Each distinct fusion group as a task for its own pool, all at once, then the composition of the
// verified parts, judged on the whole task. nullopt when no composition was accepted.
Result<std::optional<Candidate>> Search::RunDecomposition(const WriterBrief& whole, Json& report) {
  ASSIGN_OR_RETURN(std::vector<DecompositionPart> parts, DecomposePlan(*start_.graph, *start_.plan));
  if (!services_.quiet) LogInfo("  {} part(s), searched at once", parts.size());
  std::vector<PartRun> runs(parts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < parts.size(); ++i) {
    try {
      threads.emplace_back([&, i] { runs[i] = RunPart(parts[i], whole); });
    } catch (const std::exception&) {
      runs[i] = RunPart(parts[i], whole);  // no thread to spare: this part runs here
    }
  }
  for (std::thread& thread : threads) thread.join();

  std::map<std::string, std::vector<std::string>> programs;  // by signature: accepted programs, fastest first
  report["parts"] = Json::array();
  for (size_t i = 0; i < parts.size(); ++i) {
    RETURN_IF_ERROR(runs[i].result.status());
    const PoolResult& result = *runs[i].result;
    const DecompositionPart& part = parts[i];
    if (result.best) {
      std::vector<std::string>& list = programs[part.task().signature];
      list.push_back(result.best->source);
      for (const AcceptedCandidate& kept : result.kept) {
        if (std::find(list.begin(), list.end(), kept.source) == list.end()) list.push_back(kept.source);
      }
    }
    report["parts"].push_back({{"groups", part.GroupNames()}, {"signature", part.task().signature},
                               {"folder", runs[i].folder.string()}, {"summary", result.Summary()},
                               {"accepted", result.best.has_value()}, {"attempts", result.ToJson()["attempts"]},
                               {"search", result.search}});
  }
  if (programs.empty() || !fatal().empty()) return std::optional<Candidate>();

  std::optional<AcceptedCandidate> best;
  report["compositions"] = Json::array();
  std::vector<std::map<std::string, std::string>> compositions = Compositions(programs);
  for (size_t i = 0; i < compositions.size(); ++i) {
    if (i > 0 && budget_.Spent()) break;
    std::filesystem::path path = folder_ / (i == 0 ? "composed.py" : fmt::format("composed_{}.py", i + 1));
    ASSIGN_OR_RETURN(std::string composed, ComposeModelNew(*start_.graph, *start_.plan, parts, compositions[i],
                                                           start_.writer_options, services_.rename));
    RETURN_IF_ERROR(WriteFile(path, composed));
    ASSIGN_OR_RETURN(Evaluation evaluation, services_.judge.Judge(whole.task, path));
    budget_.ChargeEvaluation(evaluation.duration_s);
    if (!services_.quiet) {
      LogInfo("  composed from {} verified part(s){}: {}", compositions[i].size(),
              i == 0 ? "" : fmt::format(" (crossover {})", i), evaluation.verdict.ToString());
    }
    Json entry = {{"path", path.string()}, {"parts_used", compositions[i].size()}, {"evaluation", evaluation.ToJson()}};
    if (i == 0) report["composed"] = entry;
    report["compositions"].push_back(entry);
    if (!evaluation.verdict.accepted()) continue;
    AcceptedCandidate candidate{path, composed, evaluation, 0, static_cast<int>(i) + 1};
    if (IsBetter(candidate, best, 0)) best = candidate;
  }
  if (!best) return std::optional<Candidate>();
  report["composition_chosen"] = best->path.string();
  return std::optional<Candidate>(Candidate{best->source, best->evaluation});
}

Result<SearchOutcome> Search::Run(const WriterBrief& brief) {
  ASSIGN_OR_RETURN(std::vector<Route> routes, RouteOrder(settings_, start_));
  SearchOutcome outcome;
  outcome.report = {{"routes", Json::array()}};
  std::optional<Candidate> best;
  for (Route route : routes) {
    if (Over()) break;
    outcome.report["routes"].push_back(ToString(route));
    if (route == Route::kWholeProgram) {
      ASSIGN_OR_RETURN(PoolResult result, RunPool(brief, folder_, "whole"));
      outcome.report["pool"] = result.ToJson();
      outcome.report["stop_reason"] = result.stop_reason;
      outcome.summaries.push_back("whole program: " + result.Summary());
      if (result.best) best = Candidate{result.best->source, result.best->evaluation};
    } else {
      Json decomposition = Json::object();
      auto composed = RunDecomposition(brief, decomposition);
      outcome.report["decomposition"] = decomposition;
      RETURN_IF_ERROR(composed.status());
      outcome.summaries.push_back(fmt::format(
          "decomposition: {} part(s), composition {}", decomposition["parts"].size(),
          decomposition.contains("composed") ? JsonGet<std::string>(decomposition["composed"]["evaluation"], "verdict", "?")
                                             : "not tried"));
      best = *composed;
    }
    if (best) break;  // the other route is the fallback, not a second try
  }
  outcome.fatal = fatal();
  if (!outcome.fatal.empty()) {
    outcome.summaries.push_back("stopped: " + outcome.fatal);
    outcome.report["fatal"] = outcome.fatal;
  }
  if (budget_.stopped()) outcome.report["budget_stop"] = budget_.stop_reason();
  if (best) {
    outcome.best_source = best->source;
    outcome.best_evaluation = best->evaluation;
  }
  return outcome;
}

// The token budget `settings` gives a model priced `price`, and what to tell the user about it.
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

int64_t StageTokenBudget(const AgentSettings& settings, const std::vector<ProviderSpec>& specs, const LlmConfig& config,
                         std::vector<std::string>& notes) {
  int64_t budget = 0;
  for (const ProviderSpec& spec : specs) {
    int64_t tokens = TokenBudget(settings, spec, PriceOfSpec(spec, config), config, notes);
    if (tokens > 0 && (budget == 0 || tokens < budget)) budget = tokens;
  }
  return budget;
}

Result<SearchOutcome> RunAgentSearch(const AgentSettings& settings, const AgentStart& start, const WriterBrief& brief,
                                     const std::filesystem::path& folder, SearchServices& services) {
  RETURN_IF_ERROR(settings.Validate());
  Search search(settings, start, folder, services);
  return search.Run(brief);
}

}  // namespace kforge
