#include "compiler/codegen/python_names.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

namespace kforge::codegen {

std::string VarName(const ir::Graph& graph, ir::NodeRef ref) {
  static const std::set<std::string> kReserved = {
      "tl",    "triton", "torch", "nn",     "self",  "pid",   "offsets", "mask",   "numel", "BLOCK_SIZE",
      "rem",   "grid",   "float", "None",   "True",  "False", "and",     "or",     "not",   "if",
      "else",  "for",    "in",    "is",     "def",   "class", "return",  "lambda", "with",  "as",
      "from",  "import", "pass",  "while",  "try",   "del",   "global",  "yield",  "raise", "assert",
      "break", "async",  "await", "except", "elif",  "finally", "continue", "nonlocal", "super"};
  const ir::Value& value = graph.value(ref.value);
  std::string name = value.num_outputs() > 1 ? fmt::format("{}_{}", value.name, ref.output) : value.name;
  if (kReserved.count(name) || name.rfind("idx_", 0) == 0 || name.rfind("size_", 0) == 0 || name.rfind("_kf", 0) == 0) {
    name += "_";
  }
  return name;
}

std::string FloatLiteral(double value) {
  if (std::isnan(value)) return "float('nan')";
  if (std::isinf(value)) return value > 0 ? "float('inf')" : "float('-inf')";
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace kforge::codegen
