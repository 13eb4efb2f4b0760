#include "compiler/codegen/cuda_attention.h"

#include <algorithm>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/codegen/attention_node.h"
#include "compiler/codegen/cuda_kernel.h"
#include "compiler/codegen/python_names.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/codegen/tile_expression.h"

namespace kforge::codegen {
namespace {

constexpr int kPad = 4, kThreads = 256;
constexpr int64_t kMaxHeadDim = 128;

// A float constant as CUDA source: the value rounded to fp32 (as PyTorch rounds a Python scalar
// that multiplies an fp32 tensor), written with the digits that give that float back.
std::string FloatConstant(double value) {
  std::string text = fmt::format("{:.9g}", static_cast<float>(value));
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text + "f";
}

// A tile's column groups: the threads that share a row group (4 queries).
int ColumnGroups(const CudaAttentionTile& t) { return kThreads * 4 / t.bm; }
// The quads of 4 output columns each thread holds.
int64_t OutputQuads(int64_t dv, const CudaAttentionTile& t) { return (dv + 4 * ColumnGroups(t) - 1) / (4 * ColumnGroups(t)); }

// The bias (at least 2-D) written at its own shape by a Triton kernel (one program per 32 x 32 tile of
// its last two dims and per index of the dims before), its producers computed as the Triton
// attention kernel computes them; `computed` are the group's nodes other than the attention. Each
// program also writes its tile's flag (CudaAttention::bias_rows): 1 where a value is not -inf.
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
  params.push_back("kf_tiles_ptr");
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
  out.Line(fmt::format("kf_bias = tl.broadcast_to({}, (32, 32)).to(tl.float32)", value.var));
  out.Line("kf_valid = kf_m_valid[:, None] & kf_n_valid[None, :]");
  out.Line(fmt::format("tl.store(kf_out_ptr + {}, kf_bias, mask=kf_valid)", fmt::join(terms, " + ")));
  out.Line("kf_kept = tl.where(kf_valid & (kf_bias != float(\"-inf\")), 1.0, 0.0)");
  out.Line(fmt::format("tl.store(kf_tiles_ptr + kf_batch * {} + tl.program_id(0) * {} + tl.program_id(1), tl.max(tl.max(kf_kept, axis=1), axis=0))",
                       ((rows + 31) / 32) * ((cols + 31) / 32), (cols + 31) / 32));
  out.Close();
  return out.text();
}

// A row stride (in floats) of at least `cols` that is 4 past a multiple of 32: float4 reads of
// consecutive rows then fall in distinct banks.
int64_t BankStride(int64_t cols) { return cols + ((4 - cols) % 32 + 32) % 32; }

// Whether an operand's quads along its last dim (of `dim` elements) can be read (or copied) as
// float4s: that dim contiguous, every other stride a multiple of 4 (and, checked when the kernel
// runs, its base pointer 16-byte aligned).
bool Quads(const int64_t strides[4], int64_t dim) {
  return strides[3] == 1 && dim % 4 == 0 && strides[0] % 4 == 0 && strides[1] % 4 == 0 && strides[2] % 4 == 0;
}

// The operand pointers of one (batch, head) block, and whether k's and v's quads are float4s.
std::string BlockPointers(const CudaAttention& a) {
  std::string s;
  s += fmt::format("  const float* qb = q + b * {}LL + h * {}LL;\n", a.q[0], a.q[1]);
  s += fmt::format("  const float* kb = k + b * {}LL + h * {}LL;\n", a.k[0], a.k[1]);
  s += fmt::format("  const float* vb = v + b * {}LL + h * {}LL;\n", a.v[0], a.v[1]);
  s += fmt::format("  float* ob = o + b * {}LL + h * {}LL;\n", a.o[0], a.o[1]);
  if (a.bias) s += fmt::format("  const float* bb = bias + b * {}LL + h * {}LL;\n", a.bias_strides[0], a.bias_strides[1]);
  s += fmt::format("  const bool k_vec = {} && reinterpret_cast<unsigned long long>(kb) % 16 == 0;\n", Quads(a.k, a.d) ? "true" : "false");
  s += fmt::format("  const bool v_vec = {} && reinterpret_cast<unsigned long long>(vb) % 16 == 0;\n", Quads(a.v, a.dv) ? "true" : "false");
  return s;
}

// The first lines of the kernel: what it computes and its signature.
std::string KernelHead(const std::string& name, const CudaAttention& a, const CudaAttentionTile& t, const std::string& how) {
  std::string s;
  s += fmt::format("// softmax({} @ k^T * {}{}) @ v for {} x {} heads of {} queries and {} keys, head dims {} and {}{}:\n",
                   a.q_scale != 1.0 ? "(q * " + FloatConstant(a.q_scale) + ")" : "q", FloatConstant(a.scale), a.bias ? " + bias" : "",
                   a.batch, a.heads, a.tq, a.tk, a.d, a.dv, a.causal ? fmt::format(", causal (key j kept for query i when j - i <= {})", *a.causal) : "");
  s += fmt::format("// fp32 FMAs, each score one chain along the head dim in order; online softmax over key blocks; {} queries a block{}.\n", t.bm,
                   how);
  s += fmt::format("extern \"C\" __global__ __launch_bounds__({}, {}) void {}(const float* __restrict__ q, const float* __restrict__ k, "
                   "const float* __restrict__ v, {}float* __restrict__ o) {{\n",
                   CudaAttentionThreads(t), t.min_blocks, name,
                   a.bias ? "const float* __restrict__ bias, const float* __restrict__ bias_tiles, " : "");
  s += fmt::format("  constexpr long long TQ = {}, TK = {}, HEADS = {};\n  constexpr int D = {}, DV = {};\n", a.tq, a.tk, a.heads, a.d, a.dv);
  s += fmt::format("  constexpr float SCALE = {};\n", FloatConstant(a.scale));
  s += "  const float NEG_INF = -__int_as_float(0x7f800000);\n";
  return s;
}

// The last key (exclusive) a block of queries from m0 can keep.
std::string KeysEnd(const CudaAttention& a) {
  if (a.causal) return fmt::format("  const long long keys_end = min(TK, max(m0 + BM + {}LL, 0LL));  // keys past the block's last diagonal\n", *a.causal);
  return "  const long long keys_end = TK;\n";
}

// Whether the bias may keep a score of the block's queries and the key block from n0: any of the
// bias kernel's flags of the 32 x 32 tiles they span (the bias's tile row and column 0 along a dim
// it broadcasts over). Without a bias, every block.
std::string BlockKept(const CudaAttention& a) {
  if (!a.bias) return "  auto block_kept = [&](long long) { return true; };\n";
  const int64_t row_tiles = (a.bias_rows + 31) / 32, col_tiles = (a.bias_cols + 31) / 32;
  std::string s = fmt::format("  const float* tiles = bias_tiles + (b * {}LL + h * {}LL) / {}LL * {}LL;\n", a.bias_strides[0], a.bias_strides[1],
                              a.bias_rows * a.bias_cols, row_tiles * col_tiles);
  s += "  auto block_kept = [&](long long n0) {\n    bool any = false;\n";
  s += a.bias_strides[2] == 0 ? "    for (long long r = 0; r <= 0; ++r)\n" : "    for (long long r = m0 / 32; r <= (min(m0 + BM, TQ) - 1) / 32; ++r)\n";
  s += a.bias_strides[3] == 0 ? "      for (long long c = 0; c <= 0; ++c)" : "      for (long long c = n0 / 32; c <= (min(n0 + BN, TK) - 1) / 32; ++c)";
  s += fmt::format(" any = any || tiles[r * {}LL + c] != 0.0f;\n    return any;\n  }};\n", col_tiles);
  return s;
}

// A thread's running row max, row sum and output accumulator for its `rows` rows, cleared.
std::string RowState(int rows) {
  return fmt::format(R"CU(  float row_max[{0}], row_sum[{0}], acc[{0}][OQ * 4];
#pragma unroll
  for (int i = 0; i < {0}; ++i) {{
    row_max[i] = NEG_INF;
    row_sum[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < OQ * 4; ++c) acc[i][c] = 0.0f;
  }}
)CU",
                     rows);
}

