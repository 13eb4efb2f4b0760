#include "report/html_report.h"

#include <regex>

#include <gtest/gtest.h>

#include "core/files.h"
#include "report/html_page.h"
#include "report/llm_run.h"
#include "report/svg_chart.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

int Count(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++count;
  return count;
}

// A task report as `optimize` writes it on a GPU, reduced to what the pages read.
Json Report(const std::string& task, const std::string& verdict, double speedup, double candidate_ms, double flops,
            double bytes) {
  Json roofline = {{"fraction_of_roofline", 0.6}, {"flops", flops}, {"bytes", bytes},
                   {"peak_flops_per_s", 4.0e14}, {"peak_bytes_per_s", 4.0e12}};
  Json timing = {{"candidate_samples_ms", {candidate_ms, candidate_ms * 1.01, candidate_ms * 0.99}},
                 {"candidate_ms", {{"median", candidate_ms}, {"ci_low", candidate_ms * 0.99}, {"ci_high", candidate_ms * 1.01}}},
                 {"reference_samples_ms", {candidate_ms * speedup}},
                 {"reference_eager_ms", {{"median", candidate_ms * speedup}}},
                 {"speedup_vs_compile", {{"speedup", speedup / 1.2}}},
                 {"reference_compile_ms", {{"median", candidate_ms * speedup / 1.2}}}};
  Json evaluation = {{"verdict", verdict},
                     {"message", verdict == "accepted" ? "correct" : "output differs <b>here</b>"},
                     {"timings_meaningful", true},
                     {"speedup", {{"speedup", speedup}}},
                     {"candidate_ms", {{"median", candidate_ms}}},
                     {"reference_ms", {{"median", candidate_ms * speedup}}},
                     {"evidence",
                      {{"timing", timing},
                       {"roofline", roofline},
                       {"provenance",
                        {{"times_meaningful", true},
                         {"kernels", {{{"name", "fused_relu"}, {"class", "authored"}, {"calls", 1}, {"time_us", 12.5}},
                                      {{"name", "aten::copy_"}, {"class", "data_movement"}, {"calls", 2}, {"time_us", 3.0}}}}}},
                       {"kernel_counters", {{"kernels", {{{"name", "fused_relu"}, {"dram_pct", 81.0}, {"sm_pct", 20.0}, {"bound", "memory"}}}}}}}}};
  return {{"task", task},
          {"level", "level1"},
          {"mode", "strict"},
          {"source", "compiler"},
          {"evaluation", evaluation},
          {"compile", {{"capture_s", 0.2}, {"passes_s", 0.01}, {"codegen_s", 0.01}, {"groups", {{{"name", "relu"}, {"kind", "pointwise"}, {"nodes", 1}}}}}}};
}

BenchRun RunOf(std::vector<Json> reports) {
  BenchRun run;
  for (const Json& report : reports) run.rows.push_back(RowFromReport(report));
  run.summary = {{"levels", {{"all", {{"tasks", reports.size()}, {"fast_0", 1.0}}}}}, {"suite", "/x/level1"}};
  return run;
}

