#include "cli/agent_stage.h"

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "agents/candidate_judge.h"
#include "agents/prompt_library.h"
#include "agents/task_writer.h"
#include "agents/writer_pool.h"
#include "agents/writer_prompts.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/hash.h"
#include "core/log.h"
#include "llm/limited_provider.h"
#include "llm/llm_config.h"
#include "llm/provider_factory.h"
#include "llm/recording_provider.h"
#include "sandbox/environment.h"

namespace kforge {
namespace {

// The provider the writers share: the spec's, recorded to a cassette on request, behind the
// configured concurrency limit, every call accounted in the store under `run_id`.
Result<std::unique_ptr<LimitedProvider>> MakeStageProvider(const AgentSettings& settings, Store* store,
                                                           const std::string& run_id) {
  ASSIGN_OR_RETURN(LlmConfig config, LoadLlmConfig(settings.llm_config, ProcessEnvironment()));
  ASSIGN_OR_RETURN(ProviderSpec spec, ParseProviderSpec(settings.llm));
  ASSIGN_OR_RETURN(std::unique_ptr<Provider> provider, MakeProvider(settings.llm, config));
  if (!settings.record.empty()) {
    ASSIGN_OR_RETURN(auto recording, RecordingProvider::Open(settings.record, std::move(provider)));
    provider = std::move(recording);
  }
  LimitOptions limits;
  limits.pool = std::make_shared<ConcurrencyPool>("llm:" + spec.kind, config.ConcurrencyFor(spec.kind));
  limits.store = store;
  limits.run_id = run_id;
  return std::make_unique<LimitedProvider>(std::move(provider), limits);
}

void PrintProgress(const AttemptRecord& attempt, const PoolProgress& progress, bool quiet) {
  if (quiet) return;
  std::string best = progress.best_speedup ? fmt::format("{:.2f}x", *progress.best_speedup) : "-";
  LogInfo("  writer {} round {}: {}{} | {} attempt(s), {} accepted, best {}, {} tokens, ${:.4f}", attempt.writer,
          attempt.round, attempt.verdict, attempt.reused_reply ? " (recorded reply)" : "", progress.attempts,
          progress.accepted, best, progress.tokens, progress.cost_usd);
}

// A run id that names the task and the stage's folder, so a resumed stage keeps its calls together.
std::string StageRunId(const TaskFile& task, const std::filesystem::path& folder) {
  return fmt::format("llm-{}-{}", task.path.stem().string(),
                     Sha256Hex(std::filesystem::absolute(folder).lexically_normal().string()).substr(0, 12));
}

}  // namespace

Json AgentSettings::ToJson() const {
  return {{"llm", llm},           {"llm_config", llm_config}, {"workers", workers}, {"rounds", rounds},
          {"budget_usd", budget_usd}, {"budget_s", budget_s},   {"record", record}};
}

AgentSettings AgentSettings::FromJson(const Json& json) {
  AgentSettings settings;
  settings.llm = JsonGet<std::string>(json, "llm", "");
  settings.llm_config = JsonGet<std::string>(json, "llm_config", "");
  settings.workers = JsonGet<int>(json, "workers", settings.workers);
  settings.rounds = JsonGet<int>(json, "rounds", settings.rounds);
  settings.budget_usd = JsonGet<double>(json, "budget_usd", 0);
  settings.budget_s = JsonGet<double>(json, "budget_s", 0);
  settings.record = JsonGet<std::string>(json, "record", "");
  return settings;
}

Result<AgentOutcome> RunAgentStage(Workspace& workspace, const TaskFile& task, const AgentSettings& settings,
                                   const AgentStart& start, const EvalOptions& eval_options,
                                   const std::filesystem::path& folder, const CommonOptions& common) {
  if (settings.workers < 1 || settings.rounds < 1) return Status::InvalidArgument("--workers and --rounds must be at least 1");
  ASSIGN_OR_RETURN(std::filesystem::path prompt_dir, FindPromptDir(ProcessEnvironment()));
  ASSIGN_OR_RETURN(PromptLibrary prompts, PromptLibrary::Load(prompt_dir));
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) return Status::IoError("cannot create " + folder.string() + ": " + ec.message());
  Json stage = {{"task", task.path.string()}, {"settings", settings.ToJson()}, {"mode", ToString(eval_options.mode)},
                {"precision", ToString(eval_options.precision)}, {"timeout_s", eval_options.timeout_s},
                {"compile_baseline", eval_options.time_compiled_reference}};
  RETURN_IF_ERROR(WriteFile(folder / "stage.json", stage.dump(1)));

