// How a CUDA kernel offered in several tiles is finished: the rules' tile runs until the tuner has
// measured the others, a measured tile is baked in, and the tuning key names what the kernel
// computes, not what its group is called.
#include <string>

#include <gtest/gtest.h>

#include "compiler/codegen/cuda_kernel.h"

namespace kforge::codegen {
namespace {

CudaVariant Variant(const std::string& name, int block_m, int64_t grid_y) {
  return CudaVariant{.config = TileChoice{.block_m = block_m, .block_n = 64, .block_k = 8, .warps = 8, .stages = 2},
                     .source = "extern \"C\" __global__ void " + name + "(float* c) { /* tile " + std::to_string(block_m) + " */ }",
                     .threads = 256,
                     .grid = {4, grid_y, 1}};
}

std::vector<CudaVariant> Variants(const std::string& name) { return {Variant(name, 128, 8), Variant(name, 64, 16)}; }

EmittedKernel Finish(const std::string& name, const KernelOptions& options) {
  EmittedKernel kernel;
  kernel.name = name;
  kernel.launch.push_back("out = torch.empty(...)");
  FinishCudaKernel(kernel, "# %mm: a product.\n", Variants(name), {{{512, 256}, {256, 1}}}, {"out"}, options);
  return kernel;
}

TEST(CudaKernelTest, TheRulesTileRunsAndEveryTileIsOfferedToTheTuner) {
  KernelOptions options;
  options.autotune = true;
  const EmittedKernel kernel = Finish("matmul_g1", options);
  const std::string key = CudaTuningKey("matmul_g1", Variants("matmul_g1"));
  EXPECT_NE(kernel.source.find("# Tuning key of matmul_g1: " + key), std::string::npos) << kernel.source;
  EXPECT_NE(kernel.source.find("tile 128"), std::string::npos);
  EXPECT_EQ(kernel.source.find("tile 64"), std::string::npos);
  EXPECT_EQ(kernel.launch.back(), "matmul_g1[(4, 8, 1)](out)");
  EXPECT_TRUE(kernel.helpers.count(kCudaKernelHelper));
  ASSERT_TRUE(kernel.cuda_tuning.has_value());
  EXPECT_EQ(kernel.cuda_tuning->key, key);
  EXPECT_EQ(kernel.cuda_tuning->variants.size(), 2u);
  EXPECT_EQ(kernel.cuda_tuning->args, (std::vector<CudaTensorArg>{{{512, 256}, {256, 1}}}));
  const Json job = CudaTuningToJson(*kernel.cuda_tuning);
  EXPECT_EQ(job["variants"][1]["tile"], Json::array({64, 64, 8}));
  EXPECT_EQ(job["variants"][1]["grid"], Json::array({4, 16, 1}));
  EXPECT_EQ(job["args"][0]["stride"], Json::array({256, 1}));
}

TEST(CudaKernelTest, ATileOfferedTwiceIsOfferedOnce) {
  KernelOptions options;
  options.autotune = true;
  EmittedKernel kernel;
  kernel.name = "matmul_g1";
  std::vector<CudaVariant> offered = Variants("matmul_g1");
  offered.insert(offered.begin() + 1, offered.front());  // the rules' tile again, as an emitter lists every tile after it
  FinishCudaKernel(kernel, "", offered, {{{512, 256}, {256, 1}}}, {"out"}, options);
  ASSERT_TRUE(kernel.cuda_tuning.has_value());
  ASSERT_EQ(kernel.cuda_tuning->variants.size(), 2u);
  EXPECT_EQ(kernel.cuda_tuning->key, CudaTuningKey("matmul_g1", Variants("matmul_g1")));
}

TEST(CudaKernelTest, AMeasuredTileIsBakedInAndNotOfferedAgain) {
  KernelOptions options;
  options.autotune = true;
  const std::string key = CudaTuningKey("matmul_g1", Variants("matmul_g1"));
  options.tuned[key] = Variants("matmul_g1")[1].config;
  const EmittedKernel kernel = Finish("matmul_g1", options);
  EXPECT_NE(kernel.source.find("tile measured fastest of 2 on this GPU (tuning key " + key + ")"), std::string::npos) << kernel.source;
  EXPECT_NE(kernel.source.find("tile 64"), std::string::npos);
  EXPECT_EQ(kernel.source.find("# Tuning key of"), std::string::npos);
  EXPECT_EQ(kernel.launch.back(), "matmul_g1[(4, 16, 1)](out)");
  EXPECT_FALSE(kernel.cuda_tuning.has_value());
}

TEST(CudaKernelTest, AStoredTileTheKernelDoesNotOfferLeavesItToTheTuner) {
  KernelOptions options;
  options.autotune = true;
  options.tuned[CudaTuningKey("matmul_g1", Variants("matmul_g1"))] = TileChoice{.block_m = 256, .block_n = 64, .block_k = 8};
  const EmittedKernel kernel = Finish("matmul_g1", options);
  EXPECT_EQ(kernel.launch.back(), "matmul_g1[(4, 8, 1)](out)");
  EXPECT_TRUE(kernel.cuda_tuning.has_value());
}

TEST(CudaKernelTest, WithoutAutotuningTheRulesTileRunsAlone) {
  const EmittedKernel kernel = Finish("matmul_g1", KernelOptions{});
  EXPECT_EQ(kernel.source.find("Tuning key"), std::string::npos) << kernel.source;
  EXPECT_EQ(kernel.launch.back(), "matmul_g1[(4, 8, 1)](out)");
  EXPECT_FALSE(kernel.cuda_tuning.has_value());
}

TEST(CudaKernelTest, TheKeyNamesWhatTheKernelComputesNotItsName) {
  EXPECT_EQ(CudaTuningKey("matmul_g1", Variants("matmul_g1")), CudaTuningKey("matmul_block3_g7", Variants("matmul_block3_g7")));
  std::vector<CudaVariant> other = Variants("matmul_g1");
  other[1].grid[1] = 17;
  EXPECT_NE(CudaTuningKey("matmul_g1", Variants("matmul_g1")), CudaTuningKey("matmul_g1", other));
  other = Variants("matmul_g1");
  other[0].source += " ";
  EXPECT_NE(CudaTuningKey("matmul_g1", Variants("matmul_g1")), CudaTuningKey("matmul_g1", other));
  // A name that only contains the kernel's is not the kernel's.
  other = Variants("matmul_g1");
  other[0].source = "extern \"C\" __global__ void matmul_g1(float* matmul_g1x) {}";
  std::vector<CudaVariant> renamed = Variants("matmul_g2");
  renamed[0].source = "extern \"C\" __global__ void matmul_g2(float* matmul_g1x) {}";
  EXPECT_EQ(CudaTuningKey("matmul_g1", other), CudaTuningKey("matmul_g2", renamed));
}

}  // namespace
}  // namespace kforge::codegen
