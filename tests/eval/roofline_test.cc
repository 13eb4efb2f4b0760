#include "eval/roofline.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

TEST(RooflineTest, KnownGpusHavePeaks) {
  auto h200 = PeaksFor("NVIDIA H200", Precision::kFp32);
  ASSERT_TRUE(h200.has_value());
  EXPECT_EQ(h200->name, "H200");
  EXPECT_GT(h200->bytes_per_s, 4e12);
  auto bf16 = PeaksFor("NVIDIA H200", Precision::kBf16);
  EXPECT_GT(bf16->flops_per_s, h200->flops_per_s);
  EXPECT_EQ(PeaksFor("Some Future GPU", Precision::kFp32), std::nullopt);
}

TEST(RooflineTest, FloorIsTheLargerOfMemoryAndCompute) {
  DevicePeaks peaks{"test", 1e12, 1e14};
  EXPECT_DOUBLE_EQ(RooflineFloorSeconds(1e9, 0, peaks), 1e-3);
  EXPECT_DOUBLE_EQ(RooflineFloorSeconds(1e9, 1e12, peaks), 1e-2);
  EXPECT_DOUBLE_EQ(RooflineFloorSeconds(0, 0, DevicePeaks{}), 0);
}

}  // namespace
}  // namespace kforge
