// The CUDA GEMM kernel's source, run on the CPU: each case's kernel is compiled with the host
// compiler under cuda_emulation.h (a block's threads are std::threads, its __shared__ arrays
// static) and launched over its whole grid;
// every output must equal, bit for bit, one FMA chain along K in order from zero (plus the bias),
// which is what cuBLAS and Triton's IEEE dot compute. Strided, transposed, batched and broadcast
// operands, tails in M, N and K, and both store forms are covered.
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "compiler/codegen/cuda_matmul.h"
#include "core/files.h"
#include "cuda_emulation.h"

namespace kforge::codegen {
namespace {



// The program around one kernel: operands of pseudo-random values laid out by the case's strides,
// the grid run block by block, then every output checked against the FMA chain.
// `shift` moves every operand's start by that many floats (1: no float4 read is aligned).
std::string Program(const CudaGemm& g, const CudaGemmTile& t, int shift) {
  const int64_t batch = g.batch();
  auto extent = [&](const std::vector<int64_t>& batch_strides, int64_t rows, int64_t row_stride, int64_t cols, int64_t col_stride) {
    int64_t last = (rows - 1) * row_stride + (cols - 1) * col_stride;
    for (size_t d = 0; d < g.batch_shape.size(); ++d) last += (g.batch_shape[d] - 1) * batch_strides[d];
    return last + 1;
  };
  std::string offsets = "    long long zz = z, ao = 0, bo = 0, co = 0;\n";
  for (size_t d = g.batch_shape.size(); d-- > 0;) {
    offsets += fmt::format("    {{ long long i = zz % {}; zz /= {}; ao += i * {}; bo += i * {}; co += i * {}; }}\n", g.batch_shape[d],
                           g.batch_shape[d], g.a_batch.empty() ? 0 : g.a_batch[d], g.b_batch.empty() ? 0 : g.b_batch[d],
                           g.c_batch.empty() ? 0 : g.c_batch[d]);
  }
  std::string p;
  p += fmt::format("int main() {{\n  const long long M = {}, N = {}, K = {}, B = {};\n", g.m, g.n, g.k, batch);
  p += fmt::format("  std::vector<float> a_store({}), b_store({}), bias({}), c({}, NAN);\n", extent(g.a_batch, g.m, g.a_m, g.k, g.a_k) + shift,
                   extent(g.b_batch, g.k, g.b_k, g.n, g.b_n) + shift, (g.n - 1) * g.bias_n + 1, extent(g.c_batch, g.m, g.c_m, g.n, g.c_n));
  p += fmt::format("  float* a = a_store.data() + {0}; float* b = b_store.data() + {0};\n", shift);
  p += R"CC(  uint32_t state = 12345;
  auto next = [&] { state = state * 1664525u + 1013904223u; return static_cast<float>(static_cast<int32_t>(state >> 8) - (1 << 23)) / (1 << 20); };
  for (float& v : a_store) v = next();
  for (float& v : b_store) v = next();
  for (float& v : bias) v = next();
)CC";
  p += fmt::format("  const unsigned gx = {}, gy = {}, gz = {}, threads = {};\n", (g.n + t.bn - 1) / t.bn, (g.m + t.bm - 1) / t.bm, batch,
                   t.threads());
  p += fmt::format("  Launch({{gx, gy, gz}}, threads, [&] {{ kernel(a, b, {}c.data()); }});\n", g.bias ? "bias.data(), " : "");
  p += R"CC(  long long wrong = 0;
  for (long long z = 0; z < B; ++z) {
)CC";
  p += offsets;
  p += "    for (long long m = 0; m < M; ++m)\n      for (long long n = 0; n < N; ++n) {\n        float acc = 0.0f;\n";
  p += fmt::format("        for (long long k = 0; k < K; ++k) acc = std::fmaf(a[ao + m * {} + k * {}], b[bo + k * {} + n * {}], acc);\n", g.a_m,
                   g.a_k, g.b_k, g.b_n);
  if (g.bias) p += fmt::format("        acc += bias[n * {}];\n", g.bias_n);
  p += fmt::format("        const float got = c[co + m * {} + n * {}];\n", g.c_m, g.c_n);
  p += R"CC(        if (!(got == acc)) { if (wrong < 5) std::printf("at %lld %lld %lld: %.9g, expected %.9g\n", z, m, n, got, acc); ++wrong; }
      }
  }
  std::printf("mismatches=%lld\n", wrong);
  return wrong == 0 ? 0 : 1;
}
)CC";
  return p;
}

void ExpectExact(const CudaGemm& gemm, const CudaGemmTile& tile, int shift = 0) {
  const std::string source = CudaGemmSource("kernel", gemm, tile);
  const EmulatedRun run = RunUnderEmulation("#define __shared__ static\n" + source + Program(gemm, tile, shift));
  EXPECT_TRUE(run.ok) << run.log << "\n--- source ---\n" << source;
}

CudaGemm Plain(int64_t m, int64_t n, int64_t k) {
  return CudaGemm{.m = m, .n = n, .k = k, .batch_shape = {}, .a_batch = {}, .b_batch = {}, .c_batch = {}, .a_m = k, .a_k = 1, .b_k = n, .b_n = 1, .c_m = n, .c_n = 1};
}

// x @ W.T + b: W is [N, K], read K-fastest.
CudaGemm Linear(int64_t m, int64_t n, int64_t k) {
  CudaGemm gemm = Plain(m, n, k);
  gemm.b_k = 1;
  gemm.b_n = k;
  gemm.bias = true;
  return gemm;
}

