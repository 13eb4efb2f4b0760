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

}  // namespace
}  // namespace kforge
