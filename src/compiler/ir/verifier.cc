#include "compiler/ir/verifier.h"

#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace kforge::ir {
namespace {

Status Fail(const Value& value, const std::string& message) {
  return Status::InvalidArgument("%" + value.name + ": " + message);
}

// A reference is good when it points at an earlier value (`before`) and one of its outputs.
Status CheckRef(const Graph& graph, NodeRef ref, ValueId before, const std::string& where) {
  if (ref.value < 0 || ref.value >= before) {
    return Status::InvalidArgument(
        fmt::format("{} refers to value #{}, which is not an earlier value", where, ref.value));
  }
  if (graph.TypeOf(ref) == nullptr) {
    const Value& target = graph.value(ref.value);
    return Status::InvalidArgument(fmt::format("{} refers to output {} of %{}, which has {} output(s)", where,
                                               ref.output, target.name, target.num_outputs()));
  }
  return Status::Ok();
}

Status CheckOpRefs(const Graph& graph, const OpNode& node) {
  Status status;
  auto check = [&](const std::string& where) {
    return [&, where](const NodeRef& ref) {
      if (status.ok()) status = CheckRef(graph, ref, node.id, where);
    };
  };
  for (size_t i = 0; i < node.args.size(); ++i) ForEachRef(node.args[i], check(fmt::format("args[{}]", i)));
  for (const NamedArgument& kwarg : node.kwargs) ForEachRef(kwarg.argument, check("kwargs." + kwarg.name));
  if (!status.ok()) return status.WithContext("%" + node.name);
  return Status::Ok();
}

// Types of the node's direct tensor arguments (not those inside lists), in order.
std::vector<const TensorType*> DirectTensorInputs(const Graph& graph, const OpNode& node) {
  std::vector<const TensorType*> types;
  for (const Argument& arg : node.args) {
    if (const NodeRef* ref = arg.TryAs<NodeRef>()) types.push_back(graph.TypeOf(*ref));
  }
  for (const NamedArgument& kwarg : node.kwargs) {
    if (const NodeRef* ref = kwarg.argument.TryAs<NodeRef>()) types.push_back(graph.TypeOf(*ref));
  }
  return types;
}

// The shape of positional argument `position` when it is a tensor.
const Shape* ArgShape(const Graph& graph, const OpNode& node, size_t position) {
  if (position >= node.args.size() || !node.args[position].Is<NodeRef>()) return nullptr;
  return &graph.TypeOf(node.args[position].As<NodeRef>())->shape;
}

Status CheckPointwise(const Graph& graph, const OpNode& node) {
  std::vector<const TensorType*> inputs = DirectTensorInputs(graph, node);
  if (inputs.empty()) return Status::Ok();
  std::optional<Shape> shape = inputs[0]->shape;
  for (const TensorType* input : inputs) {
    shape = BroadcastShapes(*shape, input->shape);
    if (!shape) return Fail(node, "tensor inputs do not broadcast: " + ShapeToString(input->shape) + " against others");
  }
  if (node.type().shape != *shape) {
    return Fail(node, "output shape " + ShapeToString(node.type().shape) + " is not the broadcast " +
                          ShapeToString(*shape) + " of its inputs");
  }
  return Status::Ok();
}

// [..., M, K] x [..., K, N] -> [..., M, N] with equal leading (batch) dimensions.
std::optional<Shape> BatchedMatmulShape(const Shape& a, const Shape& b, size_t rank) {
  if (a.size() != rank || b.size() != rank || a[rank - 1] != b[rank - 2]) return std::nullopt;
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (a[i] != b[i]) return std::nullopt;
  }
  Shape out = a;
  out[rank - 1] = b[rank - 1];
  return out;
}

// The operands of the matmul-like ops with a shape rule: addmm/baddbmm put the bias first.
struct MatmulOperands {
  const Shape* bias = nullptr;
  const Shape* a = nullptr;
  const Shape* b = nullptr;
  size_t batch_rank = 0;  // 2 for mm, 3 for bmm, the rank for a batched matmul; 0 for mv and dot
};

std::optional<MatmulOperands> FindMatmulOperands(const Graph& graph, const OpNode& node) {
  const std::string& op = node.op;
  bool with_bias = op == "aten.addmm.default" || op == "aten.baddbmm.default";
  MatmulOperands operands;
  operands.bias = with_bias ? ArgShape(graph, node, 0) : nullptr;
  operands.a = ArgShape(graph, node, with_bias ? 1 : 0);
  operands.b = ArgShape(graph, node, with_bias ? 2 : 1);
  if (operands.a == nullptr || operands.b == nullptr) return std::nullopt;
  if (op == "aten.mm.default" || op == "aten.addmm.default")
    operands.batch_rank = 2;
  else if (op == "aten.bmm.default" || op == "aten.baddbmm.default")
    operands.batch_rank = 3;
  else if (op == "aten.matmul.default" && operands.a->size() >= 3 && operands.a->size() == operands.b->size())
    operands.batch_rank = operands.a->size();  // the batched form passes make: batch dims alike
  else if (op != "aten.mv.default" && op != "aten.dot.default")
    return std::nullopt;
  return operands;
}

