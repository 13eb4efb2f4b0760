#include "compiler/codegen/epilogue.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/codegen/python_names.h"
#include "compiler/codegen/triton_pointwise.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::codegen {

std::string Term(const std::string& index, int64_t stride) {
  if (stride == 0) return "";
  return stride == 1 ? index : fmt::format("{} * {}", index, stride);
}

std::string Sum(const std::vector<std::string>& terms) {
  std::vector<std::string> kept;
  for (const std::string& t : terms) {
    if (!t.empty()) kept.push_back(t);
  }
  return kept.empty() ? "0" : fmt::format("{}", fmt::join(kept, " + "));
}

Status EmitEpilogue(SourceWriter& out, const ir::Graph& graph, const passes::FusionGroup& group,
                    const std::vector<ir::NodeRef>& inputs, const std::vector<ir::NodeRef>& outputs,
                    const ir::Shape& out_shape, const std::vector<std::string>& index, EmittedKernel& kernel) {
  auto offset = [&](const std::vector<int64_t>& strides) {
    std::vector<std::string> terms;
    for (size_t d = 0; d < strides.size(); ++d) terms.push_back(Term(index[d], strides[d]));
    return Sum(terms);
  };
  for (const ir::NodeRef& ref : inputs) {
    // Floating inputs are computed on in fp32; a mask or an index (bool, integer) keeps its type.
    const ir::DType dtype = graph.TypeOf(ref)->dtype;
    std::string cast = dtype == ir::DType::kFloat32 || !ir::IsFloatingPoint(dtype) ? "" : ".to(tl.float32)";
    const std::string name = VarName(graph, ref);
    const std::vector<int64_t> strides = ir::BroadcastStrides(*graph.TypeOf(ref), out_shape);
    // An input constant over the tile (one value per batch: a per-head scale) is one scalar load,
    // valid for every program; a tile mask on a scalar pointer would not compile.
    bool tiled = false;
    for (size_t d = 0; d < strides.size(); ++d) tiled = tiled || (strides[d] != 0 && index[d].find('[') != std::string::npos);
    out.Line(fmt::format("{} = {}{}", name, LoadAt(name + "_ptr", offset(strides), tiled ? "mask=kf_mask, other=0.0" : ""), cast));
  }
  for (size_t i = 1; i < group.nodes.size(); ++i) {
    const auto& op = graph.value(group.nodes[i]).As<ir::OpNode>();
    if (op.type().shape != out_shape) {
      return Status::InvalidArgument(fmt::format("%{}: epilogue shape differs from the product's", op.name));
    }
    ASSIGN_OR_RETURN(std::string expr, PointwiseExpression(graph, op, kernel.helpers));
    out.Line(fmt::format("{} = {}", VarName(graph, op.ref()), expr));
  }
  for (const ir::NodeRef& ref : outputs) {
    out.Line(fmt::format("tl.store({0}_ptr + {1}, {0}, mask=kf_mask)", VarName(graph, ref), offset(graph.TypeOf(ref)->stride)));
  }
  return Status::Ok();
}

Result<std::vector<ir::NodeRef>> EpilogueInputs(const ir::Graph& graph, const passes::FusionGroup& group,
                                                const std::vector<ir::NodeRef>& operands, const ir::Shape& out_shape) {
  // An operand is loaded again in the epilogue only when the epilogue itself reads it (a residual
  // of the product's own input: x + f(x @ w)).
  std::vector<ir::NodeRef> read_by_epilogue;
  for (size_t i = 1; i < group.nodes.size(); ++i) {
    for (const ir::NodeRef& ref : passes::TensorInputs(graph.value(group.nodes[i]).As<ir::OpNode>())) {
      read_by_epilogue.push_back(ref);
    }
  }
  auto contains = [](const std::vector<ir::NodeRef>& refs, const ir::NodeRef& ref) {
    return std::find(refs.begin(), refs.end(), ref) != refs.end();
  };
  std::vector<ir::NodeRef> inputs;
  for (const ir::NodeRef& ref : passes::GroupInputs(graph, group)) {
    if (contains(operands, ref) && !contains(read_by_epilogue, ref)) continue;
    const ir::TensorType& type = *graph.TypeOf(ref);
    if (!passes::BroadcastsTo(type.shape, out_shape)) {
      return Status::InvalidArgument(fmt::format("{}: epilogue input {} does not broadcast to {}", ir::PrintRef(graph, ref),
                                                 type.ToString(), ir::ShapeToString(out_shape)));
    }
    inputs.push_back(ref);
  }
  return inputs;
}

}  // namespace kforge::codegen
