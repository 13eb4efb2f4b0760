#include "compiler/codegen/cuda_matmul.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/codegen/cuda_kernel.h"
#include "compiler/codegen/gemm_tiles.h"
#include "compiler/codegen/python_names.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::codegen {
namespace {

int64_t Tiles(int64_t extent, int block) { return (extent + block - 1) / block; }

// The source's offset of batch `z` in one operand: the batch index split into its dims, each
// times the operand's stride ("0" without batch dims).
std::string BatchOffsets(const CudaGemm& gemm) {
  if (gemm.batch_shape.empty()) return "  const long long a_off = 0, b_off = 0, c_off = 0;\n";
  std::string text = "  long long z = blockIdx.z, a_off = 0, b_off = 0, c_off = 0;\n";
  for (size_t d = gemm.batch_shape.size(); d-- > 0;) {
    text += fmt::format("  {{ const long long i = z % {}; z /= {}; a_off += i * {}LL; b_off += i * {}LL; c_off += i * {}LL; }}\n",
                        gemm.batch_shape[d], gemm.batch_shape[d], gemm.a_batch[d], gemm.b_batch[d], gemm.c_batch[d]);
  }
  return text;
}

// The bias's ref when `node` adds one along N to the product `anchor` (add.Tensor(anchor, bias)
// or add.Tensor(bias, anchor), alpha 1, a bias of N elements along its last dim, each other dim of
// size 1 or broadcast: stride 0).
std::optional<ir::NodeRef> AddedBias(const ir::Graph& graph, const ir::OpNode& node, const ir::NodeRef& anchor, int64_t n) {
  if (node.op != "aten.add.Tensor" || node.args.size() != 2 || !node.kwargs.empty()) return std::nullopt;
  const auto* x = node.args[0].TryAs<ir::NodeRef>();
  const auto* y = node.args[1].TryAs<ir::NodeRef>();
  if (x == nullptr || y == nullptr) return std::nullopt;
  const ir::NodeRef* bias = *x == anchor ? y : *y == anchor ? x : nullptr;
  if (bias == nullptr || *bias == anchor) return std::nullopt;
  const ir::TensorType* type = graph.TypeOf(*bias);
  if (type == nullptr || type->dtype != ir::DType::kFloat32 || type->shape.empty() || type->shape.back() != n) return std::nullopt;
  if (type->shape.size() > node.type().shape.size()) return std::nullopt;
  for (size_t d = 0; d + 1 < type->shape.size(); ++d) {
    if (type->shape[d] != 1 && type->stride[d] != 0) return std::nullopt;  // the same N values along every other dim
  }
  return *bias;
}

}  // namespace

int64_t CudaGemm::batch() const {
  int64_t total = 1;
  for (int64_t size : batch_shape) total *= size;
  return total;
}

const CudaGemmTile kCudaGemmTiles[3] = {CudaGemmTile{},
                                        CudaGemmTile{.bm = 128, .bn = 128, .bk = 8, .tm = 8, .tn = 8, .warp_cols = 8, .min_blocks = 2},
                                        CudaGemmTile{.bm = 64, .bn = 64, .bk = 16, .tm = 4, .tn = 4, .warp_cols = 8, .min_blocks = 4}};

CudaGemmTile ChooseCudaGemmTile(const CudaGemm& gemm) {
  // The largest tile whose grid still puts a block on about every SM (H100, bench/RESULTS.md:
  // 256 x 128 reached 0.69-0.84 of cuBLAS on minGPT's and the vision attention's products and a
  // 4096-cube, 128 x 128 0.67-0.81).
  const int64_t enough = kCudaSms * 9 / 10;
  for (const CudaGemmTile& tile : {kCudaGemmTiles[0], kCudaGemmTiles[1]}) {
    if (Tiles(gemm.m, tile.bm) * Tiles(gemm.n, tile.bn) * gemm.batch() >= enough) return tile;
  }
  return kCudaGemmTiles[2];
}

