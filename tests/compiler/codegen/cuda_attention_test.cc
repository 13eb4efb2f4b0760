// The CUDA flash-attention kernel's source, run on the CPU under cuda_emulation.h over its whole
// grid, against attention computed in double: q scaled, scores times the scale plus the bias,
// masked (causal band, -inf in the bias), softmax, times v. Tails of queries, keys and head dims,
// strided operands as a projection's split leaves them, a broadcast mask bias that empties whole
// rows (NaN as softmax gives, or zeros as SDPA's fix-up does) and rank-3 attention are covered.
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/codegen/cuda_attention.h"
#include "cuda_emulation.h"

namespace kforge::codegen {
namespace {

// The program around one kernel. Operand element [b, h, i, j] sits at the strides given; the bias
// is materialized at [Tq, Tk] (broadcast over batch and heads) with -inf where the mask says so,
// its 32 x 32 tiles' flags as the bias kernel writes them, except that the columns of tiles for
// which `skipped` (an expression in the tile column c) holds are flagged 0 over finite values:
// the kernel then leaves their keys out, as the expected attention does.
std::string Program(const CudaAttention& a, const CudaAttentionTile& t, const std::string& mask, const std::string& skipped) {
  auto extent = [&](const int64_t s[4], int64_t rows, int64_t cols) {
    return (a.batch - 1) * s[0] + (a.heads - 1) * s[1] + (rows - 1) * s[2] + (cols - 1) * s[3] + 1;
  };
  std::string p = "int main() {\n";
  p += fmt::format("  const long long B = {}, H = {}, TQ = {}, TK = {}, D = {}, DV = {};\n", a.batch, a.heads, a.tq, a.tk, a.d, a.dv);
  p += fmt::format("  std::vector<float> q({}), k({}), v({}), o({}, 12345.0f), bias(TQ * TK);\n", extent(a.q, a.tq, a.d),
                   extent(a.k, a.tk, a.d), extent(a.v, a.tk, a.dv), extent(a.o, a.tq, a.dv));
  p += R"CC(  uint32_t state = 777;
  auto next = [&] { state = state * 1664525u + 1013904223u; return static_cast<float>(static_cast<int32_t>(state >> 8) - (1 << 23)) / (1 << 22); };
  for (float& x : q) x = next();
  for (float& x : k) x = next();
  for (float& x : v) x = next();
  for (long long i = 0; i < TQ; ++i)
    for (long long j = 0; j < TK; ++j) {
      const float r = next();
)CC";
  p += fmt::format("      bias[i * TK + j] = ({}) ? -INFINITY : r;\n    }}\n", mask);
  p += "  const long long CT = (TK + 31) / 32;\n  std::vector<float> tiles((TQ + 31) / 32 * CT, 0.0f);\n";
  p += fmt::format("  auto skipped = [&](long long c) {{ return {}; }};\n", skipped);
  p += "  for (long long i = 0; i < TQ; ++i)\n    for (long long j = 0; j < TK; ++j)\n";
  p += "      if (bias[i * TK + j] != -INFINITY && !skipped(j / 32)) tiles[i / 32 * CT + j / 32] = 1.0f;\n";
  p += fmt::format("  Launch({{{}, {}, 1}}, {}, [&] {{ kernel(q.data(), k.data(), v.data(), {}o.data()); }});\n", (a.tq + t.bm - 1) / t.bm,
                   a.batch * a.heads, CudaAttentionThreads(t), a.bias ? "bias.data(), tiles.data(), " : "");
  p += "  long long wrong = 0;\n  for (long long b = 0; b < B; ++b)\n    for (long long h = 0; h < H; ++h)\n      for (long long i = 0; i < TQ; ++i) {\n";
  p += "        std::vector<double> s(TK);\n        double top = -INFINITY;\n        for (long long j = 0; j < TK; ++j) {\n";
  p += "          double dot = 0.0;\n";
  p += fmt::format("          for (long long d = 0; d < D; ++d) dot += double(float(q[b * {} + h * {} + i * {} + d * {}] * float({:.9g}))) * k[b * {} + h * {} + j * {} + d * {}];\n",
                   a.q[0], a.q[1], a.q[2], a.q[3], static_cast<float>(a.q_scale), a.k[0], a.k[1], a.k[2], a.k[3]);
  p += fmt::format("          s[j] = dot * float({:.9g}){};\n", static_cast<float>(a.scale), a.bias ? " + bias[i * TK + j]" : "");
  if (a.causal) p += fmt::format("          if (j - i > {}) s[j] = -INFINITY;\n", *a.causal);
  if (a.bias) p += "          if (skipped(j / 32)) s[j] = -INFINITY;\n";
  p += "          top = std::max(top, s[j]);\n        }\n";
  p += "        double total = 0.0;\n        for (long long j = 0; j < TK; ++j) total += (s[j] = top == -INFINITY ? 0.0 : std::exp(s[j] - top));\n";
  p += "        for (long long e = 0; e < DV; ++e) {\n          double x = 0.0;\n";
  p += fmt::format("          for (long long j = 0; j < TK; ++j) x += s[j] * v[b * {} + h * {} + j * {} + e * {}];\n", a.v[0], a.v[1], a.v[2], a.v[3]);
  p += fmt::format("          const double expected = top == -INFINITY ? {} : x / total;\n", a.zero_empty_rows ? "0.0" : "NAN");
  p += fmt::format("          const float got = o[b * {} + h * {} + i * {} + e * {}];\n", a.o[0], a.o[1], a.o[2], a.o[3]);
  p += R"CC(          const bool same = std::isnan(expected) ? std::isnan(got) : std::fabs(got - expected) <= 1e-5 + 1e-5 * std::fabs(expected);
          if (!same) { if (wrong < 5) std::printf("at %lld %lld %lld %lld: %.9g, expected %.9g\n", b, h, i, e, got, expected); ++wrong; }
        }
      }
  std::printf("mismatches=%lld\n", wrong);
  return wrong == 0 ? 0 : 1;
}
)CC";
  return p;
}

