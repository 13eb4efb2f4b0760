#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/optimize.h"
#include "cli/task_compiler.h"
#include "compiler/codegen/model_writer.h"
#include "core/files.h"
#include "core/log.h"
#include "report/text_report.h"
#include "search/compiler_candidate.h"
#include "search/cuda_tuning.h"
#include "search/precision_ladder.h"

namespace kforge {
namespace {

struct OptimizeFlags {
  std::string task;
  std::string out = "out";
  std::string describe;  // a plain-language task for the model to write, instead of `task`
  std::string budget;    // the LLM stage's wall-time budget, as written
  std::string budget_gpu;  // its device-time budget, as written
  std::vector<std::string> llm_for;  // ROLE=SPEC, as written
  bool json = false;
  OptimizeSettings settings;
};

codegen::ModelWriterOptions WriterOptions(bool on_cpu, const DotPrecisionStep& dots, codegen::GraphReplay replay) {
  codegen::ModelWriterOptions writer_options;
  // On the CPU no forward is captured: "auto" writes the plain forward there.
  writer_options.graph_replay = on_cpu && replay == codegen::GraphReplay::kAuto ? codegen::GraphReplay::kNever : replay;
  writer_options.fallback_unsupported = true;  // an op without a Triton form stays a library call (partial mode)
  // On the CPU the interpreter runs one fixed configuration: autotuning would measure nothing.
  writer_options.kernel.autotune = !on_cpu;
  writer_options.compile_ahead = !on_cpu;  // nor does it compile anything
  writer_options.kernel.cuda_ieee_kernels = !on_cpu && dots.cuda;  // NVRTC's kernels run only on a GPU
  writer_options.kernel.dot_precision = dots.gemm;
  writer_options.kernel.attention_dot_precision = dots.attention;
  writer_options.kernel.attention_input_dot_precision = dots.inputs();
  writer_options.kernel.attention_value_dot_precision = dots.values();
  return writer_options;
}

// Each graph's IR after every pass, under <folder>/ir/ (a submodule's under ir/<submodule>/).
void DumpIr(const CompiledTask& compiled, const std::filesystem::path& folder) {
  for (const CompiledGraph& graph : compiled.graphs) {
    std::filesystem::path dir = graph.submodule.empty() ? folder / "ir" : folder / "ir" / graph.submodule;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    int index = 0;
    for (const auto& record : graph.passes) {
      if (!record.ran) continue;
      (void)WriteFile(dir / fmt::format("{:02d}_{}.txt", ++index, record.name), record.dump);
    }
  }
}

}  // namespace

Result<Json> OptimizeTask(Workspace& workspace, const TaskFile& task, const OptimizeSettings& settings,
                          const CommonOptions& common) {
  auto precision = ParsePrecision(common.precision);
  if (!precision) return Status::InvalidArgument("--precision must be fp32, tf32 or bf16");
  auto mode = ParseProvenanceMode(settings.mode);
  if (!mode) return Status::InvalidArgument("--mode must be strict or partial");
  codegen::GraphReplay replay;
  if (!codegen::ParseGraphReplay(settings.graph_replay, replay)) {
    return Status::InvalidArgument("--graph-replay must be auto, always or never");
  }
  ASSIGN_OR_RETURN(WorkerClient * trusted, workspace.workers().Trusted());
  // The LLM stage's provider is made and checked first: a missing key, an unreachable server or a
  // refused key end the run in seconds, not after the compiler's stage.
  StageProvider provider;
  const std::filesystem::path stage_folder = settings.folder / "llm";
  if (!settings.agents.llm.empty()) {
    ASSIGN_OR_RETURN(provider, ConnectStageProvider(settings.agents, workspace.store(), StageRunId(task, stage_folder),
                                                    "optimize --llm", stage_folder, common));
  }
  if (!common.quiet) LogInfo("compiling {}", task.name);
  bool on_cpu = workspace.device() == "cpu";
  CompileOptions compile_options;
  compile_options.cpu_sizes = on_cpu;
  compile_options.allow_partial = *mode == ProvenanceMode::kPartial;
  compile_options.pipeline.disabled.insert(settings.disabled_passes.begin(), settings.disabled_passes.end());
  compile_options.pipeline.dump = settings.dump_ir;
  ASSIGN_OR_RETURN(CompiledTask compiled, CompileTask(*trusted, task, compile_options));
  const std::filesystem::path& folder = settings.folder;
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (settings.dump_ir) DumpIr(compiled, folder);

  EvalOptions options = workspace.EvalDefaults(settings.fresh_baselines);
  options.precision = *precision;
  options.mode = *mode;
  options.timeout_s = settings.timeout_s;
  // torch.compile of the reference is timed where timings mean something (not the interpreter).
  options.time_compiled_reference = settings.compile_baseline && options.device != "cpu";
  Evaluator evaluator(workspace.workers(), options);

  auto evaluate = [&](const std::string& candidate) -> Result<Evaluation> {
    RETURN_IF_ERROR(WriteFile(folder / "model_new.py", candidate));
    if (!common.quiet) LogInfo("verifying and timing {} with the evaluator", (folder / "model_new.py").string());
    ASSIGN_OR_RETURN(Evaluation result, evaluator.Evaluate(task, folder / "model_new.py"));
    (void)workspace.Record(task, candidate, "codegen:triton", result, common.precision, settings.mode);
    return result;
  };
  CompilerCandidateHooks hooks;
  hooks.write = [&](const DotPrecisionStep& step, const std::map<std::string, codegen::TileChoice>& tuned,
                    bool replay_undecided, codegen::WriteNotes* notes) -> Result<std::string> {
    codegen::ModelWriterOptions writer = WriterOptions(on_cpu, step, replay);
    writer.kernel.tuned = tuned;
    writer.replay_undecided = replay_undecided;
    return WriteCandidate(compiled, task, writer, notes);
  };
  hooks.evaluate = evaluate;
  hooks.keep = [&](const std::string& candidate) { return WriteFile(folder / "model_new.py", candidate); };
  if (!common.quiet) hooks.log = [](const std::string& line) { LogInfo("{}", line); };
  if (!on_cpu) {
    hooks.tune_cuda = [&](const std::vector<codegen::CudaTuning>& jobs) -> Result<CudaTuningOutcome> {
      ASSIGN_OR_RETURN(WorkerClient * tuner, workspace.workers().Tuner());
      Result<CudaTuningOutcome> outcome = TuneCudaKernels(*tuner, jobs, kCudaTuningTimeoutS);
      workspace.workers().ReleaseTuner();  // its context and memory go back before the candidate runs
      return outcome;
    };
  }
  ASSIGN_OR_RETURN(CompilerCandidate chosen, ChooseCompilerCandidate(DotPrecisionLadder(*precision, on_cpu), workspace.store(),
                                                                     workspace.gpu_name(), hooks));
  const std::string& source = chosen.source;
  Evaluation& evaluation = chosen.evaluation;
  compiled.summary["codegen_s"] = chosen.codegen_s;
  compiled.summary["left_to_pytorch"] = LeftToPyTorch(compiled, chosen.no_kernel);
  compiled.summary["tuning"] = chosen.tuning.ToJson();
  if (!chosen.cuda_tuning.empty()) compiled.summary["cuda_tuning"] = chosen.cuda_tuning;
  compiled.summary["attempts"] = chosen.attempts;
  compiled.summary["graph_replay"] = source.find("self.kf_replay(") != std::string::npos;
  Json report = {{"task", task.name},          {"model_new", (folder / "model_new.py").string()},
                 {"mode", settings.mode},      {"graph_replay", settings.graph_replay},
                 {"compile", compiled.summary}, {"source", "compiler"}};
  if (!workspace.gpu_name().empty()) report["gpu"] = workspace.gpu_name();  // which card the timings are of
  if (!settings.agents.llm.empty()) {
    AgentStart start;
    start.ir_summary = IrSummary(compiled);
    start.compiler_candidate = source;
    start.compiler_evaluation = evaluation;
    if (compiled.whole()) {  // decomposition works on one graph; a partial candidate is improved whole
      start.graph = &compiled.graphs.front().graph;
      start.plan = &compiled.graphs.front().plan;
    }
    start.writer_options = WriterOptions(on_cpu, chosen.precision, replay);
    ASSIGN_OR_RETURN(AgentOutcome agents,
                     RunAgentStage(workspace, task, settings.agents, start, options, stage_folder, provider, common));
    report["llm"] = agents.report;
    report["compiler_evaluation"] = evaluation.ToJson();
    report["source_reason"] = ExplainCandidateChoice(agents.best_evaluation, evaluation);
    if (agents.best_evaluation && ReplacesCompilerCandidate(*agents.best_evaluation, evaluation)) {
      RETURN_IF_ERROR(WriteFile(folder / "model_new.py", *agents.best_source));
      evaluation = *agents.best_evaluation;
      report["source"] = "llm";
    }
  }
  report["evaluation"] = evaluation.ToJson();
  RETURN_IF_ERROR(WriteFile(folder / "report.json", report.dump(1)));
  report["text"] = FormatEvaluation(evaluation);
  return report;
}

namespace {

// Which submodules run generated kernels and what stays PyTorch, for a Model not captured whole.
void PrintPartial(const Json& partial) {
  std::vector<std::string> compiled;
  for (const Json& name : JsonField(partial, "compiled")) compiled.push_back(name.get<std::string>());
  std::printf("partial      the Model was not captured whole: %s\n", JsonGet<std::string>(partial, "export_error", "").c_str());
  std::printf("compiled     %s (generated kernels)\n", fmt::format("{}", fmt::join(compiled, ", ")).c_str());
  std::printf("pytorch      the Model's own forward\n");
  for (const Json& kept : JsonField(partial, "pytorch")) {
    std::printf("             %s: %s\n", JsonGet<std::string>(kept, "name", "").c_str(),
                JsonGet<std::string>(kept, "reason", "").c_str());
  }
}

// How the GEMM-shaped kernels got their tile configurations (nothing without any).
void PrintTuning(const TuningSummary& tuning) {
  if (tuning.kernels == 0) return;
  std::printf("tuning       %lld kernel(s): %lld from the store, %lld measured in %.1f s%s; %s\n", static_cast<long long>(tuning.kernels),
              static_cast<long long>(tuning.from_store), static_cast<long long>(tuning.measured), tuning.tuning_s,
              tuning.cuda_measured > 0 ? fmt::format(", {} CUDA kernel(s) by the tuner in {:.1f} s", tuning.cuda_measured,
                                                     tuning.cuda_tuning_s).c_str()
                                       : "",
              tuning.baked ? "configurations baked into model_new.py" : "model_new.py still autotunes on its first call");
}

// Prints the report (or its JSON) and returns the exit status of its verdict.
int PrintOptimizeReport(Json report, const std::filesystem::path& folder, bool json) {
  std::string text = JsonGet<std::string>(report, "text", "");
  report.erase("text");
  const Json& compile = report["compile"];
  if (json) {
    std::printf("%s\n", report.dump().c_str());
  } else {
    std::printf("%s", text.c_str());
    std::printf("kernels      %zu fused group(s); capture %.2f s, passes and codegen %.3f s\n", compile["groups"].size(),
                JsonGet<double>(compile, "capture_s", 0),
                JsonGet<double>(compile, "passes_s", 0) + JsonGet<double>(compile, "codegen_s", 0));
    if (compile.contains("partial")) PrintPartial(compile["partial"]);
    PrintTuning(TuningSummary::FromJson(JsonField(compile, "tuning")));
    if (report.contains("llm")) {
      const Json& usage = report["llm"]["usage"];
      int64_t estimated = JsonGet<int64_t>(usage, "estimated_tokens", 0);
      std::string unreported = estimated == 0 ? "" : fmt::format(" (and at most {} tokens, ${:.4f}, of timed-out attempts, estimated)",
                                                                 estimated, JsonGet<double>(usage, "estimated_cost_usd", 0));
      std::printf("llm          %s; %lld call(s), %lld tokens, $%.4f%s\n", JsonGet<std::string>(report["llm"], "summary", "").c_str(),
                  static_cast<long long>(JsonGet<int64_t>(usage, "calls", 0)),
                  static_cast<long long>(JsonGet<int64_t>(usage, "prompt_tokens", 0) + JsonGet<int64_t>(usage, "completion_tokens", 0)),
                  JsonGet<double>(usage, "cost_usd", 0), unreported.c_str());
      std::printf("source       model_new.py is the %s's candidate: %s\n",
                  JsonGet<std::string>(report, "source", "compiler") == "llm" ? "LLM stage" : "compiler",
                  JsonGet<std::string>(report, "source_reason", "").c_str());
    }
    std::printf("wrote        %s and report.json\n", (folder / "model_new.py").string().c_str());
  }
  // A fatal model call failure (a refused key, an exhausted quota) ends with status 2 even when the
  // compiler's candidate was accepted: the user asked for an LLM stage that could not run.
  std::string fatal = JsonGet<std::string>(JsonField(report, "llm"), "fatal", "");
  if (!fatal.empty()) {
    std::fprintf(stderr, "kforge: error: the LLM stage stopped: %s\n", fatal.c_str());
    return 2;
  }
  std::string verdict = JsonGet<std::string>(report["evaluation"], "verdict_kind", "");
  return verdict == "accepted" ? 0 : (verdict == "infra_error" ? 2 : 1);
}

int RunOptimize(const OptimizeFlags& flags, const CommonOptions& common) {
  if (flags.task.empty() == flags.describe.empty()) return UsageError("give a task file or --describe \"...\" (one of them)");
  if (!flags.describe.empty() && flags.settings.agents.llm.empty()) {
    return UsageError("--describe needs --llm: a model writes the task from the description");
  }
  OptimizeSettings settings = flags.settings;
  for (const std::string& role_spec : flags.llm_for) {
    size_t equals = role_spec.find('=');
    if (equals == std::string::npos) return UsageError("--llm-for takes ROLE=SPEC, as in optimize=anthropic:claude-opus-4-1, not '" + role_spec + "'");
    settings.agents.role_llms[role_spec.substr(0, equals)] = role_spec.substr(equals + 1);
  }
  if (!settings.agents.role_llms.empty() && settings.agents.llm.empty()) {
    return UsageError("--llm-for needs --llm: the model of every role without one of its own");
  }
  if (!settings.agents.llm.empty()) {
    if (Status valid = settings.agents.Validate(); !valid.ok()) return UsageError(valid.message());
  }
  if (!flags.budget.empty()) {
    auto budget = ParseDuration(flags.budget);
    if (!budget.ok()) return UsageError("--budget: " + budget.status().message());
    settings.agents.budget_s = *budget;
  }
  if (!flags.budget_gpu.empty()) {
    auto budget = ParseDuration(flags.budget_gpu);
    if (!budget.ok()) return UsageError("--budget-gpu: " + budget.status().message());
    settings.agents.budget_gpu_s = *budget;
  }
  auto workspace = Workspace::OpenForCandidates(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());
  if (!settings.agents.llm.empty()) {
    settings.agents.evaluators = (*workspace)->SlotCount(settings.agents.evaluators);
    // More evaluators than GPUs is refused here, before the compiler's stage.
    if (auto slots = (*workspace)->EvaluatorSlots(settings.agents.evaluators); !slots.ok()) {
      return UsageError(slots.status().message());
    }
  }
  std::filesystem::path task_path = flags.task;
  if (!flags.describe.empty()) {
    auto written = WriteDescribedTask(**workspace, flags.describe, settings.agents, flags.out, common);
    if (!written.ok()) return UsageError("--describe: " + written.status().message());
    task_path = *written;
  }
  auto task = ReadTaskFile(task_path);
  if (!task.ok()) return UsageError(task.status().message());
  settings.folder = std::filesystem::path(flags.out) / task->path.stem();
  auto report = OptimizeTask(**workspace, *task, settings, common);
  if (!report.ok()) return UsageError(report.status().message());
  return PrintOptimizeReport(std::move(*report), settings.folder, flags.json);
}

struct ResumeFlags {
  std::string folder;
  bool json = false;
};

// Runs optimize again as an interrupted `optimize --llm` was asked to: the compiler's stage is
// redone (seconds), the LLM stage continues in its folder without paying for recorded replies.
int RunResume(const ResumeFlags& flags, CommonOptions common) {
  const std::filesystem::path folder(flags.folder);
  auto text = ReadFile(folder / "llm" / "stage.json");
  if (!text.ok()) return UsageError(fmt::format("{} holds no LLM stage to resume (no llm/stage.json)", folder.string()));
  auto stage = ParseJson(*text, (folder / "llm" / "stage.json").string());
  if (!stage.ok()) return UsageError(stage.status().message());
  auto task = ReadTaskFile(JsonGet<std::string>(*stage, "task", ""));
  if (!task.ok()) return UsageError(task.status().message());
  OptimizeSettings settings;
  settings.folder = folder;
  settings.agents = AgentSettings::FromJson(JsonField(*stage, "settings"));
  settings.mode = JsonGet<std::string>(*stage, "mode", settings.mode);
  settings.timeout_s = JsonGet<double>(*stage, "timeout_s", settings.timeout_s);
  settings.compile_baseline = JsonGet<bool>(*stage, "compile_baseline", settings.compile_baseline);
  common.precision = JsonGet<std::string>(*stage, "precision", common.precision);
  auto workspace = Workspace::OpenForCandidates(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());
  auto report = OptimizeTask(**workspace, *task, settings, common);
  if (!report.ok()) return UsageError(report.status().message());
  return PrintOptimizeReport(std::move(*report), folder, flags.json);
}

}  // namespace

void AddTimingFlags(CLI::App& app, OptimizeSettings& settings) {
  app.add_flag("--no-compile-baseline{false}", settings.compile_baseline,
               "do not time torch.compile of the reference (it is timed on a GPU by default)");
  app.add_flag("--fresh-baselines", settings.fresh_baselines,
               "time eager and torch.compile again instead of reusing their stored timings from this machine");
  app.add_option("--graph-replay", settings.graph_replay,
                 "replay the generated forward as one CUDA graph: auto (on a GPU, when it launches enough kernels for "
                 "their host cost to show), always, never")
      ->capture_default_str();
}

CommandRunner AttachOptimize(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<OptimizeFlags>();
  app.add_option("task", flags->task, "KernelBench-format task file (or --describe)");
  app.add_option("--describe", flags->describe,
                 "instead of a task file, a plain-language description (\"row-wise softmax over 4096x8192 fp32\"): "
                 "the --llm model writes the task to <out>/<name>.py, then optimize proceeds");
  app.add_option("--mode", flags->settings.mode, "strict: every FLOP in generated kernels; partial: library calls allowed, and a Model torch.export "
                 "cannot capture whole is compiled by its exportable submodules, the rest staying PyTorch")
      ->capture_default_str();
  app.add_option("--out", flags->out, "folder for <task>/model_new.py and report.json")->capture_default_str();
  app.add_option("--timeout", flags->settings.timeout_s, "seconds the generated candidate's evaluation may take")->capture_default_str();
  app.add_flag("--json", flags->json, "print the report as JSON");
  // One pass per occurrence, so the option never swallows the task file that follows it.
  app.add_option("--disable-pass", flags->settings.disabled_passes, "skip a compiler pass (recurrence, attention, attention_products, decompose, copies, epilogues, dead_code, concatenations, fuse); repeatable")
      ->expected(1)
      ->allow_extra_args(false);
  app.add_flag("--dump-ir", flags->settings.dump_ir, "write the IR after each pass to <out>/<task>/ir/");
  AddTimingFlags(app, flags->settings);
  AgentSettings& agents = flags->settings.agents;
  app.add_option("--llm", agents.llm,
                 "after the compiler, LLM kernel writers: openai:MODEL, anthropic:MODEL, compat:MODEL (OpenAI-compatible "
                 "server at KFORGE_LLM_BASE_URL), command:CMD (prompt on stdin, reply on stdout) or replay:CASSETTE");
  app.add_option("--llm-for", flags->llm_for,
                 "ROLE=SPEC: a model of its own for one role: write (the first program and its repairs), optimize "
                 "(speed-ups and recombinations) or describe (--describe); repeatable; the others use --llm's")
      ->expected(1)
      ->allow_extra_args(false);
  app.add_option("--llm-config", agents.llm_config, "JSON file with keys, base URLs, prices and concurrency per provider");
  app.add_option("--workers", agents.workers, "kernel writers in parallel")->capture_default_str();
  app.add_option("--rounds", agents.rounds, "rounds (write, repair, speed up) per writer")->capture_default_str();
  app.add_option("--budget-usd", agents.budget_usd,
                 "stop starting rounds once the calls cost this much (0: no limit); for a model with no known price, "
                 "enforced as tokens at the highest listed price");
  app.add_option("--budget-tokens", agents.budget_tokens,
                 "stop starting rounds once the calls used this many prompt and completion tokens (0: no limit)");
  app.add_option("--budget", flags->budget, "stop starting rounds after this long: 90s, 30m, 2h");
  app.add_option("--budget-gpu", flags->budget_gpu,
                 "stop starting rounds once the evaluations took this much device time, over every evaluator: 90s, 30m");
  app.add_option("--evaluators,--gpus", agents.evaluators,
                 "evaluations at once, one per GPU (each sees only its own GPU; all, or 0: every GPU visible; on the "
                 "CPU, that many worker sets)")
      ->transform(CLI::Transformer({{"all", "0"}}))
      ->capture_default_str();
  app.add_option("--record", agents.record, "also write every model call to this cassette (replay it with replay:FILE)");
  app.add_option("--route", agents.route,
                 "auto: the router picks whole-program generation or decomposition into the compiler's fusion groups "
                 "(the other is the fallback); whole; decompose")->capture_default_str();
  app.add_option("--strategy", agents.strategy,
                 "greedy: each writer follows its own line; beam: before each round a writer continues from one of "
                 "the --beam-width fastest accepted candidates of all writers; evolve: islands of writers by approach, "
                 "each keeping its --beam-width fastest, mutated by the speed-up prompt, the fastest migrating between "
                 "islands, candidates of two islands recombined, and a decomposition's parts crossed over in several "
                 "compositions. Under beam and evolve every writer is told how the others' attempts failed")
      ->capture_default_str();
  app.add_option("--beam-width", agents.beam_width, "beam: how many of the fastest candidates are kept; evolve: per island")
      ->capture_default_str();
  app.add_option("--patience", agents.patience, "speed-up rounds in a row without a faster candidate before a writer stops")
      ->capture_default_str();
  app.add_option("--min-gain", agents.min_gain,
                 "a faster candidate replaces the best only when faster by this fraction (0.02: 2%)")->capture_default_str();
  app.add_flag("!--no-kernel-counters", agents.kernel_counters,
               "on a GPU, do not read each candidate's kernels' hardware counters with Nsight Compute for the speed-up "
               "prompt (they cost up to a minute per candidate)");
  return [flags, &common] { return RunOptimize(*flags, common); };
}

CommandRunner AttachResume(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<ResumeFlags>();
  app.add_option("folder", flags->folder, "the task's output folder of an interrupted optimize --llm (out/<task>)")->required();
  app.add_flag("--json", flags->json, "print the report as JSON");
  return [flags, &common] { return RunResume(*flags, common); };
}

}  // namespace kforge