namespace {

// Whether an operand is staged along K (K contiguous, or neither dim: then scalars either way),
// given its strides along its other dim (`rs`) and K (`ks`).
bool KFastest(int64_t rs, int64_t ks) { return ks == 1 || rs != 1; }

// The quads a thread takes of each slice of operand `x` (`rows`: M or N), as source; then, inside
// the loop over them (i), its quad's row `lr` and K index `lk` within the slice, and `r` and `k`,
// the same in the whole operand (from m0 or n0 and k0). K-contiguous quads run along K.
std::string SliceQuads(char x, char rows) {
  const char X = static_cast<char>(x - 'a' + 'A');
  return fmt::format("  constexpr int {0}_QUADS = B{1} * BK / 4 / THREADS;\n", X, rows) +
         fmt::format("  static_assert({0}_QUADS >= 1 && {0}_QUADS * THREADS * 4 == B{1} * BK, \"{2}'s slice is whole quads a thread\");\n", X, rows, x);
}
std::string QuadPosition(bool k_fast, char rows, bool whole) {
  std::string s = k_fast ? "      const int q = tid + i * THREADS, lr = q / (BK / 4), lk = (q % (BK / 4)) * 4;\n"
                         : fmt::format("      const int q = tid + i * THREADS, lr = (q % (B{0} / 4)) * 4, lk = q / (B{0} / 4);\n", rows);
  if (whole) s += fmt::format("      const long long r = {}0 + lr;\n      const int k = k0 + lk;\n", static_cast<char>(rows - 'A' + 'a'));
  return s;
}

// One operand's staging, as source: each thread loads QUADS quads of 4 elements a slice along
// the operand's contiguous dim (one float4 where the quad is whole and aligned, else 4 predicated
// scalars) and stores them into shared memory as [BK][rows], transposed where K is contiguous.
// `x` names it (a or b), `rows` its dim besides K (M or N) of `extent`, `rs`/`ks` the strides.
std::string Staging(char x, char rows, int64_t extent, int64_t rs, int64_t ks) {
  const bool k_fast = KFastest(rs, ks);
  const char X = static_cast<char>(x - 'a' + 'A');
  const std::string quad_check = k_fast ? fmt::format("r < {} && k + 3 < K", extent) : fmt::format("r + 3 < {} && k < K", extent);
  const std::string lane_check = k_fast ? fmt::format("r < {} && k + j < K", extent) : fmt::format("r + j < {} && k < K", extent);
  std::string s = SliceQuads(x, rows);
  s += fmt::format("  float4 r{}[{}_QUADS];\n", x, X);
  s += fmt::format("  auto load_{} = [&](int k0) {{\n#pragma unroll\n    for (int i = 0; i < {}_QUADS; ++i) {{\n", x, X);
  s += QuadPosition(k_fast, rows, /*whole=*/true);
  s += fmt::format("      const float* p = {0}b + r * {1}LL + (long long)k * {2}LL;\n", x, rs, ks);
  s += fmt::format("      if ({}_vec && {}) {{\n        r{}[i] = *reinterpret_cast<const float4*>(p);\n      }} else {{\n", x, quad_check, x);
  s += "        float v[4];\n#pragma unroll\n";
  s += fmt::format("        for (int j = 0; j < 4; ++j) v[j] = {} ? p[j * {}LL] : 0.0f;\n", lane_check, k_fast ? ks : rs);
  s += fmt::format("        r{}[i] = make_float4(v[0], v[1], v[2], v[3]);\n      }}\n    }}\n  }};\n", x);
  s += fmt::format("  auto store_{} = [&](int buf) {{\n#pragma unroll\n    for (int i = 0; i < {}_QUADS; ++i) {{\n", x, X);
  s += QuadPosition(k_fast, rows, /*whole=*/false);
  if (k_fast) {
    s += fmt::format("      {0}s[buf][lk][lr] = r{0}[i].x; {0}s[buf][lk + 1][lr] = r{0}[i].y; {0}s[buf][lk + 2][lr] = r{0}[i].z; {0}s[buf][lk + 3][lr] = r{0}[i].w;\n", x);
  } else {
    s += fmt::format("      *reinterpret_cast<float4*>(&{0}s[buf][lk][lr]) = r{0}[i];\n", x);
  }
  s += "    }\n  };\n";
  return s;
}

// The same slice copied by cp.async straight into shared memory (no registers on the way), as
// source: `copy_{x}(k0, buf)` issues the copies, zeros where a quad runs past the operand's edge.
// A quad along the rows (K not contiguous) whose whole 16 bytes are in bounds and aligned is one
// 16-byte copy; every other element, transposed ones included, a 4-byte copy.
std::string AsyncStaging(char x, char rows, int64_t extent, int64_t rs, int64_t ks) {
  const bool k_fast = KFastest(rs, ks);
  const char X = static_cast<char>(x - 'a' + 'A');
  std::string s = SliceQuads(x, rows);
  s += fmt::format("  auto copy_{} = [&](int k0, int buf) {{\n#pragma unroll\n    for (int i = 0; i < {}_QUADS; ++i) {{\n", x, X);
  s += QuadPosition(k_fast, rows, /*whole=*/true);
  s += fmt::format("      const float* p = {0}b + r * {1}LL + (long long)k * {2}LL;\n", x, rs, ks);
  if (k_fast) {
    s += "#pragma unroll\n";
    s += fmt::format("      for (int j = 0; j < 4; ++j) {{\n        const bool in = r < {} && k + j < K;\n", extent);
    s += fmt::format("        kf_copy4(&{0}s[buf][lk + j][lr], in ? p + j * {1}LL : {0}b, in);\n      }}\n", x, ks);
  } else {
    s += fmt::format("      if ({}_vec && r + 3 < {} && k < K) {{\n", x, extent);
    s += fmt::format("        kf_copy16(&{}s[buf][lk][lr], p);\n      }} else {{\n#pragma unroll\n", x);
    s += fmt::format("        for (int j = 0; j < 4; ++j) {{\n          const bool in = r + j < {} && k < K;\n", extent);
    s += fmt::format("          kf_copy4(&{0}s[buf][lk][lr + j], in ? p + j * {1}LL : {0}b, in);\n        }}\n      }}\n", x, rs);
  }
  s += "    }\n  };\n";
  return s;
}

// Whether an operand's quads along its contiguous dim can be float4 reads, given a 16-byte
// aligned base: unit stride there, every other stride a multiple of 4.
bool QuadsAligned(int64_t rs, int64_t ks, const std::vector<int64_t>& batch) {
  const bool k_fast = KFastest(rs, ks);
  const int64_t unit = k_fast ? ks : rs, other = k_fast ? rs : ks;
  return unit == 1 && other % 4 == 0 && std::all_of(batch.begin(), batch.end(), [](int64_t s) { return s % 4 == 0; });
}

}  // namespace