// The online softmax of a thread's `rows` rows over a key block: each score made by `score` (a
// statement setting s[i][j], masked to -inf), the row's max and sum reduced across its threads by
// warp shuffles from lane offset `lanes` down, the scores made exp(s - max) in place, and the
// accumulator rescaled where the max grew.
std::string OnlineSoftmax(int rows, const std::string& lanes, const std::string& score) {
  return fmt::format(R"CU(#pragma unroll
    for (int i = 0; i < {1}; ++i) {{
      float block_max = NEG_INF;
#pragma unroll
      for (int j = 0; j < KT; ++j) {{
{2}        block_max = fmaxf(block_max, s[i][j]);
      }}
#pragma unroll
      for (int lane = {0}; lane > 0; lane /= 2) block_max = fmaxf(block_max, __shfl_xor_sync(0xffffffffu, block_max, lane));
      const float new_max = fmaxf(row_max[i], block_max);
      const float shift = new_max == NEG_INF ? 0.0f : new_max;  // a row masked so far gives 0, not NaN
      float block_sum = 0.0f;
#pragma unroll
      for (int j = 0; j < KT; ++j) {{
        s[i][j] = expf(s[i][j] - shift);
        block_sum += s[i][j];
      }}
#pragma unroll
      for (int lane = {0}; lane > 0; lane /= 2) block_sum += __shfl_xor_sync(0xffffffffu, block_sum, lane);
      const float rescale = expf(row_max[i] - shift);
      row_sum[i] = row_sum[i] * rescale + block_sum;
#pragma unroll
      for (int c = 0; c < OQ * 4; ++c) acc[i][c] *= rescale;
      row_max[i] = new_max;
    }}
)CU",
                     lanes, rows, score);
}

