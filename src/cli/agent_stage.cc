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

// How often the live status is written while nothing else happens (waits, long calls).
constexpr double kLiveStatusPeriodS = 5;

// The prompt templates shipped with kforge (or KFORGE_PROMPTS's).
Result<PromptLibrary> LoadShippedPrompts() {
  ASSIGN_OR_RETURN(std::filesystem::path prompt_dir, FindPromptDir(ProcessEnvironment()));
  return PromptLibrary::Load(prompt_dir);
}

// Starts `run_id` in the store unless a run by that id exists (a resumed stage keeps its run).
void StartRunOnce(Store* store, const std::string& run_id, const std::string& command, const Json& config) {
  if (store != nullptr && !store->GetRun(run_id).ok()) (void)store->StartRun(run_id, command, config);
}

}  // namespace

std::string StageRunId(const TaskFile& task, const std::filesystem::path& folder) {
  return fmt::format("llm-{}-{}", task.path.stem().string(),
                     Sha256Hex(std::filesystem::absolute(folder).lexically_normal().string()).substr(0, 12));
}

Result<StageProvider> ConnectStageProvider(const AgentSettings& settings, Store* store, const std::string& run_id,
                                           const std::string& command, const std::filesystem::path& folder,
                                           const CommonOptions& common) {
  RETURN_IF_ERROR(settings.Validate());
  ASSIGN_OR_RETURN(LlmConfig config, LoadLlmConfig(settings.llm_config, ProcessEnvironment()));
  std::vector<ProviderSpec> specs;
  ASSIGN_OR_RETURN(ProviderSpec main, ParseProviderSpec(settings.llm));
  specs.push_back(main);
  for (const auto& [role, text] : settings.role_llms) {
    Result<ProviderSpec> spec = ParseProviderSpec(text);
    if (!spec.ok()) return spec.status().WithContext("--llm-for " + role);
    specs.push_back(*spec);
  }
  Json run_config = settings.ToJson();
  run_config["folder"] = std::filesystem::absolute(folder).lexically_normal().string();
  StartRunOnce(store, run_id, command, run_config);
  StageProvider stage;
  stage.activity = std::make_shared<CallActivity>();
  ASSIGN_OR_RETURN(stage.provider, MakeRoutedProvider(settings.llm, settings.SpecsByCallKind(), config, store, run_id,
                                                      settings.record, stage.activity));
  ProviderCheck check = stage.provider->Check();
  if (!check.status.ok()) {
    if (store != nullptr) (void)store->FinishRun(run_id, "failed");
    return check.status.WithContext("--llm " + settings.llm);
  }
  stage.max_tokens = StageTokenBudget(settings, specs, config, check.notes);
  if (!common.quiet) {
    for (const std::string& note : check.notes) LogInfo("note: {}", note);
    for (const auto& [kind, spec] : settings.SpecsByCallKind()) LogInfo("note: {} calls go to {}", kind, spec);
  }
  return stage;
}

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
  ASSIGN_OR_RETURN(WorkerClient * trusted, workspace.workers().Trusted());
  SearchServices services{prompts, *provider.provider, judge,
                          [trusted](const std::string& source, const std::string& prefix) -> Result<std::string> {
                            ASSIGN_OR_RETURN(Json renamed, trusted->Call("prefix_names", Json{{"source", source}, {"prefix", prefix}}, 60));
                            return JsonGet<std::string>(renamed, "source", "");
                          },
                          &live, provider.max_tokens, common.quiet};
  if (!common.quiet) {
    LogInfo("LLM stage: {} writer(s) x {} round(s) with {}, strategy {}; {} first; {} evaluation(s) at once; rounds in {}",
            settings.workers, settings.rounds, settings.llm, settings.strategy, ToString(routes.front()), judge.slots(),
            folder.string());
  }

  Result<SearchOutcome> searched = RunAgentSearch(settings, start, brief, folder, services);
  bool failed = !searched.ok() || !searched->fatal.empty();
  live.Finish(failed ? "failed" : "finished");
  if (store != nullptr) (void)store->FinishRun(run_id, failed ? "failed" : "succeeded");
  RETURN_IF_ERROR(searched.status());

  AgentOutcome outcome;
  outcome.report = searched->report;
  outcome.report["settings"] = settings.ToJson();
  outcome.report["folder"] = folder.string();
  outcome.report["run_id"] = run_id;
  outcome.fatal = searched->fatal;
  UsageTotals usage = provider.provider->Totals();
  outcome.report["summary"] = fmt::format("{}", fmt::join(searched->summaries, "; "));
  outcome.report["usage"] = {{"calls", usage.calls}, {"failures", usage.failures}, {"prompt_tokens", usage.prompt_tokens},
                             {"completion_tokens", usage.completion_tokens}, {"cost_usd", usage.cost_usd},
                             {"unpriced_calls", usage.unpriced_calls},
                             // what attempts without a usage report (timeouts) may have been billed: an estimate
                             {"estimated_tokens", usage.estimated_tokens}, {"estimated_cost_usd", usage.estimated_cost_usd}};
  outcome.report["evaluators"] = {{"slots", judge.slots()}, {"peak_at_once", judge.peak_concurrency()},
                                  {"device_seconds", judge.busy_seconds()}};
  outcome.best_source = searched->best_source;
  outcome.best_evaluation = searched->best_evaluation;
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
  ASSIGN_OR_RETURN(StageProvider provider, ConnectStageProvider(settings, store, run_id, "optimize --describe", out_dir, common));
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
