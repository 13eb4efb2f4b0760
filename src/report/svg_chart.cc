#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/html_page.h"

namespace kforge {
namespace {

constexpr double kWidth = 560, kHeight = 330;
constexpr double kLeft = 68, kRight = 18, kTop = 14, kBottom = 50;

// "1.5k", "2G", "0.25": tick labels short enough for an axis.
std::string CompactNumber(double value) {
  const double magnitude = std::fabs(value);
  const struct { double scale; const char* suffix; } units[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& unit : units) {
    if (magnitude >= unit.scale) return fmt::format("{:g}{}", value / unit.scale, unit.suffix);
  }
  return fmt::format("{:g}", value);
}

bool Drawable(double value, bool log) { return std::isfinite(value) && (!log || value > 0); }

// Maps data values to pixels along one axis, linear or log10.
class Scale {
 public:
  Scale(const ChartAxis& axis, std::vector<double> values, double from_px, double to_px)
      : log_(axis.log), from_px_(from_px), to_px_(to_px) {
    double low = INFINITY, high = -INFINITY;
    for (double v : values) {
      if (!Drawable(v, log_)) continue;
      low = std::min(low, v);
      high = std::max(high, v);
    }
    if (!std::isfinite(low)) low = high = log_ ? 1 : 0;
    if (axis.min) low = *axis.min;
    if (axis.max) high = *axis.max;
    if (log_) {
      low = std::pow(10, std::floor(std::log10(low)));
      high = std::pow(10, std::ceil(std::log10(high)));
      if (high <= low) high = low * 10;
    } else {
      if (high <= low) high = low + 1;
      const double step = NiceStep((high - low) / 5);
      low = std::floor(low / step) * step;
      high = std::ceil(high / step) * step;
    }
    low_ = low;
    high_ = high;
  }

  double operator()(double value) const {
    const double t = log_ ? (std::log10(value) - std::log10(low_)) / (std::log10(high_) - std::log10(low_))
                          : (value - low_) / (high_ - low_);
    return from_px_ + t * (to_px_ - from_px_);
  }

  std::vector<double> Ticks() const {
    std::vector<double> ticks;
    if (log_) {
      const int decades = static_cast<int>(std::lround(std::log10(high_ / low_)));
      for (double v = low_; v <= high_ * 1.0001; v *= 10) {
        ticks.push_back(v);
        if (decades <= 2 && v * 10 <= high_ * 1.0001) {
          ticks.push_back(v * 2);
          ticks.push_back(v * 5);
        }
      }
      std::sort(ticks.begin(), ticks.end());
    } else {
      const double step = NiceStep((high_ - low_) / 5);
      for (double v = low_; v <= high_ + step * 1e-6; v += step) ticks.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
    }
    return ticks;
  }

  double low() const { return low_; }
  double high() const { return high_; }

 private:
  static double NiceStep(double raw) {
    if (raw <= 0 || !std::isfinite(raw)) return 1;
    const double power = std::pow(10, std::floor(std::log10(raw)));
    for (double factor : {1.0, 2.0, 5.0, 10.0}) {
      if (raw <= factor * power) return factor * power;
    }
    return 10 * power;
  }

  bool log_;
  double from_px_, to_px_;
  double low_ = 0, high_ = 1;
};

std::string Open(const std::string& chart_class) {
  return fmt::format("<svg class=\"chart {}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                     "viewBox=\"0 0 {} {}\" role=\"img\">",
                     HtmlEscape(chart_class), kWidth, kHeight, kWidth, kHeight);
}

// The frame, grid, ticks and axis labels of an x/y chart.
std::string Axes(const Scale& x, const Scale& y, const ChartAxis& x_axis, const ChartAxis& y_axis) {
  std::string svg = "<g class=\"grid\">";
  for (double t : y.Ticks()) svg += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>", kLeft, kWidth - kRight, y(t), y(t));
  svg += "</g><g class=\"axis\">";
  svg += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", kLeft, kWidth - kRight, kHeight - kBottom, kHeight - kBottom);
  svg += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", kLeft, kLeft, kTop, kHeight - kBottom);
  for (double t : x.Ticks()) {
    svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\"/><text x=\"{0:.1f}\" y=\"{3}\" "
                       "text-anchor=\"middle\">{4}</text>",
                       x(t), kHeight - kBottom, kHeight - kBottom + 4, kHeight - kBottom + 16, CompactNumber(t));
  }
  for (double t : y.Ticks()) {
    svg += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\"/><text x=\"{3}\" y=\"{4:.1f}\" "
                       "text-anchor=\"end\">{5}</text>",
                       kLeft - 4, kLeft, y(t), kLeft - 6, y(t) + 4, CompactNumber(t));
  }
  svg += "</g>";
  svg += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                     (kLeft + kWidth - kRight) / 2, kHeight - 12, HtmlEscape(x_axis.label));
  svg += fmt::format("<text class=\"axis-label\" transform=\"translate(14,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
                     (kTop + kHeight - kBottom) / 2, HtmlEscape(y_axis.label));
  return svg;
}