// A tile [rows][cols] (cols whole quads) of an operand copied by a block's 128 threads into shared
// memory `dst` (row pitch `pitch`) by cp.async: tile element (r, c) is the operand's (row, col),
// read through its strides; a quad whose 4 elements are in and that `vec` allows is one 16-byte
// copy, any other element a 4-byte one (zero outside). `col_in` is a condition on `col + {}`.
struct TileCopy {
  std::string dst, pitch, rows, cols, base, vec, row, col;
  int64_t row_stride = 0, col_stride = 1;
  std::string row_in, col_in;
};

std::string CopyTile(const TileCopy& t) {
  auto col_in = [&](const std::string& j) { return fmt::format(fmt::runtime(t.col_in), j); };
  std::string s;
  s += fmt::format("    for (int e = tid; e < {0} * ({1} / 4); e += 128) {{\n      const int r = e / ({1} / 4), c = (e % ({1} / 4)) * 4;\n", t.rows, t.cols);
  s += fmt::format("      const long long row = {}, col = {};\n      const bool row_in = {};\n", t.row, t.col, t.row_in);
  s += fmt::format("      const float* p = {} + row * {}LL + col * {}LL;\n", t.base, t.row_stride, t.col_stride);
  s += fmt::format("      if ({} && row_in && {}) {{\n        kf_copy16(&{}[r * {} + c], p);\n      }} else {{\n#pragma unroll\n", t.vec, col_in("3"),
                   t.dst, t.pitch);
  s += fmt::format("        for (int j = 0; j < 4; ++j) {{\n          const bool in = row_in && {};\n", col_in("j"));
  s += fmt::format("          kf_copy4(&{}[r * {} + c + j], in ? p + j * {}LL : {}, in);\n        }}\n      }}\n    }}\n", t.dst, t.pitch,
                   t.col_stride, t.base);
  return s;
}

