#include "compiler/codegen/gemm_tiles.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/codegen/kernel_identity.h"
#include "compiler/codegen/python_names.h"
#include "core/hash.h"

namespace kforge::codegen {
const std::vector<TileChoice> kTileConfigs = {
    {128, 128, 32, 8, 8, 3}, {128, 64, 32, 8, 4, 4}, {64, 128, 32, 8, 4, 4}, {64, 64, 32, 8, 4, 4}, {32, 32, 32, 8, 4, 2}};
const std::vector<TileChoice> kNarrowTileConfigs = {
    {64, 32, 16, 8, 4, 4}, {128, 32, 32, 8, 4, 4}, {64, 32, 32, 8, 4, 4}, {32, 32, 32, 8, 4, 2}};

const std::vector<TileChoice> kAttentionTileConfigs = {
    {128, 64, 32, 8, 8, 2}, {128, 32, 32, 8, 8, 2}, {64, 64, 32, 8, 4, 3}, {64, 32, 32, 8, 4, 3}, {32, 32, 32, 8, 4, 2}};

std::vector<TileChoice> MatmulTileSpace(int64_t m, const std::string& dot_precision) {
  std::vector<TileChoice> space =
      dot_precision == "ieee"
          ? std::vector<TileChoice>{{128, 128, 16, 8, 4, 3}, {128, 256, 16, 8, 8, 3}, {64, 128, 32, 8, 4, 4}, {64, 64, 32, 8, 2, 3}, {32, 32, 32, 8, 4, 2}}
          : kTileConfigs;
  if (m <= kMaxShortM) {
    std::erase_if(space, [](const TileChoice& c) { return c.block_m > kMaxShortM; });
    for (int block_n : {64, 128, 256}) space.push_back({32, block_n, 32, 8, 4, 3});
  }
  return space;
}

std::vector<TileChoice> FmaTileSpace(int64_t m) {
  int block_m = 1;
  while (block_m < m && block_m < 64) block_m *= 2;
  std::vector<TileChoice> space;
  for (int block_n : {128, 256, 512, 1024}) {
    if (block_m * block_n > 32768) continue;
    for (int warps : {4, 8}) space.push_back({block_m, block_n, 16, 1, warps, 1});
  }
  if (space.empty()) space.push_back({block_m, 128, 16, 1, 4, 1});
  return space;
}

void OpenGemmKernel(SourceWriter& out, const std::string& name, const std::vector<std::string>& params,
                    const ir::Graph& graph, const passes::FusionGroup& group, TileParameters parameters) {
  std::vector<std::string> all = params;
  for (const char* meta : {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"}) all.push_back(fmt::format("{}: tl.constexpr", meta));
  if (parameters == TileParameters::kConvolution) all.push_back("DIRECT: tl.constexpr");
  OpenKernel(out, name, all, graph, group);
}

std::optional<TileChoice> FinishGemmKernel(EmittedKernel& kernel, const std::string& body, const std::vector<TileChoice>& space,
                                           const KernelOptions& options, TileParameters parameters, const TileChoice& fixed) {
  if (!options.autotune) {
    kernel.source = body;
    return fixed;
  }
  SourceWriter decorator;
  decorator.Open("@triton.autotune(");
  decorator.Open("configs=[");
  for (const TileChoice& c : space) {
    std::string meta = fmt::format("\"BLOCK_M\": {}, \"BLOCK_N\": {}", c.block_m, c.block_n);
    if (parameters != TileParameters::kAttention) meta += fmt::format(", \"BLOCK_K\": {}, \"GROUP_M\": {}", c.block_k, c.group_m);
    if (parameters == TileParameters::kConvolution) meta += fmt::format(", \"DIRECT\": {}", c.direct ? 1 : 0);
    decorator.Line(fmt::format("triton.Config({{{}}}, num_warps={}, num_stages={}),", meta, c.warps, c.stages));
  }
  decorator.Close();
  decorator.Line("],");
  decorator.Line("key=[],");
  // The kernel is specialized to its shapes, so Triton's on-disk cache of the measured
  // configurations also spares a second run in the same workspace its tuning.
  decorator.Line("cache_results=True,");
  decorator.Close();
  decorator.Line(")");
  // Keyed by what the kernel computes, not by its names: the same kernel in another task (a layer
  // two networks share) finds the configuration measured for it there.
  const std::string key = Sha256Hex(CanonicalKernel(decorator.text() + body, kernel.name));
  if (auto tuned = options.tuned.find(key); tuned != options.tuned.end()) {
    kernel.source = fmt::format("# {}: tile configuration measured on this GPU (tuning key {}).\n", kernel.name, key) + body;
    return tuned->second;
  }
  kernel.source = fmt::format("# Tuning key of {}: {} (the configuration measured best is stored under it).\n", kernel.name, key) +
                  decorator.text() + body;
  return std::nullopt;
}

void EmitTilePosition(SourceWriter& out, int64_t m, int64_t n) {
  out.Line("kf_pid = tl.program_id(0)");
  out.Line(fmt::format("kf_grid_m = tl.cdiv({}, BLOCK_M)", m));
  out.Line(fmt::format("kf_grid_n = tl.cdiv({}, BLOCK_N)", n));
  out.Line("# Consecutive programs share B's column tiles and walk GROUP_M row tiles (L2 reuse).");
  out.Line("kf_width = GROUP_M * kf_grid_n");
  out.Line("kf_first_m = (kf_pid // kf_width) * GROUP_M");
  out.Line("kf_size_m = tl.minimum(kf_grid_m - kf_first_m, GROUP_M)");
  out.Line("kf_pid_m = kf_first_m + (kf_pid % kf_width) % kf_size_m");
  out.Line("kf_pid_n = (kf_pid % kf_width) // kf_size_m");
  out.Line("kf_m = kf_pid_m * BLOCK_M + tl.arange(0, BLOCK_M)");
  out.Line("kf_n = kf_pid_n * BLOCK_N + tl.arange(0, BLOCK_N)");
}

void EmitGemmLaunch(EmittedKernel& kernel, const ir::Graph& graph, std::vector<std::string> args,
                    const std::vector<ir::NodeRef>& outputs, const std::optional<TileChoice>& config, int64_t m, int64_t n,
                    int64_t extra, TileParameters parameters) {
  for (const ir::NodeRef& ref : outputs) {
    kernel.launch.push_back(EmptyLike(VarName(graph, ref), *graph.TypeOf(ref)));
    args.push_back(VarName(graph, ref));
  }
  if (!config) {
    kernel.launch.push_back(fmt::format("{}[lambda meta: (triton.cdiv({}, meta[\"BLOCK_M\"]) * triton.cdiv({}, meta[\"BLOCK_N\"]), {})]({})",
                                        kernel.name, m, n, extra, fmt::join(args, ", ")));
    return;
  }
  const TileChoice& c = *config;
  args.push_back(fmt::format("BLOCK_M={}, BLOCK_N={}, BLOCK_K={}, GROUP_M={}, num_warps={}, num_stages={}", c.block_m,
                             c.block_n, c.block_k, c.group_m, c.warps, c.stages));
  if (parameters == TileParameters::kConvolution) args.back() += fmt::format(", DIRECT={}", c.direct ? 1 : 0);
  int64_t programs = ((m + c.block_m - 1) / c.block_m) * ((n + c.block_n - 1) / c.block_n);
  kernel.launch.push_back(fmt::format("{}[({}, {})]({})", kernel.name, programs, extra, fmt::join(args, ", ")));
}

}  // namespace kforge::codegen
