// Python spellings shared by the emitters: variable names for IR values and literals for scalars.
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace kforge::codegen {

// The variable holding `ref`: the value's name ("relu"), "<name>_<i>" for output i of a
// multi-output node, with "_" appended when it would clash with a name the emitters use (kernels
// name their own variables kf_*, idx_*, size_*).
std::string VarName(const ir::Graph& graph, ir::NodeRef ref);
// Whether `text` can be a Python name (ASCII letters, digits, underscores; not led by a digit).
bool IsPythonIdentifier(const std::string& text);
// A float literal Python reads back exactly: "0.01", "20.0", "1e-05", "float('inf')".
std::string FloatLiteral(double value);
// "torch.float32".
std::string TorchDType(ir::DType dtype);
// "(8, 64)", "(8,)", "()".
std::string ShapeTuple(const ir::Shape& shape);
// "tl.load(<pointer> + <offset>, <masking>)" (no masking when empty); "tl.load(<pointer>)" when
// the offset is "0": one element for every lane is a scalar load, and Triton's compiler (not its
// interpreter) refuses a block mask on a scalar pointer.
std::string LoadAt(const std::string& pointer, const std::string& offset, const std::string& masking);
// "<variable> = torch.empty(<shape>, dtype=<dtype>, device=device)": an output a kernel fills, in
// the layout of its type (torch.empty_strided for a permuted one, as a computed value's captured
// strides can be): kernels write every output in its type's layout, and readers read by it.
std::string EmptyLike(const std::string& variable, const ir::TensorType& type);
// "<variable> = torch.full((), <value>, dtype=<dtype>, device=device)": a scalar constant made on
// the device by a fill (torch.tensor(value, device=...) copies from the host, which a CUDA graph
// capture refuses).
std::string ScalarConstant(const std::string& variable, double value, ir::DType dtype);

}  // namespace kforge::codegen