// The register-blocked form (CudaAttentionTile::rows == 8).
std::string BlockedAttentionSource(const std::string& name, const CudaAttention& a, const CudaAttentionTile& t) {
  std::string s = kCudaAsyncCopies;
  s += KernelHead(name, a, t, fmt::format(", 8 rows x {} keys a thread, key and value blocks copied by cp.async", t.bn / 8));
  s += fmt::format("  constexpr int BM = {}, BN = {}, KT = BN / 8, QS = {}, PS = BM + 4, BS = BN + 8, OQ = {}, DVP = OQ * 32;\n", t.bm, t.bn,
                   BankStride(a.d), (a.dv + 31) / 32);
  s += R"CU(  static_assert(BM == 128 && BN % 8 == 0 && D % 4 == 0 && DV % 4 == 0, "128 queries, whole quads of head dims");
  extern __shared__ float4 kf_smem4[];
  float* qs = reinterpret_cast<float*>(kf_smem4);  // [BM][QS]: the query block, row by row
  float* ks = qs + BM * QS;                        // [BN][QS]: a key block, row by row
  float* vs = ks + BN * QS;                        // [BN][DVP]: a value block
  float* ps = vs + BN * DVP;                       // [BN][PS]: exp(scores - max), a thread's 8 rows side by side from ty * 8
  float* bs = ps + BN * PS;                        // [BM][BS]: the bias of the queries and a key block, where there is one
  // A thread's rows are ty + 16 * i, its keys in a block tx + 8 * j and its output columns
  // g * 32 + tx * 4 + c: a row's 8 threads are neighbours in one warp, and a warp's float4 reads
  // of q (4 rows) and of a key block (8 rows) fall in distinct banks.
  const int tid = threadIdx.x, tx = tid % 8, ty = tid / 8;
  const long long m0 = (long long)blockIdx.x * BM, b = blockIdx.y / HEADS, h = blockIdx.y % HEADS;
)CU";
  s += BlockPointers(a);
  if (a.bias) {
    s += fmt::format("  const bool b_vec = {} && reinterpret_cast<unsigned long long>(bb) % 16 == 0;\n",
                     Quads(a.bias_strides, t.bn) ? "true" : "false");
  }
  s += "  for (int e = tid; e < BM * (D / 4); e += 128) {\n    const int r = e / (D / 4), dd = (e % (D / 4)) * 4;\n    const long long m = m0 + r;\n";
  s += "    float x[4];\n#pragma unroll\n";
  s += fmt::format("    for (int j = 0; j < 4; ++j) x[j] = m < TQ ? qb[m * {}LL + (dd + j) * {}LL]{} : 0.0f;\n", a.q[2], a.q[3],
                   a.q_scale != 1.0 ? " * " + FloatConstant(a.q_scale) : "");
  s += "    *reinterpret_cast<float4*>(&qs[r * QS + dd]) = make_float4(x[0], x[1], x[2], x[3]);\n  }\n";
  // The copies of a key block (with the bias of the block's queries and those keys, one group)
  // and of a value block, zeros outside the operands.
  s += "  auto copy_k = [&](long long n0) {\n";
  s += CopyTile({.dst = "ks", .pitch = "QS", .rows = "BN", .cols = "D", .base = "kb", .vec = "k_vec", .row = "n0 + r", .col = "c",
                 .row_stride = a.k[2], .col_stride = a.k[3], .row_in = "row < TK", .col_in = "true"});
  if (a.bias) {
    s += CopyTile({.dst = "bs", .pitch = "BS", .rows = "BM", .cols = "BN", .base = "bb", .vec = "b_vec", .row = "m0 + r", .col = "n0 + c",
                   .row_stride = a.bias_strides[2], .col_stride = a.bias_strides[3], .row_in = "row < TQ", .col_in = "col + {} < TK"});
  }
  s += "    kf_commit();\n  };\n  auto copy_v = [&](long long n0) {\n";
  s += CopyTile({.dst = "vs", .pitch = "DVP", .rows = "BN", .cols = "DVP", .base = "vb", .vec = "v_vec", .row = "n0 + r", .col = "c",
                 .row_stride = a.v[2], .col_stride = a.v[3], .row_in = "row < TK", .col_in = "col + {} < DV"});
  s += "    kf_commit();\n  };\n";
  // Which of a thread's scores in the key block from n0 are kept, one bit each.
  s += "  auto kept_from = [&](long long n0) {\n    unsigned long long kept = 0;\n#pragma unroll\n    for (int i = 0; i < 8; ++i)\n#pragma unroll\n";
  s += "      for (int j = 0; j < KT; ++j) {\n        const long long m = m0 + ty + 16 * i, n = n0 + tx + 8 * j;\n        bool keep = n < TK && m < TQ;\n";
  if (a.causal) s += fmt::format("        keep = keep && n - m <= {}LL;\n", *a.causal);
  if (a.bias) s += "        keep = keep && bs[(ty + 16 * i) * BS + tx + 8 * j] != NEG_INF;\n";
  s += "        kept |= (keep ? 1ull : 0ull) << (i * KT + j);\n      }\n    return kept;\n  };\n";
  s += KeysEnd(a);
  s += BlockKept(a);
  // The key blocks up to keys_end that the bias's tiles may keep are copied (the bias, which says
  // which scores are kept, comes with its key block); one whose every score is masked changes
  // nothing and is not computed.
  s += RowState(8);
  s += R"CU(  auto next_block = [&](long long n0) {  // the first key block from n0 that may keep a score
    while (n0 < keys_end && !block_kept(n0)) n0 += BN;
    return n0;
  };
  long long n0 = next_block(0);
  if (n0 < keys_end) {
    copy_k(n0);
    copy_v(n0);
  }
  while (n0 < keys_end) {
    const long long next = next_block(n0 + BN);
    kf_wait<1>();  // this key block (its value block may still be on the way)
    __syncthreads();
    const unsigned long long kept = kept_from(n0);
    const bool any = __syncthreads_or(kept != 0);
    if (any) {
    float sc[8][KT], (&s)[8][KT] = sc;  // the scores, then in place their softmax numerators
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < KT; ++j) sc[i][j] = 0.0f;
)CU";
  // Two head-dim steps a loop turn for 4 keys a thread; one for 8, whose 64 scores, 8 + 8 float4
  // reads and the outputs leave ptxas no registers for a second.
  s += fmt::format("#pragma unroll {}\n", t.bn / 8 <= 4 ? 2 : 1);
  s += R"CU(    for (int dd = 0; dd < D; dd += 4) {
      float4 qa[8], kq[KT];
#pragma unroll
      for (int i = 0; i < 8; ++i) qa[i] = *reinterpret_cast<const float4*>(&qs[(ty + 16 * i) * QS + dd]);