// The tiles: 128 queries a block (8 threads a row) over 64 or 32 keys a step, 64 queries (16
// threads a row), and the register-blocked tiles where the attention takes them.
void ExpectMatches(const CudaAttention& a, const std::string& mask = "false", const std::string& skipped = "false") {
  std::vector<CudaAttentionTile> tiles = {CudaAttentionTile{}, CudaAttentionTile{.bm = 128, .bn = 32}, CudaAttentionTile{.bm = 64}};
  for (const CudaAttentionTile& tile : BlockedAttentionTiles(a)) tiles.push_back(tile);
  for (const CudaAttentionTile& tile : tiles) {
    const std::string source = CudaAttentionSource("kernel", a, tile);
    ASSERT_LE(CudaAttentionSharedBytes(a, tile), int64_t{16} << 16);  // the emulation's kf_smem4
    const EmulatedRun run = RunUnderEmulation("#define __shared__\n" + source + Program(a, tile, mask, skipped));
    EXPECT_TRUE(run.ok) << "tile of " << tile.bm << " queries, " << tile.bn << " keys, " << tile.rows << " rows a thread\n"
                        << run.log << "\n--- source ---\n" << source;
  }
}

// [B, H, T, D] contiguous.
void Contiguous(int64_t s[4], int64_t heads, int64_t rows, int64_t cols) {
  s[3] = 1;
  s[2] = cols;
  s[1] = rows * cols;
  s[0] = heads * rows * cols;
}

