// The frame of kforge's HTML pages: escaping, one self-contained page (inline style, no external
// resource of any kind, so a saved report opens offline), tables and number formats shared by the
// report pages and the dashboard.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

// Text made safe inside an element or a quoted attribute: & < > " ' escaped.
std::string HtmlEscape(std::string_view text);

struct HtmlPage {
  std::string title;
  std::string subtitle;  // HTML
  std::string body;      // HTML, inside <main id="content">
  std::string script;    // JavaScript run at the end of the page; empty for a static report
};

std::string RenderPage(const HtmlPage& page);

// A table whose cells are HTML (escape text before adding it).
class HtmlTable {
 public:
  HtmlTable(std::vector<std::string> headers, std::string css_class);
  void AddRow(std::vector<std::string> cells, const std::string& row_class = "");
  bool empty() const { return rows_.empty(); }
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::string css_class_;
  std::vector<std::string> rows_;
};

// A section with a heading (escaped) and an HTML body.
std::string Section(const std::string& id, const std::string& heading, const std::string& body);
// A <div class="stat"> with a big value and a caption (both escaped).
std::string Stat(const std::string& value, const std::string& caption);

// "1.23x" in a span classed good (> 1), bad (< 1) or even; "-" when absent.
std::string SpeedupCell(std::optional<double> speedup);
// "0.123 ms", 4 significant digits; "-" when absent.
std::string MsCell(std::optional<double> ms);
// "45%"; "-" when absent.
std::string PercentCell(std::optional<double> fraction);
// A verdict in a span classed by its kind (accepted, rejected, error).
std::string VerdictCell(const std::string& verdict);

}  // namespace kforge
