#include "compiler/ir/visitor.h"

#include <utility>

namespace kforge::ir {

void GraphVisitor::Visit(const Graph& graph) {
  graph_ = &graph;
  for (const Value& value : graph) VisitValue(value);
  for (const NodeRef& ref : graph.outputs()) VisitOutput(ref);
  for (const Mutation& mutation : graph.mutations()) VisitMutation(mutation);
  graph_ = nullptr;
}

void GraphVisitor::VisitValue(const Value& value) {
  switch (value.kind) {
    case ValueKind::kInput: return VisitInput(value.As<InputValue>());
    case ValueKind::kParameter: return VisitParameter(value.As<ParameterValue>());
    case ValueKind::kConstant: return VisitConstant(value.As<ConstantValue>());
    case ValueKind::kOp: return VisitOp(value.As<OpNode>());
  }
}

void GraphVisitor::VisitOp(const OpNode& node) {
  for (const Argument& arg : node.args) VisitArgument(arg);
  for (const NamedArgument& kwarg : node.kwargs) VisitArgument(kwarg.argument);
}

void GraphVisitor::VisitArgument(const Argument& argument) {
  ForEachRef(argument, [this](const NodeRef& ref) { VisitRef(ref); });
}

Result<Graph> GraphRewriter::Rewrite(const Graph& source) {
  source_ = &source;
  builder_.emplace(source.name());
  map_.assign(source.size(), {});
  Status status = RewriteAll(source);
  std::optional<Graph> rewritten;
  if (status.ok()) rewritten.emplace(std::move(*builder_).Build());
  builder_.reset();
  source_ = nullptr;
  if (!status.ok()) return status;
  return std::move(*rewritten);
}

Status GraphRewriter::RewriteAll(const Graph& source) {
  for (const Value& value : source) {
    Status status = RewriteValue(value);
    if (!status.ok()) return status.WithContext("rewriting %" + value.name);
  }
  for (const NodeRef& ref : source.outputs()) builder_->AddOutput(Map(ref));
  for (const Mutation& mutation : source.mutations()) {
    Status status = builder_->AddMutation(mutation.target, Map(mutation.value));
    if (!status.ok()) return status.WithContext("rewriting the mutation of " + mutation.target);
  }
  return Status::Ok();
}

Status GraphRewriter::RewriteValue(const Value& value) {
  switch (value.kind) {
    case ValueKind::kInput: return RewriteInput(value.As<InputValue>());
    case ValueKind::kParameter: return RewriteParameter(value.As<ParameterValue>());
    case ValueKind::kConstant: return RewriteConstant(value.As<ConstantValue>());
    case ValueKind::kOp: return RewriteOp(value.As<OpNode>());
  }
  return Status::Internal("unknown value kind");
}

Status GraphRewriter::RewriteInput(const InputValue& input) {
  return Copied(input, builder().AddInput(input.name, input.index, input.type(), input.python_number));
}

Status GraphRewriter::RewriteParameter(const ParameterValue& parameter) {
  return Copied(parameter,
                builder().AddParameter(parameter.name, parameter.target, parameter.parameter_kind, parameter.type()));
}

Status GraphRewriter::RewriteConstant(const ConstantValue& constant) {
  return Copied(constant, builder().AddConstant(constant.name, constant.target, constant.type(), constant.scalar));
}

Status GraphRewriter::CopyOp(const OpNode& node) { return CopyOp(node, node.outputs); }

Status GraphRewriter::CopyOp(const OpNode& node, std::vector<TensorType> outputs) {
  std::vector<Argument> args;
  for (const Argument& arg : node.args) args.push_back(Map(arg));
  std::vector<NamedArgument> kwargs;
  for (const NamedArgument& kwarg : node.kwargs) kwargs.push_back({kwarg.name, Map(kwarg.argument)});
  return Copied(node, builder().AddOp(node.name, node.op, std::move(args), std::move(kwargs), std::move(outputs)));
}

Status GraphRewriter::Copied(const Value& old_value, Result<ValueId> added) {
  if (!added.ok()) return added.status();
  std::vector<NodeRef> refs;
  for (int32_t i = 0; i < old_value.num_outputs(); ++i) refs.push_back(NodeRef{*added, i});
  Replace(old_value, std::move(refs));
  return Status::Ok();
}

void GraphRewriter::Replace(const Value& old_value, std::vector<NodeRef> replacements) {
  KFORGE_IR_CHECK(old_value.id >= 0 && old_value.id < static_cast<ValueId>(map_.size()),
                  "GraphRewriter::Replace: value is not from the source graph");
  map_[old_value.id] = std::move(replacements);
}

NodeRef GraphRewriter::Map(NodeRef old_ref) const {
  if (old_ref.value < 0 || old_ref.value >= static_cast<ValueId>(map_.size())) return NodeRef{};
  const std::vector<NodeRef>& refs = map_[old_ref.value];
  if (old_ref.output < 0 || old_ref.output >= static_cast<int32_t>(refs.size())) return NodeRef{};
  return refs[old_ref.output];
}

Argument GraphRewriter::Map(const Argument& argument) const {
  return MapRefs(argument, [this](const NodeRef& ref) { return Map(ref); });
}

}  // namespace kforge::ir
