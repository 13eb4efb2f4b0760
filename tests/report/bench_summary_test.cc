#include "report/bench_summary.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

// A report as `optimize` writes it, reduced to what the summary reads.
Json Report(const std::string& task, const std::string& level, const std::string& verdict, double speedup,
            double versus_compile, double eager_ms, double compile_ms, double roofline, bool meaningful = true) {
  Json evaluation = {{"verdict", verdict},
                     {"message", verdict == "accepted" ? "" : "why it failed\nsecond line"},
                     {"timings_meaningful", meaningful},
                     {"speedup", {{"speedup", speedup}}},
                     {"reference_ms", {{"median", eager_ms}}},
                     {"evidence",
                      {{"timing", {{"speedup_vs_compile", {{"speedup", versus_compile}}},
                                   {"reference_compile_ms", {{"median", compile_ms}}}}},
                       {"roofline", {{"fraction_of_roofline", roofline}}}}}};
  return {{"task", task}, {"level", level}, {"evaluation", evaluation}};
}

TEST(BenchSummaryTest, CountsFastPSharesOfAllTasksAndGeometricMeansOfAcceptedOnes) {
  std::vector<Json> entries = {
      Report("level1/a", "level1", "accepted", 2.0, 1.2, 1.0, 0.5, 0.8),
      Report("level1/b", "level1", "accepted", 0.5, 0.25, 1.0, 2.0, 0.4),
      Report("level1/c", "level1", "wrong_output", 0, 0, 1.0, 0.8, 0),
      {{"task", "level1/d"}, {"level", "level1"}, {"error", "export failed at line 3"}},
      Report("level2/e", "level2", "accepted", 1.6, 1.6, 1.0, 1.0, 0.6),
  };
  Json summary = SummarizeBench(entries);
  const Json& l1 = summary["levels"]["level1"];
  EXPECT_EQ(l1["tasks"], 4);
  EXPECT_EQ(l1["accepted"], 2);
  EXPECT_DOUBLE_EQ(l1["fast_0"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(l1["fast_1_vs_eager"].get<double>(), 0.25);  // a only, of 4 tasks
  EXPECT_DOUBLE_EQ(l1["fast_1.5_vs_eager"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(l1["fast_2_vs_eager"].get<double>(), 0.0);   // 2.0 is not more than 2
  EXPECT_DOUBLE_EQ(l1["fast_1_vs_compile"].get<double>(), 0.25);
  // torch.compile beat eager on a and on c (whose candidate failed; its baselines were timed).
  EXPECT_DOUBLE_EQ(l1["compile_fast_1_vs_eager"].get<double>(), 0.5);
  EXPECT_NEAR(l1["geomean_speedup_vs_eager"].get<double>(), 1.0, 1e-12);      // sqrt(2 * 0.5)
  EXPECT_NEAR(l1["geomean_compile_vs_eager"].get<double>(), 1.0, 1e-12);      // sqrt(2 * 0.5)
  EXPECT_NEAR(l1["median_fraction_of_roofline"].get<double>(), 0.6, 1e-12);
  ASSERT_EQ(l1["failed"].size(), 2u);
  EXPECT_EQ(l1["failed"][0]["why"], "wrong_output: why it failed second line");
  EXPECT_EQ(l1["failed"][1]["why"], "error: export failed at line 3");
  EXPECT_EQ(summary["levels"]["all"]["tasks"], 5);
  EXPECT_EQ(summary["levels"]["level2"]["accepted"], 1);
}

TEST(BenchSummaryTest, MemoryBoundRooflineAndCompileTimesAreSummarized) {
  // Peaks 1 byte/s and 10 FLOP/s: a task is memory-bound when bytes >= flops / 10.
  auto with = [](Json report, double bytes, double flops, double compile_s, double startup_s) {
    report["evaluation"]["evidence"]["roofline"].update(
        {{"bytes", bytes}, {"flops", flops}, {"peak_bytes_per_s", 1.0}, {"peak_flops_per_s", 10.0}});
    report["compile"] = {{"capture_s", compile_s}, {"passes_s", 0.0}, {"codegen_s", 0.0}, {"startup_s", startup_s}};
    return report;
  };
  Json summary = SummarizeBench({with(Report("level1/a", "level1", "accepted", 1, 1, 1, 1, 0.9), 100, 10, 0.5, 6.0),
                                 with(Report("level1/b", "level1", "accepted", 1, 1, 1, 1, 0.7), 100, 100, 1.5, 0.0),
                                 with(Report("level1/c", "level1", "accepted", 1, 1, 1, 1, 0.1), 1, 1000, 0.7, 0.0)});
  const Json& l1 = summary["levels"]["level1"];
  EXPECT_EQ(l1["memory_bound_tasks"], 2);
  EXPECT_NEAR(l1["median_fraction_of_roofline_memory_bound"].get<double>(), 0.8, 1e-12);
  EXPECT_NEAR(l1["median_fraction_of_roofline"].get<double>(), 0.7, 1e-12);
  EXPECT_NEAR(l1["median_compile_s"].get<double>(), 0.7, 1e-12);
  EXPECT_NEAR(l1["max_compile_s"].get<double>(), 1.5, 1e-12);
  EXPECT_NEAR(l1["startup_s"].get<double>(), 6.0, 1e-12);
  std::string table = FormatBenchSummary(summary);
  EXPECT_NE(table.find("0.70/1.50"), std::string::npos) << table;
  EXPECT_NE(table.find("one-time start-up (6.0 s)"), std::string::npos) << table;
}

TEST(BenchSummaryTest, TimingsThatMeanNothingCountForCorrectnessOnly) {
  Json summary = SummarizeBench({Report("level1/a", "level1", "accepted", 5.0, 5.0, 1.0, 1.0, 0.9, false)});
  const Json& l1 = summary["levels"]["level1"];
  EXPECT_DOUBLE_EQ(l1["fast_0"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(l1["fast_1_vs_eager"].get<double>(), 0.0);
  EXPECT_EQ(l1["timed"], 0);
  EXPECT_DOUBLE_EQ(l1["geomean_speedup_vs_eager"].get<double>(), 0.0);
}

TEST(BenchSummaryTest, TableHasALinePerLevelAndListsFailures) {
  std::string table = FormatBenchSummary(SummarizeBench(
      {Report("level1/a", "level1", "accepted", 2.5, 1.1, 1.0, 0.5, 0.8), Report("level2/b", "level2", "timeout", 0, 0, 0, 0, 0)}));
  EXPECT_NE(table.find("level1"), std::string::npos);
  EXPECT_NE(table.find("level2"), std::string::npos);
  EXPECT_NE(table.find("2.50x"), std::string::npos);
  EXPECT_NE(table.find("level2/b: timeout"), std::string::npos);
}

// The coverage report: each failing task lists the ops it leaves to PyTorch (optimize's
// compile.left_to_pytorch), and the summary counts failing tasks per op, most first; ops of
// accepted tasks are not gaps and are not counted.
TEST(BenchSummaryTest, FailingTasksNameTheOpsLeftToPyTorchAndTheyAreCounted) {
  auto with_left = [](Json report, std::vector<std::vector<std::string>> groups) {
    Json left = Json::array();
    for (const auto& ops : groups) left.push_back({{"group", "g"}, {"ops", ops}, {"reason", "no kernel"}});
    report["compile"] = {{"left_to_pytorch", left}};
    return report;
  };
  std::vector<Json> entries = {
      with_left(Report("level2/a", "level2", "rejected_hack", 0, 0, 0, 0, 0), {{"aten.where.self"}, {"aten.max_pool3d.default"}}),
      with_left(Report("level2/b", "level2", "rejected_hack", 0, 0, 0, 0, 0), {{"aten.where.self", "aten.bitwise_not.default"}}),
      with_left(Report("level2/c", "level2", "accepted", 1.5, 1.1, 1.0, 1.0, 0.5), {{"aten.where.self"}}),
      Report("level2/d", "level2", "wrong_output", 0, 0, 0, 0, 0),
  };
  Json summary = SummarizeBench(entries);
  const Json& counts = summary["levels"]["level2"]["left_to_pytorch"];
  EXPECT_EQ(counts["aten.where.self"], 2);  // a and b; c is accepted
  EXPECT_EQ(counts["aten.max_pool3d.default"], 1);
  EXPECT_EQ(counts["aten.bitwise_not.default"], 1);
  EXPECT_EQ(summary["levels"]["level2"]["failed"][0]["left_to_pytorch"], Json({"aten.max_pool3d.default", "aten.where.self"}));
  EXPECT_TRUE(summary["levels"]["level2"]["failed"][2]["left_to_pytorch"].empty());  // d computes everything itself
  const std::string text = FormatBenchSummary(summary);
  EXPECT_NE(text.find("  level2/a: rejected_hack: why it failed second line\n    left to PyTorch: aten.max_pool3d.default, aten.where.self\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("ops left to PyTorch by failing tasks (tasks): aten.where.self (2), aten.bitwise_not.default (1), "
                      "aten.max_pool3d.default (1)\n"),
            std::string::npos) << text;
}

}  // namespace
}  // namespace kforge