TEST(CudaAttentionTest, TailsOfQueriesKeysAndHeadDimsWithBothScales) {
  CudaAttention a;
  a.batch = 2, a.heads = 3, a.tq = 70, a.tk = 100, a.d = 20, a.dv = 24;
  a.scale = 0.3;
  a.q_scale = 0.5;
  Contiguous(a.q, 3, 70, 20);
  Contiguous(a.k, 3, 100, 20);
  Contiguous(a.v, 3, 100, 24);
  Contiguous(a.o, 3, 70, 24);
  ExpectMatches(a);
  // Head dims that are not whole quads: the key and value blocks are read as scalars.
  a.d = 13, a.dv = 10;
  Contiguous(a.q, 3, 70, 13);
  Contiguous(a.k, 3, 100, 13);
  Contiguous(a.v, 3, 100, 10);
  Contiguous(a.o, 3, 70, 10);
  ExpectMatches(a);
}

TEST(CudaAttentionTest, TheTileFillsTheSmsOrShrinks) {
  CudaAttention vision;  // 8 heads of 16384 queries: 1024 blocks of 128, two an SM
  vision.batch = 2, vision.heads = 4, vision.tq = 16384, vision.d = 32, vision.dv = 32;
  EXPECT_EQ(ChooseCudaAttentionTile(vision), (CudaAttentionTile{.bm = 128, .bn = 64, .min_blocks = 2, .rows = 8}));
  CudaAttention gpt = vision;  // head dim 96: key steps of 32
  gpt.d = gpt.dv = 96;
  EXPECT_EQ(ChooseCudaAttentionTile(gpt), (CudaAttentionTile{.bm = 128, .bn = 32, .min_blocks = 2, .rows = 8}));
  CudaAttention odd = gpt;  // head dim 94, not whole quads: 4 rows a thread
  odd.d = odd.dv = 94;
  EXPECT_EQ(ChooseCudaAttentionTile(odd), (CudaAttentionTile{.bm = 128, .bn = 32, .min_blocks = 2}));
  CudaAttention wide = vision;  // head dim 128: 64 queries
  wide.dv = 128;
  EXPECT_EQ(ChooseCudaAttentionTile(wide), (CudaAttentionTile{.bm = 64, .bn = 64, .min_blocks = 1}));
  CudaAttention few;  // 16 heads of 256 queries: 32 blocks of 128
  few.batch = 2, few.heads = 8, few.tq = 256;
  EXPECT_EQ(ChooseCudaAttentionTile(few).bm, 64);
  // The register-blocked tiles: 32-key steps up to head dim 96 (with 64-key ones up to 64), none
  // over 96 value columns, for head dims not whole quads, or for 64 queries or fewer.
  EXPECT_EQ(BlockedAttentionTiles(gpt), (std::vector<CudaAttentionTile>{{.bm = 128, .bn = 32, .min_blocks = 2, .rows = 8}}));
  EXPECT_EQ(BlockedAttentionTiles(vision).size(), 2u);
  EXPECT_TRUE(BlockedAttentionTiles(wide).empty());
  CudaAttention quarter = gpt;
  quarter.d = 94;
  EXPECT_TRUE(BlockedAttentionTiles(quarter).empty());
  CudaAttention short_rows = gpt;
  short_rows.tq = 64;
  EXPECT_TRUE(BlockedAttentionTiles(short_rows).empty());
  // Its shared memory for minGPT: q 128 x 100, keys 32 x 100, values 32 x 96, numerators 32 x 132.
  EXPECT_EQ(CudaAttentionSharedBytes(gpt, BlockedAttentionTiles(gpt)[0]), 4 * (128 * 100 + 32 * 100 + 32 * 96 + 32 * 132));
  EXPECT_EQ(CudaAttentionConfig(BlockedAttentionTiles(gpt)[0]).warps, 4);
}

TEST(CudaAttentionTest, CausalOverTheViewsOfASplitProjection) {
  // minGPT's q, k, v: views [B, H, T, D] of a [B, T, 3 * H * D] projection (row stride 3 * H * D,
  // head stride D); the output [B, H, T, D] written where [B, T, H * D] wants it. Blocks past the
  // diagonal are skipped.
  const int64_t b = 1, h = 2, t = 130, d = 16;
  CudaAttention a;
  a.batch = b, a.heads = h, a.tq = t, a.tk = t, a.d = d, a.dv = d;
  a.scale = 0.25;
  a.causal = 0;
  for (int64_t* s : {a.q, a.k, a.v}) {
    s[0] = t * 3 * h * d;
    s[1] = d;
    s[2] = 3 * h * d;
    s[3] = 1;
  }
  a.o[0] = t * h * d;
  a.o[1] = d;
  a.o[2] = h * d;
  a.o[3] = 1;
  ExpectMatches(a);
}