std::string Polyline(const ChartLine& line, const Scale& x, const Scale& y, bool x_log, bool y_log) {
  std::string points;
  double last_y = NAN;
  for (const auto& [px, py] : line.points) {
    if (!Drawable(px, x_log) || !Drawable(py, y_log)) continue;
    const double cx = std::clamp(x(px), kLeft, kWidth - kRight);
    const double cy = std::clamp(y(py), kTop, kHeight - kBottom);
    if (line.step && std::isfinite(last_y)) points += fmt::format("{:.1f},{:.1f} ", cx, last_y);
    points += fmt::format("{:.1f},{:.1f} ", cx, cy);
    last_y = cy;
  }
  return fmt::format("<polyline class=\"line {}\" points=\"{}\"><title>{}</title></polyline>", HtmlEscape(line.css_class),
                     points, HtmlEscape(line.label));
}

std::string Close(int left_out) {
  std::string svg;
  if (left_out > 0) {
    svg += fmt::format("<text class=\"axis-label left-out\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{} not drawable, left out</text>",
                       kWidth - kRight, kTop + 10, left_out);
  }
  return svg + "</svg>";
}

}  // namespace

std::string ScatterChart(const std::string& chart_class, const ChartAxis& x_axis, const ChartAxis& y_axis,
                         const std::vector<ChartPoint>& points, const std::vector<ChartLine>& lines) {
  std::vector<double> xs, ys;
  for (const ChartPoint& p : points) {
    if (Drawable(p.x, x_axis.log) && Drawable(p.y, y_axis.log)) {
      xs.push_back(p.x);
      ys.push_back(p.y);
    }
  }
  for (const ChartLine& line : lines) {
    for (const auto& [px, py] : line.points) {
      if (!line.step && !points.empty()) continue;  // ceilings follow the points' range, not widen it
      xs.push_back(px);
      ys.push_back(py);
    }
  }
  Scale x(x_axis, xs, kLeft, kWidth - kRight);
  Scale y(y_axis, ys, kHeight - kBottom, kTop);
  std::string svg = Open(chart_class) + Axes(x, y, x_axis, y_axis);
  for (const ChartLine& line : lines) svg += Polyline(line, x, y, x_axis.log, y_axis.log);
  int left_out = 0;
  for (const ChartPoint& p : points) {
    if (!Drawable(p.x, x_axis.log) || !Drawable(p.y, y_axis.log)) {
      ++left_out;
      continue;
    }
    svg += fmt::format("<circle class=\"point {}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\"><title>{}</title></circle>",
                       HtmlEscape(p.css_class), x(p.x), y(p.y), HtmlEscape(p.tip));
  }
  return svg + Close(left_out);
}

std::string SpeedupHistogram(const std::string& chart_class, const std::string& x_label, const std::vector<double>& values,
                             double marker) {
  // Bins [marker * 2^k, marker * 2^(k+1)), k from -4 to 3; values beyond fall into the end bins.
  constexpr int kLow = -4, kHigh = 4;
  std::vector<int> counts(kHigh - kLow, 0);
  int left_out = 0;
  for (double v : values) {
    if (!Drawable(v, true)) {
      ++left_out;
      continue;
    }
    int k = static_cast<int>(std::floor(std::log2(v / marker)));
    k = std::clamp(k, kLow, kHigh - 1);
    ++counts[k - kLow];
  }
  const int most = std::max(1, *std::max_element(counts.begin(), counts.end()));
  ChartAxis x_axis{x_label, true, marker * std::pow(2.0, kLow), marker * std::pow(2.0, kHigh)};
  ChartAxis y_axis{"tasks", false, 0.0, static_cast<double>(most)};
  // A log2 axis: the Scale's decade ticks would not meet the bins, so ticks are drawn here.
  const double x0 = kLeft, x1 = kWidth - kRight;
  auto px = [&](double v) { return x0 + (std::log2(v / marker) - kLow) / (kHigh - kLow) * (x1 - x0); };
  Scale y(y_axis, {}, kHeight - kBottom, kTop);
  std::string svg = Open(chart_class) + "<g class=\"grid\">";
  for (double t : y.Ticks()) svg += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>", x0, x1, y(t), y(t));
  svg += "</g><g class=\"axis\">";
  svg += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", x0, x1, kHeight - kBottom, kHeight - kBottom);
  svg += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", x0, x0, kTop, kHeight - kBottom);
  for (int k = kLow; k <= kHigh; ++k) {
    const double v = marker * std::pow(2.0, k);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>", px(v), kHeight - kBottom + 16,
                       k == kLow ? "≤" : k == kHigh ? "≥" : "", fmt::format("{:g}x", v));
  }
  for (double t : y.Ticks()) {
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>", x0 - 6, y(t) + 4, t);
  }
  svg += "</g>";
  for (int k = kLow; k < kHigh; ++k) {
    const int count = counts[k - kLow];
    if (count == 0) continue;
    const double left = px(marker * std::pow(2.0, k)) + 1, right = px(marker * std::pow(2.0, k + 1)) - 1;
    svg += fmt::format("<rect class=\"bar {}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                       "data-count=\"{}\"><title>{} task(s) from {:g}x to {:g}x</title></rect>",
                       k < 0 ? "bad" : "good", left, y(count), right - left, kHeight - kBottom - y(count), count, count,
                       marker * std::pow(2.0, k), marker * std::pow(2.0, k + 1));
  }
  svg += fmt::format("<line class=\"marker\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\"/>", px(marker), kTop,
                     kHeight - kBottom);
  svg += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", (x0 + x1) / 2,
                     kHeight - 12, HtmlEscape(x_label));
  svg += fmt::format("<text class=\"axis-label\" transform=\"translate(14,{}) rotate(-90)\" text-anchor=\"middle\">tasks</text>",
                     (kTop + kHeight - kBottom) / 2);
  return svg + Close(left_out);
}

