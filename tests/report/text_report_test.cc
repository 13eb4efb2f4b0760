#include "report/text_report.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

Json Mode(double median, bool kept) {
  Json mode = {{"ms", {{"median", median}, {"lo", median}, {"hi", median}, {"n", 5}}}, {"compile_s", 0.0}};
  if (kept) mode["kept"] = true;
  return mode;
}

TEST(FormatBaselineTest, SaysWhenTheTimingsWereKeptForLaterEvaluations) {
  Json baseline = {{"task", "level1/20_softplus"}, {"device", "cuda:0"}, {"precision", "fp32"},
                   {"modes", {{"eager", Mode(2.0, true)}, {"compile", Mode(1.0, true)}}}};
  std::string text = FormatBaseline(baseline);
  EXPECT_NE(text.find("2.00x vs eager"), std::string::npos) << text;
  EXPECT_NE(text.find("kept in the workspace's store"), std::string::npos) << text;
  baseline["modes"] = {{"eager", Mode(2.0, false)}, {"compile", {{"error", "torch.compile failed"}}}};
  text = FormatBaseline(baseline);
  EXPECT_EQ(text.find("kept in the workspace's store"), std::string::npos) << text;
  EXPECT_NE(text.find("failed: torch.compile failed"), std::string::npos) << text;
}

TEST(FormatBaselineTest, SaysWhatWasStoredAndWhatCameFromTheCompileCache) {
  Json compiled = Mode(1.0, false);
  compiled["compile_s"] = 4.2;
  compiled["compile_cache"] = {{"hits", 2}, {"misses", 1}};
  Json stored = Mode(2.0, false);
  stored["from_store"] = true;
  stored["recorded_at"] = "2026-12-06T10:00:00Z";
  Json baseline = {{"task", "level3/9_ResNet18"}, {"device", "cuda:0"}, {"precision", "fp32"},
                   {"modes", {{"eager", stored}, {"compile", compiled}}}};
  std::string text = FormatBaseline(baseline);
  EXPECT_NE(text.find("(stored 2026-12-06T10:00:00Z)"), std::string::npos) << text;
  EXPECT_NE(text.find("(compiled in 4.2 s, 2 of 3 graph(s) from the compile cache)"), std::string::npos) << text;
}

}  // namespace
}  // namespace kforge