#pragma unroll
      for (int j = 0; j < KT; ++j) kq[j] = *reinterpret_cast<const float4*>(&ks[(tx + 8 * j) * QS + dd]);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < KT; ++j) {
          sc[i][j] = fmaf(qa[i].x, kq[j].x, sc[i][j]);
          sc[i][j] = fmaf(qa[i].y, kq[j].y, sc[i][j]);
          sc[i][j] = fmaf(qa[i].z, kq[j].z, sc[i][j]);
          sc[i][j] = fmaf(qa[i].w, kq[j].w, sc[i][j]);
        }
    }
)CU";
  s += OnlineSoftmax(8, "4", fmt::format("        s[i][j] = (kept >> (i * KT + j) & 1ull) ? sc[i][j] * SCALE{} : NEG_INF;\n",
                                       a.bias ? " + bs[(ty + 16 * i) * BS + tx + 8 * j]" : ""));
  s += R"CU(#pragma unroll
    for (int j = 0; j < KT; ++j) {
      float* row = &ps[(tx + 8 * j) * PS + ty * 8];
      *reinterpret_cast<float4*>(row) = make_float4(s[0][j], s[1][j], s[2][j], s[3][j]);
      *reinterpret_cast<float4*>(row + 4) = make_float4(s[4][j], s[5][j], s[6][j], s[7][j]);
    }
    }
    kf_wait<0>();  // this value block
    __syncthreads();
    // The key block is read: the next one is copied while p @ v runs.
    if (next < keys_end) copy_k(next);
    if (any) {
#pragma unroll 2
    for (int key = 0; key < BN; ++key) {
      const float4 p0 = *reinterpret_cast<const float4*>(&ps[key * PS + ty * 8]);
      const float4 p1 = *reinterpret_cast<const float4*>(&ps[key * PS + ty * 8 + 4]);
      const float p[8] = {p0.x, p0.y, p0.z, p0.w, p1.x, p1.y, p1.z, p1.w};
#pragma unroll
      for (int g = 0; g < OQ; ++g) {
        const float4 x4 = *reinterpret_cast<const float4*>(&vs[key * DVP + g * 32 + tx * 4]);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          acc[i][g * 4 + 0] = fmaf(p[i], x4.x, acc[i][g * 4 + 0]);
          acc[i][g * 4 + 1] = fmaf(p[i], x4.y, acc[i][g * 4 + 1]);
          acc[i][g * 4 + 2] = fmaf(p[i], x4.z, acc[i][g * 4 + 2]);
          acc[i][g * 4 + 3] = fmaf(p[i], x4.w, acc[i][g * 4 + 3]);
        }
      }
    }
    }
    __syncthreads();  // the value block and the numerators are read
    if (next < keys_end) copy_v(next);
    n0 = next;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const long long m = m0 + ty + 16 * i;
    if (m >= TQ) continue;
#pragma unroll
    for (int c = 0; c < OQ * 4; ++c) {
      const long long col = (c / 4) * 32 + tx * 4 + c % 4;
)CU";
  s += fmt::format("      if (col < DV) ob[m * {}LL + col * {}LL] = {}acc[i][c] / row_sum[i];\n", a.o[2], a.o[3],
                   a.zero_empty_rows ? "row_max[i] == NEG_INF ? 0.0f : " : "");
  s += "    }\n  }\n}\n";
  return s;
}

}  // namespace

int CudaAttentionThreads(const CudaAttentionTile& tile) { return tile.rows == 8 ? 128 : kThreads; }

std::vector<CudaAttentionTile> BlockedAttentionTiles(const CudaAttention& a) {
  if (a.d % 4 != 0 || a.dv % 4 != 0 || a.d > kMaxHeadDim || a.dv > 96 || a.tq <= 64) return {};
  std::vector<CudaAttentionTile> tiles = {{.bm = 128, .bn = 32, .min_blocks = 2, .rows = 8}};
  if (std::max(a.d, a.dv) <= 64) tiles.push_back({.bm = 128, .bn = 64, .min_blocks = 2, .rows = 8});
  return tiles;
}

CudaAttentionTile WideAttentionTile(const CudaAttention& a) {
  return CudaAttentionTile{.bm = 128, .bn = std::max(a.d, a.dv) <= 64 ? 64 : 32, .min_blocks = 2};
}

bool WideAttentionFits(const CudaAttention& a) { return a.tq > 64 && std::max(a.d, a.dv) <= 96; }

CudaAttentionTile ChooseCudaAttentionTile(const CudaAttention& a) {
  // H100, bench/RESULTS.md (thirtieth session): 128 queries with two blocks an SM (128 registers a
  // thread) ran the vision attention (head dim 32) in 10.3 ms where one block took 13.0, and with
  // key steps of 32 minGPT's (head dim 96) in 2.77 ms where 64 queries took 3.00. Over 96 head
  // dims, or where 128 queries leave SMs idle, 64 queries.
  // H100, thirty-eighth session: the register-blocked form ran minGPT's attention (its mask a
  // bias) in 2.64 ms against 2.72 for 128 queries in steps of 32, and the vision attention in
  // steps of 64 keys in 9.63 against 10.31: where it fits and fills the SMs, its widest key step.
  const bool fills = (a.tq + 127) / 128 * a.batch * a.heads >= kCudaSms;
  const std::vector<CudaAttentionTile> blocked = BlockedAttentionTiles(a);
  if (!blocked.empty() && fills) return blocked.back();
  const CudaAttentionTile wide = WideAttentionTile(a);
  if (WideAttentionFits(a) && fills) return wide;
  return kNarrowAttentionTile;
}