std::string CudaGemmSource(const std::string& name, const CudaGemm& g, const CudaGemmTile& t) {
  const int threads = t.threads();
  const bool vector_store = g.c_n == 1 && g.n % 4 == 0 && g.c_m % 4 == 0 &&
                            std::all_of(g.c_batch.begin(), g.c_batch.end(), [](int64_t s) { return s % 4 == 0; });
  std::string s;
  s += fmt::format("// {}{} x {} x {} (M x N x K) fp32 product{}: a {} x {} tile a block over K slices of {}, {} x {} a thread;\n",
                   g.batch_shape.empty() ? "" : fmt::format("{} batches of ", g.batch()), g.m, g.n, g.k, g.bias ? " plus a bias along N" : "",
                   t.bm, t.bn, t.bk, t.tm, t.tn);
  s += fmt::format("// each output one FMA chain along K in order; {}.\n",
                   t.stages > 2 ? fmt::format("{} shared-memory stages filled by cp.async", t.stages)
                                : "the next slice read into registers while this one is multiplied");
  if (t.stages > 2) s += kCudaAsyncCopies;
  s += fmt::format("extern \"C\" __global__ __launch_bounds__({}, {}) void {}(const float* __restrict__ a, const float* __restrict__ b, {}float* __restrict__ c) {{\n",
                   threads, t.min_blocks, name, g.bias ? "const float* __restrict__ bias, " : "");
  s += fmt::format("  constexpr int BM = {}, BN = {}, BK = {}, TM = {}, TN = {}, PAD = 4, THREADS = {}, WX = {}, STAGES = {};\n", t.bm, t.bn, t.bk,
                   t.tm, t.tn, threads, t.warp_cols, t.stages);
  s += fmt::format("  constexpr long long M = {}, N = {};\n  constexpr int K = {};\n", g.m, g.n, g.k);
  s += fmt::format("  constexpr long long SCM = {}, SCN = {};\n", g.c_m, g.c_n);
  s += R"CU(  constexpr int TX = BN / TN, WY = 32 / WX;  // threads along N; a warp's threads along M
  constexpr int RM = TM / 4, RN = TN / 4;    // a thread's rows (columns) in groups of 4, BM / RM (BN / RN) apart
  constexpr int SLICES = (K + BK - 1) / BK;
  static_assert(STAGES * BK * (BM + BN + 2 * PAD) * 4 <= 48 * 1024, "a tile's static shared memory is at most 48 KB");
  __shared__ __align__(16) float as[STAGES][BK][BM + PAD];
  __shared__ __align__(16) float bs[STAGES][BK][BN + PAD];
  // Warps cover WY x WX threads of the block's thread grid, so that a warp's fragment reads of
  // shared memory span few addresses.
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int tx = (warp % (TX / WX)) * WX + lane % WX, ty = (warp / (TX / WX)) * WY + lane / WX;
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
)CU";
  s += BatchOffsets(g);
  s += "  const float* ab = a + a_off;\n  const float* bb = b + b_off;\n";
  s += fmt::format("  const bool a_vec = {} && reinterpret_cast<unsigned long long>(ab) % 16 == 0;\n",
                   QuadsAligned(g.a_m, g.a_k, g.a_batch) ? "true" : "false");
  s += fmt::format("  const bool b_vec = {} && reinterpret_cast<unsigned long long>(bb) % 16 == 0;\n",
                   QuadsAligned(g.b_n, g.b_k, g.b_batch) ? "true" : "false");
  const bool async = t.stages > 2;
  s += async ? AsyncStaging('a', 'M', g.m, g.a_m, g.a_k) : Staging('a', 'M', g.m, g.a_m, g.a_k);
  s += async ? AsyncStaging('b', 'N', g.n, g.b_n, g.b_k) : Staging('b', 'N', g.n, g.b_n, g.b_k);
  s += R"CU(  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
)CU";
  if (async) {
    // STAGES - 1 slices in flight: the copies of slice s + STAGES - 1 are issued into the buffer
    // slice s - 1 was read from once every thread is past it (the barrier), then slice s is
    // multiplied while they land.
    s += R"CU(#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < SLICES) {
      copy_a(st * BK, st);
      copy_b(st * BK, st);
    }
    kf_commit();
  }
  for (int slice = 0; slice < SLICES; ++slice) {
    const int buf = slice % STAGES;
    kf_wait<STAGES - 2>();
    __syncthreads();
    if (slice + STAGES - 1 < SLICES) {
      copy_a((slice + STAGES - 1) * BK, (slice + STAGES - 1) % STAGES);
      copy_b((slice + STAGES - 1) * BK, (slice + STAGES - 1) % STAGES);
    }
    kf_commit();
)CU";
  } else {
    s += R"CU(  load_a(0);
  load_b(0);
  store_a(0);
  store_b(0);
  __syncthreads();
  for (int slice = 0; slice < SLICES; ++slice) {
    const int buf = slice & 1;
    if (slice + 1 < SLICES) {
      load_a((slice + 1) * BK);
      load_b((slice + 1) * BK);
    }
)CU";
  }
  s += R"CU(#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float fa[TM], fb[TN];
