// One task of a bench run as its summary (bench.json) keeps it: verdict, times, speedups, the
// roofline quantities and compile costs. Made once from a task's report (RowFromReport), written
// into bench.json (ToJson) and read back from it (FromJson, which takes what it can: a missing or
// mistyped field stays unset), so the console table, the HTML report and the dashboard read the
// same typed values.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace kforge {

struct BenchRow {
  std::string task;   // "level1/19_ReLU"
  std::string level;  // the suite subfolder
  std::string verdict;  // "accepted", "rejected_hack(...)", ..., or "error" (not compiled or evaluated)
  std::string message;  // the verdict's or the error's words
  std::optional<double> candidate_ms, eager_ms, compile_ms;
  std::optional<double> speedup_vs_eager, speedup_vs_compile;
  std::optional<double> fraction_of_roofline;
  // The roofline's quantities: the reference's FLOPs and bytes moved, the GPU's peaks.
  std::optional<double> flops, bytes, peak_flops_per_s, peak_bytes_per_s;
  bool timings_meaningful = false;
  double compile_s = 0;  // capture, passes and codegen
  double startup_s = 0;  // torch.export's one-time start-up, paid by a warm-up capture
  double tuning_s = 0;
  Json tuning;           // the tuning summary as optimize reported it

  bool accepted() const { return verdict == "accepted"; }
  Json ToJson() const;
  static BenchRow FromJson(const Json& json);
};

// The row of one bench entry: a report `optimize` wrote, or {"task", "level", "error"}.
BenchRow RowFromReport(const Json& entry);

// A task report found under a folder: where it is and what it says.
struct TaskReportFile {
  std::filesystem::path path;
  Json report;
};

// Every task report (a report.json naming its "task") under `folder`, in path order; files that
// cannot be read or are not task reports are skipped.
std::vector<TaskReportFile> TaskReportsUnder(const std::filesystem::path& folder);

// A bench run as its folder holds it: the summary (bench.json, or the shards' summaries merged)
// and one row per task. Where no summary was written yet, or the folder's progress.json says a run
// is in progress, the rows come from the task reports found under the folder.
struct BenchRun {
  std::filesystem::path folder;
  Json summary = Json::object();  // SummarizeBench's levels, plus suite, gpu, mode, precision
  std::vector<BenchRow> rows;
};

// InvalidArgument when `folder` holds neither a summary nor any task report.
Result<BenchRun> LoadBenchRun(const std::filesystem::path& folder);

}  // namespace kforge
