#include "compiler/codegen/emitted_kernel.h"

#include <fmt/format.h>

namespace kforge::codegen {

void OpenKernel(SourceWriter& out, const std::string& name, const std::vector<std::string>& params, const ir::Graph& graph,
                const passes::FusionGroup& group) {
  out.Line("@triton.jit");
  out.Open(fmt::format("def {}({}):", name, fmt::join(params, ", ")));
  std::vector<std::string> computes;
  for (ir::ValueId id : group.nodes) computes.push_back("%" + graph.value(id).name);
  out.Line(fmt::format("# Computes {}.", fmt::join(computes, ", ")));
}

}  // namespace kforge::codegen
