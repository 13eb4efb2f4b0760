#include "compiler/codegen/cuda_attention.h"

#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/codegen/cuda_kernel.h"
#include "compiler/codegen/python_names.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/codegen/tile_expression.h"
#include "compiler/passes/attention.h"

namespace kforge::codegen {
namespace {

constexpr int kBlockM = 64, kBlockN = 64, kPad = 4, kThreads = 256;
constexpr int64_t kMaxHeadDim = 128;
constexpr int64_t kMaxGridY = 65535;

// A float constant as CUDA source: the value rounded to fp32 (as PyTorch rounds a Python scalar
// that multiplies an fp32 tensor), written with the digits that give that float back.
std::string FloatConstant(double value) {
  std::string text = fmt::format("{:.9g}", static_cast<float>(value));
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text + "f";
}

int64_t OutputColumns(int64_t dv) { return (dv + 15) / 16; }

// The bias (at least 2-D) written at its own shape by a Triton kernel (one program per 32 x 32 tile of
// its last two dims and per index of the dims before), its producers computed as the Triton
// attention kernel computes them; `computed` are the group's nodes other than the attention.
Result<std::string> BiasKernel(const ir::Graph& graph, const std::string& name, ir::NodeRef bias, const std::set<ir::ValueId>& computed,
                               const std::vector<ir::NodeRef>& inputs, std::set<std::string>& helpers) {
  const ir::TensorType& type = *graph.TypeOf(bias);
  const ir::Shape& shape = type.shape;
  const size_t rank = shape.size();
  SourceWriter out;
  out.Line("@triton.jit");
  std::vector<std::string> params;
  for (const ir::NodeRef& ref : inputs) params.push_back(VarName(graph, ref) + "_ptr");
  params.push_back("kf_out_ptr");
  out.Open(fmt::format("def {}({}):", name, fmt::join(params, ", ")));
  out.Line(fmt::format("# The attention's bias at its own shape {} for the CUDA attention kernel to read.", ShapeTuple(shape)));
  out.Line("kf_m = tl.program_id(0) * 32 + tl.arange(0, 32)");
  out.Line("kf_n = tl.program_id(1) * 32 + tl.arange(0, 32)");
  out.Line("kf_batch = tl.program_id(2).to(tl.int64)");
  const int64_t rows = shape[rank - 2], cols = shape[rank - 1];
  out.Line(fmt::format("kf_m_valid = kf_m < {}", rows));
  out.Line(fmt::format("kf_n_valid = kf_n < {}", cols));
  TileIndex index;
  int64_t inner = 1;
  std::vector<std::string> digits;
  for (size_t d = rank - 2; d-- > 0;) {
    const std::string digit = fmt::format("kf_i{}", d);
    out.Line(fmt::format("{} = (kf_batch // {}) % {}", digit, inner, shape[d]));
    inner *= shape[d];
    digits.insert(digits.begin(), digit);
  }
  for (size_t d = 0; d + 2 < rank; ++d) index.push_back({IndexDigit{digits[d], shape[d], {}}});
  index.push_back({IndexDigit{"kf_m[:, None]", rows, {true, false}}});
  index.push_back({IndexDigit{"kf_n[None, :]", cols, {false, true}}});
  TileExpressions tiles(graph, computed, TileMasks{"kf_m_valid[:, None]", "kf_n_valid[None, :]"}, out, helpers);
  ASSIGN_OR_RETURN(TileValue value, tiles.At(bias, index));
  std::vector<std::string> terms;
  const std::vector<int64_t> strides = ir::ContiguousStrides(shape);
  for (size_t d = 0; d + 2 < rank; ++d) terms.push_back(fmt::format("kf_i{} * {}", d, strides[d]));
  terms.push_back(fmt::format("kf_m[:, None] * {}", strides[rank - 2]));
  terms.push_back("kf_n[None, :]");
  out.Line(fmt::format("tl.store(kf_out_ptr + {}, tl.broadcast_to({}, (32, 32)).to(tl.float32), mask=kf_m_valid[:, None] & kf_n_valid[None, :])",
                       fmt::join(terms, " + "), value.var));
  out.Close();
  return out.text();
}

}  // namespace

int64_t CudaAttentionSharedBytes(const CudaAttention& a) {
  const int64_t floats = a.d * (kBlockM + kPad) + a.d * (kBlockN + kPad) + kBlockN * OutputColumns(a.dv) * 16 + kBlockN * (kBlockM + kPad);
  return floats * 4;
}

std::string CudaAttentionSource(const std::string& name, const CudaAttention& a) {
  const bool skips = a.causal.has_value() || a.bias;
  std::string s;
  s += fmt::format("// softmax({} @ k^T * {}{}) @ v for {} x {} heads of {} queries and {} keys, head dims {} and {}{}:\n",
                   a.q_scale != 1.0 ? "(q * " + FloatConstant(a.q_scale) + ")" : "q", FloatConstant(a.scale), a.bias ? " + bias" : "",
                   a.batch, a.heads, a.tq, a.tk, a.d, a.dv, a.causal ? fmt::format(", causal (key j kept for query i when j - i <= {})", *a.causal) : "");
  s += "// fp32 FMAs, each score one chain along the head dim in order; online softmax over key blocks.\n";
  s += fmt::format("extern \"C\" __global__ __launch_bounds__({}) void {}(const float* __restrict__ q, const float* __restrict__ k, "
                   "const float* __restrict__ v, {}float* __restrict__ o) {{\n",
                   kThreads, name, a.bias ? "const float* __restrict__ bias, " : "");
  s += fmt::format("  constexpr int BM = {}, BN = {}, PAD = {}, THREADS = {};\n", kBlockM, kBlockN, kPad, kThreads);
  s += fmt::format("  constexpr long long TQ = {}, TK = {}, D = {}, DV = {}, HEADS = {};\n", a.tq, a.tk, a.d, a.dv, a.heads);
  s += fmt::format("  constexpr int TO = {};  // output columns a thread: tx + 16 * c\n", OutputColumns(a.dv));
  s += "  constexpr int DVP = TO * 16;\n";
  s += fmt::format("  constexpr float SCALE = {};\n", FloatConstant(a.scale));
  s += "  const float NEG_INF = -__int_as_float(0x7f800000);\n";
  s += R"CU(  extern __shared__ float4 kf_smem4[];
  float* qs = reinterpret_cast<float*>(kf_smem4);  // [D][BM + PAD]: the query block, transposed
  float* ks = qs + D * (BM + PAD);                 // [D][BN + PAD]: a key block, transposed
  float* vs = ks + D * (BN + PAD);                 // [BN][DVP]
  float* ps = vs + BN * DVP;                       // [BN][BM + PAD]: exp(scores - max), transposed
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const long long m0 = (long long)blockIdx.x * BM, b = blockIdx.y / HEADS, h = blockIdx.y % HEADS;
)CU";
  s += fmt::format("  const float* qb = q + b * {}LL + h * {}LL;\n", a.q[0], a.q[1]);
  s += fmt::format("  const float* kb = k + b * {}LL + h * {}LL;\n", a.k[0], a.k[1]);
  s += fmt::format("  const float* vb = v + b * {}LL + h * {}LL;\n", a.v[0], a.v[1]);
  s += fmt::format("  float* ob = o + b * {}LL + h * {}LL;\n", a.o[0], a.o[1]);
  if (a.bias) s += fmt::format("  const float* bb = bias + b * {}LL + h * {}LL;\n", a.bias_strides[0], a.bias_strides[1]);
  s += "  for (int e = tid; e < BM * D; e += THREADS) {\n    const int r = e / D, dd = e % D;\n    const long long m = m0 + r;\n";
  s += fmt::format("    qs[dd * (BM + PAD) + r] = m < TQ ? qb[m * {}LL + dd * {}LL]{} : 0.0f;\n  }}\n", a.q[2], a.q[3],
                   a.q_scale != 1.0 ? " * " + FloatConstant(a.q_scale) : "");
  s += R"CU(  float row_max[4], row_sum[4], acc[4][TO];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    row_max[i] = NEG_INF;
    row_sum[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < TO; ++c) acc[i][c] = 0.0f;
  }
)CU";
  if (a.causal) {
    s += fmt::format("  const long long keys_end = min(TK, max(m0 + BM + {}LL, 0LL));  // keys past the block's last diagonal\n", *a.causal);
  } else {
    s += "  const long long keys_end = TK;\n";
  }
  s += R"CU(  for (long long n0 = 0; n0 < keys_end; n0 += BN) {
    __syncthreads();  // the last block's reads of ks, vs and ps are done
    for (int e = tid; e < BN * D; e += THREADS) {
      const int key = e / D, dd = e % D;
      const long long n = n0 + key;
)CU";
  s += fmt::format("      ks[dd * (BN + PAD) + key] = n < TK ? kb[n * {}LL + dd * {}LL] : 0.0f;\n    }}\n", a.k[2], a.k[3]);
  s += R"CU(    for (int e = tid; e < BN * DVP; e += THREADS) {
      const int key = e / DVP, col = e % DVP;
      const long long n = n0 + key;
)CU";
  s += fmt::format("      vs[key * DVP + col] = n < TK && col < DV ? vb[n * {}LL + col * {}LL] : 0.0f;\n    }}\n", a.v[2], a.v[3]);
  s += R"CU(    // This thread's scores: rows ty * 4 + i, keys tx * 4 + j. s holds what is added to each
    // (the bias), or -inf where the score is masked.
    float s[4][4];
    bool any = false;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const long long m = m0 + ty * 4 + i, n = n0 + tx * 4 + j;
        bool keep = n < TK && m < TQ;
)CU";
  if (a.causal) s += fmt::format("        keep = keep && n - m <= {}LL;\n", *a.causal);
  if (a.bias) {
    s += fmt::format("        const float add = keep ? bb[m * {}LL + n * {}LL] : 0.0f;\n", a.bias_strides[2], a.bias_strides[3]);
    s += "        keep = keep && add != NEG_INF;\n        s[i][j] = keep ? add : NEG_INF;\n";
  } else {
    s += "        s[i][j] = keep ? 0.0f : NEG_INF;\n";
  }
  s += "        any = any || keep;\n      }\n";
  if (skips) {
    s += "    if (!__syncthreads_or(any)) continue;  // every score of this key block masked: it changes nothing\n";
  } else {
    s += "    __syncthreads();\n";
  }
  s += R"CU(    float sc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) sc[i][j] = 0.0f;
    for (int dd = 0; dd < D; ++dd) {
      const float4 qa = *reinterpret_cast<const float4*>(&qs[dd * (BM + PAD) + ty * 4]);
      const float4 kb4 = *reinterpret_cast<const float4*>(&ks[dd * (BN + PAD) + tx * 4]);
      const float fa[4] = {qa.x, qa.y, qa.z, qa.w}, fb[4] = {kb4.x, kb4.y, kb4.z, kb4.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) sc[i][j] = fmaf(fa[i], fb[j], sc[i][j]);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float block_max = NEG_INF;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
)CU";
  s += a.bias ? "        s[i][j] = s[i][j] == NEG_INF ? NEG_INF : sc[i][j] * SCALE + s[i][j];\n"
              : "        s[i][j] = s[i][j] == NEG_INF ? NEG_INF : sc[i][j] * SCALE;\n";
  s += R"CU(        block_max = fmaxf(block_max, s[i][j]);
      }
