#include "compiler/ir/import_graph.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/argument_json.h"
#include "compiler/ir/graph_builder.h"
#include "compiler/ir/verifier.h"

namespace kforge::ir {
namespace {

// "nodes[2] \"addmm\"", "mutations[0] \"bn.running_mean\"" (a mutation by its target), or
// "nodes[2]" while the name is not known.
std::string Where(const char* section, size_t index, const Json& entry) {
  std::string where = std::string(section) + "[" + std::to_string(index) + "]";
  const Json& name = JsonField(entry, JsonField(entry, "name").is_null() ? "target" : "name");
  if (name.is_string()) where += " \"" + name.get<std::string>() + "\"";
  return where;
}

Result<std::string> RequiredString(const Json& object, const char* key) {
  const Json& field = JsonField(object, key);
  if (!field.is_string()) return Status::InvalidArgument(std::string("\"") + key + "\" must be a string");
  return field.get<std::string>();
}

// The array at `key`; a missing optional section reads as empty.
Result<const Json*> ArrayField(const Json& object, const char* key, bool required) {
  static const Json kEmpty = Json::array();
  const Json& field = JsonField(object, key);
  if (field.is_null() && !required) return &kEmpty;
  if (!field.is_array()) return Status::InvalidArgument(std::string("\"") + key + "\" must be an array");
  return &field;
}

Result<std::vector<int64_t>> IntArray(const Json& object, const char* key) {
  ASSIGN_OR_RETURN(const Json* array, ArrayField(object, key, /*required=*/true));
  std::vector<int64_t> values;
  for (const Json& item : *array) {
    Result<int64_t> value = IntFromJson(item);
    if (!value.ok()) return value.status().WithContext(key);
    values.push_back(*value);
  }
  return values;
}

// {"shape": [...], "dtype": "float32", "stride": [...]}; a missing stride means contiguous.
Result<TensorType> TypeFromJson(const Json& object) {
  if (!object.is_object()) return Status::InvalidArgument("a tensor type must be an object");
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, IntArray(object, "shape"));
  ASSIGN_OR_RETURN(std::string dtype_name, RequiredString(object, "dtype"));
  std::optional<DType> dtype = ParseDType(dtype_name);
  if (!dtype) return Status::InvalidArgument("unknown dtype \"" + dtype_name + "\"");
  std::vector<int64_t> stride = ContiguousStrides(shape);
  if (!JsonField(object, "stride").is_null()) {
    ASSIGN_OR_RETURN(stride, IntArray(object, "stride"));
  }
  return TensorType::Make(std::move(shape), *dtype, std::move(stride));
}

Status ImportInput(const Json& entry, std::set<int64_t>& indices, GraphBuilder& builder) {
  ASSIGN_OR_RETURN(std::string name, RequiredString(entry, "name"));
  Result<int64_t> index = IntFromJson(JsonField(entry, "index"));
  if (!index.ok()) return index.status().WithContext("index");
  if (!indices.insert(*index).second) return Status::InvalidArgument("index " + std::to_string(*index) + " repeated");
  ASSIGN_OR_RETURN(TensorType type, TypeFromJson(entry));
  const Json& number = JsonField(entry, "python_number");
  if (!number.is_null() && !number.is_boolean()) return Status::InvalidArgument("python_number is not a boolean");
  return builder.AddInput(std::move(name), *index, std::move(type), number.is_boolean() && number.get<bool>()).status();
}

Result<ParameterKind> ParameterKindFromJson(const Json& entry) {
  ASSIGN_OR_RETURN(std::string kind, RequiredString(entry, "kind"));
  if (kind == "parameter") return ParameterKind::kParameter;
  if (kind == "buffer") return ParameterKind::kBuffer;
  return Status::InvalidArgument("\"kind\" must be \"parameter\" or \"buffer\", got \"" + kind + "\"");
}

Status ImportParameter(const Json& entry, GraphBuilder& builder) {
  ASSIGN_OR_RETURN(std::string name, RequiredString(entry, "name"));
  ASSIGN_OR_RETURN(std::string target, RequiredString(entry, "target"));
  ASSIGN_OR_RETURN(ParameterKind kind, ParameterKindFromJson(entry));
  ASSIGN_OR_RETURN(TensorType type, TypeFromJson(entry));
  return builder.AddParameter(std::move(name), std::move(target), kind, std::move(type)).status();
}

// A 0-d constant's value: a number, "inf"/"-inf"/"nan", or a bool; absent when not given.
Result<std::optional<double>> ScalarFromJson(const Json& value) {
  if (value.is_null()) return std::optional<double>();
  if (value.is_boolean()) return std::optional<double>(value.get<bool>() ? 1.0 : 0.0);
  Result<double> number = FloatFromJson(value);
  if (!number.ok()) return number.status().WithContext("value");
  return std::optional<double>(*number);
}

Status ImportConstant(const Json& entry, GraphBuilder& builder) {
  ASSIGN_OR_RETURN(std::string name, RequiredString(entry, "name"));
  ASSIGN_OR_RETURN(std::string target, RequiredString(entry, "target"));
  const Json& kind = JsonField(entry, "kind");
  if (!kind.is_null() && kind != "constant") return Status::InvalidArgument("\"kind\" must be \"constant\"");
  ASSIGN_OR_RETURN(TensorType type, TypeFromJson(entry));
  ASSIGN_OR_RETURN(std::optional<double> scalar, ScalarFromJson(JsonField(entry, "value")));
  return builder.AddConstant(std::move(name), std::move(target), std::move(type), scalar).status();
}

Result<std::vector<Argument>> ArgsFromJson(const Json& entry, const GraphBuilder& builder) {
  ASSIGN_OR_RETURN(const Json* array, ArrayField(entry, "args", /*required=*/true));
  std::vector<Argument> args;
  for (size_t i = 0; i < array->size(); ++i) {
    Result<Argument> arg = ArgumentFromJson((*array)[i], builder);
    if (!arg.ok()) return arg.status().WithContext("args[" + std::to_string(i) + "]");
    args.push_back(std::move(arg).value());
  }
  return args;
}

Result<std::vector<NamedArgument>> KwargsFromJson(const Json& entry, const GraphBuilder& builder) {
  const Json& object = JsonField(entry, "kwargs");
  std::vector<NamedArgument> kwargs;
  if (object.is_null()) return kwargs;
  if (!object.is_object()) return Status::InvalidArgument("\"kwargs\" must be an object");
  for (auto it = object.begin(); it != object.end(); ++it) {
    Result<Argument> arg = ArgumentFromJson(it.value(), builder);
    if (!arg.ok()) return arg.status().WithContext("kwargs." + it.key());
    kwargs.push_back(NamedArgument{it.key(), std::move(arg).value()});
  }
  return kwargs;
}

Result<std::vector<TensorType>> OutputTypesFromJson(const Json& entry) {
  ASSIGN_OR_RETURN(const Json* array, ArrayField(entry, "outputs", /*required=*/true));
  std::vector<TensorType> types;
  for (size_t i = 0; i < array->size(); ++i) {
    Result<TensorType> type = TypeFromJson((*array)[i]);
    if (!type.ok()) return type.status().WithContext("outputs[" + std::to_string(i) + "]");
    types.push_back(std::move(type).value());
  }
  return types;
}

Status ImportNode(const Json& entry, GraphBuilder& builder) {
  ASSIGN_OR_RETURN(std::string name, RequiredString(entry, "name"));
  ASSIGN_OR_RETURN(std::string op, RequiredString(entry, "op"));
  ASSIGN_OR_RETURN(std::vector<Argument> args, ArgsFromJson(entry, builder));
  ASSIGN_OR_RETURN(std::vector<NamedArgument> kwargs, KwargsFromJson(entry, builder));
  ASSIGN_OR_RETURN(std::vector<TensorType> outputs, OutputTypesFromJson(entry));
  return builder.AddOp(std::move(name), std::move(op), std::move(args), std::move(kwargs), std::move(outputs)).status();
}

// {"node": NAME} or {"node": NAME, "index": I}: a reference to an earlier value's output.
Result<NodeRef> RefFromJson(const Json& entry, const GraphBuilder& builder) {
  if (!entry.is_object() || !entry.contains("node")) return Status::InvalidArgument("must be {\"node\": NAME}");
  ASSIGN_OR_RETURN(Argument ref, ArgumentFromJson(entry, builder));
  return ref.As<NodeRef>();
}

Status ImportOutput(const Json& entry, GraphBuilder& builder) {
  ASSIGN_OR_RETURN(NodeRef ref, RefFromJson(entry, builder));
  builder.AddOutput(ref);
  return Status::Ok();
}

// {"target": "bn.running_mean", "value": {"node": NAME, "index": I}}: a buffer or parameter mutation.
Status ImportMutation(const Json& entry, GraphBuilder& builder) {
  ASSIGN_OR_RETURN(std::string target, RequiredString(entry, "target"));
  Result<NodeRef> value = RefFromJson(JsonField(entry, "value"), builder);
  if (!value.ok()) return value.status().WithContext("value");
  return builder.AddMutation(std::move(target), *value);
}

// Runs `import` on every entry of the section, naming the entry in any error.
template <typename ImportFn>
Status ImportSection(const Json& document, const char* section, bool required, ImportFn import) {
  Result<const Json*> array = ArrayField(document, section, required);
  if (!array.ok()) return array.status();
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const Json& entry = (**array)[i];
    Status status = entry.is_object() ? import(entry) : Status::InvalidArgument("must be an object");
    if (!status.ok()) return status.WithContext(Where(section, i, entry));
  }
  return Status::Ok();
}

