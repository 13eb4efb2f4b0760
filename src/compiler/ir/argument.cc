#include "compiler/ir/argument.h"

namespace kforge::ir {

const char* ToString(ArgKind kind) {
  switch (kind) {
    case ArgKind::kTensor: return "tensor";
    case ArgKind::kInt: return "int";
    case ArgKind::kFloat: return "float";
    case ArgKind::kBool: return "bool";
    case ArgKind::kNone: return "none";
    case ArgKind::kString: return "str";
    case ArgKind::kDType: return "dtype";
    case ArgKind::kDevice: return "device";
    case ArgKind::kLayout: return "layout";
    case ArgKind::kMemoryFormat: return "memory_format";
    case ArgKind::kIntList: return "int_list";
    case ArgKind::kFloatList: return "float_list";
    case ArgKind::kBoolList: return "bool_list";
    case ArgKind::kTensorList: return "tensor_list";
  }
  return "unknown";
}

void ForEachRef(const Argument& argument, const std::function<void(const NodeRef&)>& fn) {
  if (const NodeRef* ref = argument.TryAs<NodeRef>()) fn(*ref);
  if (const TensorList* list = argument.TryAs<TensorList>()) {
    for (const std::optional<NodeRef>& entry : *list) {
      if (entry) fn(*entry);
    }
  }
}

Argument MapRefs(const Argument& argument, const std::function<NodeRef(const NodeRef&)>& map) {
  if (const NodeRef* ref = argument.TryAs<NodeRef>()) return Argument{map(*ref)};
  if (const TensorList* list = argument.TryAs<TensorList>()) {
    TensorList mapped;
    mapped.reserve(list->size());
    for (const std::optional<NodeRef>& entry : *list)
      mapped.push_back(entry ? std::optional(map(*entry)) : std::nullopt);
    return Argument{std::move(mapped)};
  }
  return argument;
}

}  // namespace kforge::ir
