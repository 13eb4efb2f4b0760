#include "search/kernel_tuning.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/gemm_tiles.h"
#include "core/clock.h"

namespace kforge {
namespace {

const std::string kKeyA(64, 'a');
const std::string kKeyB(64, 'b');
const std::string kKeyD(64, 'd');

// A kernel under @triton.autotune as a generated source writes it: the tuning key's comment, the
// decorator over `configs` (triton.Config expressions), the kernel.
std::string Autotuned(const std::string& name, const std::string& key, const std::vector<std::string>& configs) {
  std::string text = "# Tuning key of " + name + ": " + key + " (the configuration measured best is stored under it).\n"
                     "@triton.autotune(\n    configs=[\n";
  for (const std::string& config : configs) text += "        triton.Config({" + config + ",\n";
  return text + "    ],\n    key=[],\n    cache_results=True,\n)\n@triton.jit\ndef " + name + "(x_ptr):\n    pass\n\n";
}

// What a generated source looks like around three autotuned kernels and a baked one.
const std::string kSource =
    Autotuned("matmul_g1", kKeyA,
              {R"("BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=4))",
               R"("BLOCK_M": 128, "BLOCK_N": 32}, num_warps=8, num_stages=2))",
               R"("BLOCK_M": 256, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "DIRECT": 1}, num_warps=8, num_stages=4))",
               R"("BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "SPLIT_K": 16}, num_warps=4, num_stages=4))",
               R"("BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "SPLIT_K": 3}, num_warps=4, num_stages=4))",
               R"("BLOCK_M": 100, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=4))",
               R"("BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=64, num_stages=4))"}) +
    Autotuned("conv_g2", kKeyB,
              {R"("BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=8, num_stages=4))",
               R"("BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "DIRECT": 0}, num_warps=4, num_stages=4))"}) +
    Autotuned("reduce_g4", kKeyD,
              {R"("R_BLOCK": 4096}, num_warps=8, num_stages=1))", R"("R_BLOCK": 8192}, num_warps=16, num_stages=3))"}) +
    "# conv_g3: tile configuration measured on this GPU (tuning key " + std::string(64, 'c') + ").\n";

Json Reported(int block_m, int warps) {
  return {{"kwargs", {{"BLOCK_M", block_m}, {"BLOCK_N", 64}, {"BLOCK_K", 32}, {"GROUP_M", 8}}}, {"num_warps", warps}, {"num_stages", 4}};
}

class KernelTuningTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = Store::OpenInMemory(clock_).value(); }
  FakeClock clock_;
  std::unique_ptr<Store> store_;
};

TEST_F(KernelTuningTest, KeysAreTheKernelsStillAutotuned) {
  auto keys = TuningKeys(kSource);
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys["matmul_g1"], kKeyA);
  EXPECT_EQ(keys["conv_g2"], kKeyB);
  EXPECT_EQ(keys["reduce_g4"], kKeyD);
  EXPECT_TRUE(TuningKeys("import triton\n").empty());
}

TEST_F(KernelTuningTest, MeasuredChoicesAreStoredAndComeBackForTheSameGpu) {
  Json evidence = {{"matmul_g1", Reported(128, 4)}, {"conv_g2", Reported(64, 8)}, {"other", Reported(32, 4)}};
  auto measured = MeasuredTunings(store_.get(), "NVIDIA H200", kSource, evidence);
  ASSERT_EQ(measured.size(), 2u);
  EXPECT_EQ(measured[kKeyA], (codegen::TileChoice{128, 64, 32, 8, 4, 4}));
  EXPECT_EQ(measured[kKeyB], (codegen::TileChoice{64, 64, 32, 8, 8, 4}));

  auto stored = StoredTunings(store_.get(), "NVIDIA H200", kSource);
  EXPECT_EQ(stored, measured);
  EXPECT_TRUE(StoredTunings(store_.get(), "NVIDIA H100", kSource).empty());
  EXPECT_TRUE(StoredTunings(nullptr, "NVIDIA H200", kSource).empty());
}

TEST_F(KernelTuningTest, AnAttentionKernelReportsOnlyItsRowAndColumnBlocks) {
  Json attention = {{"kwargs", {{"BLOCK_M", 128}, {"BLOCK_N", 32}}}, {"num_warps", 8}, {"num_stages", 2}};
  auto measured = MeasuredTunings(store_.get(), "NVIDIA H200", kSource, Json{{"matmul_g1", attention}});
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_EQ(measured[kKeyA].block_m, 128);
  EXPECT_EQ(measured[kKeyA].block_n, 32);
  EXPECT_EQ(measured[kKeyA].warps, 8);
  EXPECT_EQ(StoredTunings(store_.get(), "NVIDIA H200", kSource), measured);
  Json stray = {{"kwargs", {{"BLOCK_M", 128}, {"EVIL", 32}}}, {"num_warps", 8}, {"num_stages", 2}};
  EXPECT_TRUE(MeasuredTunings(store_.get(), "NVIDIA H100", kSource, Json{{"matmul_g1", stray}}).empty());
}

