#include "compiler/codegen/python_names.h"

#include <cctype>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "compiler/ir/printer.h"

namespace kforge::codegen {

bool IsPythonIdentifier(const std::string& text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::string VarName(const ir::Graph& graph, ir::NodeRef ref) {
  static const std::set<std::string> kReserved = {
      "tl",    "triton", "torch", "nn",     "self",  "pid",   "offsets", "mask",   "numel", "BLOCK_SIZE",
      "rem",   "grid",   "float", "None",   "True",  "False", "and",     "or",     "not",   "if",
      "else",  "for",    "in",    "is",     "def",   "class", "return",  "lambda", "with",  "as",
      "from",  "import", "pass",  "while",  "try",   "del",   "global",  "yield",  "raise", "assert",
      "break", "async",  "await", "except", "elif",  "finally", "continue", "nonlocal", "super"};
  const ir::Value& value = graph.value(ref.value);
  std::string name = value.num_outputs() > 1 ? fmt::format("{}_{}", value.name, ref.output) : value.name;
  if (kReserved.count(name) || name.rfind("idx_", 0) == 0 || name.rfind("size_", 0) == 0 || name.rfind("_kf", 0) == 0 ||
      name.rfind("kf_", 0) == 0) {
    name += "_";
  }
  return name;
}

std::string LoadAt(const std::string& pointer, const std::string& offset, const std::string& masking) {
  if (offset == "0") return fmt::format("tl.load({})", pointer);
  return masking.empty() ? fmt::format("tl.load({} + {})", pointer, offset) : fmt::format("tl.load({} + {}, {})", pointer, offset, masking);
}

std::string FloatLiteral(double value) {
  if (std::isnan(value) || std::isinf(value)) return "float('" + ir::PrintFloat(value) + "')";
  return ir::PrintFloat(value);
}

std::string TorchDType(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat32: return "torch.float32";
    case ir::DType::kFloat64: return "torch.float64";
    case ir::DType::kFloat16: return "torch.float16";
    case ir::DType::kBFloat16: return "torch.bfloat16";
    case ir::DType::kInt64: return "torch.int64";
    case ir::DType::kInt32: return "torch.int32";
    case ir::DType::kInt16: return "torch.int16";
    case ir::DType::kInt8: return "torch.int8";
    case ir::DType::kUInt8: return "torch.uint8";
    case ir::DType::kBool: return "torch.bool";
    case ir::DType::kComplex64: return "torch.complex64";
  }
  return "torch.float32";
}

std::string ShapeTuple(const ir::Shape& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

std::string EmptyLike(const std::string& variable, const ir::TensorType& type) {
  if (type.is_contiguous()) {
    return fmt::format("{} = torch.empty({}, dtype={}, device=device)", variable, ShapeTuple(type.shape), TorchDType(type.dtype));
  }
  return fmt::format("{} = torch.empty_strided({}, {}, dtype={}, device=device)", variable, ShapeTuple(type.shape),
                     ShapeTuple(type.stride), TorchDType(type.dtype));
}

std::string ScalarConstant(const std::string& variable, double value, ir::DType dtype) {
  return fmt::format("{} = torch.full((), {}, dtype={}, device=device)", variable, FloatLiteral(value), TorchDType(dtype));
}

}  // namespace kforge::codegen