// The output shape the operands imply, or nullopt when they do not agree.
std::optional<Shape> MatmulShape(const MatmulOperands& operands) {
  const Shape& a = *operands.a;
  const Shape& b = *operands.b;
  if (operands.batch_rank > 0) return BatchedMatmulShape(a, b, operands.batch_rank);
  if (a.size() == 2 && b.size() == 1 && a[1] == b[0]) return Shape{a[0]};  // mv
  if (a.size() == 1 && a == b) return Shape{};                             // dot
  return std::nullopt;
}

Status CheckMatmul(const Graph& graph, const OpNode& node) {
  std::optional<MatmulOperands> operands = FindMatmulOperands(graph, node);
  if (!operands) return Status::Ok();
  std::string shapes = ShapeToString(*operands->a) + " x " + ShapeToString(*operands->b);
  std::optional<Shape> expected = MatmulShape(*operands);
  if (!expected) return Fail(node, "operand shapes " + shapes + " do not agree");
  if (node.type().shape != *expected) {
    return Fail(node, "output shape " + ShapeToString(node.type().shape) + " is not " + ShapeToString(*expected) +
                          " for " + shapes);
  }
  if (operands->bias != nullptr && BroadcastShapes(*operands->bias, *expected) != expected) {
    return Fail(node, "bias " + ShapeToString(*operands->bias) + " does not broadcast to " + ShapeToString(*expected));
  }
  return Status::Ok();
}

Status CheckView(const Graph& graph, const OpNode& node) {
  const Shape* input = ArgShape(graph, node, 0);
  if (!node.info->preserves_numel || input == nullptr) return Status::Ok();
  if (CheckedNumel(*input) != node.type().numel()) {
    return Fail(node,
                "view changes the element count: " + ShapeToString(*input) + " to " + ShapeToString(node.type().shape));
  }
  return Status::Ok();
}

Status CheckOpSemantics(const Graph& graph, const OpNode& node) {
  if (node.info == nullptr) return Status::Ok();
  if (node.outputs.empty()) return Fail(node, node.op + " has no outputs");
  int direct_tensors = static_cast<int>(DirectTensorInputs(graph, node).size());
  if (direct_tensors > node.info->tensor_inputs) {
    return Fail(node, fmt::format("{} takes at most {} tensor argument(s), got {}", node.op, node.info->tensor_inputs,
                                  direct_tensors));
  }
  switch (node.info->kind) {
    case OpKind::kPointwise: return CheckPointwise(graph, node);
    case OpKind::kMatmul: return CheckMatmul(graph, node);
    case OpKind::kView: return CheckView(graph, node);
    default: return Status::Ok();
  }
}

Status CheckValue(const Graph& graph, const Value& value, ValueId position, std::set<std::string>& names) {
  if (value.id != position) return Fail(value, fmt::format("id {} at position {}", value.id, position));
  if (!names.insert(value.name).second) return Fail(value, "duplicate name");
  RETURN_IF_ERROR(CheckValueName(value.name));
  if (value.outputs.size() != 1 && value.kind != ValueKind::kOp) return Fail(value, "a leaf has exactly one type");
  for (const TensorType& type : value.outputs) {
    Status valid = type.Validate();
    if (!valid.ok()) return Fail(value, valid.message());
  }
  const OpNode* node = value.TryAs<OpNode>();
  if (node == nullptr) return Status::Ok();
  RETURN_IF_ERROR(CheckOpRefs(graph, *node));
  return CheckOpSemantics(graph, *node);
}

// A mutation gives a parameter or buffer (which the GraphBuilder checked it names, once) a value
// of its own shape and dtype.
Status CheckMutation(const Graph& graph, const Mutation& mutation) {
  std::string where = "mutation of " + mutation.target;
  const ParameterValue* target = graph.FindTarget(mutation.target);
  if (target == nullptr) return Status::InvalidArgument(where + ": no parameter or buffer has that name");
  RETURN_IF_ERROR(CheckRef(graph, mutation.value, graph.size(), where));
  const TensorType& value = *graph.TypeOf(mutation.value);
  if (value.shape != target->type().shape || value.dtype != target->type().dtype) {
    return Status::InvalidArgument(fmt::format("{}: the new value is {}, the {} is {}", where, value.ToString(),
                                               ToString(target->parameter_kind), target->type().ToString()));
  }
  return Status::Ok();
}

}  // namespace

Status VerifyGraph(const Graph& graph) {
  std::set<std::string> names;
  ValueId position = 0;
  for (const Value& value : graph) RETURN_IF_ERROR(CheckValue(graph, value, position++, names));
  if (graph.outputs().empty()) return Status::InvalidArgument("the graph has no outputs");
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    RETURN_IF_ERROR(CheckRef(graph, graph.outputs()[i], graph.size(), fmt::format("graph output {}", i)));
  }
  for (const Mutation& mutation : graph.mutations()) RETURN_IF_ERROR(CheckMutation(graph, mutation));
  return Status::Ok();
}

}  // namespace kforge::ir
