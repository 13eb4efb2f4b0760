// Builds a Graph value by value, for the importer and for passes. Each Add validates the value on
// its own (through its kind's Make) and rejects a name already taken; a mutation must name a
// parameter or buffer already added, once. References between values are not checked here but by
// VerifyGraph, which every producer of a graph runs afterwards.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"

namespace kforge::ir {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name);

  Result<ValueId> AddInput(std::string name, int64_t index, TensorType type, bool python_number = false);
  Result<ValueId> AddParameter(std::string name, std::string target, ParameterKind kind, TensorType type);
  Result<ValueId> AddConstant(std::string name, std::string target, TensorType type, std::optional<double> scalar);
  Result<ValueId> AddOp(std::string name, std::string op, std::vector<Argument> args, std::vector<NamedArgument> kwargs,
                        std::vector<TensorType> outputs);
  void AddOutput(NodeRef ref) { graph_.outputs_.push_back(ref); }
  // Records that forward() leaves `value` in the parameter or buffer `target`. InvalidArgument
  // when no parameter or buffer added so far has that state-dict name, or it is already mutated.
  Status AddMutation(std::string target, NodeRef value);

  // Lookups over what has been added so far.
  int32_t size() const { return graph_.size(); }
  const Value& value(ValueId id) const { return graph_.value(id); }
  const Value* Find(std::string_view name) const { return graph_.Find(name); }
  const TensorType* TypeOf(NodeRef ref) const { return graph_.TypeOf(ref); }
  // `base` when unused, else the first free "base_1", "base_2", ... (for values a pass creates).
  std::string FreshName(std::string_view base) const;

  // Hands over the graph; the builder is empty afterwards.
  Graph Build() &&;

 private:
  template <typename T>
  Result<ValueId> Insert(Result<T> made);

  Graph graph_;
};

}  // namespace kforge::ir