#pragma unroll
      for (int g = 0; g < RM; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&as[buf][kk][g * (BM / RM) + ty * 4]);
        fa[g * 4 + 0] = v.x; fa[g * 4 + 1] = v.y; fa[g * 4 + 2] = v.z; fa[g * 4 + 3] = v.w;
      }
#pragma unroll
      for (int g = 0; g < RN; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&bs[buf][kk][g * (BN / RN) + tx * 4]);
        fb[g * 4 + 0] = v.x; fb[g * 4 + 1] = v.y; fb[g * 4 + 2] = v.z; fb[g * 4 + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(fa[i], fb[j], acc[i][j]);
    }
)CU";
  if (!async) {
    s += R"CU(    if (slice + 1 < SLICES) {
      store_a(buf ^ 1);
      store_b(buf ^ 1);
    }
    __syncthreads();
)CU";
  }
  s += R"CU(  }
  float* cb = c + c_off;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const long long m = m0 + (i / 4) * (BM / RM) + ty * 4 + i % 4;
    if (m >= M) continue;
#pragma unroll
    for (int h = 0; h < RN; ++h) {
      const long long n = n0 + h * (BN / RN) + tx * 4;
      float v[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) v[q] = acc[i][h * 4 + q];
)CU";
  if (g.bias) {
    s += fmt::format("#pragma unroll\n      for (int q = 0; q < 4; ++q) if (n + q < N) v[q] += bias[(n + q) * {}LL];\n", g.bias_n);
  }
  if (vector_store) {
    s += "      if (n < N) *reinterpret_cast<float4*>(&cb[m * SCM + n]) = make_float4(v[0], v[1], v[2], v[3]);\n";
  } else {
    s += "#pragma unroll\n      for (int q = 0; q < 4; ++q) if (n + q < N) cb[m * SCM + (n + q) * SCN] = v[q];\n";
  }
  s += "    }\n  }\n}\n";
  return s;
}

TileChoice CudaGemmConfig(const CudaGemmTile& tile) {
  return TileChoice{.block_m = tile.bm, .block_n = tile.bn, .block_k = tile.bk, .warps = tile.threads() / 32, .stages = tile.stages};
}

