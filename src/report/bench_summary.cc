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
  json["left_to_pytorch"] = level.left_to_pytorch;
  return json;
}

// How the reference timings of the tasks' final evaluations were obtained: reused from the store or
// measured in this run.
Json BaselineCounts(const std::vector<Json>& entries) {
  int reused = 0, measured = 0;
  for (const Json& entry : entries) {
    for (const auto& [mode, baseline] : JsonField(JsonField(JsonField(entry, "evaluation"), "evidence"), "baselines").items()) {
      ++(JsonGet<bool>(baseline, "from_store", false) ? reused : measured);
    }
  }
  return {{"reused", reused}, {"measured", measured}};
}

// The trusted worker's memory after each task's evaluation was released, in run order: it must not
// grow over a bench (on a GPU its allocator's bytes, on the CPU its resident size).
Json TrustedMemory(const std::vector<Json>& entries) {
  std::vector<double> after;
  for (const Json& entry : entries) {
    const Json memory = JsonField(JsonField(JsonField(entry, "evaluation"), "evidence"), "trusted_memory_after");
    if (!memory.is_object()) continue;
    after.push_back(memory.contains("allocated_bytes") ? JsonGet<double>(memory, "allocated_bytes", 0)
                                                      : JsonGet<double>(memory, "rss_bytes", 0));
  }
  if (after.empty()) return Json();
  return {{"measure", "bytes held after each evaluation"}, {"first", after.front()}, {"last", after.back()},
          {"max", Max(after)}, {"count", after.size()}};
}

}  // namespace

Json SummarizeBench(const std::vector<Json>& entries) {
  std::map<std::string, Level> levels;
  for (const Json& entry : entries) {
    std::string name = JsonGet<std::string>(entry, "level", "suite");
    for (Level* level : {&levels[name], &levels["all"]}) {
      ++level->tasks;
      const Json compile = JsonField(entry, "compile");
      if (compile.is_object()) {
        level->compile_s.push_back(JsonGet<double>(compile, "capture_s", 0) + JsonGet<double>(compile, "passes_s", 0) +
                                   JsonGet<double>(compile, "codegen_s", 0));
        level->startup_s += JsonGet<double>(compile, "startup_s", 0);
      }
      const Json evaluation = JsonField(entry, "evaluation");
      std::string verdict = JsonGet<std::string>(evaluation, "verdict", "");
      if (verdict != "accepted") {
        std::string why = entry.contains("error") ? "error: " + JsonGet<std::string>(entry, "error", "")
                                                  : verdict + ": " + JsonGet<std::string>(evaluation, "message", "");
        why = why.substr(0, 300);
        std::replace(why.begin(), why.end(), '\n', ' ');
        std::set<std::string> ops;
        for (const Json& group : JsonField(JsonField(entry, "compile"), "left_to_pytorch")) {
          for (const Json& op : JsonField(group, "ops")) {
            if (op.is_string()) ops.insert(op.get<std::string>());
          }
        }
        for (const std::string& op : ops) ++level->left_to_pytorch[op];
        level->failed.push_back({{"task", JsonGet<std::string>(entry, "task", "?")}, {"why", why}, {"left_to_pytorch", ops}});
        continue;
      }
      ++level->accepted;
      if (!JsonGet<bool>(evaluation, "timings_meaningful", false)) continue;
      const Json timing = JsonField(JsonField(evaluation, "evidence"), "timing");
      std::optional<double> speedup = Number(JsonField(evaluation, "speedup"), "speedup");
      if (speedup && *speedup > 0) {
        ++level->timed;
        level->speedups.push_back(*speedup);
        for (int i = 0; i < 3; ++i) level->faster_than_eager[i] += *speedup > kThresholds[i];
      }
      std::optional<double> versus = Number(JsonField(timing, "speedup_vs_compile"), "speedup");
      std::optional<double> eager_ms = Number(JsonField(evaluation, "reference_ms"), "median");
      std::optional<double> compile_ms = Number(JsonField(timing, "reference_compile_ms"), "median");
      if (versus && *versus > 0) {
        ++level->compile_timed;
        level->compile_speedups.push_back(*versus);
        for (int i = 0; i < 3; ++i) level->faster_than_compile[i] += *versus > kThresholds[i];
      }
      if (eager_ms && compile_ms && *eager_ms > 0 && *compile_ms > 0) level->compile_over_eager.push_back(*eager_ms / *compile_ms);
      const Json roofline = JsonField(JsonField(evaluation, "evidence"), "roofline");
      std::optional<double> fraction = Number(roofline, "fraction_of_roofline");
      if (fraction) level->roofline.push_back(*fraction);
      if (fraction && MemoryBound(roofline)) level->roofline_memory_bound.push_back(*fraction);
    }
  }
  Json summary = {{"levels", Json::object()}, {"baselines", BaselineCounts(entries)}, {"trusted_memory", TrustedMemory(entries)}};
  for (const auto& [name, level] : levels) summary["levels"][name] = LevelToJson(level);
  return summary;
}

std::string FormatBenchSummary(const Json& summary) {
  std::string out = fmt::format("{:<8} {:>5} {:>7} {:>7} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9} {:>10}\n", "level",
                                "tasks", "fast_0", "fast_1", "fast_1.5", "fast_2", "fast_1/tc", "fast_2/tc", "geo/eager",
                                "tc/eager", "geo/tc", "roofline", "roof/mem", "compile_s");
  const Json levels = JsonField(summary, "levels");
  for (auto it = levels.begin(); it != levels.end(); ++it) {
    const Json& l = it.value();
    auto pct = [&l](const char* key) { return fmt::format("{:.0f}%", 100 * JsonGet<double>(l, key, 0)); };
    auto times = [&l](const char* key) {
      double value = JsonGet<double>(l, key, 0);
      return value > 0 ? fmt::format("{:.2f}x", value) : std::string("-");
    };
    out += fmt::format("{:<8} {:>5} {:>7} {:>7} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9} {:>10}\n", it.key(),
                       JsonGet<int>(l, "tasks", 0), pct("fast_0"), pct("fast_1_vs_eager"), pct("fast_1.5_vs_eager"),
                       pct("fast_2_vs_eager"), pct("fast_1_vs_compile"), pct("fast_2_vs_compile"),
                       times("geomean_speedup_vs_eager"), times("geomean_compile_vs_eager"),
                       times("geomean_speedup_vs_compile"),
                       JsonGet<int>(l, "roofline_tasks", 0) ? pct("median_fraction_of_roofline") : std::string("-"),
                       JsonGet<int>(l, "memory_bound_tasks", 0) ? pct("median_fraction_of_roofline_memory_bound") : std::string("-"),
                       fmt::format("{:.2f}/{:.2f}", JsonGet<double>(l, "median_compile_s", 0), JsonGet<double>(l, "max_compile_s", 0)));
  }
  out += "fast_p: accepted and more than p times faster (vs eager; /tc: vs torch.compile), as a share of the level's tasks;\n"
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
