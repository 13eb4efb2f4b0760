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

// CUDA's limit on a grid's y and z dims (M tiles along y, batches along z).
constexpr int64_t kMaxGridYz = 65535;
// The SMs a 128 x 128 grid should fill (the H100's and H200's 132).
constexpr int64_t kSms = 132;

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
// or add.Tensor(bias, anchor), alpha 1, a bias whose dims are 1 but the last, of N elements).
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
    if (type->shape[d] != 1) return std::nullopt;
  }
  return *bias;
}

}  // namespace

int64_t CudaGemm::batch() const {
  int64_t total = 1;
  for (int64_t size : batch_shape) total *= size;
  return total;
}

CudaGemmTile ChooseCudaGemmTile(const CudaGemm& gemm) {
  const CudaGemmTile large;
  if (Tiles(gemm.m, large.bm) * Tiles(gemm.n, large.bn) * gemm.batch() >= kSms) return large;
  return CudaGemmTile{.bm = 64, .bn = 64, .bk = 8, .tm = 4, .tn = 4};
}

std::string CudaGemmSource(const std::string& name, const CudaGemm& g, const CudaGemmTile& t) {
  const int threads = t.threads();
  // Each thread stages BM * BK / threads elements of A and BN * BK / threads of B per slice, the
  // threads of a warp reading along whichever of the operand's dims is contiguous.
  const bool a_k_fast = g.a_k == 1 || g.a_m != 1;
  const bool b_k_fast = g.b_k == 1 && g.b_n != 1;
  const bool vector_store = g.c_n == 1 && g.n % 4 == 0 && g.c_m % 4 == 0 &&
                            std::all_of(g.c_batch.begin(), g.c_batch.end(), [](int64_t s) { return s % 4 == 0; });
  std::string s;
  s += fmt::format("// {}{} x {} x {} (M x N x K) fp32 product{}: a {} x {} tile a block over K slices of {}, {} x {} a thread;\n",
                   g.batch_shape.empty() ? "" : fmt::format("{} batches of ", g.batch()), g.m, g.n, g.k, g.bias ? " plus a bias along N" : "",
                   t.bm, t.bn, t.bk, t.tm, t.tn);
  s += "// each output one FMA chain along K in order.\n";
  s += fmt::format("extern \"C\" __global__ __launch_bounds__({}) void {}(const float* __restrict__ a, const float* __restrict__ b, {}float* __restrict__ c) {{\n",
                   threads, name, g.bias ? "const float* __restrict__ bias, " : "");
  s += fmt::format("  constexpr int BM = {}, BN = {}, BK = {}, TM = {}, TN = {}, PAD = 4, THREADS = {};\n", t.bm, t.bn, t.bk, t.tm, t.tn, threads);
  s += fmt::format("  constexpr long long M = {}, N = {}, K = {};\n", g.m, g.n, g.k);
  s += fmt::format("  constexpr long long SAM = {}, SAK = {}, SBK = {}, SBN = {}, SCM = {}, SCN = {};\n", g.a_m, g.a_k, g.b_k, g.b_n, g.c_m, g.c_n);
  s += R"CU(  constexpr int A_LOADS = BM * BK / THREADS, B_LOADS = BN * BK / THREADS;
  constexpr int RM = TM / 4, RN = TN / 4;  // a thread's rows (columns) in groups of 4, BM / RM (BN / RN) apart
  constexpr long long SLICES = (K + BK - 1) / BK;
  __shared__ __align__(16) float as[2][BK][BM + PAD];
  __shared__ __align__(16) float bs[2][BK][BN + PAD];
  const int tid = threadIdx.x, tx = tid % (BN / TN), ty = tid / (BN / TN);
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
)CU";
  s += BatchOffsets(g);
  s += fmt::format("  constexpr bool A_K_FAST = {}, B_K_FAST = {};\n", a_k_fast ? "true" : "false", b_k_fast ? "true" : "false");
  s += R"CU(  const float* ab = a + a_off;
  const float* bb = b + b_off;
  float ra[A_LOADS], rb[B_LOADS];
  auto load = [&](long long k0) {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      const int e = tid + i * THREADS, kk = A_K_FAST ? e % BK : e / BM, mm = A_K_FAST ? e / BK : e % BM;
      const long long m = m0 + mm, k = k0 + kk;
      ra[i] = (m < M && k < K) ? ab[m * SAM + k * SAK] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
      const int e = tid + i * THREADS, kk = B_K_FAST ? e % BK : e / BN, nn = B_K_FAST ? e / BK : e % BN;
      const long long n = n0 + nn, k = k0 + kk;
      rb[i] = (n < N && k < K) ? bb[k * SBK + n * SBN] : 0.0f;
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      const int e = tid + i * THREADS;
      as[buf][A_K_FAST ? e % BK : e / BM][A_K_FAST ? e / BK : e % BM] = ra[i];
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
      const int e = tid + i * THREADS;
      bs[buf][B_K_FAST ? e % BK : e / BN][B_K_FAST ? e / BK : e % BN] = rb[i];
    }
  };
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  load(0);
  store(0);
  __syncthreads();
  for (long long slice = 0; slice < SLICES; ++slice) {
    const int buf = slice & 1;
    if (slice + 1 < SLICES) load((slice + 1) * BK);
#pragma unroll
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
    if (slice + 1 < SLICES) store(buf ^ 1);
    __syncthreads();
  }
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