std::optional<EmittedKernel> EmitCudaMatmulKernel(const ir::Graph& graph, const passes::FusionGroup& group, const KernelOptions& options) {
  const ir::Value& anchor_value = graph.value(group.nodes.front());
  if (!passes::IsFusableMatmul(graph, anchor_value)) return std::nullopt;
  const auto& anchor = anchor_value.As<ir::OpNode>();
  if (anchor.op == "aten.convolution.default" || group.nodes.size() > 2) return std::nullopt;
  const ir::NodeRef a = anchor.args[0].As<ir::NodeRef>(), b = anchor.args[1].As<ir::NodeRef>();
  const ir::TensorType &a_type = *graph.TypeOf(a), &b_type = *graph.TypeOf(b);
  const ir::Shape& out_shape = anchor.type().shape;
  const size_t r = out_shape.size() - 2;
  const auto [row, batch_dims, b_batch] = ProductLayout(out_shape, b_type.stride);
  CudaGemm gemm;
  gemm.m = out_shape[row];
  gemm.n = out_shape[r + 1];
  gemm.k = a_type.shape[r + 1];
  if (gemm.k <= kMaxFmaK) return std::nullopt;
  for (size_t d : batch_dims) {
    gemm.batch_shape.push_back(out_shape[d]);
    gemm.a_batch.push_back(a_type.stride[d]);
  }
  gemm.b_batch = b_batch;
  gemm.a_m = a_type.stride[row];
  gemm.a_k = a_type.stride[r + 1];
  gemm.b_k = b_type.stride[r];
  gemm.b_n = b_type.stride[r + 1];

  std::vector<ir::NodeRef> outputs = passes::GroupOutputs(graph, group);
  if (outputs.size() != 1 || outputs.front().value != group.nodes.back()) return std::nullopt;
  std::optional<ir::NodeRef> bias;
  if (group.nodes.size() == 2) {
    const auto* add = graph.value(group.nodes.back()).TryAs<ir::OpNode>();
    if (add == nullptr || add->type().shape != out_shape || add->type().dtype != ir::DType::kFloat32) return std::nullopt;
    bias = AddedBias(graph, *add, anchor.ref(), gemm.n);
    if (!bias) return std::nullopt;
    gemm.bias = true;
    gemm.bias_n = graph.TypeOf(*bias)->stride.back();
  }
  const ir::TensorType& c_type = *graph.TypeOf(outputs.front());
  for (size_t d : batch_dims) gemm.c_batch.push_back(c_type.stride[d]);
  gemm.c_m = c_type.stride[row];
  gemm.c_n = c_type.stride[r + 1];

  EmittedKernel kernel;
  kernel.name = "matmul_" + group.name;
  // The rules' tile first (the kernel only where CUDA allows its grid), then the others it allows.
  const CudaGemmTile chosen = ChooseCudaGemmTile(gemm);
  const auto grid_allowed = [&](const CudaGemmTile& tile) { return Tiles(gemm.m, tile.bm) <= kMaxGridYz && gemm.batch() <= kMaxGridYz; };
  if (!grid_allowed(chosen)) return std::nullopt;
  std::vector<CudaVariant> variants;
  for (const CudaGemmTile& tile : {chosen, kCudaGemmTiles[0], kCudaGemmTiles[1], kCudaGemmTiles[2]}) {
    if (!grid_allowed(tile)) continue;
    variants.push_back({.config = CudaGemmConfig(tile), .source = CudaGemmSource(kernel.name, gemm, tile), .threads = tile.threads(),
                        .grid = {Tiles(gemm.n, tile.bn), Tiles(gemm.m, tile.bm), gemm.batch()}});
  }

  std::vector<std::string> nodes;
  for (const auto& node : group.nodes) nodes.push_back("%" + graph.value(node).name);
  std::vector<std::string> args = {VarName(graph, a), VarName(graph, b)};
  std::vector<CudaTensorArg> tensors = {{a_type.shape, a_type.stride}, {b_type.shape, b_type.stride}};
  if (bias) {
    args.push_back(VarName(graph, *bias));
    tensors.push_back({graph.TypeOf(*bias)->shape, graph.TypeOf(*bias)->stride});
  }
  const std::string out = VarName(graph, outputs.front());
  kernel.launch.push_back(EmptyLike(out, c_type));
  args.push_back(out);
  tensors.push_back({c_type.shape, c_type.stride});
  FinishCudaKernel(kernel, fmt::format("# {}: a CUDA C++ kernel of fp32 FMAs (IEEE products, rounded as cuBLAS's).\n", fmt::join(nodes, ", ")),
                   variants, std::move(tensors), args, options);
  return kernel;
}

}  // namespace kforge::codegen
