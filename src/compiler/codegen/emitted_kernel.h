// What a kernel emitter hands the model writer: the kernel's source, the forward lines that
// allocate its outputs and launch it, and the shared helpers it calls.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/codegen/source_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/fusion_plan.h"

namespace kforge::codegen {

// The smallest power of two that is at least `value` and `floor` (a Triton block dim is a power of
// two; tl.dot's operand sides are at least 16).
constexpr int64_t NextPowerOfTwo(int64_t value, int64_t floor = 1) {
  int64_t power = floor;
  while (power < value) power *= 2;
  return power;
}

// CUDA's limit on a grid's axes 1 and 2 (y and z); axis 0 takes up to 2^31 - 1.
constexpr int64_t kMaxGridYz = 65535;

// One configuration of an autotuned kernel: a GEMM-shaped kernel's tile (a matmul, an
// implicit-GEMM convolution, attention), or a folded reduction's block (r_block set).
struct TileChoice {
  int block_m = 32, block_n = 32, block_k = 32, group_m = 8, warps = 4, stages = 2;
  // A convolution kernel's DIRECT meta-parameter (TileParameters::direct): one fp32 FMA per
  // input channel and tap instead of tl.dot (BLOCK_K unused).
  bool direct = false;
  // A split GEMM's SPLIT_K (TileParameters::split_k): programs along grid axis 2 that each fold a
  // part of the K loop (gemm_tiles.h).
  int split_k = 1;
  // A reduction folding its rows R_BLOCK elements at a time (triton_reduction.h); 0 in the tiles
  // of GEMM-shaped kernels, whose block_* fields it does not use.
  int r_block = 0;
  bool operator==(const TileChoice&) const = default;
};

// Choices every emitter honours.
struct KernelOptions {
  // tl.dot's input_precision: "ieee" keeps fp32 accuracy (the strict fp32 policy); "tf32" only
  // when the task's precision policy declares it.
  std::string dot_precision = "ieee";
  // The attention kernels' dots, when they differ (empty: dot_precision). Attention's error shows
  // before a GEMM's (search/precision_ladder.h).
  std::string attention_dot_precision;

  // The products whose outputs attention reads as q or k (through views), when they differ
  // (empty: dot_precision): their rounding moves the scores as the attention's own does.
  std::string attention_input_dot_precision;
  // The products attention reads only v from, when they differ (empty: dot_precision): their
  // rounding reaches the output, not the scores.
  std::string attention_value_dot_precision;

  const std::string& attention_precision() const {
    return attention_dot_precision.empty() ? dot_precision : attention_dot_precision;
  }
  // Run IEEE fp32 products and attention (dot precision "ieee") as CUDA C++ FMA kernels
  // (cuda_matmul.h, cuda_attention.h), not Triton's tl.dot: on a GPU, where NVRTC compiles them.
  bool cuda_ieee_kernels = false;
  // Wrap kernels that have a configuration space in @triton.autotune (GPU); else one fixed
  // configuration (the CPU interpreter, where autotuning measures nothing).
  bool autotune = false;
  // A convolution with at least this many FLOPs (and 16 or more input channels per group) reads
  // its input channels-last and its weight taps-outside, rewritten by two small kernels first;
  // below it, the two extra launches cost more than the contiguous loads save. On the H200
  // (tf32x3) the rewrite made 13-39 GFLOP convolutions 2.3-2.7x faster, and a 2.3 GFLOP one
  // 1.5x slower (bench/conv_probe.py).
  double relayout_min_flops = 4e9;
  // A convolution with few input channels x taps and output channels per group (at most 128 and
  // 32), over at least this many output positions, offers the tuner its direct form (one fp32 FMA
  // per channel and tap) beside the implicit GEMM; below it, the direct form's unrolled bodies
  // cost compile time the kernel's run does not repay.
  int64_t direct_min_positions = int64_t{1} << 20;
  // A GEMM-shaped kernel whose tiles number fewer than this (the H200's SMs) and whose K loop is
  // long offers the tuner split-K configurations (WithSplitK).
  int64_t split_k_below_programs = 132;
  // The SPLIT_K a kernel with a split form runs with when not autotuned (the CPU interpreter).
  int fixed_split_k = 1;
  // Configurations measured on this GPU, by tuning key (the sha256 of a kernel's autotuned
  // source with its comments dropped and its own names canonical (kernel_identity.h), which the
  // source states in a comment): a kernel found here, from this task or any other, is emitted
  // with its configuration baked in and no @triton.autotune.
  std::map<std::string, TileChoice> tuned;
};

// A tensor argument of a CUDA kernel as the tuner allocates it: fp32, this shape and these
// strides (a stride of 0 broadcasts).
struct CudaTensorArg {
  std::vector<int64_t> shape, stride;
  bool operator==(const CudaTensorArg&) const = default;
};

// One tile of a CUDA kernel: its configuration (as the store keeps it: TileChoice's block_m,
// block_n, block_k, warps and stages), source, block size, dynamic shared memory and grid.
struct CudaVariant {
  TileChoice config;
  std::string source;
  int threads = 256;
  int64_t shared_bytes = 0;
  std::vector<int64_t> grid;  // x, y, z
};

// A CUDA kernel offered in several tiles, for the tuner to time on the GPU before the candidate is
// evaluated (cuda_kernel.h, search/cuda_tuning.h). The candidate's own process may not time
// anything (the evaluator's static rules), so CUDA tiles are measured by kforge's tuner worker on
// fresh operands of the kernel's layout, not inside the evaluation as @triton.autotune is.
struct CudaTuning {
  std::string kernel;  // its name in the source
  std::string key;     // its tuning key: the configuration measured best is stored under it
  std::vector<CudaTensorArg> args;
  std::vector<CudaVariant> variants;  // the first is the one the rules choose
};

struct EmittedKernel {
  std::string name;                 // the @triton.jit function
  std::string source;               // its definition (and autotune decorator)
  std::vector<std::string> launch;  // forward lines: output allocations, then the launch
  int repeats = 1;                  // times its launch runs per forward (a scan: once per time step)
  std::set<std::string> helpers;    // helper functions it calls (see EmitPointwiseHelpers)
  // A CUDA kernel emitted in the rules' tile whose other tiles the tuner may measure; unset when it
  // has one tile, is baked (options.tuned) or is not autotuned (options.autotune off).
  std::optional<CudaTuning> cuda_tuning;
};

// Sets the kernel's source from its `body` under autotuning over `configs` (each a
// "triton.Config(...)" expression) and returns the configuration options.tuned holds for the
// kernel's tuning key, stated in a comment (the body alone then, the configuration to be baked
// into its launch); else nullopt and the body under a @triton.autotune decorator over `configs`.
std::optional<TileChoice> FinishAutotunedKernel(EmittedKernel& kernel, const std::string& body,
                                                const std::vector<std::string>& configs, const KernelOptions& options);

// Writes "@triton.jit", the signature (and indents the body), then a comment listing the IR
// nodes of `group` the kernel computes. The caller closes the function.
void OpenKernel(SourceWriter& out, const std::string& name, const std::vector<std::string>& params, const ir::Graph& graph,
                const passes::FusionGroup& group);

}  // namespace kforge::codegen