TEST(CudaAttentionTest, ABroadcastMaskBiasEmptiesRowsToNanOrZeros) {
  // The bias [Tq, Tk] broadcast over batch and heads (strides 0), -inf above the diagonal and on
  // every key of rows 3 and 40: those rows give NaN (softmax) or zeros (SDPA's fix-up).
  CudaAttention a;
  a.batch = 2, a.heads = 2, a.tq = 72, a.tk = 72, a.d = 8, a.dv = 8;
  a.scale = 0.5;
  Contiguous(a.q, 2, 72, 8);
  Contiguous(a.k, 2, 72, 8);
  Contiguous(a.v, 2, 72, 8);
  Contiguous(a.o, 2, 72, 8);
  a.bias = true;
  a.bias_strides[2] = 72;
  a.bias_strides[3] = 1;
  a.bias_rows = a.bias_cols = 72;
  const std::string mask = "j > i || i == 3 || i == 40";
  ExpectMatches(a, mask);
  a.zero_empty_rows = true;
  ExpectMatches(a, mask);
}

TEST(CudaAttentionTest, TheRegisterBlockedFormSkipsMaskedKeyBlocksAndCopiesUnalignedRowsByElement) {
  // Head dim 96 as minGPT's, rows 100 floats apart in one buffer (quads, copied 16 bytes at a
  // time); keys 32-95 masked for every query, so every form skips those key blocks (the bias's
  // tiles there flagged 0), and keys 64-127 left out by their tiles' flags alone (their bias
  // finite), which every form honours: those keys are out of the expected attention too.
  CudaAttention a;
  a.batch = 1, a.heads = 2, a.tq = 130, a.tk = 150, a.d = 96, a.dv = 96;
  a.scale = 0.125;
  for (int64_t* s : {a.q, a.k, a.v, a.o}) {
    s[0] = 2 * 150 * 100;
    s[1] = 150 * 100;
    s[2] = 100;
    s[3] = 1;
  }
  a.bias = true;
  a.bias_strides[2] = 150;
  a.bias_strides[3] = 1;
  a.bias_rows = 130;
  a.bias_cols = 150;
  ASSERT_EQ(BlockedAttentionTiles(a).size(), 1u);
  ExpectMatches(a, "j >= 32 && j < 96");
  ExpectMatches(a, "false", "c == 2 || c == 3");
  // Rows 101 floats apart: no quad is 16-byte aligned, every element a 4-byte copy.
  for (int64_t* s : {a.q, a.k, a.v, a.o}) {
    s[0] = 2 * 150 * 101;
    s[1] = 150 * 101;
    s[2] = 101;
  }
  a.bias = false;
  a.causal = 3;
  ExpectMatches(a);
}

TEST(CudaAttentionTest, RankThreeWithAFiniteBias) {
  CudaAttention a;
  a.batch = 3, a.heads = 1, a.tq = 65, a.tk = 33, a.d = 12, a.dv = 40;
  a.q[0] = 65 * 12, a.q[2] = 12, a.q[3] = 1;
  a.k[0] = 33 * 12, a.k[2] = 12, a.k[3] = 1;
  a.v[0] = 33 * 40, a.v[2] = 40, a.v[3] = 1;
  a.o[0] = 65 * 40, a.o[2] = 40, a.o[3] = 1;
  a.bias = true;
  a.bias_strides[2] = 33;
  a.bias_strides[3] = 1;
  a.bias_rows = 65;
  a.bias_cols = 33;
  ExpectMatches(a);
}

}  // namespace
}  // namespace kforge::codegen