constexpr CudaGemmTile kSmall{.bm = 64, .bn = 64, .bk = 16, .tm = 4, .tn = 4, .warp_cols = 8, .min_blocks = 4};
constexpr CudaGemmTile kMedium{.bm = 128, .bn = 128, .bk = 8, .tm = 8, .tn = 8, .warp_cols = 8, .min_blocks = 2};
constexpr CudaGemmTile kLarge{};

TEST(CudaMatmulTest, ALinearLayerWithTailsIsOneFmaChainPerOutputPlusTheBias) {
  // 70 rows, 37 columns (no float4 store), K = 21.
  const CudaGemm gemm = Linear(70, 37, 21);
  ExpectExact(gemm, kSmall);
  ExpectExact(gemm, kMedium);
  ExpectExact(gemm, kLarge);
}

TEST(CudaMatmulTest, RowMajorOperandsStoreFloat4s) {
  ExpectExact(Plain(130, 136, 40), kLarge);
  ExpectExact(Plain(130, 136, 40), kMedium);
  ExpectExact(Plain(64, 64, 8), kSmall);
}

TEST(CudaMatmulTest, TransposedAndStridedOperandsAndOutputs) {
  // A read M-fastest (a transposed view), B with a row pitch, C written column-major.
  CudaGemm gemm{.m = 50, .n = 45, .k = 19, .batch_shape = {}, .a_batch = {}, .b_batch = {}, .c_batch = {}, .a_m = 1, .a_k = 50, .b_k = 48, .b_n = 1, .c_m = 1, .c_n = 50};
  ExpectExact(gemm, kSmall);
}

TEST(CudaMatmulTest, QuadReadsFallBackToScalarsAtTailsAndUnalignedStarts) {
  // Rows of pitch 24 with K = 22: the last quad of each row is read as scalars. A read M-fastest
  // with M = 50: float4 reads along M but the last quad. Then the same with every operand one
  // float off 16-byte alignment: all scalar reads.
  CudaGemm pitched = Plain(40, 36, 22);
  pitched.a_m = 24;
  pitched.b_k = 40;
  ExpectExact(pitched, kLarge);
  CudaGemm m_fast{.m = 50, .n = 20, .k = 30, .batch_shape = {}, .a_batch = {}, .b_batch = {}, .c_batch = {}, .a_m = 1, .a_k = 52, .b_k = 20, .b_n = 1, .c_m = 20, .c_n = 1};
  ExpectExact(m_fast, kSmall);
  ExpectExact(m_fast, kSmall, /*shift=*/1);
  ExpectExact(pitched, kSmall, /*shift=*/1);
}

TEST(CudaMatmulTest, BatchesOverSeveralDimsWithABroadcastOperand) {
  // [2, 3] batches; B broadcast over the first batch dim (stride 0); the bias along N strided.
  CudaGemm gemm = Plain(33, 20, 12);
  gemm.batch_shape = {2, 3};
  gemm.a_batch = {3 * 33 * 12, 33 * 12};
  gemm.b_batch = {0, 12 * 20};
  gemm.c_batch = {3 * 33 * 20, 33 * 20};
  gemm.bias = true;
  gemm.bias_n = 2;
  ExpectExact(gemm, kSmall);
}

TEST(CudaMatmulTest, SlicesCopiedByCpAsyncGiveTheSameBits) {
  // Three and four shared-memory stages: K-contiguous operands copied element by element into
  // their transposed slices, row-contiguous ones in 16-byte copies, zeros past every edge; K of
  // 21 and 40 runs fewer and more slices than stages.
  constexpr CudaGemmTile three{.bm = 128, .bn = 128, .bk = 8, .tm = 8, .tn = 8, .warp_cols = 8, .min_blocks = 2, .stages = 3};
  constexpr CudaGemmTile four{.bm = 64, .bn = 64, .bk = 16, .tm = 4, .tn = 4, .warp_cols = 8, .min_blocks = 4, .stages = 4};
  const CudaGemm linear = Linear(70, 37, 21);
  ExpectExact(linear, three);
  ExpectExact(linear, four);
  ExpectExact(Plain(130, 136, 40), three);
  CudaGemm m_fast{.m = 50, .n = 20, .k = 30, .batch_shape = {}, .a_batch = {}, .b_batch = {}, .c_batch = {}, .a_m = 1, .a_k = 52, .b_k = 20, .b_n = 1, .c_m = 20, .c_n = 1};
  ExpectExact(m_fast, four);
  ExpectExact(m_fast, four, /*shift=*/1);
}

TEST(CudaMatmulTest, TheTileFillsTheSmsOrShrinks) {
  EXPECT_EQ(ChooseCudaGemmTile(Plain(65536, 2304, 768)), kLarge);
  EXPECT_EQ(ChooseCudaGemmTile(Plain(32768, 128, 128)), kLarge);   // 128 tiles of 256 x 128
  EXPECT_EQ(ChooseCudaGemmTile(Plain(2048, 1024, 512)), kMedium);  // 64 tiles of 256 x 128, 128 of 128 x 128
  EXPECT_EQ(ChooseCudaGemmTile(Plain(512, 512, 512)), kSmall);     // 16 tiles of 128 x 128
}

}  // namespace
}  // namespace kforge::codegen
