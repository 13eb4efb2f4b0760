// Small helpers for building IR graphs in tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/ir/graph_builder.h"

namespace kforge::ir::testing {

// A contiguous float32 type; the shape must be valid.
inline TensorType F32(Shape shape) { return TensorType::Contiguous(std::move(shape), DType::kFloat32).value(); }

// A float32 type with these strides; they must be valid.
inline TensorType Strided(Shape shape, std::vector<int64_t> stride) {
  return TensorType::Make(std::move(shape), DType::kFloat32, std::move(stride)).value();
}

// How many nodes of `graph` call `op`.
inline int CountOps(const Graph& graph, const std::string& op) {
  int count = 0;
  for (const Value& value : graph) {
    const auto* node = value.TryAs<OpNode>();
    count += node != nullptr && node->op == op;
  }
  return count;
}

inline Argument Ref(ValueId id, int32_t output = 0) { return Argument{NodeRef{id, output}}; }
inline Argument Int(int64_t value) { return Argument{value}; }
inline Argument Ints(IntList values) { return Argument{std::move(values)}; }

// Adds an op that must be accepted by the builder and returns its id.
inline ValueId AddOk(GraphBuilder& builder, const std::string& name, const std::string& op, std::vector<Argument> args,
                     std::vector<TensorType> outputs) {
  Result<ValueId> id = builder.AddOp(name, op, std::move(args), {}, std::move(outputs));
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return id.ok() ? *id : kNoValue;
}

inline ValueId AddInputOk(GraphBuilder& builder, const std::string& name, Shape shape, int64_t index = 0) {
  Result<ValueId> id = builder.AddInput(name, index, F32(std::move(shape)));
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return id.ok() ? *id : kNoValue;
}

}  // namespace kforge::ir::testing
