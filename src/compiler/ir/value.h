// The IR's values: a closed set of kinds (graph inputs, parameters and buffers, lifted constants,
// op nodes) as plain structs. Each kind's Make() validates what it can see on its own; a Graph
// owns its values and hands them out only as const, so a value is immutable once built.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/argument.h"
#include "compiler/ir/ir_check.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ir/tensor_type.h"
#include "core/status.h"

namespace kforge::ir {

enum class ValueKind { kInput, kParameter, kConstant, kOp };

const char* ToString(ValueKind kind);

struct Value {
  virtual ~Value() = default;

  const ValueKind kind;
  ValueId id = kNoValue;            // set by the GraphBuilder that adds it
  std::string name;                 // unique in its graph; an identifier ([A-Za-z_][A-Za-z0-9_]*)
  std::vector<TensorType> outputs;  // exactly one, except for ops: any number, maybe none

  // The first output's type; checked.
  const TensorType& type() const {
    KFORGE_IR_CHECK(!outputs.empty(), "Value::type: value has no outputs");
    return outputs.front();
  }
  int32_t num_outputs() const { return static_cast<int32_t>(outputs.size()); }
  NodeRef ref(int32_t output = 0) const { return NodeRef{id, output}; }

  // Checked down-cast (DuckDB's Cast<T>): asking for the wrong kind is a bug in the caller.
  template <typename T>
  const T& As() const {
    KFORGE_IR_CHECK(kind == T::kKind, "Value::As: wrong value kind");
    return static_cast<const T&>(*this);
  }
  template <typename T>
  const T* TryAs() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }

 protected:
  explicit Value(ValueKind value_kind) : kind(value_kind) {}
  Value(const Value&) = default;
};

// A positional input of forward(); `index` is its position.
struct InputValue : Value {
  static constexpr ValueKind kKind = ValueKind::kInput;
  int64_t index = 0;
  // The task passes a Python number here; the graph reads it as a 0-d tensor of `type`.
  bool python_number = false;

  static Result<InputValue> Make(std::string name, int64_t index, TensorType type, bool python_number = false);
  InputValue() : Value(kKind) {}
};

enum class ParameterKind { kParameter, kBuffer };
const char* ToString(ParameterKind kind);

// A module parameter or buffer; `target` is its state-dict name ("linear.weight").
struct ParameterValue : Value {
  static constexpr ValueKind kKind = ValueKind::kParameter;
  std::string target;
  ParameterKind parameter_kind = ParameterKind::kParameter;

  static Result<ParameterValue> Make(std::string name, std::string target, ParameterKind kind, TensorType type);
  ParameterValue() : Value(kKind) {}
};

// A tensor constant lifted out of the program; `scalar` holds a 0-d constant's value when known.
struct ConstantValue : Value {
  static constexpr ValueKind kKind = ValueKind::kConstant;
  std::string target;
  std::optional<double> scalar;

  static Result<ConstantValue> Make(std::string name, std::string target, TensorType type,
                                    std::optional<double> scalar);
  ConstantValue() : Value(kKind) {}
};

// One call of an ATen op ("aten.addmm.default") with its arguments and result types.
struct OpNode : Value {
  static constexpr ValueKind kKind = ValueKind::kOp;
  std::string op;
  std::vector<Argument> args;
  std::vector<NamedArgument> kwargs;
  const OpInfo* info = nullptr;  // the registry's facts; nullptr for an unknown (opaque) op

  OpKind op_kind() const { return info ? info->kind : OpKind::kOpaque; }
  // The argument at `slot`: positional when given there, else the keyword; nullptr if absent.
  const Argument* FindArgument(ArgSlot slot) const;
  // The int-list argument at `slot` with `n` entries (a single int, or a list of one, repeats),
  // `fallback` when absent or empty; a list of another length is returned as it is.
  IntList FindIntList(ArgSlot slot, size_t n, const IntList& fallback) const;

  // Fails on a bad name, an empty op name, a bad type, or a repeated keyword.
  static Result<OpNode> Make(std::string name, std::string op, std::vector<Argument> args,
                             std::vector<NamedArgument> kwargs, std::vector<TensorType> outputs);
  OpNode() : Value(kKind) {}
};

// OK when `name` is an identifier; otherwise InvalidArgument naming it.
Status CheckValueName(const std::string& name);

}  // namespace kforge::ir