TileChoice CudaAttentionConfig(const CudaAttentionTile& tile) {
  return TileChoice{.block_m = tile.bm, .block_n = tile.bn, .warps = CudaAttentionThreads(tile) / 32, .stages = 1};
}

int64_t CudaAttentionSharedBytes(const CudaAttention& a, const CudaAttentionTile& t) {
  if (t.rows == 8) {
    const int64_t dvp = (a.dv + 31) / 32 * 32;
    return 4 * (t.bm * BankStride(a.d) + t.bn * BankStride(a.d) + t.bn * dvp + t.bn * (t.bm + 4) + (a.bias ? t.bm * (t.bn + 8) : 0));
  }
  const int64_t floats = a.d * (t.bm + kPad) + a.d * (t.bn + kPad) + t.bn * OutputQuads(a.dv, t) * 4 * ColumnGroups(t) + t.bn * (t.bm + kPad);
  return floats * 4;
}

std::string CudaAttentionSource(const std::string& name, const CudaAttention& a, const CudaAttentionTile& t) {
  if (t.rows == 8) return BlockedAttentionSource(name, a, t);
  const bool skips = a.causal.has_value() || a.bias;
  std::string s = KernelHead(name, a, t, "");
  s += fmt::format("  constexpr int BM = {}, BN = {}, PAD = {}, THREADS = {};\n", t.bm, t.bn, kPad, kThreads);
  s += "  constexpr int CG = THREADS * 4 / BM, KQ = BN / (4 * CG), KT = KQ * 4;  // column groups; a thread's key quads, keys\n";
  s += "  static_assert(KQ >= 1 && KQ * 4 * CG == BN, \"a key block is whole quads for each column group\");\n";
  s += fmt::format("  constexpr int OQ = {};  // output quads a thread: columns g * 4 * CG + tx * 4\n", OutputQuads(a.dv, t));
  s += "  constexpr int DVP = OQ * 4 * CG;\n";
  s += R"CU(  extern __shared__ float4 kf_smem4[];
  float* qs = reinterpret_cast<float*>(kf_smem4);  // [D][BM + PAD]: the query block, transposed
  float* ks = qs + D * (BM + PAD);                 // [D][BN + PAD]: a key block, transposed
  float* vs = ks + D * (BN + PAD);                 // [BN][DVP]
  float* ps = vs + BN * DVP;                       // [BN][BM + PAD]: exp(scores - max), transposed
  // A thread's rows are ty * 4 + i; its keys and output columns quads g * 4 * CG + tx * 4, so
  // that a row's CG threads are neighbours in one warp.
  const int tid = threadIdx.x, tx = tid % CG, ty = tid / CG;
  const auto key_of = [=](int j) { return (j / 4) * 4 * CG + tx * 4 + j % 4; };  // a thread's j-th key in a block
  const long long m0 = (long long)blockIdx.x * BM, b = blockIdx.y / HEADS, h = blockIdx.y % HEADS;
)CU";
  s += BlockPointers(a);
  s += "  for (int e = tid; e < BM * D; e += THREADS) {\n    const int r = e / D, dd = e % D;\n    const long long m = m0 + r;\n";
  s += fmt::format("    qs[dd * (BM + PAD) + r] = m < TQ ? qb[m * {}LL + dd * {}LL]{} : 0.0f;\n  }}\n", a.q[2], a.q[3],
                   a.q_scale != 1.0 ? " * " + FloatConstant(a.q_scale) : "");
  s += RowState(4);
  s += KeysEnd(a);
  s += BlockKept(a);
  s += "  for (long long n0 = 0; n0 < keys_end; n0 += BN) {\n    if (!block_kept(n0)) continue;  // the same answer for the whole block\n";
  // Which of this thread's scores are kept, one bit each (the bias, where there is one, is read
  // again once the scores are made, so that it holds no registers through the products).
  s += R"CU(    static_assert(4 * KT <= 32, "a thread's scores fit one mask word");
    unsigned kept = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < KT; ++j) {
        const long long m = m0 + ty * 4 + i, n = n0 + key_of(j);
        bool keep = n < TK && m < TQ;
)CU";
  if (a.causal) s += fmt::format("        keep = keep && n - m <= {}LL;\n", *a.causal);
  if (a.bias) s += fmt::format("        keep = keep && bb[m * {}LL + n * {}LL] != NEG_INF;\n", a.bias_strides[2], a.bias_strides[3]);
  s += "        kept |= (keep ? 1u : 0u) << (i * KT + j);\n      }\n    const bool any = kept != 0;\n";
  // The barrier also waits for the last block's reads of ks, vs and ps; a key block whose every
  // score is masked changes nothing, and is neither read nor computed.
  s += skips ? "    if (!__syncthreads_or(any)) continue;\n" : "    __syncthreads();\n";
  s += R"CU(    // The key block in quads along the head dim, stored transposed; the value block as it is.
    for (int e = tid; e < BN * ((D + 3) / 4); e += THREADS) {
      const int key = e / ((D + 3) / 4), dd = (e % ((D + 3) / 4)) * 4;
      const long long n = n0 + key;
)CU";
  s += fmt::format("      const float* p = kb + n * {}LL + dd * {}LL;\n", a.k[2], a.k[3]);
  s += fmt::format(R"CU(      float x[4];
      if (k_vec && n < TK) {{
        const float4 f = *reinterpret_cast<const float4*>(p);
        x[0] = f.x; x[1] = f.y; x[2] = f.z; x[3] = f.w;
      }} else {{
#pragma unroll
        for (int j = 0; j < 4; ++j) x[j] = n < TK && dd + j < D ? p[j * {}LL] : 0.0f;
      }}
#pragma unroll
      for (int j = 0; j < 4; ++j) if (dd + j < D) ks[(dd + j) * (BN + PAD) + key] = x[j];
    }}
    for (int e = tid; e < BN * (DVP / 4); e += THREADS) {{
      const int key = e / (DVP / 4), col = (e % (DVP / 4)) * 4;
      const long long n = n0 + key;
      const float* p = vb + n * {}LL + col * {}LL;
      float4 f;
      if (v_vec && n < TK && col < DV) {{
        f = *reinterpret_cast<const float4*>(p);
      }} else {{
        float x[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) x[j] = n < TK && col + j < DV ? p[j * {}LL] : 0.0f;
        f = make_float4(x[0], x[1], x[2], x[3]);
      }}
      *reinterpret_cast<float4*>(&vs[key * DVP + col]) = f;
    }}
)CU", a.k[3], a.v[2], a.v[3], a.v[3]);
  s += "    __syncthreads();\n";
  s += R"CU(    float sc[4][KT], (&s)[4][KT] = sc;  // the scores, then in place their softmax numerators
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < KT; ++j) sc[i][j] = 0.0f;
#pragma unroll 4
    for (int dd = 0; dd < D; ++dd) {
      const float4 qa = *reinterpret_cast<const float4*>(&qs[dd * (BM + PAD) + ty * 4]);
      const float fa[4] = {qa.x, qa.y, qa.z, qa.w};
      float fb[KT];
#pragma unroll
      for (int g = 0; g < KQ; ++g) {
        const float4 kq = *reinterpret_cast<const float4*>(&ks[dd * (BN + PAD) + g * 4 * CG + tx * 4]);
        fb[g * 4 + 0] = kq.x; fb[g * 4 + 1] = kq.y; fb[g * 4 + 2] = kq.z; fb[g * 4 + 3] = kq.w;
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < KT; ++j) sc[i][j] = fmaf(fa[i], fb[j], sc[i][j]);
    }
)CU";
  const std::string bias_term = fmt::format(" + bb[(m0 + ty * 4 + i) * {}LL + (n0 + key_of(j)) * {}LL]", a.bias_strides[2], a.bias_strides[3]);
  s += OnlineSoftmax(4, "CG / 2", fmt::format("        s[i][j] = (kept >> (i * KT + j) & 1u) ? sc[i][j] * SCALE{} : NEG_INF;\n",
                                              a.bias ? bias_term : ""));
  s += R"CU(#pragma unroll
    for (int j = 0; j < KT; ++j) {
      *reinterpret_cast<float4*>(&ps[key_of(j) * (BM + PAD) + ty * 4]) = make_float4(s[0][j], s[1][j], s[2][j], s[3][j]);
    }
    __syncthreads();