TEST(HtmlPageTest, EscapesTextAndAttributes) {
  EXPECT_EQ(HtmlEscape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;");
  const std::string page = RenderPage({"a <b>", "", "<p>body</p>", ""});
  EXPECT_NE(page.find("<title>a &lt;b&gt;</title>"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);  // a static report runs no script
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org")) << "nothing is loaded from the network";
}

TEST(SvgChartTest, ScatterDrawsEveryDrawablePointAndCountsTheRest) {
  const std::string svg = ScatterChart("roofline", {"x", true, std::nullopt, std::nullopt}, {"y", true, std::nullopt, std::nullopt},
                                       {{1, 10, "a", "good"}, {100, 1000, "b", ""}, {0, 5, "zero on a log axis", ""}},
                                       {{"ceiling", {{1, 100}, {100, 100}}, "compute", false}});
  EXPECT_EQ(Count(svg, "<circle class=\"point"), 2);
  EXPECT_NE(svg.find("1 not drawable, left out"), std::string::npos);
  EXPECT_EQ(Count(svg, "<polyline class=\"line compute\""), 1);
  EXPECT_NE(svg.find("<title>a</title>"), std::string::npos);
}

TEST(SvgChartTest, HistogramBinsByFactorsOfTwoAroundTheMarker) {
  // 0.6 in [0.5, 1); 1.2 and 1.9 in [1, 2); 9 and 100 clamp into the last bin [8, 16).
  const std::string svg = SpeedupHistogram("speedups", "speedup", {0.6, 1.2, 1.9, 9, 100});
  EXPECT_EQ(Count(svg, "<rect class=\"bar bad\""), 1);
  EXPECT_EQ(Count(svg, "<rect class=\"bar good\""), 2);
  EXPECT_NE(svg.find("data-count=\"2\"><title>2 task(s) from 1x to 2x"), std::string::npos);
  EXPECT_NE(svg.find("data-count=\"2\"><title>2 task(s) from 8x to 16x"), std::string::npos);
}

TEST(BenchRowTest, RoundTripsThroughTheSummaryJson) {
  const BenchRow row = RowFromReport(Report("level1/a", "accepted", 2.0, 1.0, 1e9, 1e8));
  const BenchRow back = BenchRow::FromJson(row.ToJson());
  EXPECT_EQ(back.task, "level1/a");
  EXPECT_TRUE(back.accepted());
  EXPECT_DOUBLE_EQ(*back.speedup_vs_eager, 2.0);
  EXPECT_DOUBLE_EQ(*back.flops, 1e9);
  EXPECT_DOUBLE_EQ(*back.peak_bytes_per_s, 4.0e12);
  EXPECT_DOUBLE_EQ(back.compile_s, 0.22);
  const BenchRow error = RowFromReport({{"task", "level1/b"}, {"error", "export failed"}});
  EXPECT_EQ(error.verdict, "error");
  EXPECT_EQ(error.message, "export failed");
}

TEST(BenchPageTest, ShowsFastPChartsRooflineAndFailuresWithTaskLinks) {
  BenchRun run = RunOf({Report("level1/a", "accepted", 2.0, 1.0, 1e9, 1e8), Report("level1/b", "accepted", 0.8, 2.0, 0, 4e8),
                      Report("level1/c", "wrong_output", 0, 1.0, 1e9, 1e8)});
  ReportLinks links;
  links.task_href = [](const BenchRow& row) { return "tasks/" + row.task + ".html"; };
  const std::string body = BenchBody(run, links);
  // Two timed accepted tasks in the histogram; a has FLOPs (roofline), a and b both move bytes.
  EXPECT_NE(body.find("class=\"chart speedup-eager\""), std::string::npos);
  const size_t roofline = body.find("class=\"chart roofline\"");
  ASSERT_NE(roofline, std::string::npos);
  EXPECT_EQ(Count(body.substr(roofline, body.find("</svg>", roofline) - roofline), "<circle class=\"point"), 1);
  const size_t bandwidth = body.find("class=\"chart bandwidth\"");
  ASSERT_NE(bandwidth, std::string::npos);
  EXPECT_EQ(Count(body.substr(bandwidth, body.find("</svg>", bandwidth) - bandwidth), "<circle class=\"point"), 2);
  // The failure with its verdict and escaped words, linked to its page.
  EXPECT_NE(body.find("<a href=\"tasks/level1/c.html\">level1/c</a>"), std::string::npos);
  EXPECT_NE(body.find("output differs &lt;b&gt;here&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(body.find("<b>here</b>"), std::string::npos);
}

TEST(BenchPageTest, SaysWhyThereIsNoRooflineOrDistributionOnTheCpu) {
  Json report = Report("level1/a", "accepted", 2.0, 1.0, 1e9, 1e8);
  report["evaluation"]["timings_meaningful"] = false;
  const std::string body = BenchBody(RunOf({report}));
  EXPECT_NE(body.find("timings mean nothing"), std::string::npos);
  EXPECT_EQ(body.find("class=\"chart roofline\""), std::string::npos);
  EXPECT_NE(body.find("No roofline"), std::string::npos);
}

TEST(TaskPageTest, ShowsSamplesKernelsGroupsAndTheEscapedSource) {
  const std::string body = TaskBody(Report("level1/a", "accepted", 2.0, 1.0, 1e9, 1e8), "x = '<script>'\n");
  EXPECT_NE(body.find("class=\"chart samples\""), std::string::npos);
  EXPECT_EQ(Count(body, "class=\"point sample\""), 4);  // three candidate calls, one eager
  EXPECT_NE(body.find("class=\"chart kernel-time\""), std::string::npos);
  EXPECT_NE(body.find("<td class=\"num\">81%</td>"), std::string::npos);  // ncu's DRAM share beside the kernel
  EXPECT_NE(body.find("pointwise"), std::string::npos);
  EXPECT_NE(body.find("x = &#39;&lt;script&gt;&#39;"), std::string::npos);
  EXPECT_EQ(body.find("<script>"), std::string::npos);
}

TEST(TaskPageTest, AnLlmStageShowsEachWritersPathAndTheBestSoFar) {
  Json report = Report("level1/a", "accepted", 2.0, 1.0, 1e9, 1e8);
  Json attempt = {{"writer", 1}, {"round", 1}, {"prompt", "write"}, {"verdict", "compile_error"}, {"prompt_tokens", 100}};
  Json second = {{"writer", 1}, {"round", 2}, {"prompt", "repair"}, {"verdict", "accepted"}, {"speedup", 1.5}, {"cost_usd", 0.01}};
  Json third = {{"writer", 2}, {"round", 1}, {"prompt", "write"}, {"verdict", "accepted"}, {"speedup", 2.5}};
  report["llm"] = {{"pool", {{"attempts", {attempt, second, third}}}},
                   {"usage", {{"prompt_tokens", 100}, {"cost_usd", 0.01}}},
                   {"settings", {{"budget_usd", 1.0}}}};
  const std::string body = TaskBody(report, "");
  EXPECT_NE(body.find("whole / writer 1</b>: r1 compile_error → r2 accepted 1.50x"), std::string::npos);
  EXPECT_NE(body.find("whole / writer 2</b>: r1 accepted 2.50x"), std::string::npos);
  EXPECT_NE(body.find("$0.0100 of $1.00"), std::string::npos);
  const std::string stage = body.substr(body.find("<section id=\"llm\""));
  EXPECT_EQ(Count(stage.substr(0, stage.find("</section>")), "<circle class=\"point"), 2);  // the two timed accepted attempts
  EXPECT_NE(body.find("<polyline class=\"line best\""), std::string::npos);
}

TEST(ComparePageTest, FlagsNewlyFailingTasksAndOrdersChangesBySize) {
  BenchRun before = RunOf({Report("level1/a", "accepted", 2.0, 1.0, 1e9, 1e8), Report("level1/b", "accepted", 1.0, 1.0, 1e9, 1e8),
                         Report("level1/c", "accepted", 1.0, 1.0, 1e9, 1e8)});
  BenchRun after = RunOf({Report("level1/a", "accepted", 2.2, 1.0, 1e9, 1e8), Report("level1/b", "accepted", 3.0, 1.0, 1e9, 1e8),
                        Report("level1/c", "wrong_output", 0, 1.0, 1e9, 1e8)});
  const std::string body = CompareBody(before, after);
  const size_t failing = body.find("class=\"newly-failing\"");
  ASSERT_NE(failing, std::string::npos);
  EXPECT_NE(body.find("level1/c", failing), std::string::npos);
  const size_t changes = body.find("class=\"changes\"");
  ASSERT_NE(changes, std::string::npos);
  EXPECT_LT(body.find("level1/b", changes), body.find("level1/a", changes));  // 3x beats 1.1x as a change
}

TEST(LoadBenchRunTest, ReadsASummaryOrTheReportsOfARunInProgress) {
  auto dir = MakeTempDir(fs::temp_directory_path(), "kforge-report-test-");
  ASSERT_TRUE(dir.ok());
  EXPECT_FALSE(LoadBenchRun(*dir).ok());  // nothing there yet
  fs::create_directories(*dir / "a");
  ASSERT_TRUE(WriteFile(*dir / "a" / "report.json", Report("level1/a", "accepted", 2.0, 1.0, 1e9, 1e8).dump()).ok());
  auto from_reports = LoadBenchRun(*dir);
  ASSERT_TRUE(from_reports.ok()) << from_reports.status().ToString();
  ASSERT_EQ(from_reports->rows.size(), 1u);
  EXPECT_EQ(from_reports->summary["levels"]["all"]["tasks"], 1);
  // A finished run's summary wins; while progress.json says running, the reports do.
  Json summary = {{"tasks", {BenchRow::FromJson({{"task", "old"}, {"verdict", "accepted"}}).ToJson()}}, {"levels", Json::object()}};
  ASSERT_TRUE(WriteFile(*dir / "bench.json", summary.dump()).ok());
  EXPECT_EQ(LoadBenchRun(*dir)->rows.at(0).task, "old");
  ASSERT_TRUE(WriteFile(*dir / "progress.json", Json({{"state", "running"}}).dump()).ok());
  EXPECT_EQ(LoadBenchRun(*dir)->rows.at(0).task, "level1/a");
  ASSERT_TRUE(WriteFile(*dir / "bench.json", "{\"not\": \"a summary\"}").ok());
  ASSERT_TRUE(WriteFile(*dir / "progress.json", Json({{"state", "finished"}}).dump()).ok());
  EXPECT_FALSE(LoadBenchRun(*dir / "bench.json").ok());
  RemoveTreeQuietly(*dir);
}

}  // namespace
}  // namespace kforge
