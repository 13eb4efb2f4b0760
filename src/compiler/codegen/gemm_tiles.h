// The tiling every GEMM-shaped kernel shares (matmuls, implicit-GEMM convolutions): where a
// program's tile lies, the configuration space @triton.autotune measures with the kernel's tuning
// key, a configuration baked in instead, and the launch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

// The configuration used without autotuning (the CPU interpreter), unless an emitter names another.
constexpr TileChoice kFixedTile = {32, 32, 32, 8, 4, 2};

// The meta-parameters a tiled kernel declares: a GEMM's BLOCK_M, BLOCK_N, BLOCK_K and GROUP_M; a
// convolution that may also run by FMAs those and DIRECT (TileChoice::direct); attention's
// BLOCK_M and BLOCK_N (its head dim is whole in each program; programs are not grouped).
enum class TileParameters { kGemm, kConvolution, kAttention };

// Writes "@triton.jit", the signature with the tile meta-parameters, and the comment.
void OpenGemmKernel(SourceWriter& out, const std::string& name, const std::vector<std::string>& params,
                    const ir::Graph& graph, const passes::FusionGroup& group,
                    TileParameters parameters = TileParameters::kGemm);

// Sets the kernel's source from its `body` and returns the configuration its launch uses:
// without autotuning `fixed`; under autotuning the one options.tuned holds for the kernel's
// tuning key (stated in a comment), else nullopt and a @triton.autotune decorator over `space`.
std::optional<TileChoice> FinishGemmKernel(EmittedKernel& kernel, const std::string& body,
                                           const std::vector<TileChoice>& space, const KernelOptions& options,
                                           TileParameters parameters = TileParameters::kGemm,
                                           const TileChoice& fixed = kFixedTile);

// The program's tile: rows kf_m and columns kf_n, programs grouped along M so that consecutive
// ones share B's column tiles.
void EmitTilePosition(SourceWriter& out, int64_t m, int64_t n);

// Output allocations and the launch over (tiles of M x N, `extra` programs along axis 1), with
// `config` (its meta-parameters those `parameters` names), or the autotuner's choice when there is none.
void EmitGemmLaunch(EmittedKernel& kernel, const ir::Graph& graph, std::vector<std::string> args,
                    const std::vector<ir::NodeRef>& outputs, const std::optional<TileChoice>& config, int64_t m, int64_t n,
                    int64_t extra, TileParameters parameters = TileParameters::kGemm);

}  // namespace kforge::codegen
