// The page of one task: what `optimize` (and its LLM stage) did and why the evaluator decided.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "report/html_page.h"
#include "report/html_report.h"
#include "report/llm_run.h"
#include "report/svg_chart.h"
#include "report/text_report.h"

namespace kforge {
namespace {

std::vector<double> Numbers(const Json& array) {
  std::vector<double> out;
  for (const Json& value : array) {
    if (value.is_number()) out.push_back(value.get<double>());
  }
  return out;
}

// One kernel of the candidate's forward, from the profiler (times) and, where measured, ncu.
struct KernelRow {
  std::string name, css_class;  // class: authored, library_compute, data_movement
  int calls = 0;
  std::optional<double> time_us;
  std::optional<double> dram_pct, sm_pct;
  std::string bound;
};

// A task report's parts this page shows, read once.
struct TaskView {
  BenchRow row;
  std::string source;  // compiler or llm
  Json evaluation;
  std::vector<SampleGroup> samples;
  std::vector<KernelRow> kernels;
  bool kernel_times = false;  // profiler times (GPU), not call counts
  Json groups, left_to_pytorch, attempts_compile;
  Json llm;
};

TaskView ReadTask(const Json& report) {
  TaskView view;
  view.row = RowFromReport(report);
  view.source = JsonGet<std::string>(report, "source", "compiler");
  view.evaluation = JsonField(report, "evaluation");
  const Json& evidence = JsonField(view.evaluation, "evidence");
  const Json& timing = JsonField(evidence, "timing");
  auto group = [&](const char* label, const char* samples, const char* summary) {
    const Json& stats = JsonField(timing, summary);
    SampleGroup g{label, Numbers(JsonField(timing, samples)), JsonNumber(stats, "median"), JsonNumber(stats, "ci_low"),
                  JsonNumber(stats, "ci_high")};
    if (!g.samples.empty() || g.median) view.samples.push_back(std::move(g));
  };
  group("candidate", "candidate_samples_ms", "candidate_ms");
  group("eager", "reference_samples_ms", "reference_eager_ms");
  group("torch.compile", "reference_compile_samples_ms", "reference_compile_ms");
  const Json& provenance = JsonField(evidence, "provenance");
  view.kernel_times = JsonGet<bool>(provenance, "times_meaningful", false);
  std::map<std::string, const Json*> counters;
  for (const Json& kernel : JsonField(JsonField(evidence, "kernel_counters"), "kernels")) {
    counters[JsonGet<std::string>(kernel, "name", "")] = &kernel;
  }
  for (const Json& kernel : JsonField(provenance, "kernels")) {
    KernelRow row;
    row.name = JsonGet<std::string>(kernel, "name", "?");
    row.css_class = JsonGet<std::string>(kernel, "class", "");
    row.calls = JsonGet<int>(kernel, "calls", 0);
    row.time_us = JsonNumber(kernel, "time_us");
    if (auto it = counters.find(row.name); it != counters.end()) {
      row.dram_pct = JsonNumber(*it->second, "dram_pct");
      row.sm_pct = JsonNumber(*it->second, "sm_pct");
      row.bound = JsonGet<std::string>(*it->second, "bound", "");
    }
    view.kernels.push_back(std::move(row));
  }
  const Json& compile = JsonField(report, "compile");
  view.groups = JsonField(compile, "groups");
  view.left_to_pytorch = JsonField(compile, "left_to_pytorch");
  view.attempts_compile = JsonField(compile, "attempts");
  view.llm = JsonField(report, "llm");
  return view;
}

std::string Headline(const TaskView& view) {
  const BenchRow& row = view.row;
  const bool timed = row.timings_meaningful;
  std::string html = "<div class=\"stats\">";
  html += Stat(row.verdict, "verdict");
  html += Stat(timed && row.speedup_vs_eager ? fmt::format("{:.2f}x", *row.speedup_vs_eager) : "-", "speedup vs eager");
  html += Stat(timed && row.speedup_vs_compile ? fmt::format("{:.2f}x", *row.speedup_vs_compile) : "-",
               "speedup vs torch.compile");
  html += Stat(row.candidate_ms ? fmt::format("{:.4g} ms", *row.candidate_ms) : "-", "candidate, median");
  html += Stat(row.fraction_of_roofline ? fmt::format("{:.0f}%", *row.fraction_of_roofline * 100) : "-",
               "of the roofline");
  html += Stat(view.source == "llm" ? "LLM stage" : "compiler", "model_new.py from");
  html += "</div>";
  if (!timed) html += "<p class=\"muted\">Timed on the CPU through Triton's interpreter: timings mean nothing.</p>";
  return html;
}

std::string Evidence(const TaskView& view) {
  if (!view.evaluation.is_object()) return "<p class=\"bad\">" + HtmlEscape(view.row.message) + "</p>";
  return "<p>" + HtmlEscape(JsonGet<std::string>(view.evaluation, "message", "")) + "</p><pre class=\"source evidence\">" +
         HtmlEscape(FormatEvaluationJson(view.evaluation)) + "</pre>";
}

std::string Timing(const TaskView& view) {
  if (view.samples.empty()) return "<p class=\"muted\">No timing samples.</p>";
  return "<figure>" + SampleChart("samples", "milliseconds per call", view.samples) +
         "<figcaption>Each timed call (dots), the median (tall bar) and its bootstrap 95% interval (line below), "
         "candidate and references timed side by side.</figcaption></figure>";
}

std::string Kernels(const TaskView& view) {
  if (view.kernels.empty()) return "<p class=\"muted\">No kernel profile in this report.</p>";
  std::vector<ChartBar> bars;
  HtmlTable table({"kernel", "class", "#calls", view.kernel_times ? "#time" : "#time (CPU: not measured)", "#DRAM % of peak",
                   "#SM % of peak", "bound"},
                  "kernels");
  for (const KernelRow& kernel : view.kernels) {
    const double value = view.kernel_times && kernel.time_us ? *kernel.time_us : kernel.calls;
    bars.push_back({kernel.name, value,
                    fmt::format("{} ({}): {}", kernel.name, kernel.css_class,
                                view.kernel_times ? fmt::format("{:.1f} us", value) : fmt::format("{} call(s)", kernel.calls)),
                    kernel.css_class == "authored" ? "good" : kernel.css_class == "library_compute" ? "bad" : ""});
    auto pct = [](std::optional<double> v) { return v ? fmt::format("{:.0f}%", *v) : std::string("-"); };
    table.AddRow({"<code>" + HtmlEscape(kernel.name) + "</code>", HtmlEscape(kernel.css_class), std::to_string(kernel.calls),
                  view.kernel_times && kernel.time_us ? fmt::format("{:.1f} us", *kernel.time_us) : "-", pct(kernel.dram_pct),
                  pct(kernel.sm_pct), HtmlEscape(kernel.bound)});
  }
  std::sort(bars.begin(), bars.end(), [](const ChartBar& a, const ChartBar& b) { return a.value > b.value; });
  if (bars.size() > 20) bars.resize(20);
  return BarChart("kernel-time", view.kernel_times ? "microseconds per forward" : "calls per forward", bars) +
         table.Render() +
         "<p class=\"muted\">Green: kernels the candidate authored; red: library compute. DRAM and SM percentages "
         "(each kernel's fraction of its memory and compute roofline) come from ncu where kernel counters were "
         "measured.</p>";
}

std::string Groups(const TaskView& view) {
  HtmlTable table({"fusion group", "kind", "#nodes"}, "groups");
  for (const Json& group : view.groups) {
    table.AddRow({HtmlEscape(JsonGet<std::string>(group, "name", "?")), HtmlEscape(JsonGet<std::string>(group, "kind", "?")),
                  std::to_string(JsonGet<int>(group, "nodes", 0))});
  }
  std::string html = table.empty() ? "<p class=\"muted\">No fusion groups recorded.</p>" : table.Render();
  if (!view.left_to_pytorch.empty()) {
    html += "<h3>Left to PyTorch</h3><pre class=\"source\">" + HtmlEscape(view.left_to_pytorch.dump(1)) + "</pre>";
  }
  if (!view.attempts_compile.empty()) {
    html += "<h3>Compiler attempts</h3><pre class=\"source\">" + HtmlEscape(view.attempts_compile.dump(1)) + "</pre>";
  }
  return html;
}

}  // namespace

std::string TaskBody(const Json& report, const std::string& model_new) {
  const TaskView view = ReadTask(report);
  std::string html = Section("overview", "Overview", Headline(view)) + Section("evidence", "Verdict and evidence", Evidence(view)) +
                     Section("timing", "Timing samples", Timing(view)) + Section("kernels", "Time per kernel", Kernels(view)) +
                     Section("groups", "Fusion groups", Groups(view));
  if (view.llm.is_object()) html += Section("llm", "LLM stage", LlmRunBody(LlmRunFromReport(view.llm)));
  html += Section("source", "Generated source (model_new.py)",
                  model_new.empty() ? "<p class=\"muted\">Not available.</p>"
                                    : "<details open><summary>model_new.py</summary><pre class=\"source\"><code>" +
                                          HtmlEscape(model_new) + "</code></pre></details>");
  return html;
}

std::string TaskReportHtml(const Json& report, const std::string& model_new) {
  const std::string task = JsonGet<std::string>(report, "task", "?");
  const std::string subtitle = HtmlEscape(fmt::format("{} mode · {} · {}", JsonGet<std::string>(report, "mode", "?"),
                                                      JsonGet<std::string>(JsonField(report, "evaluation"), "device", "?"),
                                                      JsonGet<std::string>(report, "model_new", "")));
  return RenderPage({"kforge task: " + task, subtitle, TaskBody(report, model_new), ""});
}

}  // namespace kforge
