#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "agents/attempt.h"
#include "cli/commands.h"
#include "cli/optimize.h"
#include "compiler/codegen/model_writer.h"
#include "compiler/ir/import_graph.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/pipeline.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/log.h"
#include "report/text_report.h"

namespace kforge {
namespace {

struct OptimizeFlags {
  std::string task;
  std::string out = "out";
  std::string describe;  // a plain-language task for the model to write, instead of `task`
  std::string budget;    // the LLM stage's wall-time budget, as written
  bool json = false;
  OptimizeSettings settings;
};

struct Compiled {
  ir::Graph graph;
  passes::FusionPlan plan;
  Json summary;  // groups and the time each stage took
  std::vector<passes::PassRecord> passes;
};

// Capture (worker), import and fusion planning: everything before code generation.
Result<Compiled> Compile(WorkerClient& trusted, const TaskFile& task, bool cpu_sizes,
                         const passes::PipelineOptions& pipeline_options) {
  const Clock& clock = RealClock();
  double started = clock.NowSeconds();
  ASSIGN_OR_RETURN(Json captured, trusted.Call("capture", Json{{"task_path", task.path.string()}, {"task_name", task.name},
                                                              {"cpu_sizes", cpu_sizes}}, 600));
  double captured_at = clock.NowSeconds();
  ASSIGN_OR_RETURN(ir::Graph imported, ir::ImportGraph(captured));
  ASSIGN_OR_RETURN(passes::PipelineResult pipeline, passes::RunPipeline(std::move(imported), pipeline_options));
  Json groups = Json::array();
  for (const auto& group : pipeline.plan.groups) {
    groups.push_back({{"name", group.name}, {"kind", passes::ToString(group.kind)}, {"nodes", group.nodes.size()}});
  }
  Json pass_times = Json::object();
  for (const auto& record : pipeline.passes) pass_times[record.name] = record.ran ? Json(record.seconds) : Json("disabled");
  return Compiled{std::move(pipeline.graph), std::move(pipeline.plan),
                  {{"groups", groups}, {"capture_s", captured_at - started}, {"passes_s", clock.NowSeconds() - captured_at},
                   {"pass_s", pass_times}},
                  std::move(pipeline.passes)};
}

// tl.dot's input precision for a task's policy. Under fp32 on a GPU the first try is three-pass
// TF32 (each operand split into a TF32 head and tail, the tail-by-tail product dropped): tensor
// cores at an error of fp32's order, judged by the evaluator at the fp32 tolerance like any
// candidate; plain IEEE (FMA) is the fallback. The interpreter computes every dot exactly.
std::vector<std::string> DotPrecisionsToTry(Precision precision, bool on_cpu) {
  if (precision == Precision::kTf32) return {"tf32"};
  if (on_cpu) return {"ieee"};
  return {"tf32x3", "ieee"};
}

codegen::ModelWriterOptions WriterOptions(bool on_cpu, const std::string& dot_precision) {
  codegen::ModelWriterOptions writer_options;
  writer_options.fallback_unsupported = true;  // an op without a Triton form stays a library call (partial mode)
  // On the CPU the interpreter runs one fixed configuration: autotuning would measure nothing.
  writer_options.kernel.autotune = !on_cpu;
  writer_options.kernel.dot_precision = dot_precision;
  return writer_options;
}

Result<std::string> Emit(const Compiled& compiled, const TaskFile& task, bool on_cpu, const std::string& dot_precision) {
  auto source = codegen::WriteModelNew(compiled.graph, compiled.plan, WriterOptions(on_cpu, dot_precision));
  if (!source.ok()) return source.status().WithContext("generating code for " + task.name);
  return *source;
}

bool UsesDot(const std::string& source) { return source.find("tl.dot(") != std::string::npos; }

// The graph after the passes, then its fusion groups: what the kernel writers are told.
std::string IrSummary(const Compiled& compiled) {
  std::string summary = "```\n" + ir::PrintGraph(compiled.graph) + "```\n\nFusion groups:\n";
  for (const auto& group : compiled.plan.groups) {
    summary += fmt::format("- {} ({}, {} node(s))\n", group.name, passes::ToString(group.kind), group.nodes.size());
  }
  return summary;
}

// Whether the LLM stage's best should replace the compiler's candidate: it is accepted, and the
// compiler's is not or is measurably slower (timings that mean nothing, on the CPU, decide nothing).
bool AgentsWin(const Evaluation& agents, const Evaluation& compiler) {
  if (!agents.verdict.accepted()) return false;
  return !compiler.verdict.accepted() || MeasurablyFaster(agents, compiler, /*min_gain=*/0);
}

}  // namespace

Result<Json> OptimizeTask(Workspace& workspace, const TaskFile& task, const OptimizeSettings& settings,
                          const CommonOptions& common) {
  auto precision = ParsePrecision(common.precision);
  if (!precision) return Status::InvalidArgument("--precision must be fp32, tf32 or bf16");
  auto mode = ParseProvenanceMode(settings.mode);
  if (!mode) return Status::InvalidArgument("--mode must be strict or partial");
  ASSIGN_OR_RETURN(WorkerClient * trusted, workspace.workers().Trusted());
  if (!common.quiet) LogInfo("compiling {}", task.name);
  passes::PipelineOptions pipeline_options;
  pipeline_options.disabled.insert(settings.disabled_passes.begin(), settings.disabled_passes.end());
  pipeline_options.dump = settings.dump_ir;
  bool on_cpu = workspace.device() == "cpu";
  ASSIGN_OR_RETURN(Compiled compiled, Compile(*trusted, task, on_cpu, pipeline_options));
  const std::filesystem::path& folder = settings.folder;
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (settings.dump_ir) {
    std::filesystem::create_directories(folder / "ir", ec);
    int index = 0;
    for (const auto& record : compiled.passes) {
      if (!record.ran) continue;
      (void)WriteFile(folder / "ir" / fmt::format("{:02d}_{}.txt", ++index, record.name), record.dump);
    }
  }

  EvalOptions options;
  options.device = workspace.device();
  options.precision = *precision;
  options.mode = *mode;
  options.timeout_s = settings.timeout_s;
  options.exchange_root = workspace.ScratchDir() / "exchange";
  options.gpu_name = workspace.gpu_name();
  options.budget = TimingBudgetFor(options.device);
  // torch.compile of the reference is timed where timings mean something (not the interpreter).
  options.time_compiled_reference = settings.compile_baseline && options.device != "cpu";
  Evaluator evaluator(workspace.workers(), options);

  const Clock& clock = RealClock();
  Json attempts = Json::array();
  std::optional<Evaluation> evaluation;
  std::string source, emitted_precision;
  for (const std::string& dot_precision : DotPrecisionsToTry(*precision, on_cpu)) {
    emitted_precision = dot_precision;
    double emit_started = clock.NowSeconds();
    ASSIGN_OR_RETURN(source, Emit(compiled, task, on_cpu, dot_precision));
    compiled.summary["codegen_s"] = clock.NowSeconds() - emit_started;
    RETURN_IF_ERROR(WriteFile(folder / "model_new.py", source));
    if (!common.quiet) LogInfo("verifying and timing {} with the evaluator", (folder / "model_new.py").string());
    ASSIGN_OR_RETURN(evaluation, evaluator.Evaluate(task, folder / "model_new.py"));
    (void)workspace.Record(task, source, "codegen:triton", *evaluation, common.precision, settings.mode);
    bool uses_dot = UsesDot(source);
    attempts.push_back({{"dot_precision", uses_dot ? dot_precision : "none"}, {"verdict", ToString(evaluation->verdict.kind)}});
    // Only a dot that lost accuracy is worth another precision; anything else would fail again.
    if (!uses_dot || evaluation->verdict.kind != VerdictKind::kWrongOutput) break;
    if (!common.quiet) LogInfo("  {} with tl.dot in {}; trying the next precision", ToString(evaluation->verdict.kind), dot_precision);
  }
  compiled.summary["attempts"] = attempts;
  Json report = {{"task", task.name}, {"model_new", (folder / "model_new.py").string()}, {"mode", settings.mode},
                 {"compile", compiled.summary}, {"source", "compiler"}};
  if (!settings.agents.llm.empty()) {
    AgentStart start;
    start.ir_summary = IrSummary(compiled);
    start.compiler_candidate = source;
    start.graph = &compiled.graph;
    start.plan = &compiled.plan;
    start.writer_options = WriterOptions(on_cpu, emitted_precision);
    ASSIGN_OR_RETURN(AgentOutcome agents, RunAgentStage(workspace, task, settings.agents, start, options, folder / "llm", common));
    report["llm"] = agents.report;
    report["compiler_evaluation"] = evaluation->ToJson();
    if (agents.best_evaluation && AgentsWin(*agents.best_evaluation, *evaluation)) {
      RETURN_IF_ERROR(WriteFile(folder / "model_new.py", *agents.best_source));
      evaluation = *agents.best_evaluation;
      report["source"] = "llm";
    }
  }
  report["evaluation"] = evaluation->ToJson();
  RETURN_IF_ERROR(WriteFile(folder / "report.json", report.dump(1)));
  report["text"] = FormatEvaluation(*evaluation);
  return report;
}

namespace {

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
    if (report.contains("llm")) {
      const Json& usage = report["llm"]["usage"];
      std::printf("llm          %s; %lld call(s), %lld tokens, $%.4f\n", JsonGet<std::string>(report["llm"], "summary", "").c_str(),
                  static_cast<long long>(JsonGet<int64_t>(usage, "calls", 0)),
                  static_cast<long long>(JsonGet<int64_t>(usage, "prompt_tokens", 0) + JsonGet<int64_t>(usage, "completion_tokens", 0)),
                  JsonGet<double>(usage, "cost_usd", 0));
      std::printf("source       model_new.py is the %s's candidate\n",
                  JsonGet<std::string>(report, "source", "compiler") == "llm" ? "LLM stage" : "compiler");
    }
    std::printf("wrote        %s and report.json\n", (folder / "model_new.py").string().c_str());
  }
  std::string verdict = JsonGet<std::string>(report["evaluation"], "verdict", "");
  return verdict == "accepted" ? 0 : (verdict == "infra_error" ? 2 : 1);
}

