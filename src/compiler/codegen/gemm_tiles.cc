#include "compiler/codegen/gemm_tiles.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/codegen/python_names.h"

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

ProductDims ProductLayout(const ir::Shape& out, const std::vector<int64_t>& b_stride) {
  const size_t r = out.size() - 2;
  ProductDims dims{.row = r, .batch = {}, .b_batch = {}};
  for (size_t d = 0; d < r; ++d) {
    if (b_stride[d] == 0 && out[d] > out[dims.row]) dims.row = d;
  }
  for (size_t d = 0; d < r; ++d) {
    dims.batch.push_back(d == dims.row ? r : d);
    dims.b_batch.push_back(d == dims.row ? 0 : b_stride[d]);
  }
  return dims;
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

std::vector<TileChoice> WithSplitK(std::vector<TileChoice> space, int64_t m, int64_t n, int64_t extra,
                                   const std::function<int64_t(int block_k)>& steps, const KernelOptions& options) {
  const size_t given = space.size();
  for (size_t i = 0; i < given; ++i) {
    TileChoice split = space[i];
    if (split.direct) continue;
    const int64_t programs = ((m + split.block_m - 1) / split.block_m) * ((n + split.block_n - 1) / split.block_n) * extra;
    const int64_t k_steps = steps(split.block_k);
    if (programs >= options.split_k_below_programs) continue;
    int parts = 2;
    while (parts < kMaxSplitK && programs * parts < options.split_k_below_programs) parts *= 2;
    while (parts > 1 && k_steps < parts * kMinSplitSteps) parts /= 2;
    if (parts < 2) continue;
    split.split_k = parts;
    if (std::find(space.begin(), space.end(), split) == space.end()) space.push_back(split);
  }
  return space;
}

bool HasSplitK(const std::vector<TileChoice>& space) {
  return std::any_of(space.begin(), space.end(), [](const TileChoice& c) { return c.split_k > 1; });
}

std::pair<std::string, std::string> EmitStepRange(SourceWriter& out, const std::string& steps, bool split) {
  if (!split) return {"0", steps};
  out.Line(fmt::format("kf_part = tl.cdiv({}, SPLIT_K)", steps));
  out.Line("kf_lo = tl.program_id(2) * kf_part");
  out.Line(fmt::format("kf_hi = tl.minimum(kf_lo + kf_part, {})", steps));
  return {"kf_lo", "kf_hi"};
}

std::string EmitKSliceRange(SourceWriter& out, int64_t k, bool split) {
  if (!split) return fmt::format("0, {}, BLOCK_K", k);
  EmitStepRange(out, fmt::format("tl.cdiv({}, BLOCK_K)", k), true);
  return fmt::format("kf_lo * BLOCK_K, tl.minimum(kf_hi * BLOCK_K, {}), BLOCK_K", k);
}

namespace {

// Where part `part` of a split kernel keeps its partial tile: [SPLIT_K, axis-1 programs, m, n].
std::string PartialTile(const std::string& part, int64_t m, int64_t n) {
  return fmt::format("kf_partials_ptr + (({} * tl.num_programs(1) + tl.program_id(1)) * {} + kf_m[:, None]) * {} + kf_n[None, :]", part,
                     m, n);
}

std::string TileMask(int64_t m, int64_t n) { return fmt::format("(kf_m[:, None] < {}) & (kf_n[None, :] < {})", m, n); }

}  // namespace

void OpenAccumulation(SourceWriter& out, bool split, int64_t m, int64_t n) {
  if (!split) return;
  out.Open("if REDUCE:");
  out.Line("# The second launch: the parts' partial tiles summed in order.");
  out.Open("if SPLIT_K > 1:");
  out.Open("for kf_s in tl.static_range(SPLIT_K):");
  out.Line(fmt::format("kf_acc += tl.load({}, mask={}, other=0.0)", PartialTile("kf_s", m, n), TileMask(m, n)));
  out.Close();
  out.Close();
  out.Close();
  out.Open("else:");
}

void CloseAccumulation(SourceWriter& out, bool split) {
  if (split) out.Close();
}

void OpenEpilogue(SourceWriter& out, bool split) {
  if (!split) return;
  out.Line("# The whole K sum is here unsplit in the first launch, split in the second (a split kernel's");
  out.Line("# second launch does nothing when its SPLIT_K is 1).");
  out.Open("if REDUCE == (SPLIT_K > 1):");
}

void CloseEpilogue(SourceWriter& out, bool split, int64_t m, int64_t n) {
  if (!split) return;
  out.Close();
  out.Open("elif REDUCE == 0:");
  out.Line(fmt::format("tl.store({}, kf_acc, mask={})", PartialTile("tl.program_id(2)", m, n), TileMask(m, n)));
  out.Close();
}

void OpenGemmKernel(SourceWriter& out, const std::string& name, const std::vector<std::string>& params,
                    const ir::Graph& graph, const passes::FusionGroup& group, TileParameters parameters) {
  std::vector<std::string> all = params;
  if (parameters.split_k) all.push_back("kf_partials_ptr");
  std::vector<const char*> metas = {"BLOCK_M", "BLOCK_N"};
  if (parameters.k_and_group) metas.insert(metas.end(), {"BLOCK_K", "GROUP_M"});
  if (parameters.direct) metas.push_back("DIRECT");
  if (parameters.split_k) metas.insert(metas.end(), {"SPLIT_K", "REDUCE"});
  for (const char* meta : metas) all.push_back(fmt::format("{}: tl.constexpr", meta));
  OpenKernel(out, name, all, graph, group);
}

std::optional<TileChoice> FinishGemmKernel(EmittedKernel& kernel, const std::string& body, const std::vector<TileChoice>& space,
                                           const KernelOptions& options, TileParameters parameters, TileChoice fixed) {
  if (!options.autotune) {
    kernel.source = body;
    if (parameters.split_k) fixed.split_k = options.fixed_split_k;
    return fixed;
  }
  std::vector<std::string> configs;
  for (const TileChoice& c : space) {
    std::string meta = fmt::format("\"BLOCK_M\": {}, \"BLOCK_N\": {}", c.block_m, c.block_n);
    if (parameters.k_and_group) meta += fmt::format(", \"BLOCK_K\": {}, \"GROUP_M\": {}", c.block_k, c.group_m);
    if (parameters.direct) meta += fmt::format(", \"DIRECT\": {}", c.direct ? 1 : 0);
    if (parameters.split_k) meta += fmt::format(", \"SPLIT_K\": {}", c.split_k);
    configs.push_back(fmt::format("triton.Config({{{}}}, num_warps={}, num_stages={})", meta, c.warps, c.stages));
  }
  return FinishAutotunedKernel(kernel, body, configs, options);
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
                    int64_t extra, TileParameters parameters, const std::vector<TileChoice>& space) {
  for (const ir::NodeRef& ref : outputs) {
    kernel.launch.push_back(EmptyLike(VarName(graph, ref), *graph.TypeOf(ref)));
    args.push_back(VarName(graph, ref));
  }
  int parts = 1;  // the partials' room
  if (parameters.split_k) {
    for (const TileChoice& c : config ? std::vector<TileChoice>{*config} : space) parts = std::max(parts, c.split_k);
    if (parts > 1) {
      const std::string partials = kernel.name + "_partials";
      kernel.launch.push_back(fmt::format("{} = torch.empty(({},), dtype=torch.float32, device=device)", partials, parts * extra * m * n));
      args.push_back(partials);
    } else {
      args.push_back(VarName(graph, outputs.front()));  // not read without a split
    }
  }
  if (!config) {
    const std::string tiles = fmt::format("triton.cdiv({}, meta[\"BLOCK_M\"]) * triton.cdiv({}, meta[\"BLOCK_N\"])", m, n);
    if (!parameters.split_k) {
      kernel.launch.push_back(fmt::format("{}[lambda meta: ({}, {})]({})", kernel.name, tiles, extra, fmt::join(args, ", ")));
      return;
    }
    kernel.launch.push_back(fmt::format("{}[lambda meta: ({}, {}, meta[\"SPLIT_K\"])]({}, REDUCE=0)", kernel.name, tiles, extra,
                                        fmt::join(args, ", ")));
    kernel.launch.push_back(fmt::format("{}[lambda meta: ({}, {}, 1)]({}, REDUCE=1)", kernel.name, tiles, extra, fmt::join(args, ", ")));
    return;
  }
  const TileChoice& c = *config;
  std::string meta = fmt::format("BLOCK_M={}, BLOCK_N={}, BLOCK_K={}, GROUP_M={}, num_warps={}, num_stages={}", c.block_m,
                                 c.block_n, c.block_k, c.group_m, c.warps, c.stages);
  if (parameters.direct) meta += fmt::format(", DIRECT={}", c.direct ? 1 : 0);
  if (parameters.split_k) meta += fmt::format(", SPLIT_K={}", c.split_k);
  const int64_t programs = ((m + c.block_m - 1) / c.block_m) * ((n + c.block_n - 1) / c.block_n);
  if (!parameters.split_k) {
    kernel.launch.push_back(fmt::format("{}[({}, {})]({}, {})", kernel.name, programs, extra, fmt::join(args, ", "), meta));
    return;
  }
  kernel.launch.push_back(
      fmt::format("{}[({}, {}, {})]({}, {}, REDUCE=0)", kernel.name, programs, extra, c.split_k, fmt::join(args, ", "), meta));
  if (c.split_k > 1) {
    kernel.launch.push_back(fmt::format("{}[({}, {}, 1)]({}, {}, REDUCE=1)", kernel.name, programs, extra, fmt::join(args, ", "), meta));
  }
}

}  // namespace kforge::codegen
