#include "report/bench_summary.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace kforge {
namespace {

constexpr double kThresholds[] = {1.0, 1.5, 2.0};

std::optional<double> Number(const Json& object, const char* key) {
  const Json value = JsonField(object, key);
  if (!value.is_number()) return std::nullopt;
  return value.get<double>();
}

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

// One task's report, read once: every key the summary uses, in one place. A report from an older
// kforge may lack some; they read as absent.
struct BenchEntry {
  std::string task, level;
  std::optional<std::string> error;  // the task could not be compiled or evaluated
  std::string verdict, message;
  bool timings_meaningful = false;
  std::optional<double> speedup, speedup_vs_compile, eager_ms, compile_ms, roofline_fraction;
  bool memory_bound = false;
  std::optional<double> compile_s;  // capture, passes and codegen
  double startup_s = 0;             // torch.export's one-time start-up, when this task paid it
  std::set<std::string> left_to_pytorch;
  int baselines_reused = 0, baselines_measured = 0;
  std::optional<double> trusted_memory_after;  // bytes: the allocator's on a GPU, resident on the CPU
};

BenchEntry ParseEntry(const Json& entry) {
  BenchEntry parsed;
  parsed.task = JsonGet<std::string>(entry, "task", "?");
  parsed.level = JsonGet<std::string>(entry, "level", "suite");
  if (entry.contains("error")) parsed.error = JsonGet<std::string>(entry, "error", "");
  const Json compile = JsonField(entry, "compile");
  if (compile.is_object()) {
    parsed.compile_s = JsonGet<double>(compile, "capture_s", 0) + JsonGet<double>(compile, "passes_s", 0) +
                       JsonGet<double>(compile, "codegen_s", 0);
    parsed.startup_s = JsonGet<double>(compile, "startup_s", 0);
  }
  for (const Json& group : JsonField(compile, "left_to_pytorch")) {
    for (const Json& op : JsonField(group, "ops")) {
      if (op.is_string()) parsed.left_to_pytorch.insert(op.get<std::string>());
    }
  }
  const Json evaluation = JsonField(entry, "evaluation");
  const Json evidence = JsonField(evaluation, "evidence");
  const Json timing = JsonField(evidence, "timing");
  const Json roofline = JsonField(evidence, "roofline");
  parsed.verdict = JsonGet<std::string>(evaluation, "verdict", "");
  parsed.message = JsonGet<std::string>(evaluation, "message", "");
  parsed.timings_meaningful = JsonGet<bool>(evaluation, "timings_meaningful", false);
  parsed.speedup = Number(JsonField(evaluation, "speedup"), "speedup");
  parsed.speedup_vs_compile = Number(JsonField(timing, "speedup_vs_compile"), "speedup");
  parsed.eager_ms = Number(JsonField(evaluation, "reference_ms"), "median");
  parsed.compile_ms = Number(JsonField(timing, "reference_compile_ms"), "median");
  parsed.roofline_fraction = Number(roofline, "fraction_of_roofline");
  parsed.memory_bound = MemoryBound(roofline);
  // How the reference timings of the final evaluation were obtained: from the store or measured.
  for (const auto& [mode, baseline] : JsonField(evidence, "baselines").items()) {
    ++(JsonGet<bool>(baseline, "from_store", false) ? parsed.baselines_reused : parsed.baselines_measured);
  }
  const Json memory = JsonField(evidence, "trusted_memory_after");
  if (memory.is_object()) {
    parsed.trusted_memory_after = memory.contains("allocated_bytes") ? JsonGet<double>(memory, "allocated_bytes", 0)
                                                                    : JsonGet<double>(memory, "rss_bytes", 0);
  }
  return parsed;
}

void Count(const BenchEntry& entry, Level& level) {
  ++level.tasks;
  if (entry.compile_s) level.compile_s.push_back(*entry.compile_s);
  if (entry.timings_meaningful && entry.eager_ms && entry.compile_ms && *entry.compile_ms > 0) {
    level.compile_faster_than_eager += *entry.eager_ms > *entry.compile_ms;
  }
  level.startup_s += entry.startup_s;
  if (entry.error || entry.verdict != "accepted") {
    std::string why = entry.error ? "error: " + *entry.error : entry.verdict + ": " + entry.message;
    why = why.substr(0, 300);
    std::replace(why.begin(), why.end(), '\n', ' ');
    for (const std::string& op : entry.left_to_pytorch) ++level.left_to_pytorch[op];
    level.failed.push_back({{"task", entry.task}, {"why", why}, {"left_to_pytorch", entry.left_to_pytorch}});
    return;
  }
  ++level.accepted;
  if (!entry.timings_meaningful) return;
  if (entry.speedup && *entry.speedup > 0) {
    ++level.timed;
    level.speedups.push_back(*entry.speedup);
    for (int i = 0; i < 3; ++i) level.faster_than_eager[i] += *entry.speedup > kThresholds[i];
  }
  if (entry.speedup_vs_compile && *entry.speedup_vs_compile > 0) {
    ++level.compile_timed;
    level.compile_speedups.push_back(*entry.speedup_vs_compile);
    for (int i = 0; i < 3; ++i) level.faster_than_compile[i] += *entry.speedup_vs_compile > kThresholds[i];
  }
  if (entry.eager_ms && entry.compile_ms && *entry.eager_ms > 0 && *entry.compile_ms > 0) {
    level.compile_over_eager.push_back(*entry.eager_ms / *entry.compile_ms);
  }
  if (entry.roofline_fraction) level.roofline.push_back(*entry.roofline_fraction);
  if (entry.roofline_fraction && entry.memory_bound) level.roofline_memory_bound.push_back(*entry.roofline_fraction);
}

}  // namespace

Json SummarizeBench(const std::vector<Json>& entries) {
  std::map<std::string, Level> levels;
  int reused = 0, measured = 0;
  std::vector<double> memory_after;  // the trusted worker's, in run order: it must not grow over a bench
  for (const Json& json : entries) {
    const BenchEntry entry = ParseEntry(json);
    Count(entry, levels[entry.level]);
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
