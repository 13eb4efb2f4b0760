// The tiling every GEMM-shaped kernel shares (matmuls, implicit-GEMM convolutions): where a
// program's tile lies, the configuration space @triton.autotune measures with the kernel's tuning
// key, a configuration baked in instead, and the launch.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/codegen/source_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"

namespace kforge::codegen {

// The configuration space measured on the GPU (fp32 tiles: register-bound).
extern const std::vector<TileChoice> kTileConfigs;
// The space of kernels at most kMaxNarrowN columns wide (convolutions with few output channels
// per group), where a wider tile would compute masked columns (the H200 chose 64 x 32 x 16 for
// 32-channel convolutions).
extern const std::vector<TileChoice> kNarrowTileConfigs;
constexpr int64_t kMaxNarrowN = 32;
// The space of attention kernels: BLOCK_M queries by BLOCK_N keys per step (fp32 q, k and v
// tiles of a whole head dim are held in registers).
extern const std::vector<TileChoice> kAttentionTileConfigs;

// A matmul's space: with IEEE dots (FMA units, not tensor cores) the tiles the H200 ran them
// fastest in (bench/ieee_dot_probe.py: 128 x 128 x 16 with 4 warps 28 TFLOP/s, the tensor-core
// space's best 22); with at most kMaxShortM rows, tiles of 32 rows and up to 256 columns, so a
// program does not compute masked rows (NetVLAD's 2048 products of 32 x 100 by 100 x 512).
std::vector<TileChoice> MatmulTileSpace(int64_t m, const std::string& dot_precision);
constexpr int64_t kMaxShortM = 32;

// A product of at most kMaxFmaK K steps runs as fp32 FMAs, not tl.dot; its space: BLOCK_M the
// rows rounded up to a power of two (at most 64), wide column tiles (BLOCK_K and GROUP_M unused).
constexpr int64_t kMaxFmaK = 8;
std::vector<TileChoice> FmaTileSpace(int64_t m);

// The output dims a product's kernel tiles as M and as batches. `row`: M itself, or the longest
// batch dim along which B is broadcast (stride 0) where that is longer. matmul writes a 3-D input
// times a weight as a bmm over the input's first dim when the input cannot be viewed 2-D
// (nn.MultiheadAttention's in-projection of a permuted [L, N, E] input: 16384 batches of 2 x 384
// by 128): with that dim as M it is one GEMM of 16384 rows for each of the 2, not 16384 GEMMs of
// 2 rows padded to a tile. `batch`: the dims before the matrix dims, `row` replaced by M's dim;
// `b_batch`: B's stride along each (0 along M's dim: B has none).
struct ProductDims {
  size_t row = 0;
  std::vector<size_t> batch;
  std::vector<int64_t> b_batch;
};
// `out` is the product's shape (batch dims, M, N), `b_stride` B's strides (batch dims, K, N).
ProductDims ProductLayout(const ir::Shape& out, const std::vector<int64_t>& b_stride);

// The configuration used without autotuning (the CPU interpreter), unless an emitter names another.
constexpr TileChoice kFixedTile = {32, 32, 32, 8, 4, 2};

// The meta-parameters a tiled kernel declares beside BLOCK_M and BLOCK_N.
struct TileParameters {
  // BLOCK_K and GROUP_M: a GEMM's (attention holds its head dim whole in each program and does
  // not group its programs).
  bool k_and_group = true;
  // DIRECT: a convolution that may also run by FMAs (TileChoice::direct).
  bool direct = false;
  // SPLIT_K and REDUCE: a GEMM whose K loop may be split over programs (see WithSplitK).
  bool split_k = false;
};

// Split-K. A GEMM of few output tiles and a long K loop leaves most of the GPU idle (DenseNet201's
// deep 3x3 convolutions: 1960 x 32 outputs over K = 15264 in 31 tiles of 64 x 32 on the H200's
// 132 SMs; a 256 x 256 matmul over K = 524288 in 4). Split, SPLIT_K programs along grid axis 2
// each fold their share of the K steps into an fp32 partial tile; a second launch of the same
// kernel (REDUCE) sums the partials in a fixed order, so the result does not depend on timing,
// and runs the epilogue. The parts fold at least this many K steps each.
constexpr int64_t kMinSplitSteps = 8;
constexpr int kMaxSplitK = 64;

// `space` followed by a split variant of each configuration whose tiles (over m x n, `extra`
// programs along axis 1) number fewer than options.split_k_below_programs: the fewest parts, a
// power of two, that reach that many programs, as long as each part folds kMinSplitSteps of the
// `steps(block_k)` K steps. The space as given when no configuration qualifies: the kernel then
// has no split form.
std::vector<TileChoice> WithSplitK(std::vector<TileChoice> space, int64_t m, int64_t n, int64_t extra,
                                   const std::function<int64_t(int block_k)>& steps, const KernelOptions& options);
bool HasSplitK(const std::vector<TileChoice>& space);

// The K steps a program folds, [lo, hi) of `steps` (an expression of the kernel): all of them, or
// in a split kernel its part (lines written here, "kf_lo" and "kf_hi" returned).
std::pair<std::string, std::string> EmitStepRange(SourceWriter& out, const std::string& steps, bool split);
// The same for a loop over K in BLOCK_K slices: the arguments of `range(...)` for kf_k0, the first
// K index of each slice ("0, k, BLOCK_K" unsplit).
std::string EmitKSliceRange(SourceWriter& out, int64_t k, bool split);

// In a split kernel: opens the branch that sums the partials into kf_acc (REDUCE) and then the
// one the caller writes its K loop in; CloseAccumulation closes it. Nothing in a kernel without
// a split form.
void OpenAccumulation(SourceWriter& out, bool split, int64_t m, int64_t n);
void CloseAccumulation(SourceWriter& out, bool split);
// In a split kernel: opens the branch the caller writes its epilogue in (the launch that has the
// whole sum), and CloseEpilogue adds the one that stores a part's partial tile.
void OpenEpilogue(SourceWriter& out, bool split);
void CloseEpilogue(SourceWriter& out, bool split, int64_t m, int64_t n);

// Writes "@triton.jit", the signature with the tile meta-parameters, and the comment.
void OpenGemmKernel(SourceWriter& out, const std::string& name, const std::vector<std::string>& params,
                    const ir::Graph& graph, const passes::FusionGroup& group, TileParameters parameters = {});

// Sets the kernel's source from its `body` and returns the configuration its launch uses:
// without autotuning `fixed`; under autotuning the one options.tuned holds for the kernel's
// tuning key (stated in a comment), else nullopt and a @triton.autotune decorator over `space`.
std::optional<TileChoice> FinishGemmKernel(EmittedKernel& kernel, const std::string& body,
                                           const std::vector<TileChoice>& space, const KernelOptions& options,
                                           TileParameters parameters = {}, TileChoice fixed = kFixedTile);

// The program's tile: rows kf_m and columns kf_n, programs grouped along M so that consecutive
// ones share B's column tiles.
void EmitTilePosition(SourceWriter& out, int64_t m, int64_t n);

// Output allocations and the launch over (tiles of M x N, `extra` programs along axis 1), with
// `config` (its meta-parameters those `parameters` names), or the autotuner's choice over `space`
// when there is none. A split kernel's launch also allocates the partials (for the largest split
// of `space`) and launches the REDUCE pass after.
void EmitGemmLaunch(EmittedKernel& kernel, const ir::Graph& graph, std::vector<std::string> args,
                    const std::vector<ir::NodeRef>& outputs, const std::optional<TileChoice>& config, int64_t m, int64_t n,
                    int64_t extra, TileParameters parameters = {}, const std::vector<TileChoice>& space = {});

}  // namespace kforge::codegen
