// An op's argument: a closed set of kinds held in a std::variant. Tensors are referenced by
// NodeRef (a value's id plus which of its outputs); everything else is an immediate.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/ir/dtype.h"
#include "compiler/ir/ir_check.h"

namespace kforge::ir {

// A value's position in its graph's topological order.
using ValueId = int32_t;
constexpr ValueId kNoValue = -1;

// The `output`-th result of value `value`.
struct NodeRef {
  ValueId value = kNoValue;
  int32_t output = 0;
  bool operator==(const NodeRef&) const = default;
};

struct NoneArg {
  bool operator==(const NoneArg&) const = default;
};
struct DeviceArg {
  std::string name;  // "cpu", "cuda:0"
  bool operator==(const DeviceArg&) const = default;
};
struct LayoutArg {
  std::string name;  // "strided"
  bool operator==(const LayoutArg&) const = default;
};
struct MemoryFormatArg {
  std::string name;  // "contiguous_format", "channels_last"
  bool operator==(const MemoryFormatArg&) const = default;
};
using IntList = std::vector<int64_t>;
using FloatList = std::vector<double>;
using BoolList = std::vector<bool>;
// Tensor[] and Tensor?[] (a missing entry is None, as in index.Tensor's indices).
using TensorList = std::vector<std::optional<NodeRef>>;

// The alternatives' order is ArgKind's order.
using ArgumentValue = std::variant<NodeRef, int64_t, double, bool, NoneArg, std::string, DType, DeviceArg, LayoutArg,
                                   MemoryFormatArg, IntList, FloatList, BoolList, TensorList>;

enum class ArgKind {
  kTensor,
  kInt,
  kFloat,
  kBool,
  kNone,
  kString,
  kDType,
  kDevice,
  kLayout,
  kMemoryFormat,
  kIntList,
  kFloatList,
  kBoolList,
  kTensorList,
};

const char* ToString(ArgKind kind);

struct Argument {
  ArgumentValue value;

  ArgKind kind() const { return static_cast<ArgKind>(value.index()); }
  template <typename T>
  bool Is() const {
    return std::holds_alternative<T>(value);
  }
  // Checked access: asking for the wrong alternative is a bug in the caller.
  template <typename T>
  const T& As() const {
    KFORGE_IR_CHECK(Is<T>(), "Argument::As: wrong argument kind");
    return std::get<T>(value);
  }
  template <typename T>
  const T* TryAs() const {
    return std::get_if<T>(&value);
  }

  bool operator==(const Argument&) const = default;
};

struct NamedArgument {
  std::string name;
  Argument argument;
  bool operator==(const NamedArgument&) const = default;
};

// Calls `fn` for every tensor reference in `argument`, including those inside lists.
void ForEachRef(const Argument& argument, const std::function<void(const NodeRef&)>& fn);
// A copy of `argument` with every tensor reference replaced by `map(ref)`.
Argument MapRefs(const Argument& argument, const std::function<NodeRef(const NodeRef&)>& map);

}  // namespace kforge::ir
