// Charts as inline SVG, for report pages that must work offline: no script, no external file.
// Every mark carries a class (for the page's CSS and for tests) and a <title> tooltip; each chart
// is an <svg class="chart ..."> with its axes, ticks and labels. Values that cannot be drawn
// (not finite, or not positive on a log axis) are left out and counted in the chart's caption.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kforge {

struct ChartAxis {
  std::string label;
  bool log = false;
  std::optional<double> min, max;  // unset: from the data
};

struct ChartPoint {
  double x = 0, y = 0;
  std::string tip;          // the tooltip
  std::string css_class;    // "good", "bad", ...
};

// A line drawn under the points: a ceiling of a roofline, a series of a line chart.
struct ChartLine {
  std::string label;
  std::vector<std::pair<double, double>> points;
  std::string css_class;
  bool step = false;  // hold each value until the next x (a best-so-far curve)
};

// Points over lines, e.g. a roofline: arithmetic intensity against achieved throughput with the
// memory and compute ceilings.
std::string ScatterChart(const std::string& chart_class, const ChartAxis& x, const ChartAxis& y,
                         const std::vector<ChartPoint>& points, const std::vector<ChartLine>& lines = {});

// Counts of `values` in bins a factor of two wide on a log axis (speedups), with a marker line at
// `marker` (1.0: as fast as the baseline). Bins below `marker` are "bad", above "good".
std::string SpeedupHistogram(const std::string& chart_class, const std::string& x_label,
                             const std::vector<double>& values, double marker = 1.0);

struct ChartBar {
  std::string label;
  double value = 0;
  std::string tip;
  std::string css_class;
};

// Horizontal bars, largest first as given: a time breakdown per kernel, per task.
std::string BarChart(const std::string& chart_class, const std::string& value_label, const std::vector<ChartBar>& bars);

struct SampleGroup {
  std::string label;
  std::vector<double> samples;
  std::optional<double> median, ci_low, ci_high;
};

// Each group's samples as dots on one row, with its median and 95% interval: timing samples.
std::string SampleChart(const std::string& chart_class, const std::string& value_label,
                        const std::vector<SampleGroup>& groups, bool log = false);

}  // namespace kforge
