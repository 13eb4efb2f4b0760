// A matmul group as a CUDA C++ kernel of fp32 FMAs, for IEEE products on a GPU. Triton lowers an
// IEEE tl.dot to FMAs at about 28 TFLOP/s of the H200's 67, where cuBLAS's fp32 GEMM reaches 51
// (bench/RESULTS.md, fourteenth session); minGPT's and the vision transformer's attention pass the
// fp32 policy only with IEEE products, so their GEMMs ran at Triton's rate. This kernel is the
// classic register-tiled SGEMM: a block computes a BM x BN tile over K slices of BK staged in
// double-buffered shared memory (operands read as float4 quads along their contiguous dim where
// strides and alignment allow, scalars elsewhere; the next slice's reads in flight while this one
// is multiplied), each thread a TM x TN sub-tile read from shared memory as float4s, a warp's
// threads a compact patch of the tile. Each output is one FMA chain along K in order from zero,
// as cuBLAS's and Triton's IEEE products compute it, so it rounds as they do (then the bias is
// added, as Triton's epilogue adds it); on the H100, 0.7-0.84 of cuBLAS's speed with every output
// equal to cuBLAS's (bench/cuda_kernel_sweep.py, bench/RESULTS.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"

namespace kforge::codegen {

// A block's tile: BM x BN outputs over K slices of BK, each of its (BM / TM) x (BN / TN) threads
// computing TM x TN of them (TM and TN multiples of 4; BM x BK and BN x BK whole quads a
// thread). A warp covers (32 / warp_cols) x warp_cols of those threads; min_blocks is the
// blocks an SM should hold (__launch_bounds__, which caps the registers a thread).
// stages: 2, the next K slice read into registers while this one is multiplied, then stored to
// the other of two shared-memory buffers; 3 or more, that many buffers filled by cp.async
// (global to shared memory directly, stages - 1 slices in flight). The buffers are static shared
// memory: stages x bk x (bm + bn + 8) floats, at most 48 KB (the source asserts it).
struct CudaGemmTile {
  int bm = 256, bn = 128, bk = 8, tm = 16, tn = 8, warp_cols = 8, min_blocks = 1, stages = 2;
  int threads() const { return (bm / tm) * (bn / tn); }
  bool operator==(const CudaGemmTile&) const = default;
};

// What the kernel computes: batch x (M x N x K) products of strided fp32 operands into a strided
// output, plus a bias along N when it has one. Strides in elements; batch dims outermost.
struct CudaGemm {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> batch_shape;                      // the output's dims before M
  std::vector<int64_t> a_batch, b_batch, c_batch;        // each operand's stride along those dims
  int64_t a_m = 0, a_k = 0, b_k = 0, b_n = 0, c_m = 0, c_n = 0;
  bool bias = false;
  int64_t bias_n = 1;  // the bias's stride along N
  int64_t batch() const;
};

// The tiles a product may run in: 256 x 128 (16 x 8 a thread), 128 x 128 (8 x 8, two blocks an
// SM) and 64 x 64 (BK 16, 4 x 4, four blocks an SM); the tuner measures them on the GPU.
extern const CudaGemmTile kCudaGemmTiles[3];

// The tile a product of this shape runs in without measurement: 256 x 128, else 128 x 128, while
// that puts a block on about every SM of the GPU, else 64 x 64.
CudaGemmTile ChooseCudaGemmTile(const CudaGemm& gemm);

// A tile as the store keeps it (TileChoice: block_m, block_n, block_k, warps and stages; the
// threads' sub-tiles follow from the tile).
TileChoice CudaGemmConfig(const CudaGemmTile& tile);

// The CUDA C++ source of kernel `name` (arguments a, b, [bias,] c).
std::string CudaGemmSource(const std::string& name, const CudaGemm& gemm, const CudaGemmTile& tile);

// The group as a CUDA kernel, or nullopt where it is not one this kernel takes: a product (mm,
// bmm, matmul) of fp32 operands over more than kMaxFmaK K steps whose only epilogue is an added
// bias along N, with one output, a grid within CUDA's limits. Its tiles are offered to the tuner
// (FinishCudaKernel).
std::optional<EmittedKernel> EmitCudaMatmulKernel(const ir::Graph& graph, const passes::FusionGroup& group,
                                                  const KernelOptions& options);

}  // namespace kforge::codegen
