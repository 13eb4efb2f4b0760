#include "report/bench_summary.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "report/bench_row.h"

namespace kforge {
namespace {

constexpr double kThresholds[] = {1.0, 1.5, 2.0};

double GeometricMean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double log_sum = 0;
  for (double v : values) log_sum += std::log(v);
  return std::exp(log_sum / static_cast<double>(values.size()));
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

struct Level {
  int tasks = 0, accepted = 0, timed = 0;
  int faster_than_eager[3] = {0, 0, 0};
  int faster_than_compile[3] = {0, 0, 0};
  int compile_timed = 0;
  // Tasks where torch.compile beat eager (timed beside the candidate, whatever its verdict): the
  // bar fast_1 is held to.
  int compile_faster_than_eager = 0;
  std::vector<double> speedups, compile_speedups, compile_over_eager, roofline;
  std::vector<double> roofline_memory_bound;  // tasks whose floor is their bytes, not their FLOPs
  std::vector<double> compile_s;              // capture, passes and codegen per task
  double startup_s = 0;                       // torch.export's one-time start-up, in whichever task paid it
  Json failed = Json::array();
  std::map<std::string, int> left_to_pytorch;  // op -> failing tasks that leave it to PyTorch
};

// Whether a roofline record's floor is set by memory traffic rather than arithmetic.
bool MemoryBound(const Json& roofline) {
  const double bytes = JsonGet<double>(roofline, "bytes", 0), flops = JsonGet<double>(roofline, "flops", 0);
  const double bandwidth = JsonGet<double>(roofline, "peak_bytes_per_s", 0), peak = JsonGet<double>(roofline, "peak_flops_per_s", 0);
  return bandwidth > 0 && peak > 0 && bytes / bandwidth >= flops / peak;
}

double Max(const std::vector<double>& values) { return values.empty() ? 0 : *std::max_element(values.begin(), values.end()); }

Json LevelToJson(const Level& level) {
  auto share = [&level](int count) { return level.tasks ? static_cast<double>(count) / level.tasks : 0.0; };
  Json json = {{"tasks", level.tasks},
               {"accepted", level.accepted},
               {"fast_0", share(level.accepted)},
               {"timed", level.timed},
               {"compile_timed", level.compile_timed},
               {"geomean_speedup_vs_eager", GeometricMean(level.speedups)},
               {"geomean_compile_vs_eager", GeometricMean(level.compile_over_eager)},
               {"geomean_speedup_vs_compile", GeometricMean(level.compile_speedups)},
               {"median_fraction_of_roofline", Median(level.roofline)},
               {"roofline_tasks", level.roofline.size()},
               {"median_fraction_of_roofline_memory_bound", Median(level.roofline_memory_bound)},
               {"memory_bound_tasks", level.roofline_memory_bound.size()},
               {"median_compile_s", Median(level.compile_s)},
               {"max_compile_s", Max(level.compile_s)},
               {"startup_s", level.startup_s},
               {"failed", level.failed}};
  for (int i = 0; i < 3; ++i) {
    std::string p = fmt::format("{:g}", kThresholds[i]);
    json["fast_" + p + "_vs_eager"] = share(level.faster_than_eager[i]);
    json["fast_" + p + "_vs_compile"] = share(level.faster_than_compile[i]);
  }
  json["compile_fast_1_vs_eager"] = share(level.compile_faster_than_eager);
  json["left_to_pytorch"] = level.left_to_pytorch;
  return json;
}

// One task's report, read once: its bench row (bench_row.h) and what only the summary uses. A
// report from an older kforge may lack some keys; they read as absent.
struct BenchEntry {
  BenchRow row;
  bool compiled = false;  // the report has the compiler's summary (compile_s counts)
  bool memory_bound = false;
  std::set<std::string> left_to_pytorch;
  int baselines_reused = 0, baselines_measured = 0;
  std::optional<double> trusted_memory_after;  // bytes: the allocator's on a GPU, resident on the CPU
};

BenchEntry ParseEntry(const Json& entry) {
  BenchEntry parsed;
  parsed.row = RowFromReport(entry);
  if (parsed.row.level.empty()) parsed.row.level = "suite";
  const Json& compile = JsonField(entry, "compile");
  parsed.compiled = compile.is_object();
  for (const Json& group : JsonField(compile, "left_to_pytorch")) {
    for (const Json& op : JsonField(group, "ops")) {
      if (op.is_string()) parsed.left_to_pytorch.insert(op.get<std::string>());
    }
  }
  const Json& evidence = JsonField(JsonField(entry, "evaluation"), "evidence");
  parsed.memory_bound = MemoryBound(JsonField(evidence, "roofline"));
  // How the reference timings of the final evaluation were obtained: from the store or measured.
  for (const auto& [mode, baseline] : JsonField(evidence, "baselines").items()) {
    ++(JsonGet<bool>(baseline, "from_store", false) ? parsed.baselines_reused : parsed.baselines_measured);
  }
  const Json& memory = JsonField(evidence, "trusted_memory_after");
  if (memory.is_object()) {
    parsed.trusted_memory_after = memory.contains("allocated_bytes") ? JsonGet<double>(memory, "allocated_bytes", 0)
                                                                    : JsonGet<double>(memory, "rss_bytes", 0);
  }
  return parsed;
}

void Count(const BenchEntry& parsed, Level& level) {
  const BenchRow& entry = parsed.row;
  ++level.tasks;
  if (parsed.compiled) level.compile_s.push_back(entry.compile_s);
  if (entry.timings_meaningful && entry.eager_ms && entry.compile_ms && *entry.compile_ms > 0) {
    level.compile_faster_than_eager += *entry.eager_ms > *entry.compile_ms;
  }
  level.startup_s += entry.startup_s;
  if (!entry.accepted()) {
    std::string why = entry.verdict + ": " + entry.message;
    why = why.substr(0, 300);
    std::replace(why.begin(), why.end(), '\n', ' ');
    for (const std::string& op : parsed.left_to_pytorch) ++level.left_to_pytorch[op];
    level.failed.push_back({{"task", entry.task}, {"why", why}, {"left_to_pytorch", parsed.left_to_pytorch}});
    return;
  }
  ++level.accepted;
  if (!entry.timings_meaningful) return;
  if (entry.speedup_vs_eager && *entry.speedup_vs_eager > 0) {
    ++level.timed;
    level.speedups.push_back(*entry.speedup_vs_eager);
    for (int i = 0; i < 3; ++i) level.faster_than_eager[i] += *entry.speedup_vs_eager > kThresholds[i];
  }
  if (entry.speedup_vs_compile && *entry.speedup_vs_compile > 0) {
    ++level.compile_timed;
    level.compile_speedups.push_back(*entry.speedup_vs_compile);
    for (int i = 0; i < 3; ++i) level.faster_than_compile[i] += *entry.speedup_vs_compile > kThresholds[i];
  }
  if (entry.eager_ms && entry.compile_ms && *entry.eager_ms > 0 && *entry.compile_ms > 0) {
    level.compile_over_eager.push_back(*entry.eager_ms / *entry.compile_ms);
  }
  if (entry.fraction_of_roofline) level.roofline.push_back(*entry.fraction_of_roofline);
  if (entry.fraction_of_roofline && parsed.memory_bound) level.roofline_memory_bound.push_back(*entry.fraction_of_roofline);
}

}  // namespace

Json SummarizeBench(const std::vector<Json>& entries) {
  std::map<std::string, Level> levels;
  int reused = 0, measured = 0;
  std::vector<double> memory_after;  // the trusted worker's, in run order: it must not grow over a bench
  for (const Json& json : entries) {
    const BenchEntry entry = ParseEntry(json);
    Count(entry, levels[entry.row.level]);
    Count(entry, levels["all"]);
    reused += entry.baselines_reused;
    measured += entry.baselines_measured;
    if (entry.trusted_memory_after) memory_after.push_back(*entry.trusted_memory_after);
  }
  Json memory;
  if (!memory_after.empty()) {
    memory = {{"measure", "bytes held after each evaluation"}, {"first", memory_after.front()}, {"last", memory_after.back()},
              {"max", Max(memory_after)}, {"count", memory_after.size()}};
  }
  Json summary = {{"levels", Json::object()}, {"baselines", {{"reused", reused}, {"measured", measured}}}, {"trusted_memory", memory}};
  for (const auto& [name, level] : levels) summary["levels"][name] = LevelToJson(level);
  return summary;
}

std::string FormatBenchSummary(const Json& summary) {
  std::string out = fmt::format("{:<8} {:>5} {:>7} {:>7} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9} {:>10}\n",
                                "level", "tasks", "fast_0", "fast_1", "fast_1.5", "fast_2", "tc_fast_1", "fast_1/tc", "fast_2/tc",
                                "geo/eager", "tc/eager", "geo/tc", "roofline", "roof/mem", "compile_s");
  const Json levels = JsonField(summary, "levels");
  for (auto it = levels.begin(); it != levels.end(); ++it) {
    const Json& l = it.value();
    auto pct = [&l](const char* key) { return fmt::format("{:.0f}%", 100 * JsonGet<double>(l, key, 0)); };
    auto times = [&l](const char* key) {
      double value = JsonGet<double>(l, key, 0);
      return value > 0 ? fmt::format("{:.2f}x", value) : std::string("-");
    };
    out += fmt::format("{:<8} {:>5} {:>7} {:>7} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9} {:>10}\n", it.key(),
                       JsonGet<int>(l, "tasks", 0), pct("fast_0"), pct("fast_1_vs_eager"), pct("fast_1.5_vs_eager"),
                       pct("fast_2_vs_eager"), pct("compile_fast_1_vs_eager"), pct("fast_1_vs_compile"), pct("fast_2_vs_compile"),
                       times("geomean_speedup_vs_eager"), times("geomean_compile_vs_eager"),
                       times("geomean_speedup_vs_compile"),
                       JsonGet<int>(l, "roofline_tasks", 0) ? pct("median_fraction_of_roofline") : std::string("-"),
                       JsonGet<int>(l, "memory_bound_tasks", 0) ? pct("median_fraction_of_roofline_memory_bound") : std::string("-"),
                       fmt::format("{:.2f}/{:.2f}", JsonGet<double>(l, "median_compile_s", 0), JsonGet<double>(l, "max_compile_s", 0)));
  }
  out += "fast_p: accepted and more than p times faster (vs eager; /tc: vs torch.compile), as a share of the level's tasks;\n"
         "tc_fast_1: torch.compile faster than eager, timed beside each candidate, as a share of the level's tasks;\n"
         "geo/eager, tc/eager, geo/tc: geometric means over accepted timed tasks; roofline: median fraction of the floor\n"
         "(roof/mem: over the memory-bound tasks); compile_s: median/max seconds of capture, passes and codegen per task";
  const double startup = JsonGet<double>(JsonField(levels, "all"), "startup_s", 0);
  out += startup > 0 ? fmt::format(", besides torch.export's one-time start-up ({:.1f} s).\n", startup) : std::string(".\n");
  const Json baselines = JsonField(summary, "baselines");
  if (JsonGet<int>(baselines, "reused", 0) + JsonGet<int>(baselines, "measured", 0) > 0) {
    out += fmt::format("baselines: {} reference timing(s) reused from the store, {} measured in this run\n",
                       JsonGet<int>(baselines, "reused", 0), JsonGet<int>(baselines, "measured", 0));
  }
  const Json memory = JsonField(summary, "trusted_memory");
  if (memory.is_object()) {
    out += fmt::format("trusted worker after each evaluation: first {:.1f} MiB, last {:.1f} MiB, max {:.1f} MiB\n",
                       JsonGet<double>(memory, "first", 0) / (1 << 20), JsonGet<double>(memory, "last", 0) / (1 << 20),
                       JsonGet<double>(memory, "max", 0) / (1 << 20));
  }
  const Json all = JsonField(levels, "all");
  const Json failed = JsonField(all, "failed");
  if (!failed.empty()) {
    out += fmt::format("failed ({}):\n", failed.size());
    for (const Json& f : failed) {
      out += fmt::format("  {}: {}\n", JsonGet<std::string>(f, "task", "?"), JsonGet<std::string>(f, "why", ""));
      std::vector<std::string> ops;
      for (const Json& op : JsonField(f, "left_to_pytorch")) ops.push_back(op.get<std::string>());
      if (!ops.empty()) out += fmt::format("    left to PyTorch: {}\n", fmt::join(ops, ", "));
    }
  }
  // The next gaps at a glance: each op the failing tasks leave to PyTorch, by how many.
  std::vector<std::pair<int, std::string>> counts;
  for (const auto& [op, tasks] : JsonField(all, "left_to_pytorch").items()) counts.emplace_back(tasks.get<int>(), op);
  std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  if (!counts.empty()) {
    std::vector<std::string> shown;
    for (const auto& [tasks, op] : counts) shown.push_back(fmt::format("{} ({})", op, tasks));
    out += fmt::format("ops left to PyTorch by failing tasks (tasks): {}\n", fmt::join(shown, ", "));
  }
  return out;
}

}  // namespace kforge
