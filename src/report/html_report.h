// `kforge report`'s pages, one self-contained HTML file each: a bench run (fast_p per level,
// speedup distributions, the roofline, compile and tuning time, the failures), one task (verdict
// and evidence in words, timing samples, per-kernel time, fusion groups, the generated source and,
// after an LLM stage, its attempts, writers and spend), and two bench runs compared. The bodies
// are exposed too: the dashboard (`kforge serve`) swaps them into a live page.
#pragma once

#include <functional>
#include <string>

#include "core/json.h"
#include "report/bench_row.h"

namespace kforge {

struct ReportLinks {
  // Where a task's own page is, or "" for no link (a single-file report).
  std::function<std::string(const BenchRow& row)> task_href;
};

// Title and subtitle of a bench run's page.
std::string BenchTitle(const BenchRun& run);
std::string BenchBody(const BenchRun& run, const ReportLinks& links = {});
std::string BenchReportHtml(const BenchRun& run, const ReportLinks& links = {});

// `report` is a task's report.json as `optimize` wrote it; `model_new` the generated source
// ("" when it cannot be read).
std::string TaskBody(const Json& report, const std::string& model_new);
std::string TaskReportHtml(const Json& report, const std::string& model_new);

// Per-task change of speedup from `before` to `after`, newly failing and newly passing tasks.
std::string CompareBody(const BenchRun& before, const BenchRun& after);
std::string CompareReportHtml(const BenchRun& before, const BenchRun& after);

}  // namespace kforge