  const std::string run_id = StageRunId(task, folder);
  Store* store = workspace.store();
  if (store != nullptr && !store->GetRun(run_id).ok()) (void)store->StartRun(run_id, "optimize --llm", settings.ToJson());
  ASSIGN_OR_RETURN(std::unique_ptr<LimitedProvider> provider, MakeStageProvider(settings, store, run_id));

  WriterBrief brief;
  brief.task = task;
  brief.device = workspace.device();
  brief.target = TargetDescription(workspace.device(), workspace.gpu_name());
  brief.mode = ToString(eval_options.mode);
  brief.precision = ToString(eval_options.precision);
  brief.ir_summary = start.ir_summary;
  brief.starting_candidate = start.compiler_candidate;

  PoolOptions options;
  options.writers = settings.workers;
  options.max_rounds = settings.rounds;
  options.budget.max_usd = settings.budget_usd;
  options.budget.max_seconds = settings.budget_s;

  Evaluator evaluator(workspace.workers(), eval_options);
  const std::string origin = "llm:" + settings.llm;
  SerialJudge judge(evaluator, [&](const TaskFile& judged, const std::filesystem::path& candidate, const Evaluation& evaluation) {
    auto source = ReadFile(candidate);
    if (source.ok()) (void)workspace.Record(judged, *source, origin, evaluation, brief.precision, brief.mode);
  });
  if (!common.quiet) {
    LogInfo("LLM stage: {} writer(s) x {} round(s) with {}; rounds in {}", settings.workers, settings.rounds, settings.llm,
            folder.string());
  }
  WriterPool pool(options, brief, prompts, *provider, judge, folder,
                  [&](const AttemptRecord& attempt, const PoolProgress& progress) { PrintProgress(attempt, progress, common.quiet); });
  PoolResult result = pool.Run();
  if (store != nullptr) (void)store->FinishRun(run_id, result.status.ok() ? "succeeded" : "failed");
  RETURN_IF_ERROR(result.status);

  UsageTotals usage = provider->Totals();
  AgentOutcome outcome;
  outcome.report = {{"settings", settings.ToJson()}, {"folder", folder.string()},  {"run_id", run_id},
                    {"summary", result.Summary()},   {"stop_reason", result.stop_reason},
                    {"pool", result.ToJson()},
                    {"usage", {{"calls", usage.calls}, {"failures", usage.failures}, {"prompt_tokens", usage.prompt_tokens},
                               {"completion_tokens", usage.completion_tokens}, {"cost_usd", usage.cost_usd},
                               {"unpriced_calls", usage.unpriced_calls}}}};
  if (result.best) {
    outcome.best_source = result.best->source;
    outcome.best_evaluation = result.best->evaluation;
  }
  if (!common.quiet) LogInfo("LLM stage: {}", result.Summary());
  return outcome;
}

Result<std::filesystem::path> WriteDescribedTask(Workspace& workspace, const std::string& description,
                                                 const AgentSettings& settings, const std::filesystem::path& out_dir,
                                                 const CommonOptions& common) {
  ASSIGN_OR_RETURN(std::filesystem::path prompt_dir, FindPromptDir(ProcessEnvironment()));
  ASSIGN_OR_RETURN(PromptLibrary prompts, PromptLibrary::Load(prompt_dir));
  const std::string name = TaskNameFor(description);
  const std::filesystem::path path = out_dir / (name + ".py");
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  const std::string run_id = "describe-" + name;
  Store* store = workspace.store();
  if (store != nullptr && !store->GetRun(run_id).ok()) (void)store->StartRun(run_id, "optimize --describe", settings.ToJson());
  ASSIGN_OR_RETURN(std::unique_ptr<LimitedProvider> provider, MakeStageProvider(settings, store, run_id));
  ASSIGN_OR_RETURN(WorkerClient * trusted, workspace.workers().Trusted());
  // A version passes when the trusted worker can load, run and capture it like any task.
  auto check = [&](const std::string& source) -> Status {
    RETURN_IF_ERROR(WriteFile(path, source));
    ASSIGN_OR_RETURN(TaskFile task, ReadTaskFile(path));
    auto captured = trusted->Call("capture", Json{{"task_path", task.path.string()}, {"task_name", task.name},
                                                 {"cpu_sizes", workspace.device() == "cpu"}}, 600);
    return captured.ok() ? Status::Ok() : captured.status();
  };
  if (!common.quiet) LogInfo("asking {} to write the task \"{}\"", settings.llm, description);
  auto written = WriteTaskFromDescription(description, prompts, *provider, check);
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
