// Bases for walking and rewriting graphs (Halide's IRVisitor and IRMutator). Both recurse by
// default, so a pass overrides only the kinds it cares about. Neither is thread-safe; use one
// instance per walk.
#pragma once

#include <optional>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/graph_builder.h"

namespace kforge::ir {

// Walks values in topological order, then the graph's outputs, then its mutations. Defaults: a
// leaf does nothing, an op visits its arguments, an argument visits the tensor references in it,
// an output is a ref, and so is a mutation's new value.
class GraphVisitor {
 public:
  virtual ~GraphVisitor() = default;
  void Visit(const Graph& graph);

 protected:
  // The graph being visited; valid only inside Visit.
  const Graph& graph() const { return *graph_; }

  virtual void VisitValue(const Value& value);  // dispatches on the kind
  virtual void VisitInput(const InputValue& input) {}
  virtual void VisitParameter(const ParameterValue& parameter) {}
  virtual void VisitConstant(const ConstantValue& constant) {}
  virtual void VisitOp(const OpNode& node);
  virtual void VisitArgument(const Argument& argument);
  virtual void VisitRef(const NodeRef& ref) {}
  virtual void VisitOutput(const NodeRef& ref) { VisitRef(ref); }
  virtual void VisitMutation(const Mutation& mutation) { VisitRef(mutation.value); }

 private:
  const Graph* graph_ = nullptr;
};

// Rebuilds a graph through a GraphBuilder. Every value, output and mutation is copied by default,
// with its references mapped into the new graph; a pass overrides RewriteOp to drop or replace a
// node, recording with Replace what stands for its outputs. The result is not verified here: the
// pass runner does it.
class GraphRewriter {
 public:
  virtual ~GraphRewriter() = default;
  Result<Graph> Rewrite(const Graph& source);

 protected:
  virtual Status RewriteInput(const InputValue& input);
  virtual Status RewriteParameter(const ParameterValue& parameter);
  virtual Status RewriteConstant(const ConstantValue& constant);
  virtual Status RewriteOp(const OpNode& node) { return CopyOp(node); }

  // Helpers for overrides, valid only inside Rewrite.
  const Graph& source() const { return *source_; }
  GraphBuilder& builder() { return *builder_; }
  // The new graph's reference standing for `old_ref` of the source graph (dangling if none yet).
  NodeRef Map(NodeRef old_ref) const;
  Argument Map(const Argument& argument) const;
  // Adds `node` unchanged but for its references and records it as its own replacement.
  Status CopyOp(const OpNode& node);
  // The same with other output types (a layout chosen for them: strides), one per output.
  Status CopyOp(const OpNode& node, std::vector<TensorType> outputs);
  // Records that `replacements[i]` stands for output i of the source graph's `old_value`.
  void Replace(const Value& old_value, std::vector<NodeRef> replacements);

 private:
  // Every value, then the outputs and mutations, into builder_.
  Status RewriteAll(const Graph& source);
  Status RewriteValue(const Value& value);
  // Records a copied value: its outputs map one to one onto the new value's.
  Status Copied(const Value& old_value, Result<ValueId> added);

  const Graph* source_ = nullptr;
  std::optional<GraphBuilder> builder_;
  std::vector<std::vector<NodeRef>> map_;  // source id -> new refs, one per output
};

}  // namespace kforge::ir
