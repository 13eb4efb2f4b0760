// Two bench runs side by side: what changed per task.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "report/html_page.h"
#include "report/html_report.h"
#include "report/svg_chart.h"

namespace kforge {
namespace {

std::optional<double> TimedSpeedup(const BenchRow& row) {
  return row.accepted() && row.timings_meaningful ? row.speedup_vs_eager : std::nullopt;
}

std::string Geomean(const std::vector<double>& values) {
  if (values.empty()) return "-";
  double log_sum = 0;
  for (double v : values) log_sum += std::log(v);
  return fmt::format("{:.2f}x", std::exp(log_sum / values.size()));
}

}  // namespace

std::string CompareBody(const BenchRun& before, const BenchRun& after) {
  std::map<std::string, const BenchRow*> old_rows;
  for (const BenchRow& row : before.rows) old_rows[row.task] = &row;
  HtmlTable newly_failing({"task", "before", "now", "why"}, "newly-failing");
  HtmlTable newly_passing({"task", "before", "now"}, "newly-passing");
  HtmlTable changes({"task", "#before", "#now", "#change"}, "changes");
  std::vector<ChartPoint> points;
  std::vector<double> ratios;
  std::vector<std::string> only_new;
  struct Change {
    std::string task;
    double was, now;
  };
  std::vector<Change> changed;
  for (const BenchRow& row : after.rows) {
    auto it = old_rows.find(row.task);
    if (it == old_rows.end()) {
      only_new.push_back(row.task);
      continue;
    }
    const BenchRow& old = *it->second;
    if (old.accepted() && !row.accepted()) {
      newly_failing.AddRow({HtmlEscape(row.task), VerdictCell(old.verdict), VerdictCell(row.verdict),
                            HtmlEscape(row.message.substr(0, 300))});
    } else if (!old.accepted() && row.accepted()) {
      newly_passing.AddRow({HtmlEscape(row.task), VerdictCell(old.verdict), VerdictCell(row.verdict)});
    }
    const auto was = TimedSpeedup(old), now = TimedSpeedup(row);
    if (was && now && *was > 0 && *now > 0) {
      const double ratio = *now / *was;
      ratios.push_back(ratio);
      points.push_back({*was, *now, fmt::format("{}: {:.2f}x -> {:.2f}x", row.task, *was, *now),
                        ratio > 1.05 ? "good" : ratio < 1 / 1.05 ? "bad" : ""});
      changed.push_back({row.task, *was, *now});
    }
  }
  // Largest changes first, either way.
  std::sort(changed.begin(), changed.end(), [](const Change& a, const Change& b) {
    return std::fabs(std::log(a.now / a.was)) > std::fabs(std::log(b.now / b.was));
  });
  for (const Change& change : changed) {
    changes.AddRow({HtmlEscape(change.task), SpeedupCell(change.was), SpeedupCell(change.now),
                    SpeedupCell(change.now / change.was)});
  }
  std::string overview = "<div class=\"stats\">";
  overview += Stat(std::to_string(ratios.size()), "tasks timed in both");
  overview += Stat(Geomean(ratios), "geomean change of speedup");
  int faster = 0, slower = 0;
  for (double r : ratios) {
    faster += r > 1.05;
    slower += r < 1 / 1.05;
  }
  overview += Stat(std::to_string(faster), "more than 5% faster");
  overview += Stat(std::to_string(slower), "more than 5% slower");
  overview += "</div>";
  if (!only_new.empty()) overview += fmt::format("<p class=\"muted\">{} task(s) only in the second run.</p>", only_new.size());
  std::string chart;
  if (!points.empty()) {
    double low = INFINITY, high = 0;
    for (const ChartPoint& p : points) {
      low = std::min({low, p.x, p.y});
      high = std::max({high, p.x, p.y});
    }
    ChartLine even{"unchanged", {{low, low}, {high, high}}, "", false};
    chart = "<figure>" +
            ScatterChart("compare", {"speedup over eager, before", true, low, high}, {"speedup over eager, now", true, low, high},
                         points, {even}) +
            "<figcaption>Each task timed in both runs; above the diagonal it got faster.</figcaption></figure>";
  }
  return Section("overview", "Overview", overview) +
         Section("newly-failing-section", "Newly failing",
                 newly_failing.empty() ? "<p class=\"good\">None.</p>" : newly_failing.Render()) +
         Section("newly-passing-section", "Newly passing", newly_passing.empty() ? "<p>None.</p>" : newly_passing.Render()) +
         Section("change", "Speedup change per task", chart + (changes.empty() ? "<p class=\"muted\">No task timed in both.</p>" : changes.Render()));
}

std::string CompareReportHtml(const BenchRun& before, const BenchRun& after) {
  const std::string subtitle = HtmlEscape(fmt::format("before: {} · now: {}", before.folder.string(), after.folder.string()));
  return RenderPage({"kforge: two bench runs compared", subtitle, CompareBody(before, after), ""});
}

}  // namespace kforge
