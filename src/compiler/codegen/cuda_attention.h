// Attention as a CUDA C++ flash-attention kernel of fp32 FMAs, for IEEE attention on a GPU.
// Triton's IEEE dots ran minGPT's causal attention (head dim 96) at about 9 TFLOP/s and the vision
// transformer's (head dim 32, 16384 keys) at under 4 (bench/RESULTS.md). A block of 256 threads
// takes 128 (or 64) queries of one (batch, head) and walks the key blocks of 64 (or 32): q and a key
// block staged in shared memory transposed, each thread's 4 rows' scores one FMA chain along the
// head dim in order from zero (as cuBLAS's bmm computes q @ k^T), then times the scale, plus the
// bias, masked; an online softmax (row max and sum reduced across the row's 8 or 16 threads by warp
// shuffles, the accumulator rescaled when the max grows); p @ v into each thread's 4 rows x
// quads of 4 columns, read from shared memory as float4s (4 x 4 FMAs for two reads). The scores
// never reach memory. A key block whose every score is masked (causal band, or a bias of -inf)
// is skipped. The register-blocked form (CudaAttentionTile::rows) gives each of 128 threads 8 rows,
// for twice the FMAs a shared-memory read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"

namespace kforge::codegen {

// One attention: batch x heads problems of Tq queries and Tk keys, head dims D (q, k) and Dv (v).
// Strides in elements: [batch, head, row, column] of each operand (head 0 for rank 3).
struct CudaAttention {
  int64_t batch = 1, heads = 1, tq = 0, tk = 0, d = 0, dv = 0;
  int64_t q[4] = {}, k[4] = {}, v[4] = {}, o[4] = {};
  double scale = 1.0, q_scale = 1.0;
  std::optional<int64_t> causal;  // key j kept for query i when j - i <= *causal
  bool zero_empty_rows = false;   // a row with every score masked gives 0 (else NaN)
  bool bias = false;              // an additive bias read at [batch, head, query, key] through bias_strides
  int64_t bias_strides[4] = {};   // 0 along the dims it broadcasts over
  // The bias's own last two dims. With the bias the kernel reads its tiles' flags, written beside
  // it: [the bias's leading index][ceil(bias_rows / 32)][ceil(bias_cols / 32)], each nonzero where
  // a score of that 32 x 32 tile of the bias is not -inf. A key block whose tiles (for the block's
  // queries) are all 0 is neither copied nor computed.
  int64_t bias_rows = 0, bias_cols = 0;
};

// A block's queries (bm: 128 or 64) and the keys of each step (bn: a multiple of 4096 / bm). Its
// 256 threads are bm / 4 row groups of 4 queries by 1024 / bm column groups; each thread holds
// its rows' scores for bn * bm / 1024 keys and their outputs for ceil(Dv / (4096 / bm)) quads of
// 4 columns. min_blocks is the blocks an SM should hold (__launch_bounds__, capping registers).
//
// rows = 8 is the register-blocked form: 128 threads of 8 queries each (bm 128; rows ty + 16 * i)
// by 8 column groups, bn / 8 keys a thread (tx + 8 * j); q and each key block kept row by row, so
// that a thread's 8 x bn / 8 scores take 8 + bn / 8 float4 reads per 4 head-dim steps and its
// 8 x 4 * ceil(Dv / 32) outputs 2 + ceil(Dv / 32) per key; the key and value blocks copied by
// cp.async, the next key block while p @ v runs and the next value block while q @ k^T runs; a
// bias comes into shared memory with its key block, so no score waits on a global read. The key
// blocks up to the causal band's end that the bias's tile flags may keep are copied, and one whose
// scores are all masked is not computed. For head dims that are whole quads, up to 128 (d) and 96 (dv), and over 64 queries.
struct CudaAttentionTile {
  int bm = 128, bn = 64, min_blocks = 1, rows = 4;
  bool operator==(const CudaAttentionTile&) const = default;
};

// 128 queries a block, two blocks an SM, while that leaves no SM idle: the register-blocked form
// where it fits (its widest key step), else 4 rows a thread for head dims up to 96 (key steps of 64
// up to head dim 64, else 32); otherwise 64 queries in steps of 64 keys.
CudaAttentionTile ChooseCudaAttentionTile(const CudaAttention& a);
// The two tiles: 128 queries (where WideAttentionFits: more than 64 queries, head dims up to 96)
// and 64. Without a bias the tuner measures both on the GPU.
CudaAttentionTile WideAttentionTile(const CudaAttention& a);
bool WideAttentionFits(const CudaAttention& a);
inline constexpr CudaAttentionTile kNarrowAttentionTile{.bm = 64, .bn = 64, .min_blocks = 1};
// The register-blocked tiles that fit the attention (rows = 8; bn 32, and 64 up to head dims of 64).
std::vector<CudaAttentionTile> BlockedAttentionTiles(const CudaAttention& a);
// Threads a block: 128 in the register-blocked form, else 256.
int CudaAttentionThreads(const CudaAttentionTile& tile);
// A tile as the store keeps it (TileChoice's block_m and block_n; two blocks an SM at 128 queries).
TileChoice CudaAttentionConfig(const CudaAttentionTile& tile);

// The kernel's dynamic shared memory in bytes.
int64_t CudaAttentionSharedBytes(const CudaAttention& a, const CudaAttentionTile& t);

// The CUDA C++ source of kernel `name` (arguments q, k, v, [bias, bias tile flags,] o), launched over
// (ceil(Tq / bm), batch * heads) blocks of CudaAttentionThreads(t) threads.
std::string CudaAttentionSource(const std::string& name, const CudaAttention& a, const CudaAttentionTile& t);

// The group (a kforge.attention node and its bias's producers) as CUDA kernels, or nullopt where
// it is not one this kernel takes (head dims over 128, a bias that cannot be written at its own
// shape in at most kMaxMaterializedBias elements). A bias is first written at its own shape (a
// causal mask from a [1, 1, T, T] buffer: T * T elements), with its 32 x 32 tiles' flags, by a
// Triton kernel that computes it as the Triton attention kernel would, then read by the CUDA kernel
// through its broadcast strides.
std::optional<EmittedKernel> EmitCudaAttentionKernel(const ir::Graph& graph, const passes::FusionGroup& group,
                                                     const KernelOptions& options);
constexpr int64_t kMaxMaterializedBias = int64_t{1} << 24;

}  // namespace kforge::codegen
