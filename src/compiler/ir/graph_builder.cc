#include "compiler/ir/graph_builder.h"

#include <memory>
#include <utility>

namespace kforge::ir {

GraphBuilder::GraphBuilder(std::string graph_name) { graph_.name_ = std::move(graph_name); }

template <typename T>
Result<ValueId> GraphBuilder::Insert(Result<T> made) {
  if (!made.ok()) return made.status();
  T& value = made.value();
  if (graph_.Find(value.name) != nullptr) {
    return Status::InvalidArgument("duplicate name \"" + value.name + "\"");
  }
  ValueId id = graph_.size();
  value.id = id;
  graph_.by_name_.emplace(value.name, id);
  graph_.values_.push_back(std::make_unique<const T>(std::move(value)));
  return id;
}

Result<ValueId> GraphBuilder::AddInput(std::string name, int64_t index, TensorType type, bool python_number) {
  return Insert(InputValue::Make(std::move(name), index, std::move(type), python_number));
}

Result<ValueId> GraphBuilder::AddParameter(std::string name, std::string target, ParameterKind kind, TensorType type) {
  return Insert(ParameterValue::Make(std::move(name), std::move(target), kind, std::move(type)));
}

Result<ValueId> GraphBuilder::AddConstant(std::string name, std::string target, TensorType type,
                                          std::optional<double> scalar) {
  return Insert(ConstantValue::Make(std::move(name), std::move(target), std::move(type), scalar));
}

Result<ValueId> GraphBuilder::AddOp(std::string name, std::string op, std::vector<Argument> args,
                                    std::vector<NamedArgument> kwargs, std::vector<TensorType> outputs) {
  return Insert(OpNode::Make(std::move(name), std::move(op), std::move(args), std::move(kwargs), std::move(outputs)));
}

Status GraphBuilder::AddMutation(std::string target, NodeRef value) {
  if (graph_.FindTarget(target) == nullptr) {
    return Status::InvalidArgument("\"" + target + "\" is not a parameter or buffer of the graph");
  }
  for (const Mutation& mutation : graph_.mutations_) {
    if (mutation.target == target) return Status::InvalidArgument("\"" + target + "\" is mutated twice");
  }
  graph_.mutations_.push_back(Mutation{std::move(target), value});
  return Status::Ok();
}

std::string GraphBuilder::FreshName(std::string_view base) const {
  std::string name(base);
  for (int suffix = 1; graph_.Find(name) != nullptr; ++suffix) name = std::string(base) + "_" + std::to_string(suffix);
  return name;
}

Graph GraphBuilder::Build() && {
  Graph built = std::move(graph_);
  graph_ = Graph();
  graph_.name_ = built.name_;
  return built;
}

}  // namespace kforge::ir
