#include "compiler/ir/value.h"

#include <set>
#include <utility>

namespace kforge::ir {
namespace {

bool IsIdentifierStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentifierChar(char c) { return IsIdentifierStart(c) || (c >= '0' && c <= '9'); }

// The checks shared by every kind: a good name and well-formed types. Only an op may have no
// outputs (a side-effect-only call such as aten._assert_scalar).
Status CheckCommon(const std::string& name, const std::vector<TensorType>& outputs, bool is_op) {
  RETURN_IF_ERROR(CheckValueName(name));
  if (outputs.empty() && !is_op) return Status::InvalidArgument("value \"" + name + "\" has no type");
  for (size_t i = 0; i < outputs.size(); ++i) {
    Status valid = outputs[i].Validate();
    if (!valid.ok()) return valid.WithContext("value \"" + name + "\" output " + std::to_string(i));
  }
  return Status::Ok();
}

template <typename T>
Result<T> Finish(T value) {
  RETURN_IF_ERROR(CheckCommon(value.name, value.outputs, value.kind == ValueKind::kOp));
  return value;
}

}  // namespace

const char* ToString(ValueKind kind) {
  switch (kind) {
    case ValueKind::kInput: return "input";
    case ValueKind::kParameter: return "parameter";
    case ValueKind::kConstant: return "constant";
    case ValueKind::kOp: return "op";
  }
  return "op";
}

const char* ToString(ParameterKind kind) { return kind == ParameterKind::kBuffer ? "buffer" : "parameter"; }

Status CheckValueName(const std::string& name) {
  bool ok = !name.empty() && IsIdentifierStart(name[0]);
  for (char c : name) ok = ok && IsIdentifierChar(c);
  if (!ok) return Status::InvalidArgument("name \"" + name + "\" is not an identifier");
  return Status::Ok();
}

Result<InputValue> InputValue::Make(std::string name, int64_t index, TensorType type, bool python_number) {
  if (index < 0) return Status::InvalidArgument("input \"" + name + "\" has a negative index");
  if (python_number && type.rank() != 0) {
    return Status::InvalidArgument("input \"" + name + "\" is a Python number but is not 0-d");
  }
  InputValue value;
  value.python_number = python_number;
  value.name = std::move(name);
  value.index = index;
  value.outputs = {std::move(type)};
  return Finish(std::move(value));
}

Result<ParameterValue> ParameterValue::Make(std::string name, std::string target, ParameterKind kind, TensorType type) {
  if (target.empty()) return Status::InvalidArgument("parameter \"" + name + "\" has no target");
  ParameterValue value;
  value.name = std::move(name);
  value.target = std::move(target);
  value.parameter_kind = kind;
  value.outputs = {std::move(type)};
  return Finish(std::move(value));
}

Result<ConstantValue> ConstantValue::Make(std::string name, std::string target, TensorType type,
                                          std::optional<double> scalar) {
  if (target.empty()) return Status::InvalidArgument("constant \"" + name + "\" has no target");
  if (scalar && type.rank() != 0)
    return Status::InvalidArgument("constant \"" + name + "\" has a value but is not 0-d");
  ConstantValue value;
  value.name = std::move(name);
  value.target = std::move(target);
  value.scalar = scalar;
  value.outputs = {std::move(type)};
  return Finish(std::move(value));
}

Result<OpNode> OpNode::Make(std::string name, std::string op, std::vector<Argument> args,
                            std::vector<NamedArgument> kwargs, std::vector<TensorType> outputs) {
  if (op.empty()) return Status::InvalidArgument("node \"" + name + "\" has an empty op name");
  std::set<std::string> keywords;
  for (const NamedArgument& kwarg : kwargs) {
    if (kwarg.name.empty() || !keywords.insert(kwarg.name).second) {
      return Status::InvalidArgument("node \"" + name + "\" has an empty or repeated keyword \"" + kwarg.name + "\"");
    }
  }
  OpNode node;
  node.name = std::move(name);
  node.info = FindOp(op);
  node.op = std::move(op);
  node.args = std::move(args);
  node.kwargs = std::move(kwargs);
  node.outputs = std::move(outputs);
  return Finish(std::move(node));
}

const Argument* OpNode::FindArgument(ArgSlot slot) const {
  if (!slot.present()) return nullptr;
  if (slot.position >= 0 && slot.position < static_cast<int>(args.size())) return &args[slot.position];
  for (const NamedArgument& kwarg : kwargs) {
    if (kwarg.name == slot.name) return &kwarg.argument;
  }
  return nullptr;
}

IntList OpNode::FindIntList(ArgSlot slot, size_t n, const IntList& fallback) const {
  const Argument* arg = FindArgument(slot);
  IntList list;
  if (arg != nullptr && arg->Is<IntList>()) list = arg->As<IntList>();
  if (arg != nullptr && arg->Is<int64_t>()) list = {arg->As<int64_t>()};
  if (list.empty()) return fallback;
  if (list.size() == 1) list.assign(n, list[0]);
  return list;
}

}  // namespace kforge::ir
