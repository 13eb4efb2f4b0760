#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "compiler/codegen/model_writer.h"
#include "compiler/ir/import_graph.h"
#include "compiler/passes/pipeline.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/log.h"
#include "report/text_report.h"

namespace kforge {
namespace {

struct OptimizeFlags {
  std::string task;
  std::string mode = "strict";
  std::string out = "out";
  double timeout_s = 300;
  bool json = false;
  std::vector<std::string> disabled_passes;
  bool dump_ir = false;
};

struct Compiled {
  std::string source;
  Json summary;  // groups and the time each stage took
  std::vector<passes::PassRecord> passes;
};

// Capture (worker), import, fusion planning and code generation: everything before the GPU.
Result<Compiled> Compile(WorkerClient& trusted, const TaskFile& task, bool cpu_sizes, Precision precision,
                         const passes::PipelineOptions& pipeline_options) {
  const Clock& clock = RealClock();
  double started = clock.NowSeconds();
  ASSIGN_OR_RETURN(Json captured, trusted.Call("capture", Json{{"task_path", task.path.string()}, {"task_name", task.name},
                                                              {"cpu_sizes", cpu_sizes}}, 600));
  double captured_at = clock.NowSeconds();
  ASSIGN_OR_RETURN(ir::Graph imported, ir::ImportGraph(captured));
  ASSIGN_OR_RETURN(passes::PipelineResult pipeline, passes::RunPipeline(std::move(imported), pipeline_options));
  const ir::Graph& graph = pipeline.graph;
  const passes::FusionPlan& plan = pipeline.plan;
  double planned_at = clock.NowSeconds();
  codegen::ModelWriterOptions writer_options;
  writer_options.fallback_unsupported = true;  // an op without a Triton form stays a library call (partial mode)
  // On the CPU the interpreter runs one fixed configuration: autotuning would measure nothing.
  writer_options.kernel.autotune = !cpu_sizes;
  writer_options.kernel.dot_precision = precision == Precision::kTf32 ? "tf32" : "ieee";
  auto source = codegen::WriteModelNew(graph, plan, writer_options);
  if (!source.ok()) return source.status().WithContext("generating code for " + task.name);
  Json groups = Json::array();
  for (const auto& group : plan.groups) {
    groups.push_back({{"name", group.name}, {"kind", passes::ToString(group.kind)}, {"nodes", group.nodes.size()}});
  }
  Json pass_times = Json::object();
  for (const auto& record : pipeline.passes) pass_times[record.name] = record.ran ? Json(record.seconds) : Json("disabled");
  Compiled compiled{*source,
                    {{"groups", groups}, {"capture_s", captured_at - started}, {"passes_s", planned_at - captured_at},
                     {"pass_s", pass_times}, {"codegen_s", clock.NowSeconds() - planned_at}},
                    std::move(pipeline.passes)};
  return compiled;
}

int RunOptimize(const OptimizeFlags& flags, const CommonOptions& common) {
  auto precision = ParsePrecision(common.precision);
  if (!precision) return UsageError("--precision must be fp32, tf32 or bf16");
  auto mode = ParseProvenanceMode(flags.mode);
  if (!mode) return UsageError("--mode must be strict or partial");
  auto task = ReadTaskFile(flags.task);
  if (!task.ok()) return UsageError(task.status().message());
  auto workspace = Workspace::OpenForDevice(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());
  auto trusted = (*workspace)->workers().Trusted();
  if (!trusted.ok()) return UsageError(trusted.status().message());

  if (!common.quiet) LogInfo("compiling {}", task->name);
  passes::PipelineOptions pipeline_options;
  pipeline_options.disabled.insert(flags.disabled_passes.begin(), flags.disabled_passes.end());
  pipeline_options.dump = flags.dump_ir;
  auto compiled = Compile(**trusted, *task, (*workspace)->device() == "cpu", *precision, pipeline_options);
  if (!compiled.ok()) return UsageError(compiled.status().message());
  std::filesystem::path folder = std::filesystem::path(flags.out) / task->path.stem();
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (flags.dump_ir) {
    std::filesystem::create_directories(folder / "ir", ec);
    int index = 0;
    for (const auto& record : compiled->passes) {
      if (!record.ran) continue;
      (void)WriteFile(folder / "ir" / fmt::format("{:02d}_{}.txt", ++index, record.name), record.dump);
    }
  }
  if (Status written = WriteFile(folder / "model_new.py", compiled->source); !written.ok()) return UsageError(written.message());

  if (!common.quiet) LogInfo("verifying and timing {} with the evaluator", (folder / "model_new.py").string());
  EvalOptions options;
  options.device = (*workspace)->device();
  options.precision = *precision;
  options.mode = *mode;
  options.timeout_s = flags.timeout_s;
  options.exchange_root = (*workspace)->ScratchDir() / "exchange";
  options.gpu_name = (*workspace)->gpu_name();
  options.budget = TimingBudgetFor(options.device);
  Evaluator evaluator((*workspace)->workers(), options);
  auto evaluation = evaluator.Evaluate(*task, folder / "model_new.py");
  if (!evaluation.ok()) return UsageError(evaluation.status().message());
  (void)(*workspace)->Record(*task, compiled->source, "codegen:triton", *evaluation, common.precision, flags.mode);
  Json report = {{"task", task->name}, {"model_new", (folder / "model_new.py").string()},
                 {"compile", compiled->summary}, {"evaluation", evaluation->ToJson()}};
  if (Status written = WriteFile(folder / "report.json", report.dump(1)); !written.ok()) return UsageError(written.message());
  if (flags.json) {
    std::printf("%s\n", report.dump().c_str());
  } else {
    std::printf("%s", FormatEvaluation(*evaluation).c_str());
    std::printf("kernels      %zu fused group(s); capture %.2f s, passes and codegen %.3f s\n",
                compiled->summary["groups"].size(), JsonGet<double>(compiled->summary, "capture_s", 0),
                JsonGet<double>(compiled->summary, "passes_s", 0) + JsonGet<double>(compiled->summary, "codegen_s", 0));
    std::printf("wrote        %s and report.json\n", (folder / "model_new.py").string().c_str());
  }
  return evaluation->verdict.accepted() ? 0 : (evaluation->verdict.kind == VerdictKind::kInfraError ? 2 : 1);
}

}  // namespace

CommandRunner AttachOptimize(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<OptimizeFlags>();
  app.add_option("task", flags->task, "KernelBench-format task file")->required();
  app.add_option("--mode", flags->mode, "strict: every FLOP in generated kernels; partial: library GEMM/convolution allowed")
      ->capture_default_str();
  app.add_option("--out", flags->out, "folder for <task>/model_new.py and report.json")->capture_default_str();
  app.add_option("--timeout", flags->timeout_s, "seconds the generated candidate's evaluation may take")->capture_default_str();
  app.add_flag("--json", flags->json, "print the report as JSON");
  app.add_option("--disable-pass", flags->disabled_passes, "skip a compiler pass (decompose, dead_code, fuse); repeatable");
  app.add_flag("--dump-ir", flags->dump_ir, "write the IR after each pass to <out>/<task>/ir/");
  return [flags, &common] { return RunOptimize(*flags, common); };
}

}  // namespace kforge