#pragma unroll 4
    for (int key = 0; key < BN; ++key) {
      const float4 p4 = *reinterpret_cast<const float4*>(&ps[key * (BM + PAD) + ty * 4]);
#pragma unroll
      for (int g = 0; g < OQ; ++g) {
        const float4 x4 = *reinterpret_cast<const float4*>(&vs[key * DVP + g * 4 * CG + tx * 4]);
        const float x[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          acc[0][g * 4 + c] = fmaf(p4.x, x[c], acc[0][g * 4 + c]);
          acc[1][g * 4 + c] = fmaf(p4.y, x[c], acc[1][g * 4 + c]);
          acc[2][g * 4 + c] = fmaf(p4.z, x[c], acc[2][g * 4 + c]);
          acc[3][g * 4 + c] = fmaf(p4.w, x[c], acc[3][g * 4 + c]);
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const long long m = m0 + ty * 4 + i;
    if (m >= TQ) continue;
#pragma unroll
    for (int c = 0; c < OQ * 4; ++c) {
      const long long col = (c / 4) * 4 * CG + tx * 4 + c % 4;
)CU";
  s += fmt::format("      if (col < DV) ob[m * {}LL + col * {}LL] = {}acc[i][c] / row_sum[i];\n", a.o[2], a.o[3],
                   a.zero_empty_rows ? "row_max[i] == NEG_INF ? 0.0f : " : "");
  s += "    }\n  }\n}\n";
  return s;
}

std::optional<EmittedKernel> EmitCudaAttentionKernel(const ir::Graph& graph, const passes::FusionGroup& group,
                                                     const KernelOptions& options) {
  const auto& node = graph.value(group.nodes.back()).As<ir::OpNode>();
  Result<AttentionNode> read = ReadAttentionNode(graph, node);
  if (!read.ok()) return std::nullopt;
  const AttentionNode& n = *read;
  const ir::NodeRef q = n.q, k = n.k, v = n.v;
  const std::optional<ir::NodeRef> bias = n.bias;
  const ir::TensorType &qt = *graph.TypeOf(q), &kt = *graph.TypeOf(k), &vt = *graph.TypeOf(v), &ot = node.type();
  for (const ir::TensorType* t : {&qt, &kt, &vt, &ot}) {
    if (t->dtype != ir::DType::kFloat32) return std::nullopt;
  }
  const size_t rank = n.rank;
  CudaAttention a;
  a.scale = n.attributes.scale;
  a.q_scale = n.attributes.q_scale;
  a.causal = n.attributes.causal;
  a.zero_empty_rows = n.attributes.zero_empty_rows;
  a.batch = n.batch;
  a.heads = n.heads;
  a.tq = n.tq;
  a.d = n.d;
  a.tk = n.tk;
  a.dv = n.dv;
  if (a.d > kMaxHeadDim || a.dv > kMaxHeadDim || a.batch * a.heads > kMaxGridYz) return std::nullopt;
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
  std::vector<CudaTensorArg> tensors = {{qt.shape, qt.stride}, {kt.shape, kt.stride}, {vt.shape, vt.stride}};
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
    a.bias_rows = bt.shape[bt.shape.size() - 2];
    a.bias_cols = bt.shape.back();
    int64_t leading = 1;
    for (size_t d = 0; d + 2 < bt.shape.size(); ++d) leading *= bt.shape[d];
    const std::string materialized = kernel.name + "_bias_values", tile_flags = kernel.name + "_bias_tiles";
    const ir::Shape flags_shape = {leading, (a.bias_rows + 31) / 32, (a.bias_cols + 31) / 32};
    kernel.launch.push_back(fmt::format("{} = torch.empty({}, dtype=torch.float32, device=device)", materialized, ShapeTuple(bt.shape)));
    kernel.launch.push_back(fmt::format("{} = torch.empty({}, dtype=torch.float32, device=device)", tile_flags, ShapeTuple(flags_shape)));
    std::vector<std::string> bias_args;
    for (const ir::NodeRef& ref : inputs) bias_args.push_back(VarName(graph, ref));
    bias_args.push_back(materialized);
    bias_args.push_back(tile_flags);
    kernel.launch.push_back(fmt::format("{}[({}, {}, {})]({}, num_warps=4)", bias_kernel, flags_shape[1], flags_shape[2], leading,
                                        fmt::join(bias_args, ", ")));
    args.push_back(materialized);
    args.push_back(tile_flags);
    tensors.push_back({bt.shape, ir::ContiguousStrides(bt.shape)});  // as materialized
    tensors.push_back({flags_shape, ir::ContiguousStrides(flags_shape)});
  }
  // The rules' tile first, then the others for the tuner. Its random operands make a bias of no
  // -inf and tile flags none of 0, so it times every tile over all key blocks, where a mask (a
  // causal one materialized as a bias) would skip some: a comparison of the tiles' work per score.
  const CudaAttentionTile chosen = ChooseCudaAttentionTile(a);
  std::vector<CudaAttentionTile> tiles = {chosen, WideAttentionTile(a), kNarrowAttentionTile};
  for (const CudaAttentionTile& tile : BlockedAttentionTiles(a)) tiles.push_back(tile);
  std::vector<CudaVariant> variants;
  for (const CudaAttentionTile& tile : tiles) {
    if (tile.rows == 4 && tile.bm == 128 && !WideAttentionFits(a)) continue;
    variants.push_back({.config = CudaAttentionConfig(tile), .source = CudaAttentionSource(kernel.name, a, tile),
                        .threads = CudaAttentionThreads(tile), .shared_bytes = CudaAttentionSharedBytes(a, tile),
                        .grid = {(a.tq + tile.bm - 1) / tile.bm, a.batch * a.heads}});
  }
  const std::string result = VarName(graph, node.ref());
  kernel.launch.push_back(EmptyLike(result, ot));
  args.push_back(result);
  tensors.push_back({ot.shape, ot.stride});
  FinishCudaKernel(kernel,
                   fmt::format("# %{}: a CUDA C++ flash-attention kernel of fp32 FMAs (IEEE scores, rounded as cuBLAS's bmm).\n", node.name) +
                       bias_source,
                   variants, std::move(tensors), args, options);
  return kernel;
}

}  // namespace kforge::codegen
