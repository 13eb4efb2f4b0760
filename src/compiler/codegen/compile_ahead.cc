#include "compiler/codegen/compile_ahead.h"

#include <fmt/format.h>

namespace kforge::codegen {

bool SafeOnUnwrittenTensors(ir::OpKind kind) { return kind != ir::OpKind::kIndex && kind != ir::OpKind::kOpaque; }

void EmitCompileAheadDeclaration(SourceWriter& out, const std::string& forward, const std::vector<std::string>& restores) {
  std::vector<std::string> quoted;
  for (const std::string& name : restores) quoted.push_back(fmt::format("\"{}\"", name));
  out.Line(fmt::format("# {} may run once with its kernels' launches replaced by compiles, all at once before the first", forward));
  out.Line("# call (kforge's evaluator does); that run's outputs are garbage, and the state it updates is put back.");
  out.Line(fmt::format("kf_compile_ahead = {{\"forward\": \"{}\", \"restores\": ({}{})}}", forward, fmt::join(quoted, ", "),
                       quoted.size() == 1 ? "," : ""));
}

}  // namespace kforge::codegen