int RunOptimize(const OptimizeFlags& flags, const CommonOptions& common) {
  if (flags.task.empty() == flags.describe.empty()) return UsageError("give a task file or --describe \"...\" (one of them)");
  if (!flags.describe.empty() && flags.settings.agents.llm.empty()) {
    return UsageError("--describe needs --llm: a model writes the task from the description");
  }
  OptimizeSettings settings = flags.settings;
  if (!flags.budget.empty()) {
    auto budget = ParseDuration(flags.budget);
    if (!budget.ok()) return UsageError("--budget: " + budget.status().message());
    settings.agents.budget_s = *budget;
  }
  auto workspace = Workspace::OpenForDevice(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());
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
  auto workspace = Workspace::OpenForDevice(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());
  auto report = OptimizeTask(**workspace, *task, settings, common);
  if (!report.ok()) return UsageError(report.status().message());
  return PrintOptimizeReport(std::move(*report), folder, flags.json);
}

}  // namespace

CommandRunner AttachOptimize(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<OptimizeFlags>();
  app.add_option("task", flags->task, "KernelBench-format task file (or --describe)");
  app.add_option("--describe", flags->describe,
                 "instead of a task file, a plain-language description (\"row-wise softmax over 4096x8192 fp32\"): "
                 "the --llm model writes the task to <out>/<name>.py, then optimize proceeds");
  app.add_option("--mode", flags->settings.mode, "strict: every FLOP in generated kernels; partial: library GEMM/convolution allowed")
      ->capture_default_str();
  app.add_option("--out", flags->out, "folder for <task>/model_new.py and report.json")->capture_default_str();
  app.add_option("--timeout", flags->settings.timeout_s, "seconds the generated candidate's evaluation may take")->capture_default_str();
  app.add_flag("--json", flags->json, "print the report as JSON");
  // One pass per occurrence, so the option never swallows the task file that follows it.
  app.add_option("--disable-pass", flags->settings.disabled_passes, "skip a compiler pass (decompose, dead_code, fuse); repeatable")
      ->expected(1)
      ->allow_extra_args(false);
  app.add_flag("--dump-ir", flags->settings.dump_ir, "write the IR after each pass to <out>/<task>/ir/");
  app.add_flag("--no-compile-baseline{false}", flags->settings.compile_baseline,
               "do not time torch.compile of the reference (it is timed on a GPU by default)");
  AgentSettings& agents = flags->settings.agents;
  app.add_option("--llm", agents.llm,
                 "after the compiler, LLM kernel writers: openai:MODEL, anthropic:MODEL, compat:MODEL (OpenAI-compatible "
                 "server at KFORGE_LLM_BASE_URL), command:CMD (prompt on stdin, reply on stdout) or replay:CASSETTE");
  app.add_option("--llm-config", agents.llm_config, "JSON file with keys, base URLs, prices and concurrency per provider");
  app.add_option("--workers", agents.workers, "kernel writers in parallel")->capture_default_str();
  app.add_option("--rounds", agents.rounds, "rounds (write, repair, speed up) per writer")->capture_default_str();
  app.add_option("--budget-usd", agents.budget_usd, "stop starting rounds once the calls cost this much (0: no limit)");
  app.add_option("--budget", flags->budget, "stop starting rounds after this long: 90s, 30m, 2h");
  app.add_option("--record", agents.record, "also write every model call to this cassette (replay it with replay:FILE)");
  app.add_option("--route", agents.route,
                 "auto: the router picks whole-program generation or decomposition into the compiler's fusion groups "
                 "(the other is the fallback); whole; decompose")->capture_default_str();
  return [flags, &common] { return RunOptimize(*flags, common); };
}

CommandRunner AttachResume(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<ResumeFlags>();
  app.add_option("folder", flags->folder, "the task's output folder of an interrupted optimize --llm (out/<task>)")->required();
  app.add_flag("--json", flags->json, "print the report as JSON");
  return [flags, &common] { return RunResume(*flags, common); };
}

}  // namespace kforge
