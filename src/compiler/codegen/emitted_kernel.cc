#include "compiler/codegen/emitted_kernel.h"

#include <fmt/format.h>

#include "compiler/codegen/kernel_identity.h"
#include "core/hash.h"

namespace kforge::codegen {

void OpenKernel(SourceWriter& out, const std::string& name, const std::vector<std::string>& params, const ir::Graph& graph,
                const passes::FusionGroup& group) {
  out.Line("@triton.jit");
  out.Open(fmt::format("def {}({}):", name, fmt::join(params, ", ")));
  std::vector<std::string> computes;
  for (ir::ValueId id : group.nodes) computes.push_back("%" + graph.value(id).name);
  out.Line(fmt::format("# Computes {}.", fmt::join(computes, ", ")));
}

std::optional<TileChoice> FinishAutotunedKernel(EmittedKernel& kernel, const std::string& body,
                                                const std::vector<std::string>& configs, const KernelOptions& options) {
  SourceWriter decorator;
  decorator.Open("@triton.autotune(");
  decorator.Open("configs=[");
  for (const std::string& config : configs) decorator.Line(config + ",");
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

}  // namespace kforge::codegen
