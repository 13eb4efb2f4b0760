#include "compiler/ir/graph.h"

#include <string>

namespace kforge::ir {

const Value& Graph::value(ValueId id) const {
  KFORGE_IR_CHECK(id >= 0 && id < size(), "Graph::value: id out of range");
  return *values_[id];
}

const Value* Graph::Find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : values_[it->second].get();
}

const Value* Graph::Resolve(NodeRef ref) const {
  if (ref.value < 0 || ref.value >= size()) return nullptr;
  return values_[ref.value].get();
}

const TensorType* Graph::TypeOf(NodeRef ref) const {
  const Value* value = Resolve(ref);
  if (value == nullptr || ref.output < 0 || ref.output >= value->num_outputs()) return nullptr;
  return &value->outputs[ref.output];
}

std::vector<NodeRef> Graph::LiveOuts() const {
  std::vector<NodeRef> refs = outputs_;
  for (const Mutation& mutation : mutations_) refs.push_back(mutation.value);
  return refs;
}

const ParameterValue* Graph::FindTarget(std::string_view target) const {
  for (const auto& value : values_) {
    const auto* parameter = value->TryAs<ParameterValue>();
    if (parameter != nullptr && parameter->target == target) return parameter;
  }
  return nullptr;
}

}  // namespace kforge::ir
