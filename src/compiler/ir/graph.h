// A captured program as an IR graph: values in topological order (inputs, parameters, constants,
// then op nodes), found by id (their position) or name, the graph's outputs, and the parameters
// and buffers its forward updates (mutations). A Graph is built only by a GraphBuilder, owns its
// values and never changes afterwards; it is movable, not copyable, and safe to read from several
// threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "compiler/ir/argument.h"
#include "compiler/ir/value.h"

namespace kforge::ir {

// A parameter or buffer that forward() updates in place (a training-mode batch norm's running
// statistics): its state-dict name and the value it holds after the call.
struct Mutation {
  std::string target;  // "bn.running_mean"
  NodeRef value;
  bool operator==(const Mutation&) const = default;
};

class Graph {
 public:
  // Iterates the values in order as `const Value&`.
  class Iterator {
   public:
    using Base = std::vector<std::unique_ptr<const Value>>::const_iterator;
    explicit Iterator(Base it) : it_(it) {}
    const Value& operator*() const { return **it_; }
    Iterator& operator++() {
      ++it_;
      return *this;
    }
    bool operator==(const Iterator&) const = default;

   private:
    Base it_;
  };

  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  // The task the program came from ("level2/01_linear_relu").
  const std::string& name() const { return name_; }
  int32_t size() const { return static_cast<int32_t>(values_.size()); }
  Iterator begin() const { return Iterator(values_.begin()); }
  Iterator end() const { return Iterator(values_.end()); }

  // Checked: an id out of range is a bug in the caller.
  const Value& value(ValueId id) const;
  // The value named `name`, or nullptr.
  const Value* Find(std::string_view name) const;
  // The value `ref` points at, or nullptr when its id is out of range.
  const Value* Resolve(NodeRef ref) const;
  // The type of the output `ref` names, or nullptr when the reference dangles.
  const TensorType* TypeOf(NodeRef ref) const;
  const std::vector<NodeRef>& outputs() const { return outputs_; }
  // In capture order; each target at most once.
  const std::vector<Mutation>& mutations() const { return mutations_; }
  // What a call must leave behind: the outputs, then the mutations' new values.
  std::vector<NodeRef> LiveOuts() const;
  // The parameter or buffer whose state-dict name is `target`, or nullptr.
  const ParameterValue* FindTarget(std::string_view target) const;

 private:
  friend class GraphBuilder;
  Graph() = default;

  std::string name_;
  std::vector<std::unique_ptr<const Value>> values_;
  std::unordered_map<std::string, ValueId> by_name_;
  std::vector<NodeRef> outputs_;
  std::vector<Mutation> mutations_;
};

}  // namespace kforge::ir
