// The table researchers read after `kforge bench`: per level, how many tasks got an accepted
// candidate (fast_0) and how many of those beat eager PyTorch and torch.compile by more than 1x,
// 1.5x and 2x (fast_1, fast_1.5, fast_2), geometric-mean speedups, the median fraction of the
// roofline, the tasks that failed with their verdicts and the ops each leaves to PyTorch, and those
// ops counted over the failing tasks. Each report is read once into a typed entry (bench_summary.cc).
#pragma once

#include <string>
#include <vector>

#include "core/json.h"

namespace kforge {

// One entry per task: the report `optimize` writes (task, evaluation, ...), or {"task", "level",
// "error"} for a task that could not be compiled or evaluated. `level` is the suite subfolder.
// Speedups count only for accepted candidates whose timings are meaningful (a GPU).
Json SummarizeBench(const std::vector<Json>& entries);

// The summary as a fixed-width table, then the failed tasks, one per line.
std::string FormatBenchSummary(const Json& summary);

}  // namespace kforge
