#include "compiler/ir/printer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compiler/ir/op_registry.h"

namespace kforge::ir {
namespace {

std::string PrintString(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

template <typename T, typename PrintItem>
std::string PrintList(const std::vector<T>& items, PrintItem print_item) {
  std::vector<std::string> parts;
  for (const T& item : items) parts.push_back(print_item(item));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string PrintCall(const Graph& graph, const OpNode& node) {
  std::vector<std::string> parts;
  for (const Argument& arg : node.args) parts.push_back(PrintArgument(graph, arg));
  for (const NamedArgument& kwarg : node.kwargs)
    parts.push_back(kwarg.name + "=" + PrintArgument(graph, kwarg.argument));
  return fmt::format("{}({})", node.op, fmt::join(parts, ", "));
}

std::string PrintTypes(const Value& value) {
  if (value.num_outputs() == 1) return value.type().ToString();  // zero outputs print as "()"
  std::vector<std::string> types;
  for (const TensorType& type : value.outputs) types.push_back(type.ToString());
  return fmt::format("({})", fmt::join(types, ", "));
}

// The line of a graph input, parameter, buffer or constant: "parameter %w: f32[4] = linear.weight".
std::string PrintLeaf(const Value& value) {
  std::string head = fmt::format("%{}: {}", value.name, value.type().ToString());
  if (const auto* input = value.TryAs<InputValue>()) {
    return fmt::format("{:<9} {}{}", "input", head, input->python_number ? " (a Python number)" : "");
  }
  if (const auto* parameter = value.TryAs<ParameterValue>()) {
    return fmt::format("{:<9} {} = {}", ToString(parameter->parameter_kind), head, parameter->target);
  }
  const auto& constant = value.As<ConstantValue>();
  std::string line = fmt::format("{:<9} {} = {}", "constant", head, constant.target);
  if (constant.scalar) line += " (" + PrintFloat(*constant.scalar) + ")";
  return line;
}

}  // namespace

std::string PrintFloat(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string PrintRef(const Graph& graph, NodeRef ref) {
  if (graph.TypeOf(ref) == nullptr) return fmt::format("%<dangling #{}.{}>", ref.value, ref.output);
  const Value& value = graph.value(ref.value);
  std::string text = "%" + value.name;
  if (value.num_outputs() > 1) text += "." + std::to_string(ref.output);
  return text;
}

std::string PrintArgument(const Graph& graph, const Argument& argument) {
  const ArgumentValue& v = argument.value;
  switch (argument.kind()) {
    case ArgKind::kTensor: return PrintRef(graph, std::get<NodeRef>(v));
    case ArgKind::kInt: return std::to_string(std::get<int64_t>(v));
    case ArgKind::kFloat: return PrintFloat(std::get<double>(v));
    case ArgKind::kBool: return std::get<bool>(v) ? "true" : "false";
    case ArgKind::kNone: return "None";
    case ArgKind::kString: return PrintString(std::get<std::string>(v));
    case ArgKind::kDType: return ToString(std::get<DType>(v));
    case ArgKind::kDevice: return std::get<DeviceArg>(v).name;
    case ArgKind::kLayout: return std::get<LayoutArg>(v).name;
    case ArgKind::kMemoryFormat: return std::get<MemoryFormatArg>(v).name;
    case ArgKind::kIntList: return PrintList(std::get<IntList>(v), [](int64_t x) { return std::to_string(x); });
    case ArgKind::kFloatList: return PrintList(std::get<FloatList>(v), PrintFloat);
    case ArgKind::kBoolList: return PrintList(std::get<BoolList>(v), [](bool x) { return x ? "true" : "false"; });
    case ArgKind::kTensorList:
      return PrintList(std::get<TensorList>(v), [&](const std::optional<NodeRef>& ref) {
        return ref ? PrintRef(graph, *ref) : std::string("None");
      });
  }
  return "?";
}

std::string PrintGraph(const Graph& graph) {
  // Op lines get their category as a comment, aligned past the longest op line up to a cap, so
  // that one very long call does not push every comment off the screen.
  std::vector<std::pair<std::string, std::string>> lines;  // text, comment
  for (const Value& value : graph) {
    const OpNode* node = value.TryAs<OpNode>();
    if (node == nullptr) {
      lines.emplace_back(PrintLeaf(value), "");
      continue;
    }
    lines.emplace_back(fmt::format("%{}: {} = {}", value.name, PrintTypes(value), PrintCall(graph, *node)),
                       ToString(node->op_kind()));
  }
  size_t width = 0;
  constexpr size_t kMaxCommentColumn = 88;
  for (const auto& [text, comment] : lines) {
    if (!comment.empty() && text.size() <= kMaxCommentColumn) width = std::max(width, text.size());
  }
  std::string out = "graph " + graph.name() + "\n";
  for (const auto& [text, comment] : lines) {
    out += "  " + (comment.empty() ? text : fmt::format("{:<{}}   # {}", text, width, comment)) + "\n";
  }
  for (const Mutation& mutation : graph.mutations()) {
    out += fmt::format("  {:<9} {} <- {}\n", "mutate", mutation.target, PrintRef(graph, mutation.value));
  }
  std::vector<std::string> outputs;
  for (NodeRef ref : graph.outputs()) outputs.push_back(PrintRef(graph, ref));
  return out + fmt::format("  return {}\n", fmt::join(outputs, ", "));
}

}  // namespace kforge::ir
