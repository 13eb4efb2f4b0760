#include "compiler/codegen/gemm_tiles.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ir/graph_builder.h"

namespace kforge::codegen {
namespace {

int64_t Steps(int64_t k, int block_k) { return (k + block_k - 1) / block_k; }

TEST(SplitKTest, FewTilesOverALongKGetTheFewestPartsThatFillTheGpu) {
  KernelOptions options;  // split below 132 programs
  // DenseNet201's deep 3x3 convolutions: 1960 x 32 outputs, 1696 channels x 9 taps.
  const std::vector<TileChoice> space =
      WithSplitK(kNarrowTileConfigs, 1960, 32, 1, [](int block_k) { return 9 * Steps(1696, block_k); }, options);
  ASSERT_EQ(space.size(), 2 * kNarrowTileConfigs.size());
  for (size_t i = 0; i < kNarrowTileConfigs.size(); ++i) {
    const TileChoice &given = space[i], &split = space[kNarrowTileConfigs.size() + i];
    EXPECT_EQ(given, kNarrowTileConfigs[i]);
    EXPECT_EQ(split.block_m, given.block_m);
    const int64_t tiles = (1960 + given.block_m - 1) / given.block_m;
    EXPECT_GE(tiles * split.split_k, options.split_k_below_programs) << split.block_m;
    EXPECT_LT(tiles * split.split_k / 2, options.split_k_below_programs) << split.block_m;
  }
  EXPECT_TRUE(HasSplitK(space));
}

TEST(SplitKTest, PartsKeepEnoughKStepsAndManyTilesStayWhole) {
  KernelOptions options;
  // 4 tiles of 128 x 128 over K = 4096 in 32-wide steps: 128 steps, parts of at least 8.
  std::vector<TileChoice> space = WithSplitK({{128, 128, 32, 8, 8, 3}}, 256, 256, 1, [](int b) { return Steps(4096, b); }, options);
  ASSERT_EQ(space.size(), 2u);
  EXPECT_EQ(space[1].split_k, 16);
  // A short K: no part would fold kMinSplitSteps.
  space = WithSplitK({{128, 128, 32, 8, 8, 3}}, 256, 256, 1, [](int b) { return Steps(480, b); }, options);
  EXPECT_FALSE(HasSplitK(space));
  // Enough tiles already (batches along axis 1 count too).
  space = WithSplitK({{64, 64, 32, 8, 4, 4}}, 256, 256, 9, [](int b) { return Steps(1 << 20, b); }, options);
  EXPECT_FALSE(HasSplitK(space));
  // The cap: one tile over a huge K.
  space = WithSplitK({{64, 64, 32, 8, 4, 4}}, 64, 64, 1, [](int b) { return Steps(1 << 20, b); }, options);
  ASSERT_EQ(space.size(), 2u);
  EXPECT_EQ(space[1].split_k, kMaxSplitK);
  // Direct convolution configurations have no K loop to split.
  TileChoice direct{128, 32, 16, 8, 4, 1};
  direct.direct = true;
  EXPECT_FALSE(HasSplitK(WithSplitK({direct}, 64, 32, 1, [](int b) { return Steps(1 << 20, b); }, options)));
}

ir::Graph OneOutputGraph() {
  ir::GraphBuilder builder("g");
  EXPECT_TRUE(builder.AddInput("out", 0, ir::TensorType::Contiguous({256, 256}, ir::DType::kFloat32).value()).ok());
  return std::move(builder).Build();
}

class SplitLaunchTest : public ::testing::Test {
 protected:
  SplitLaunchTest() : graph_(OneOutputGraph()) { kernel_.name = "matmul_g"; }
  ir::Graph graph_;
  ir::NodeRef out_{0, 0};
  EmittedKernel kernel_;
};

TEST_F(SplitLaunchTest, ABakedSplitLaunchesItsPartsThenTheSum) {
  TileChoice c{128, 128, 32, 8, 8, 3};
  c.split_k = 16;
  EmitGemmLaunch(kernel_, graph_, {"a", "b"}, {out_}, c, 256, 256, 1, TileParameters{.split_k = true});
  ASSERT_EQ(kernel_.launch.size(), 4u);
  EXPECT_EQ(kernel_.launch[1], "matmul_g_partials = torch.empty((1048576,), dtype=torch.float32, device=device)");
  EXPECT_NE(kernel_.launch[2].find("matmul_g[(4, 1, 16)](a, b, out, matmul_g_partials, BLOCK_M=128"), std::string::npos);
  EXPECT_NE(kernel_.launch[2].find("SPLIT_K=16, REDUCE=0)"), std::string::npos);
  EXPECT_NE(kernel_.launch[3].find("matmul_g[(4, 1, 1)](a, b, out, matmul_g_partials,"), std::string::npos);
  EXPECT_NE(kernel_.launch[3].find("SPLIT_K=16, REDUCE=1)"), std::string::npos);
}

TEST_F(SplitLaunchTest, ABakedWholeConfigurationLaunchesOnce) {
  EmitGemmLaunch(kernel_, graph_, {"a", "b"}, {out_}, TileChoice{128, 128, 32, 8, 8, 3}, 256, 256, 1, TileParameters{.split_k = true});
  ASSERT_EQ(kernel_.launch.size(), 2u);
  EXPECT_NE(kernel_.launch[1].find("matmul_g[(4, 1, 1)](a, b, out, out, "), std::string::npos);
  EXPECT_NE(kernel_.launch[1].find("SPLIT_K=1, REDUCE=0)"), std::string::npos);
}

TEST_F(SplitLaunchTest, AnAutotunedSplitHasRoomForItsLargestSplit) {
  TileChoice split{64, 64, 32, 8, 4, 4};
  split.split_k = 8;
  EmitGemmLaunch(kernel_, graph_, {"a", "b"}, {out_}, std::nullopt, 256, 256, 2, TileParameters{.split_k = true},
                 {{64, 64, 32, 8, 4, 4}, split});
  ASSERT_EQ(kernel_.launch.size(), 4u);
  EXPECT_EQ(kernel_.launch[1], "matmul_g_partials = torch.empty((1048576,), dtype=torch.float32, device=device)");
  EXPECT_NE(kernel_.launch[2].find(", 2, meta[\"SPLIT_K\"])](a, b, out, matmul_g_partials, REDUCE=0)"), std::string::npos);
  EXPECT_NE(kernel_.launch[3].find(", 2, 1)](a, b, out, matmul_g_partials, REDUCE=1)"), std::string::npos);
}

}  // namespace
}  // namespace kforge::codegen
