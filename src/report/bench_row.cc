#include "report/bench_row.h"

#include <algorithm>

#include "core/files.h"
#include "report/bench_summary.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

}  // namespace

Json BenchRow::ToJson() const {
  return {{"task", task},
          {"level", level},
          {"verdict", verdict},
          {"message", message},
          {"candidate_ms", JsonOrNull(candidate_ms)},
          {"eager_ms", JsonOrNull(eager_ms)},
          {"compile_ms", JsonOrNull(compile_ms)},
          {"speedup_vs_eager", JsonOrNull(speedup_vs_eager)},
          {"speedup_vs_compile", JsonOrNull(speedup_vs_compile)},
          {"fraction_of_roofline", JsonOrNull(fraction_of_roofline)},
          {"flops", JsonOrNull(flops)},
          {"bytes", JsonOrNull(bytes)},
          {"peak_flops_per_s", JsonOrNull(peak_flops_per_s)},
          {"peak_bytes_per_s", JsonOrNull(peak_bytes_per_s)},
          {"timings_meaningful", timings_meaningful},
          {"compile_s", compile_s},
          {"startup_s", startup_s},
          {"tuning_s", tuning_s},
          {"tuning", tuning}};
}

BenchRow BenchRow::FromJson(const Json& json) {
  BenchRow row;
  row.task = JsonGet<std::string>(json, "task", "?");
  row.level = JsonGet<std::string>(json, "level", "");
  row.verdict = JsonGet<std::string>(json, "verdict", "error");
  row.message = JsonGet<std::string>(json, "message", "");
  row.candidate_ms = JsonNumber(json, "candidate_ms");
  row.eager_ms = JsonNumber(json, "eager_ms");
  row.compile_ms = JsonNumber(json, "compile_ms");
  row.speedup_vs_eager = JsonNumber(json, "speedup_vs_eager");
  row.speedup_vs_compile = JsonNumber(json, "speedup_vs_compile");
  row.fraction_of_roofline = JsonNumber(json, "fraction_of_roofline");
  row.flops = JsonNumber(json, "flops");
  row.bytes = JsonNumber(json, "bytes");
  row.peak_flops_per_s = JsonNumber(json, "peak_flops_per_s");
  row.peak_bytes_per_s = JsonNumber(json, "peak_bytes_per_s");
  // Summaries written before the field existed held only GPU timings.
  row.timings_meaningful = JsonGet<bool>(json, "timings_meaningful", row.speedup_vs_eager.has_value());
  row.compile_s = JsonGet<double>(json, "compile_s", 0);
  row.startup_s = JsonGet<double>(json, "startup_s", 0);
  row.tuning = JsonField(json, "tuning");
  row.tuning_s = JsonGet<double>(json, "tuning_s", JsonGet<double>(row.tuning, "tuning_s", 0));
  return row;
}

BenchRow RowFromReport(const Json& entry) {
  BenchRow row;
  row.task = JsonGet<std::string>(entry, "task", "?");
  row.level = JsonGet<std::string>(entry, "level", "");
  if (entry.contains("error")) {
    row.verdict = "error";
    row.message = JsonGet<std::string>(entry, "error", "");
    return row;
  }
  const Json& evaluation = JsonField(entry, "evaluation");
  const Json& evidence = JsonField(evaluation, "evidence");
  const Json& timing = JsonField(evidence, "timing");
  const Json& roofline = JsonField(evidence, "roofline");
  const Json& compile = JsonField(entry, "compile");
  row.verdict = JsonGet<std::string>(evaluation, "verdict", "error");
  row.message = JsonGet<std::string>(evaluation, "message", "");
  row.timings_meaningful = JsonGet<bool>(evaluation, "timings_meaningful", false);
  row.candidate_ms = JsonNumber(JsonField(evaluation, "candidate_ms"), "median");
  row.eager_ms = JsonNumber(JsonField(evaluation, "reference_ms"), "median");
  row.compile_ms = JsonNumber(JsonField(timing, "reference_compile_ms"), "median");
  row.speedup_vs_eager = JsonNumber(JsonField(evaluation, "speedup"), "speedup");
  row.speedup_vs_compile = JsonNumber(JsonField(timing, "speedup_vs_compile"), "speedup");
  row.fraction_of_roofline = JsonNumber(roofline, "fraction_of_roofline");
  row.flops = JsonNumber(roofline, "flops");
  row.bytes = JsonNumber(roofline, "bytes");
  row.peak_flops_per_s = JsonNumber(roofline, "peak_flops_per_s");
  row.peak_bytes_per_s = JsonNumber(roofline, "peak_bytes_per_s");
  row.compile_s = JsonGet<double>(compile, "capture_s", 0) + JsonGet<double>(compile, "passes_s", 0) +
                  JsonGet<double>(compile, "codegen_s", 0);
  row.startup_s = JsonGet<double>(compile, "startup_s", 0);
  row.tuning = JsonField(compile, "tuning");
  row.tuning_s = JsonGet<double>(row.tuning, "tuning_s", 0);
  return row;
}

std::vector<TaskReportFile> TaskReportsUnder(const fs::path& folder) {
  std::vector<fs::path> paths;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file() && it->path().filename() == "report.json") paths.push_back(it->path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<TaskReportFile> reports;
  for (const fs::path& path : paths) {
    auto text = ReadFile(path);
    if (!text.ok()) continue;
    auto parsed = ParseJson(*text, path.string());
    // A report of the LLM stage's own rounds or another tool's file is not a task report.
    if (parsed.ok() && parsed->is_object() && parsed->contains("task")) reports.push_back({path, std::move(parsed).value()});
  }
  return reports;
}

Result<BenchRun> LoadBenchRun(const fs::path& path) {
  BenchRun run;
  run.folder = path;
  const fs::path summary_path = fs::is_directory(path) ? path / "bench.json" : path;
  // While a bench runs, bench.json (if any) is an earlier run's: its reports are current.
  bool running = false;
  if (fs::is_directory(path)) {
    if (auto progress = ReadFile(path / "progress.json"); progress.ok()) {
      auto json = ParseJson(*progress, "progress.json");
      running = json.ok() && JsonGet<std::string>(*json, "state", "") == "running";
    }
  }
  if (!running && fs::is_regular_file(summary_path)) {
    ASSIGN_OR_RETURN(std::string text, ReadFile(summary_path));
    ASSIGN_OR_RETURN(Json summary, ParseJson(text, summary_path.string()));
    if (!summary.is_object() || !summary.contains("tasks")) {
      return Status::InvalidArgument(summary_path.string() + " is not a bench summary (no \"tasks\"): give a folder "
                                     "`kforge bench --out` wrote, or its bench.json");
    }
    for (const Json& task : JsonField(summary, "tasks")) run.rows.push_back(BenchRow::FromJson(task));
    summary.erase("tasks");
    run.summary = std::move(summary);
    return run;
  }
  if (!fs::is_directory(path)) return Status::InvalidArgument(path.string() + " is neither a bench folder nor a bench.json");
  std::vector<Json> entries;
  for (TaskReportFile& file : TaskReportsUnder(path)) entries.push_back(std::move(file.report));
  if (entries.empty()) {
    return Status::InvalidArgument(path.string() + " holds no bench.json and no task report.json yet");
  }
  for (const Json& entry : entries) run.rows.push_back(RowFromReport(entry));
  run.summary = SummarizeBench(entries);
  return run;
}

}  // namespace kforge
