#include "compiler/passes/fusion_rules.h"

namespace kforge::passes {

std::vector<ir::NodeRef> TensorInputs(const ir::Value& value) {
  std::vector<ir::NodeRef> refs;
  const auto* op = value.TryAs<ir::OpNode>();
  if (op == nullptr) return refs;
  auto add = [&refs](const ir::NodeRef& ref) { refs.push_back(ref); };
  for (const ir::Argument& arg : op->args) ir::ForEachRef(arg, add);
  for (const ir::NamedArgument& kwarg : op->kwargs) ir::ForEachRef(kwarg.argument, add);
  return refs;
}

bool BroadcastsTo(const ir::Shape& from, const ir::Shape& to) {
  if (from.size() > to.size()) return false;
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != to[offset + i] && from[i] != 1) return false;
  }
  return true;
}

bool IsFusablePointwise(const ir::Graph& graph, const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  if (op == nullptr || op->op_kind() != ir::OpKind::kPointwise || op->num_outputs() != 1) return false;
  for (const ir::NodeRef& ref : TensorInputs(value)) {
    const ir::TensorType* type = graph.TypeOf(ref);
    if (type == nullptr || !BroadcastsTo(type->shape, op->type().shape)) return false;
  }
  return true;
}

bool IsMetadataView(const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  return op != nullptr && op->info != nullptr && op->info->metadata_only;
}

bool SameIterationSpace(const ir::Value& op, const ir::Shape& group_shape) {
  return op.num_outputs() == 1 && op.type().shape == group_shape;
}

}  // namespace kforge::passes
