// Writes, as JSON on stdout, the CUDA GEMM kernel's source for each of a set of tiles (and
// shared-memory stages) on the
// product shapes of KernelBench's attention networks (and a square row-major one), and the CUDA
// attention kernel's for each of its tiles on those networks' attentions, for
// bench/cuda_kernel_sweep.py to time on a GPU against cuBLAS, SDPA and each other:
//   cuda_kernel_variants > variants.json
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/codegen/cuda_attention.h"
#include "compiler/codegen/cuda_matmul.h"

namespace {

using kforge::codegen::CudaAttention;
using kforge::codegen::CudaAttentionTile;
using kforge::codegen::CudaGemm;
using kforge::codegen::CudaGemmTile;

// x @ W.T + bias with W [N, K] (a linear layer), or x @ B with B [K, N] row-major.
CudaGemm Product(int64_t m, int64_t n, int64_t k, bool linear) {
  CudaGemm g{.m = m, .n = n, .k = k, .batch_shape = {}, .a_batch = {}, .b_batch = {}, .c_batch = {}, .a_m = k, .a_k = 1, .b_k = n, .b_n = 1, .c_m = n, .c_n = 1};
  if (linear) {
    g.b_k = 1;
    g.b_n = k;
    g.bias = true;
  }
  return g;
}

// [B, H, T, D] views of a [B, T, 3 * H * D] projection (minGPT's q, k, v).
void ProjectionStrides(int64_t s[4], int64_t heads, int64_t t, int64_t d) {
  s[3] = 1;
  s[2] = 3 * heads * d;
  s[1] = d;
  s[0] = t * 3 * heads * d;
}

nlohmann::json AttentionVariants() {
  CudaAttention gpt;  // minGPT: 128 x 8 heads of 512, head dim 96, causal (a [1, 1, T, T] mask bias)
  gpt.batch = 128, gpt.heads = 8, gpt.tq = 512, gpt.tk = 512, gpt.d = 96, gpt.dv = 96;
  gpt.scale = 0.10206207261596575;
  for (int64_t* s : {gpt.q, gpt.k, gpt.v}) ProjectionStrides(s, 8, 512, 96);
  gpt.o[0] = 512 * 768, gpt.o[1] = 96, gpt.o[2] = 768, gpt.o[3] = 1;
  gpt.bias = true;
  gpt.bias_strides[2] = 512, gpt.bias_strides[3] = 1;
  gpt.bias_rows = gpt.bias_cols = 512;
  // The vision attention: 8 (2 x 4 heads) problems of 16384 queries, head dim 32, as multi-head
  // attention lays them out: [T, 8, 32].
  CudaAttention vision;
  vision.batch = 8, vision.heads = 1, vision.tq = 16384, vision.tk = 16384, vision.d = 32, vision.dv = 32;
  vision.q_scale = 0.17677669529663687;
  for (int64_t* s : {vision.q, vision.k, vision.v, vision.o}) s[0] = 32, s[1] = 0, s[2] = 256, s[3] = 1;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [shape, a] : {std::pair{"minGPT attention", gpt}, std::pair{"ViT attention", vision}}) {
    std::vector<CudaAttentionTile> tiles = {
        {.bm = 128, .bn = 64, .min_blocks = 1}, {.bm = 128, .bn = 64, .min_blocks = 2}, {.bm = 128, .bn = 32, .min_blocks = 1},
        {.bm = 128, .bn = 32, .min_blocks = 2}, {.bm = 64, .bn = 64, .min_blocks = 1},  {.bm = 64, .bn = 64, .min_blocks = 2},
        {.bm = 64, .bn = 128, .min_blocks = 1},
    };
    for (const CudaAttentionTile& t : BlockedAttentionTiles(a)) tiles.push_back(t);
    for (const CudaAttentionTile& t : tiles) {
      out.push_back({{"shape", shape},
                     {"batch", a.batch},
                     {"heads", a.heads},
                     {"t", a.tq},
                     {"d", a.d},
                     {"causal_mask", a.bias},
                     {"q_scale", a.q_scale},
                     {"scale", a.scale},
                     {"tile", fmt::format("{} queries x {} keys mb{}{}", t.bm, t.bn, t.min_blocks, t.rows == 8 ? " r8" : "")},
                     {"threads", CudaAttentionThreads(t)},
                     {"grid", {(a.tq + t.bm - 1) / t.bm, a.batch * a.heads, 1}},
                     {"shared", kforge::codegen::CudaAttentionSharedBytes(a, t)},
                     {"name", "attention"},
                     {"source", kforge::codegen::CudaAttentionSource("attention", a, t)}});
    }
  }
  return out;
}

}  // namespace