TEST_F(KernelTuningTest, AConvolutionReportsWhetherItRanByFmas) {
  Json direct = Reported(256, 8);
  direct["kwargs"]["DIRECT"] = 1;
  Json dot = Reported(128, 4);
  dot["kwargs"]["DIRECT"] = 0;
  auto measured = MeasuredTunings(store_.get(), "NVIDIA H200", kSource, Json{{"matmul_g1", direct}, {"conv_g2", dot}});
  ASSERT_EQ(measured.size(), 2u);
  EXPECT_TRUE(measured[kKeyA].direct);
  EXPECT_EQ(measured[kKeyA].block_m, 256);
  EXPECT_FALSE(measured[kKeyB].direct);
  EXPECT_EQ(StoredTunings(store_.get(), "NVIDIA H200", kSource), measured);
  Json neither = Reported(64, 4);
  neither["kwargs"]["DIRECT"] = 2;
  EXPECT_TRUE(MeasuredTunings(store_.get(), "NVIDIA H100", kSource, Json{{"matmul_g1", neither}}).empty());
}

TEST_F(KernelTuningTest, ASplitGemmReportsItsParts) {
  Json split = Reported(64, 4);
  split["kwargs"]["SPLIT_K"] = 16;
  Json whole = Reported(128, 4);
  whole["kwargs"]["SPLIT_K"] = 1;
  auto measured = MeasuredTunings(store_.get(), "NVIDIA H200", kSource, Json{{"matmul_g1", split}, {"conv_g2", whole}});
  ASSERT_EQ(measured.size(), 2u);
  EXPECT_EQ(measured[kKeyA].split_k, 16);
  EXPECT_EQ(measured[kKeyB].split_k, 1);
  EXPECT_EQ(StoredTunings(store_.get(), "NVIDIA H200", kSource), measured);
  for (int parts : {0, 3, 2 * codegen::kMaxSplitK}) {
    Json bad = Reported(64, 4);
    bad["kwargs"]["SPLIT_K"] = parts;
    EXPECT_TRUE(MeasuredTunings(store_.get(), "NVIDIA H100", kSource, Json{{"matmul_g1", bad}}).empty()) << parts;
  }
}

TEST_F(KernelTuningTest, AFoldedReductionReportsItsBlock) {
  Json block = {{"kwargs", {{"R_BLOCK", 8192}}}, {"num_warps", 16}, {"num_stages", 3}};
  auto measured = MeasuredTunings(store_.get(), "NVIDIA H200", kSource, Json{{"reduce_g4", block}});
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_EQ(measured[kKeyD].r_block, 8192);
  EXPECT_EQ(measured[kKeyD].warps, 16);
  EXPECT_EQ(measured[kKeyD].stages, 3);
  EXPECT_EQ(StoredTunings(store_.get(), "NVIDIA H200", kSource), measured);
  Json with_tile = block;
  with_tile["kwargs"]["BLOCK_M"] = 64;
  Json too_wide = {{"kwargs", {{"R_BLOCK", 1 << 17}}}, {"num_warps", 16}, {"num_stages", 3}};
  for (const Json& report : {with_tile, too_wide, Reported(128, 4)}) {
    EXPECT_TRUE(MeasuredTunings(store_.get(), "NVIDIA H100", kSource, Json{{"reduce_g4", report}}).empty()) << report.dump();
  }
}

TEST_F(KernelTuningTest, AConfigurationTheKernelDoesNotOfferIsSkipped) {
  // Plausible tiles, but not among the kernel's own configurations: the report comes from the
  // candidate's process, and the store must not learn a configuration the compiler never wrote.
  Json block = {{"kwargs", {{"R_BLOCK", 1024}}}, {"num_warps", 4}, {"num_stages", 1}};
  Json evidence = {{"matmul_g1", Reported(32, 4)}, {"conv_g2", Reported(128, 8)}, {"reduce_g4", block}};
  EXPECT_TRUE(MeasuredTunings(store_.get(), "NVIDIA H200", kSource, evidence).empty());
  EXPECT_TRUE(MeasuredTunings(store_.get(), "NVIDIA H200", "", Json{{"matmul_g1", Reported(128, 4)}}).empty());
  EXPECT_TRUE(StoredTunings(store_.get(), "NVIDIA H200", kSource).empty());
}

TEST_F(KernelTuningTest, ImplausibleReportsAreSkippedAndNotStored) {
  Json bad_block = Reported(100, 4);  // not a power of two
  Json bad_warps = Reported(64, 64);
  Json extra_meta = Reported(64, 4);
  extra_meta["kwargs"]["EVIL"] = 1;
  Json not_numbers = {{"kwargs", "BLOCK_M=64"}, {"num_warps", "4"}, {"num_stages", 4}};
  for (const Json& report : {bad_block, bad_warps, extra_meta, not_numbers, Json("garbage")}) {
    Json evidence = {{"matmul_g1", report}};
    EXPECT_TRUE(MeasuredTunings(store_.get(), "NVIDIA H200", kSource, evidence).empty()) << report.dump();
  }
  EXPECT_TRUE(MeasuredTunings(store_.get(), "NVIDIA H200", kSource, Json()).empty());
  EXPECT_TRUE(StoredTunings(store_.get(), "NVIDIA H200", kSource).empty());
}

}  // namespace
}  // namespace kforge
