#include "report/html_page.h"

#include <fmt/format.h>

namespace kforge {
namespace {

// One style for every page: readable tables, the charts' marks, the dashboard's progress bar.
constexpr const char kStyle[] = R"css(
:root { --fg: #1d2430; --muted: #5b6575; --line: #d8dde6; --good: #1a7f37; --bad: #c62828; --accent: #2f5fb3; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); margin: 0; background: #f6f7f9; }
header { background: #1d2430; color: #fff; padding: 14px 24px; }
header h1 { font-size: 20px; margin: 0; } header .sub { color: #c9d1dc; font-size: 13px; }
main { padding: 16px 24px 40px; max-width: 1280px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 14px 0; }
h2 { font-size: 16px; margin: 0 0 10px; } h3 { font-size: 14px; margin: 12px 0 6px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef1f5; font-weight: 600; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.good { color: var(--good); } .bad { color: var(--bad); } .muted { color: var(--muted); }
.verdict.accepted { color: var(--good); font-weight: 600; } .verdict.rejected, .verdict.error { color: var(--bad); font-weight: 600; }
.stats { display: flex; flex-wrap: wrap; gap: 12px; }
.stat { border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 140px; background: #fbfcfd; }
.stat .value { font-size: 22px; font-weight: 600; } .stat .caption { color: var(--muted); font-size: 12px; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; } .charts figure { margin: 0; }
figcaption { color: var(--muted); font-size: 12px; max-width: 560px; }
svg.chart { background: #fff; font: 11px system-ui, sans-serif; }
svg.chart .axis line, svg.chart .axis path { stroke: #8a94a6; } svg.chart .grid line { stroke: #edf0f4; }
svg.chart .axis-label { fill: var(--muted); font-size: 12px; }
svg.chart circle.point { fill: var(--accent); fill-opacity: .75; stroke: #fff; stroke-width: .5; }
svg.chart circle.point.good { fill: var(--good); } svg.chart circle.point.bad { fill: var(--bad); }
svg.chart rect.bar { fill: var(--accent); } svg.chart rect.bar.good { fill: var(--good); } svg.chart rect.bar.bad { fill: var(--bad); }
svg.chart .line { fill: none; stroke: #444; stroke-width: 1.5; } svg.chart .line.memory { stroke: #8e44ad; }
svg.chart .line.compute { stroke: #d35400; } svg.chart .line.best { stroke: var(--good); stroke-width: 2; }
svg.chart .marker { stroke: #444; stroke-dasharray: 4 3; } svg.chart .interval { stroke: #222; stroke-width: 2; }
svg.chart .median { stroke: #222; stroke-width: 3; }
pre.source { background: #f3f5f8; border: 1px solid var(--line); padding: 10px; overflow: auto; max-height: 640px; font-size: 12px; line-height: 1.4; }
details summary { cursor: pointer; color: var(--accent); }
.progress { height: 10px; background: #e5e9f0; border-radius: 5px; overflow: hidden; margin: 6px 0; }
.progress .done { height: 100%; background: var(--good); }
.live { font-size: 12px; color: var(--muted); }
)css";

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string RenderPage(const HtmlPage& page) {
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>{}</title><style>{}</style></head>\n<body><header><h1>{}</h1><div class=\"sub\">{}</div></header>\n"
      "<main id=\"content\">{}</main>\n",
      HtmlEscape(page.title), kStyle, HtmlEscape(page.title), page.subtitle, page.body);
  if (!page.script.empty()) html += "<script>\n" + page.script + "\n</script>\n";
  return html + "</body></html>\n";
}

HtmlTable::HtmlTable(std::vector<std::string> headers, std::string css_class)
    : headers_(std::move(headers)), css_class_(std::move(css_class)) {}

void HtmlTable::AddRow(std::vector<std::string> cells, const std::string& row_class) {
  std::string row = row_class.empty() ? "<tr>" : "<tr class=\"" + HtmlEscape(row_class) + "\">";
  for (size_t i = 0; i < cells.size(); ++i) {
    const bool numeric = i < headers_.size() && !headers_[i].empty() && headers_[i][0] == '#';
    row += numeric ? "<td class=\"num\">" : "<td>";
    row += cells[i] + "</td>";
  }
  rows_.push_back(row + "</tr>");
}

std::string HtmlTable::Render() const {
  std::string html = "<table class=\"" + HtmlEscape(css_class_) + "\"><thead><tr>";
  for (const std::string& header : headers_) {
    const bool numeric = !header.empty() && header[0] == '#';
    html += numeric ? "<th class=\"num\">" + HtmlEscape(header.substr(1)) + "</th>" : "<th>" + HtmlEscape(header) + "</th>";
  }
  html += "</tr></thead><tbody>";
  for (const std::string& row : rows_) html += row;
  return html + "</tbody></table>";
}

std::string Section(const std::string& id, const std::string& heading, const std::string& body) {
  return fmt::format("<section id=\"{}\"><h2>{}</h2>{}</section>\n", HtmlEscape(id), HtmlEscape(heading), body);
}

std::string Stat(const std::string& value, const std::string& caption) {
  return fmt::format("<div class=\"stat\"><div class=\"value\">{}</div><div class=\"caption\">{}</div></div>",
                     HtmlEscape(value), HtmlEscape(caption));
}

std::string SpeedupCell(std::optional<double> speedup) {
  if (!speedup) return "<span class=\"muted\">-</span>";
  const char* css = *speedup > 1.0 ? "good" : *speedup < 1.0 ? "bad" : "even";
  return fmt::format("<span class=\"{}\">{:.2f}x</span>", css, *speedup);
}

std::string MsCell(std::optional<double> ms) {
  if (!ms) return "<span class=\"muted\">-</span>";
  return fmt::format("{:.4g} ms", *ms);
}

std::string PercentCell(std::optional<double> fraction) {
  if (!fraction) return "<span class=\"muted\">-</span>";
  return fmt::format("{:.0f}%", *fraction * 100);
}

std::string VerdictCell(const std::string& verdict) {
  const char* kind = verdict == "accepted" ? "accepted" : verdict == "error" ? "error" : "rejected";
  return fmt::format("<span class=\"verdict {}\">{}</span>", kind, HtmlEscape(verdict));
}

}  // namespace kforge
