// The page of a bench run.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/html_page.h"
#include "report/html_report.h"
#include "report/svg_chart.h"

namespace kforge {
namespace {

std::string Pct(const Json& level, const char* key) {
  const Json& value = JsonField(level, key);
  return value.is_number() ? fmt::format("{:.0f}%", value.get<double>() * 100) : "-";
}

std::string Times(const Json& level, const char* key) {
  const Json& value = JsonField(level, key);
  return value.is_number() ? fmt::format("{:.2f}x", value.get<double>()) : "-";
}

std::string Headline(const BenchRun& run) {
  const Json& all = JsonField(JsonField(run.summary, "levels"), "all");
  std::string stats = "<div class=\"stats\">";
  stats += Stat(std::to_string(run.rows.size()), "tasks");
  stats += Stat(Pct(all, "fast_0"), "accepted (fast_0)");
  stats += Stat(Pct(all, "fast_1_vs_eager"), "faster than eager (fast_1)");
  stats += Stat(Pct(all, "fast_1_vs_compile"), "faster than torch.compile");
  stats += Stat(Times(all, "geomean_speedup_vs_eager"), "geomean speedup vs eager");
  stats += Stat(Times(all, "geomean_speedup_vs_compile"), "geomean speedup vs torch.compile");
  return stats + "</div>";
}

std::string FastPTable(const BenchRun& run) {
  HtmlTable table({"level", "#tasks", "#fast_0", "#fast_1", "#fast_1.5", "#fast_2", "#tc_fast_1", "#fast_1/tc", "#fast_2/tc",
                   "#geo/eager", "#tc/eager", "#geo/tc", "#roofline"},
                  "fastp");
  for (const auto& [level, l] : JsonField(run.summary, "levels").items()) {
    table.AddRow({HtmlEscape(level), std::to_string(JsonGet<int>(l, "tasks", 0)), Pct(l, "fast_0"), Pct(l, "fast_1_vs_eager"),
                  Pct(l, "fast_1.5_vs_eager"), Pct(l, "fast_2_vs_eager"), Pct(l, "compile_fast_1_vs_eager"),
                  Pct(l, "fast_1_vs_compile"), Pct(l, "fast_2_vs_compile"), Times(l, "geomean_speedup_vs_eager"),
                  Times(l, "geomean_compile_vs_eager"), Times(l, "geomean_speedup_vs_compile"),
                  Pct(l, "median_fraction_of_roofline")},
                 level == "all" ? "total" : "");
  }
  return table.Render() +
         "<p class=\"muted\">fast_p: accepted and more than p times faster than eager (/tc: than torch.compile timed "
         "beside it), as a share of the level's tasks; tc_fast_1: torch.compile faster than eager; geo: geometric "
         "means over the timed accepted tasks; roofline: median fraction of the roofline.</p>";
}

std::string SpeedupCharts(const BenchRun& run) {
  std::vector<double> eager, compile;
  for (const BenchRow& row : run.rows) {
    if (!row.accepted() || !row.timings_meaningful) continue;
    if (row.speedup_vs_eager) eager.push_back(*row.speedup_vs_eager);
    if (row.speedup_vs_compile) compile.push_back(*row.speedup_vs_compile);
  }
  if (eager.empty()) {
    return "<p class=\"muted\">No accepted task was timed on a GPU (on the CPU timings mean nothing): no speedup "
           "distribution.</p>";
  }
  std::string html = "<div class=\"charts\">";
  html += "<figure>" + SpeedupHistogram("speedup-eager", "speedup over eager PyTorch", eager) +
          fmt::format("<figcaption>{} accepted tasks by their speedup over eager; right of the dashed line is faster."
                      "</figcaption></figure>",
                      eager.size());
  if (!compile.empty()) {
    html += "<figure>" + SpeedupHistogram("speedup-compile", "speedup over torch.compile", compile) +
            fmt::format("<figcaption>{} tasks by their speedup over torch.compile timed in the same run.</figcaption></figure>",
                        compile.size());
  }
  return html + "</div>";
}

std::string PointTip(const BenchRow& row, const std::string& what) {
  return fmt::format("{}: {}{}", row.task, what,
                     row.speedup_vs_eager ? fmt::format(", {:.2f}x eager", *row.speedup_vs_eager) : std::string());
}

// Arithmetic intensity against achieved FLOP/s, under the memory and compute ceilings; and, for
// every task, achieved bandwidth against bytes moved, under the memory ceiling (data movement has
// no FLOPs to place it on the first chart).
std::string RooflineCharts(const BenchRun& run) {
  std::vector<ChartPoint> compute_points, memory_points;
  double peak_flops = 0, peak_bytes = 0;
  double min_intensity = INFINITY, max_intensity = 0, min_bytes = INFINITY, max_bytes = 0;
  for (const BenchRow& row : run.rows) {
    if (!row.accepted() || !row.timings_meaningful || !row.candidate_ms || !row.bytes || *row.bytes <= 0) continue;
    const double seconds = *row.candidate_ms / 1e3;
    if (row.peak_flops_per_s) peak_flops = std::max(peak_flops, *row.peak_flops_per_s);
    if (row.peak_bytes_per_s) peak_bytes = std::max(peak_bytes, *row.peak_bytes_per_s);
    const std::string css = row.fraction_of_roofline && *row.fraction_of_roofline >= 0.5 ? "good" : "";
    memory_points.push_back({*row.bytes, *row.bytes / seconds,
                             PointTip(row, fmt::format("{:.3g} GB/s", *row.bytes / seconds / 1e9)), css});
    min_bytes = std::min(min_bytes, *row.bytes);
    max_bytes = std::max(max_bytes, *row.bytes);
    if (row.flops && *row.flops > 0) {
      const double intensity = *row.flops / *row.bytes;
      compute_points.push_back({intensity, *row.flops / seconds,
                                PointTip(row, fmt::format("{:.3g} TFLOP/s at {:.3g} FLOP/byte", *row.flops / seconds / 1e12,
                                                          intensity)),
                                css});
      min_intensity = std::min(min_intensity, intensity);
      max_intensity = std::max(max_intensity, intensity);
    }
  }
  if (memory_points.empty() || peak_bytes <= 0) {
    return "<p class=\"muted\">No roofline: the run has no accepted task timed on a GPU with known peaks (summaries "
           "written before bench recorded FLOPs and bytes lack them too).</p>";
  }
  std::string html = "<div class=\"charts\">";
  if (!compute_points.empty() && peak_flops > 0) {
    const double low = std::pow(10, std::floor(std::log10(min_intensity))), high = std::pow(10, std::ceil(std::log10(max_intensity)) + 0.0);
    const double ridge = peak_flops / peak_bytes;
    ChartLine memory{"memory ceiling", {}, "memory", false};
    ChartLine compute{"compute ceiling", {}, "compute", false};
    for (double x = low; x <= std::min(ridge, high); x *= 1.5) memory.points.push_back({x, x * peak_bytes});
    memory.points.push_back({std::min(ridge, high), std::min(ridge, high) * peak_bytes});
    if (ridge < high) compute.points = {{std::max(ridge, low), peak_flops}, {high, peak_flops}};
    html += "<figure>" +
            ScatterChart("roofline", {"arithmetic intensity (FLOP/byte)", true, low, high},
                         {"achieved FLOP/s", true, std::nullopt, peak_flops * 1.01}, compute_points, {memory, compute}) +
            fmt::format("<figcaption>Roofline: {} tasks with FLOPs, at the reference's FLOPs over the bytes it must "
                        "move; ceilings {:.3g} TB/s and {:.3g} TFLOP/s. Green: at least half the roofline.</figcaption></figure>",
                        compute_points.size(), peak_bytes / 1e12, peak_flops / 1e12);
  }
  ChartLine ceiling{"memory ceiling", {{min_bytes, peak_bytes}, {max_bytes, peak_bytes}}, "memory", false};
  html += "<figure>" +
          ScatterChart("bandwidth", {"bytes moved", true, std::nullopt, std::nullopt},
                       {"achieved bytes/s", true, std::nullopt, peak_bytes * 1.01}, memory_points, {ceiling}) +
          fmt::format("<figcaption>Bandwidth: every timed task's necessary bytes (inputs, outputs, parameters) over its "
                      "time, under the {:.3g} TB/s ceiling.</figcaption></figure>",
                      peak_bytes / 1e12);
  return html + "</div>";
}

std::string CompileCosts(const BenchRun& run) {
  std::vector<const BenchRow*> rows;
  double startup = 0;
  for (const BenchRow& row : run.rows) {
    rows.push_back(&row);
    startup = std::max(startup, row.startup_s);
  }
  std::sort(rows.begin(), rows.end(),
            [](const BenchRow* a, const BenchRow* b) { return a->compile_s + a->tuning_s > b->compile_s + b->tuning_s; });
  std::vector<ChartBar> bars;
  for (size_t i = 0; i < rows.size() && i < 15; ++i) {
    bars.push_back({rows[i]->task, rows[i]->compile_s + rows[i]->tuning_s,
                    fmt::format("{}: compile {:.2f} s, tuning {:.2f} s", rows[i]->task, rows[i]->compile_s, rows[i]->tuning_s),
                    ""});
  }
  const Json& all = JsonField(JsonField(run.summary, "levels"), "all");
  std::string html = "<div class=\"stats\">";
  html += Stat(fmt::format("{:.2f} s", JsonGet<double>(all, "median_compile_s", 0)), "median compile (capture, passes, codegen)");
  html += Stat(fmt::format("{:.2f} s", JsonGet<double>(all, "max_compile_s", 0)), "slowest compile");
  html += Stat(fmt::format("{:.1f} s", startup), "torch.export start-up, once per run");
  html += "</div>";
  if (!bars.empty()) html += "<h3>Slowest to compile and tune</h3>" + BarChart("compile-time", "seconds (compile + tuning)", bars);
  return html;
}

std::string Failures(const BenchRun& run, const ReportLinks& links) {
  HtmlTable table({"task", "verdict", "why"}, "failures");
  for (const BenchRow& row : run.rows) {
    if (row.accepted()) continue;
    const std::string href = links.task_href ? links.task_href(row) : "";
    const std::string name = href.empty() ? HtmlEscape(row.task) : fmt::format("<a href=\"{}\">{}</a>", HtmlEscape(href), HtmlEscape(row.task));
    table.AddRow({name, VerdictCell(row.verdict), HtmlEscape(row.message.substr(0, 400))});
  }
  if (table.empty()) return "<p class=\"good\">Every task has an accepted kernel.</p>";
  return table.Render();
}

std::string AllTasks(const BenchRun& run, const ReportLinks& links) {
  HtmlTable table({"task", "verdict", "#candidate", "#eager", "#torch.compile", "#vs eager", "#vs compile", "#roofline",
                   "#compile s", "#tuning s"},
                  "tasks");
  for (const BenchRow& row : run.rows) {
    const std::string href = links.task_href ? links.task_href(row) : "";
    const std::string name = href.empty() ? HtmlEscape(row.task) : fmt::format("<a href=\"{}\">{}</a>", HtmlEscape(href), HtmlEscape(row.task));
    const bool timed = row.timings_meaningful;
    table.AddRow({name, VerdictCell(row.verdict), MsCell(row.candidate_ms), MsCell(row.eager_ms), MsCell(row.compile_ms),
                  SpeedupCell(timed ? row.speedup_vs_eager : std::nullopt),
                  SpeedupCell(timed ? row.speedup_vs_compile : std::nullopt), PercentCell(row.fraction_of_roofline),
                  fmt::format("{:.2f}", row.compile_s), fmt::format("{:.2f}", row.tuning_s)});
  }
  return table.Render();
}

}  // namespace

std::string BenchTitle(const BenchRun& run) {
  const std::string suite = JsonGet<std::string>(run.summary, "suite", run.folder.string());
  return "kforge bench: " + std::filesystem::path(suite).filename().string();
}

std::string BenchBody(const BenchRun& run, const ReportLinks& links) {
  std::string timed_note;
  bool any_timed = false;
  for (const BenchRow& row : run.rows) any_timed = any_timed || row.timings_meaningful;
  if (!any_timed) {
    timed_note = "<p class=\"muted\">Run on the CPU through Triton's interpreter: verdicts hold, timings mean nothing.</p>";
  }
  return Section("overview", "Overview", Headline(run) + timed_note) + Section("fastp", "fast_p per level", FastPTable(run)) +
         Section("speedups", "Speedups", SpeedupCharts(run)) + Section("roofline-section", "Roofline", RooflineCharts(run)) +
         Section("compile", "Compile and tuning time", CompileCosts(run)) + Section("failed", "Failures", Failures(run, links)) +
         Section("all-tasks", "Every task", AllTasks(run, links));
}

std::string BenchReportHtml(const BenchRun& run, const ReportLinks& links) {
  const std::string subtitle = HtmlEscape(fmt::format(
      "{} · {} mode · {} · {}{}", JsonGet<std::string>(run.summary, "suite", run.folder.string()),
      JsonGet<std::string>(run.summary, "mode", "?"), JsonGet<std::string>(run.summary, "precision", "?"),
      JsonGet<std::string>(run.summary, "gpu", JsonGet<std::string>(run.summary, "device", "device not recorded")),
      JsonField(run.summary, "shard").is_string() ? ", shard " + run.summary["shard"].get<std::string>() : ""));
  return RenderPage({BenchTitle(run), subtitle, BenchBody(run, links), ""});
}

}  // namespace kforge