std::string BarChart(const std::string& chart_class, const std::string& value_label, const std::vector<ChartBar>& bars) {
  constexpr double kRow = 22, kLabel = 230;
  const double height = kTop + kRow * std::max<size_t>(bars.size(), 1) + 40;
  double most = 0;
  for (const ChartBar& bar : bars) {
    if (std::isfinite(bar.value)) most = std::max(most, bar.value);
  }
  if (most <= 0) most = 1;
  const double x0 = kLabel, x1 = kWidth + 160 - kRight;
  std::string svg = fmt::format("<svg class=\"chart {}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                                "viewBox=\"0 0 {} {}\" role=\"img\">",
                                HtmlEscape(chart_class), kWidth + 160, height, kWidth + 160, height);
  for (size_t i = 0; i < bars.size(); ++i) {
    const ChartBar& bar = bars[i];
    const double y = kTop + kRow * i;
    const double width = std::isfinite(bar.value) && bar.value > 0 ? (x1 - x0 - 70) * bar.value / most : 0;
    std::string label = bar.label.size() > 36 ? bar.label.substr(0, 35) + "…" : bar.label;
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", x0 - 6, y + 14, HtmlEscape(label));
    svg += fmt::format("<rect class=\"bar {}\" x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\"><title>{}</title></rect>",
                       HtmlEscape(bar.css_class), x0, y + 3, width, kRow - 6, HtmlEscape(bar.tip.empty() ? bar.label : bar.tip));
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", x0 + width + 4, y + 14, CompactNumber(bar.value));
  }
  svg += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", (x0 + x1) / 2,
                     height - 10, HtmlEscape(value_label));
  return svg + "</svg>";
}

std::string SampleChart(const std::string& chart_class, const std::string& value_label,
                        const std::vector<SampleGroup>& groups, bool log) {
  constexpr double kRow = 44, kLabel = 150;
  const double height = kTop + kRow * std::max<size_t>(groups.size(), 1) + 46;
  std::vector<double> values;
  for (const SampleGroup& group : groups) values.insert(values.end(), group.samples.begin(), group.samples.end());
  ChartAxis axis{value_label, log, std::nullopt, std::nullopt};
  const double x0 = kLabel, x1 = kWidth - kRight;
  Scale x(axis, values, x0, x1);
  std::string svg = fmt::format("<svg class=\"chart {}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                                "viewBox=\"0 0 {} {}\" role=\"img\">",
                                HtmlEscape(chart_class), kWidth, height, kWidth, height);
  const double axis_y = kTop + kRow * groups.size() + 4;
  svg += "<g class=\"axis\">";
  svg += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>", x0, x1, axis_y, axis_y);
  for (double t : x.Ticks()) {
    svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\"/><text x=\"{0:.1f}\" y=\"{3:.1f}\" "
                       "text-anchor=\"middle\">{4}</text>",
                       x(t), axis_y, axis_y + 4, axis_y + 16, CompactNumber(t));
  }
  svg += "</g>";
  int left_out = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const SampleGroup& group = groups[i];
    const double cy = kTop + kRow * i + kRow / 2;
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", x0 - 8, cy + 4, HtmlEscape(group.label));
    if (group.ci_low && group.ci_high && Drawable(*group.ci_low, log) && Drawable(*group.ci_high, log)) {
      svg += fmt::format("<line class=\"interval\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"><title>95% interval "
                         "{:.4g} to {:.4g}</title></line>",
                         x(*group.ci_low), x(*group.ci_high), cy + 12, cy + 12, *group.ci_low, *group.ci_high);
    }
    if (group.median && Drawable(*group.median, log)) {
      svg += fmt::format("<line class=\"median\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\"><title>median "
                         "{3:.4g}</title></line>",
                         x(*group.median), cy - 12, cy + 16, *group.median);
    }
    for (size_t s = 0; s < group.samples.size(); ++s) {
      const double v = group.samples[s];
      if (!Drawable(v, log)) {
        ++left_out;
        continue;
      }
      // A small vertical jitter by sample index keeps equal samples apart.
      svg += fmt::format("<circle class=\"point sample\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"><title>{:.4g}</title></circle>", x(v),
                         cy - 6 + static_cast<double>(s % 5) * 3, v);
    }
  }
  svg += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", (x0 + x1) / 2,
                     axis_y + 34, HtmlEscape(value_label));
  return svg + Close(left_out);
}

}  // namespace kforge