std::optional<EmittedKernel> EmitCudaMatmulKernel(const ir::Graph& graph, const passes::FusionGroup& group) {
  const ir::Value& anchor_value = graph.value(group.nodes.front());
  if (!passes::IsFusableMatmul(graph, anchor_value)) return std::nullopt;
  const auto& anchor = anchor_value.As<ir::OpNode>();
  if (anchor.op == "aten.convolution.default" || group.nodes.size() > 2) return std::nullopt;
  const ir::NodeRef a = anchor.args[0].As<ir::NodeRef>(), b = anchor.args[1].As<ir::NodeRef>();
  const ir::TensorType &a_type = *graph.TypeOf(a), &b_type = *graph.TypeOf(b);
  const ir::Shape& out_shape = anchor.type().shape;
  const size_t r = out_shape.size() - 2;
  CudaGemm gemm;
  gemm.m = out_shape[r];
  gemm.n = out_shape[r + 1];
  gemm.k = a_type.shape[r + 1];
  if (gemm.k <= kMaxFmaK) return std::nullopt;
  gemm.batch_shape.assign(out_shape.begin(), out_shape.begin() + static_cast<std::ptrdiff_t>(r));
  gemm.a_batch.assign(a_type.stride.begin(), a_type.stride.begin() + static_cast<std::ptrdiff_t>(r));
  gemm.b_batch.assign(b_type.stride.begin(), b_type.stride.begin() + static_cast<std::ptrdiff_t>(r));
  gemm.a_m = a_type.stride[r];
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
  gemm.c_batch.assign(c_type.stride.begin(), c_type.stride.begin() + static_cast<std::ptrdiff_t>(r));
  gemm.c_m = c_type.stride[r];
  gemm.c_n = c_type.stride[r + 1];

  const CudaGemmTile tile = ChooseCudaGemmTile(gemm);
  const int64_t grid_x = Tiles(gemm.n, tile.bn), grid_y = Tiles(gemm.m, tile.bm), grid_z = gemm.batch();
  if (grid_y > kMaxGridYz || grid_z > kMaxGridYz) return std::nullopt;

  EmittedKernel kernel;
  kernel.name = "matmul_" + group.name;
  std::vector<std::string> nodes;
  for (const auto& node : group.nodes) nodes.push_back("%" + graph.value(node).name);
  kernel.source = fmt::format("# {}: a CUDA C++ kernel of fp32 FMAs (IEEE products, rounded as cuBLAS's).\n", fmt::join(nodes, ", ")) +
                  CudaKernelDefinition(kernel.name, tile.threads(), CudaGemmSource(kernel.name, gemm, tile));
  kernel.helpers.insert(kCudaKernelHelper);
  std::vector<std::string> args = {VarName(graph, a), VarName(graph, b)};
  if (bias) args.push_back(VarName(graph, *bias));
  const std::string out = VarName(graph, outputs.front());
  kernel.launch.push_back(EmptyLike(out, c_type));
  args.push_back(out);
  kernel.launch.push_back(fmt::format("{}[({}, {}, {})]({})", kernel.name, grid_x, grid_y, grid_z, fmt::join(args, ", ")));
  return kernel;
}

}  // namespace kforge::codegen