Status CheckHeader(const Json& document) {
  if (!document.is_object()) return Status::InvalidArgument("a graph document must be a JSON object");
  const Json& format = JsonField(document, "format");
  if (format != kGraphFormat) {
    return Status::InvalidArgument("unsupported graph format " + JsonSnippet(format) + " (expected \"" + kGraphFormat +
                                   "\")");
  }
  if (!JsonField(document, "task").is_string()) return Status::InvalidArgument("\"task\" must be a string");
  return Status::Ok();
}

}  // namespace

Result<Graph> ImportGraph(const Json& document) {
  RETURN_IF_ERROR(CheckHeader(document));
  GraphBuilder builder(JsonField(document, "task").get<std::string>());
  std::set<int64_t> input_indices;
  RETURN_IF_ERROR(ImportSection(document, "inputs", true,
                                [&](const Json& entry) { return ImportInput(entry, input_indices, builder); }));
  RETURN_IF_ERROR(
      ImportSection(document, "parameters", false, [&](const Json& entry) { return ImportParameter(entry, builder); }));
  RETURN_IF_ERROR(
      ImportSection(document, "constants", false, [&](const Json& entry) { return ImportConstant(entry, builder); }));
  RETURN_IF_ERROR(
      ImportSection(document, "nodes", true, [&](const Json& entry) { return ImportNode(entry, builder); }));
  RETURN_IF_ERROR(
      ImportSection(document, "outputs", true, [&](const Json& entry) { return ImportOutput(entry, builder); }));
  RETURN_IF_ERROR(
      ImportSection(document, "mutations", false, [&](const Json& entry) { return ImportMutation(entry, builder); }));
  Graph graph = std::move(builder).Build();
  if (graph.outputs().empty()) return Status::InvalidArgument("\"outputs\" is empty: the graph returns nothing");
  RETURN_IF_ERROR(VerifyGraph(graph));
  return graph;
}

Result<Graph> ImportGraphText(const std::string& text, const std::string& what) {
  ASSIGN_OR_RETURN(Json document, ParseJson(text, what));
  Result<Graph> graph = ImportGraph(document);
  if (!graph.ok()) return graph.status().WithContext(what);
  return graph;
}

}  // namespace kforge::ir