int main() {
  struct Shape {
    const char* name;
    CudaGemm gemm;
    bool linear;
  };
  const std::vector<Shape> shapes = {
      {"minGPT qkv", Product(65536, 2304, 768, true), true},
      {"minGPT proj", Product(65536, 768, 768, true), true},
      {"ViT in-proj", Product(32768, 128, 128, true), true},
      {"square", Product(4096, 4096, 4096, false), false},
  };
  const std::vector<CudaGemmTile> tiles = {
      {.bm = 128, .bn = 128, .bk = 16, .tm = 8, .tn = 8, .warp_cols = 8, .min_blocks = 2},
      {.bm = 128, .bn = 128, .bk = 16, .tm = 8, .tn = 8, .warp_cols = 16, .min_blocks = 2},
      {.bm = 128, .bn = 128, .bk = 16, .tm = 8, .tn = 8, .warp_cols = 8, .min_blocks = 1},
      {.bm = 128, .bn = 128, .bk = 8, .tm = 8, .tn = 8, .warp_cols = 8, .min_blocks = 2},
      {.bm = 128, .bn = 128, .bk = 8, .tm = 8, .tn = 8, .warp_cols = 16, .min_blocks = 1},
      {.bm = 128, .bn = 64, .bk = 16, .tm = 8, .tn = 8, .warp_cols = 8, .min_blocks = 4},
      {.bm = 64, .bn = 128, .bk = 16, .tm = 8, .tn = 8, .warp_cols = 16, .min_blocks = 4},
      {.bm = 128, .bn = 256, .bk = 8, .tm = 8, .tn = 16, .warp_cols = 8, .min_blocks = 1},
      {.bm = 256, .bn = 128, .bk = 8, .tm = 16, .tn = 8, .warp_cols = 8, .min_blocks = 1},
      {.bm = 64, .bn = 64, .bk = 16, .tm = 4, .tn = 4, .warp_cols = 8, .min_blocks = 4},
      {.bm = 64, .bn = 64, .bk = 16, .tm = 4, .tn = 4, .warp_cols = 8, .min_blocks = 3},  // 64 registers spill 16 bytes
      {.bm = 256, .bn = 128, .bk = 8, .tm = 16, .tn = 8, .warp_cols = 8, .min_blocks = 1, .stages = 3},
      {.bm = 128, .bn = 128, .bk = 8, .tm = 8, .tn = 8, .warp_cols = 8, .min_blocks = 2, .stages = 3},
      {.bm = 128, .bn = 128, .bk = 8, .tm = 8, .tn = 8, .warp_cols = 8, .min_blocks = 2, .stages = 4},
      {.bm = 128, .bn = 256, .bk = 8, .tm = 8, .tn = 16, .warp_cols = 8, .min_blocks = 1, .stages = 3},
  };
  nlohmann::json gemms = nlohmann::json::array();
  for (const Shape& shape : shapes) {
    for (const CudaGemmTile& t : tiles) {
      const std::string name = "gemm";
      const CudaGemm& g = shape.gemm;
      gemms.push_back({{"shape", shape.name},
                     {"m", g.m},
                     {"n", g.n},
                     {"k", g.k},
                     {"linear", shape.linear},
                     {"tile", fmt::format("{}x{}x{} {}x{} wx{} mb{}{}", t.bm, t.bn, t.bk, t.tm, t.tn, t.warp_cols, t.min_blocks,
                                           t.stages > 2 ? fmt::format(" s{}", t.stages) : "")},
                     {"threads", t.threads()},
                     {"grid", {(g.n + t.bn - 1) / t.bn, (g.m + t.bm - 1) / t.bm, 1}},
                     {"name", name},
                     {"source", kforge::codegen::CudaGemmSource(name, g, t)}});
    }
  }
  std::puts(nlohmann::json{{"gemm", gemms}, {"attention", AttentionVariants()}}.dump(1).c_str());
  return 0;
}