#pragma unroll
      for (int lane = 8; lane > 0; lane /= 2) block_max = fmaxf(block_max, __shfl_xor_sync(0xffffffffu, block_max, lane));
      const float new_max = fmaxf(row_max[i], block_max);
      const float shift = new_max == NEG_INF ? 0.0f : new_max;  // a row masked so far gives 0, not NaN
      float block_sum = 0.0f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float p = expf(s[i][j] - shift);
        ps[(tx * 4 + j) * (BM + PAD) + ty * 4 + i] = p;
        block_sum += p;
      }
#pragma unroll
      for (int lane = 8; lane > 0; lane /= 2) block_sum += __shfl_xor_sync(0xffffffffu, block_sum, lane);
      const float rescale = expf(row_max[i] - shift);
      row_sum[i] = row_sum[i] * rescale + block_sum;
#pragma unroll
      for (int c = 0; c < TO; ++c) acc[i][c] *= rescale;
      row_max[i] = new_max;
    }
    __syncthreads();
    for (int key = 0; key < BN; ++key) {
      const float4 p4 = *reinterpret_cast<const float4*>(&ps[key * (BM + PAD) + ty * 4]);
#pragma unroll
      for (int c = 0; c < TO; ++c) {
        const float x = vs[key * DVP + tx + 16 * c];
        acc[0][c] = fmaf(p4.x, x, acc[0][c]);
        acc[1][c] = fmaf(p4.y, x, acc[1][c]);
        acc[2][c] = fmaf(p4.z, x, acc[2][c]);
        acc[3][c] = fmaf(p4.w, x, acc[3][c]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const long long m = m0 + ty * 4 + i;
    if (m >= TQ) continue;
#pragma unroll
    for (int c = 0; c < TO; ++c) {
      const long long col = tx + 16 * c;
)CU";
  s += fmt::format("      if (col < DV) ob[m * {}LL + col * {}LL] = {}acc[i][c] / row_sum[i];\n", a.o[2], a.o[3],
                   a.zero_empty_rows ? "row_max[i] == NEG_INF ? 0.0f : " : "");
  s += "    }\n  }\n}\n";
  return s;
}

std::optional<EmittedKernel> EmitCudaAttentionKernel(const ir::Graph& graph, const passes::FusionGroup& group) {
  const auto& node = graph.value(group.nodes.back()).As<ir::OpNode>();
  const ir::NodeRef q = node.args.at(0).As<ir::NodeRef>(), k = node.args.at(1).As<ir::NodeRef>(), v = node.args.at(2).As<ir::NodeRef>();
  std::optional<ir::NodeRef> bias;
  if (node.args.size() > 3 && node.args[3].Is<ir::NodeRef>()) bias = node.args[3].As<ir::NodeRef>();
  const ir::TensorType &qt = *graph.TypeOf(q), &kt = *graph.TypeOf(k), &vt = *graph.TypeOf(v), &ot = node.type();
  for (const ir::TensorType* t : {&qt, &kt, &vt, &ot}) {
    if (t->dtype != ir::DType::kFloat32) return std::nullopt;
  }
  const size_t rank = qt.shape.size();
  if (rank != 3 && rank != 4) return std::nullopt;
  CudaAttention a;
  const passes::AttentionAttributes attributes = passes::AttentionAttributes::Of(node);
  a.scale = attributes.scale;
  a.q_scale = attributes.q_scale;
  a.causal = attributes.causal;
  a.zero_empty_rows = attributes.zero_empty_rows;
  a.batch = qt.shape[0];
  a.heads = rank == 4 ? qt.shape[1] : 1;
  a.tq = qt.shape[rank - 2];
  a.d = qt.shape[rank - 1];
  a.tk = kt.shape[rank - 2];
  a.dv = vt.shape[rank - 1];
  if (a.d > kMaxHeadDim || a.dv > kMaxHeadDim || a.batch * a.heads > kMaxGridY) return std::nullopt;
  auto strides = [rank](const ir::TensorType& t, int64_t out[4]) {
    out[0] = t.stride[0];
    out[1] = rank == 4 ? t.stride[1] : 0;
    out[2] = t.stride[rank - 2];
    out[3] = t.stride[rank - 1];
  };
  strides(qt, a.q);
  strides(kt, a.k);
  strides(vt, a.v);
  strides(ot, a.o);

  EmittedKernel kernel;
  kernel.name = "attention_" + group.name;
  const std::vector<ir::NodeRef> inputs = passes::GroupInputs(graph, group);
  std::vector<std::string> args = {VarName(graph, q), VarName(graph, k), VarName(graph, v)};
  std::string bias_source;
  if (bias) {
    // The bias at its own shape, then read through the strides that broadcast it to
    // [batch, heads, Tq, Tk] (0 along the dims it has as 1 or lacks).
    const ir::TensorType& bt = *graph.TypeOf(*bias);
    if (bt.numel() > kMaxMaterializedBias || bt.shape.size() > rank || bt.shape.size() < 2) return std::nullopt;
    std::set<ir::ValueId> computed(group.nodes.begin(), group.nodes.end());
    computed.erase(node.id);
    const std::string bias_kernel = kernel.name + "_bias";
    Result<std::string> source = BiasKernel(graph, bias_kernel, *bias, computed, inputs, kernel.helpers);
    if (!source.ok()) return std::nullopt;
    bias_source = *source + "\n\n";
    const std::vector<int64_t> contiguous = ir::ContiguousStrides(bt.shape);
    ir::Shape full = rank == 4 ? ir::Shape{a.batch, a.heads, a.tq, a.tk} : ir::Shape{a.batch, a.tq, a.tk};
    std::vector<int64_t> broadcast(full.size(), 0);
    const size_t lead = full.size() - bt.shape.size();
    for (size_t d = 0; d < bt.shape.size(); ++d) broadcast[lead + d] = bt.shape[d] == 1 && full[lead + d] != 1 ? 0 : contiguous[d];
    a.bias = true;
    a.bias_strides[0] = broadcast[0];
    a.bias_strides[1] = rank == 4 ? broadcast[1] : 0;
    a.bias_strides[2] = broadcast[full.size() - 2];
    a.bias_strides[3] = broadcast[full.size() - 1];
    const std::string materialized = kernel.name + "_bias_values";
    kernel.launch.push_back(fmt::format("{} = torch.empty({}, dtype=torch.float32, device=device)", materialized, ShapeTuple(bt.shape)));
    std::vector<std::string> bias_args;
    for (const ir::NodeRef& ref : inputs) bias_args.push_back(VarName(graph, ref));
    bias_args.push_back(materialized);
    int64_t leading = 1;
    for (size_t d = 0; d + 2 < bt.shape.size(); ++d) leading *= bt.shape[d];
    const int64_t rows = bt.shape[bt.shape.size() - 2], cols = bt.shape.back();
    kernel.launch.push_back(fmt::format("{}[({}, {}, {})]({}, num_warps=4)", bias_kernel, (rows + 31) / 32, (cols + 31) / 32, leading,
                                        fmt::join(bias_args, ", ")));
    args.push_back(materialized);
  }
  const int64_t shared = CudaAttentionSharedBytes(a);
  kernel.source = fmt::format("# %{}: a CUDA C++ flash-attention kernel of fp32 FMAs (IEEE scores, rounded as cuBLAS's bmm).\n", node.name) +
                  bias_source + CudaKernelDefinition(kernel.name, kThreads, CudaAttentionSource(kernel.name, a), shared);
  kernel.helpers.insert(kCudaKernelHelper);
  const std::string result = VarName(graph, node.ref());
  kernel.launch.push_back(EmptyLike(result, ot));
  args.push_back(result);
  kernel.launch.push_back(fmt::format("{}[({}, {})]({})", kernel.name, (a.tq + kBlockM - 1) / kBlockM, a.batch * a.heads, fmt::join(args, ", ")));
  return kernel;
}

}  // namespace kforge::codegen
