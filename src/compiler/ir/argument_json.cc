#include "compiler/ir/argument_json.h"

#include <cstdint>
#include <limits>
#include <string>

namespace kforge::ir {
namespace {

Result<std::string> StringFromJson(const Json& json, const char* kind) {
  if (!json.is_string() || json.get<std::string>().empty()) {
    return Status::InvalidArgument(std::string("\"") + kind + "\" must be a non-empty string");
  }
  return json.get<std::string>();
}

Result<Argument> RefFromJson(const Json& object, const GraphBuilder& scope) {
  const Json& name = object.at("node");
  if (!name.is_string()) return Status::InvalidArgument("\"node\" must be a string");
  const Value* value = scope.Find(name.get<std::string>());
  if (value == nullptr) {
    return Status::InvalidArgument("reference to unknown or later value \"" + name.get<std::string>() + "\"");
  }
  int64_t output = 0;
  if (object.contains("index")) {
    ASSIGN_OR_RETURN(output, IntFromJson(object.at("index")));
  }
  if (output < 0 || output >= value->num_outputs()) {
    return Status::InvalidArgument("output index " + std::to_string(output) + " out of range: \"" + value->name +
                                   "\" has " + std::to_string(value->num_outputs()) + " output(s)");
  }
  return Argument{NodeRef{value->id, static_cast<int32_t>(output)}};
}

bool AllOf(const std::vector<Argument>& items, std::initializer_list<ArgKind> kinds) {
  for (const Argument& item : items) {
    bool allowed = false;
    for (ArgKind kind : kinds) allowed = allowed || item.kind() == kind;
    if (!allowed) return false;
  }
  return true;
}

bool AnyOf(const std::vector<Argument>& items, ArgKind kind) {
  for (const Argument& item : items) {
    if (item.kind() == kind) return true;
  }
  return false;
}

// Lists are homogeneous in ATen schemas; ints mixed with floats are a float list (Scalar[]).
Result<Argument> ClassifyList(const std::vector<Argument>& items) {
  if (AllOf(items, {ArgKind::kInt})) {
    IntList list;
    for (const Argument& item : items) list.push_back(item.As<int64_t>());
    return Argument{std::move(list)};
  }
  if (AllOf(items, {ArgKind::kInt, ArgKind::kFloat})) {
    FloatList list;
    for (const Argument& item : items) {
      list.push_back(item.Is<double>() ? item.As<double>() : static_cast<double>(item.As<int64_t>()));
    }
    return Argument{std::move(list)};
  }
  if (AllOf(items, {ArgKind::kBool})) {
    BoolList list;
    for (const Argument& item : items) list.push_back(item.As<bool>());
    return Argument{std::move(list)};
  }
  if (AllOf(items, {ArgKind::kTensor, ArgKind::kNone}) && AnyOf(items, ArgKind::kTensor)) {
    TensorList list;
    for (const Argument& item : items)
      list.push_back(item.Is<NodeRef>() ? std::optional(item.As<NodeRef>()) : std::nullopt);
    return Argument{std::move(list)};
  }
  return Status::InvalidArgument("unsupported list: items must be all ints, floats, bools or tensors");
}

Result<Argument> ListFromJson(const Json& json, const GraphBuilder& scope) {
  if (!json.is_array()) return Status::InvalidArgument("\"list\" must be an array");
  std::vector<Argument> items;
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i].is_object() && json[i].contains("list")) {
      return Status::InvalidArgument("list item " + std::to_string(i) + " is a nested list");
    }
    Result<Argument> item = ArgumentFromJson(json[i], scope);
    if (!item.ok()) return item.status().WithContext("list item " + std::to_string(i));
    items.push_back(std::move(item).value());
  }
  return ClassifyList(items);
}

Result<Argument> ImmediateFromJson(const std::string& key, const Json& payload, const GraphBuilder& scope) {
  if (key == "int") {
    ASSIGN_OR_RETURN(int64_t value, IntFromJson(payload));
    return Argument{value};
  }
  if (key == "float") {
    ASSIGN_OR_RETURN(double value, FloatFromJson(payload));
    return Argument{value};
  }
  if (key == "bool") {
    if (!payload.is_boolean()) return Status::InvalidArgument("\"bool\" must be true or false");
    return Argument{payload.get<bool>()};
  }
  if (key == "none") return Argument{NoneArg{}};
  if (key == "list") return ListFromJson(payload, scope);
  if (key == "str") {
    if (!payload.is_string()) return Status::InvalidArgument("\"str\" must be a string");
    return Argument{payload.get<std::string>()};
  }
  if (key == "dtype") {
    std::optional<DType> dtype = payload.is_string() ? ParseDType(payload.get<std::string>()) : std::nullopt;
    if (!dtype) return Status::InvalidArgument("unknown dtype " + JsonSnippet(payload));
    return Argument{*dtype};
  }
  if (key != "device" && key != "layout" && key != "memory_format") {
    return Status::InvalidArgument("unknown argument kind \"" + key + "\"");
  }
  ASSIGN_OR_RETURN(std::string name, StringFromJson(payload, key.c_str()));
  if (key == "device") return Argument{DeviceArg{name}};
  if (key == "layout") return Argument{LayoutArg{name}};
  return Argument{MemoryFormatArg{name}};
}

}  // namespace

std::string JsonSnippet(const Json& json) {
  constexpr size_t kMaxChars = 80;
  std::string text = json.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > kMaxChars) text = text.substr(0, kMaxChars) + "...";
  return text;
}

Result<int64_t> IntFromJson(const Json& json) {
  if (!json.is_number_integer()) return Status::InvalidArgument("expected an integer, got " + JsonSnippet(json));
  if (json.is_number_unsigned() && json.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Status::InvalidArgument("integer " + JsonSnippet(json) + " does not fit int64");
  }
  return json.get<int64_t>();
}

Result<double> FloatFromJson(const Json& json) {
  if (json.is_number()) return json.get<double>();
  if (json == "inf") return std::numeric_limits<double>::infinity();
  if (json == "-inf") return -std::numeric_limits<double>::infinity();
  if (json == "nan") return std::numeric_limits<double>::quiet_NaN();
  return Status::InvalidArgument("expected a number or \"inf\", \"-inf\", \"nan\", got " + JsonSnippet(json));
}

Result<Argument> ArgumentFromJson(const Json& json, const GraphBuilder& scope) {
  if (!json.is_object() || json.empty()) return Status::InvalidArgument("an argument must be a non-empty object");
  if (json.contains("node")) {
    if (json.size() > (json.contains("index") ? 2u : 1u)) {
      return Status::InvalidArgument("a node reference has only \"node\" and \"index\"");
    }
    return RefFromJson(json, scope);
  }
  if (json.size() != 1)
    return Status::InvalidArgument("an argument must have exactly one kind, got " + JsonSnippet(json));
  return ImmediateFromJson(json.begin().key(), json.begin().value(), scope);
}

}  // namespace kforge::ir
