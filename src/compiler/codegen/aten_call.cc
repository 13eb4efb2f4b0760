#include "compiler/codegen/aten_call.h"

#include <type_traits>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "compiler/codegen/python_names.h"
#include "compiler/ir/op_registry.h"
#include "compiler/passes/attention.h"
#include "compiler/passes/recurrence.h"

namespace kforge::codegen {
namespace {

std::string Quote(const std::string& text) { return "\"" + text + "\""; }

std::string PythonArgument(const ir::Argument& arg, const ValueNamer& name) {
  return std::visit(
      [&name](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, ir::NodeRef>) return name(v);
        else if constexpr (std::is_same_v<T, int64_t>) return std::to_string(v);
        else if constexpr (std::is_same_v<T, double>) return FloatLiteral(v);
        else if constexpr (std::is_same_v<T, bool>) return v ? "True" : "False";
        else if constexpr (std::is_same_v<T, ir::NoneArg>) return "None";
        else if constexpr (std::is_same_v<T, std::string>) return Quote(v);
        else if constexpr (std::is_same_v<T, ir::DType>) return TorchDType(v);
        else if constexpr (std::is_same_v<T, ir::DeviceArg>) return "device";
        else if constexpr (std::is_same_v<T, ir::LayoutArg>) return "torch." + v.name;
        else if constexpr (std::is_same_v<T, ir::MemoryFormatArg>) return "torch." + v.name;
        else if constexpr (std::is_same_v<T, ir::IntList>) return fmt::format("[{}]", fmt::join(v, ", "));
        else if constexpr (std::is_same_v<T, ir::FloatList>) {
          std::vector<std::string> items;
          for (double d : v) items.push_back(FloatLiteral(d));
          return fmt::format("[{}]", fmt::join(items, ", "));
        } else if constexpr (std::is_same_v<T, ir::BoolList>) {
          std::vector<std::string> items;
          for (bool b : v) items.push_back(b ? "True" : "False");
          return fmt::format("[{}]", fmt::join(items, ", "));
        } else {
          std::vector<std::string> items;
          for (const auto& ref : v) items.push_back(ref ? name(*ref) : "None");
          return fmt::format("[{}]", fmt::join(items, ", "));
        }
      },
      arg.value);
}

// kforge.attention has no ATen operator: the same computation written with torch (matmul,
// softmax, matmul), for a group whose kernel could not be emitted (library compute, as any
// fallback).
std::string AttentionCallLine(const ir::OpNode& op, const ValueNamer& name) {
  const passes::AttentionAttributes attributes = passes::AttentionAttributes::Of(op);
  std::string q = PythonArgument(op.args[0], name), k = PythonArgument(op.args[1], name);
  std::string v = PythonArgument(op.args[2], name);
  std::string scores = fmt::format("(torch.matmul({}, {}.transpose(-2, -1)) * {})", q, k, FloatLiteral(attributes.scale));
  if (op.args.size() > 3 && !op.args[3].Is<ir::NoneArg>()) scores = fmt::format("({} + {})", scores, PythonArgument(op.args[3], name));
  if (attributes.causal) {
    scores = fmt::format("{}.masked_fill(torch.ones({}.shape[-2], {}.shape[-2], dtype=torch.bool, device={}.device).triu({}), "
                         "float(\"-inf\"))",
                         scores, q, k, q, *attributes.causal + 1);
  }
  std::string probabilities = fmt::format("torch.softmax({}, -1)", scores);
  if (attributes.zero_empty_rows) probabilities = fmt::format("torch.nan_to_num({}, nan=0.0)", probabilities);
  return fmt::format("{} = torch.matmul({}, {})", name(op.ref(0)), probabilities, v);
}

// kforge.rnn_scan has no ATen operator: the same one-layer walk through ATen's own recurrent op,
// whose input projection is made the identity (an identity matrix and zero bias: exact in fp32),
// since gx is already projected; over gx's steps in time-major order, so that the output is the
// scan's contiguous [T, B, H].
std::string ScanCallLine(const ir::OpNode& op, const ValueNamer& name) {
  const passes::RecurrenceAttributes attributes = passes::RecurrenceAttributes::Of(op);
  const ir::TensorType& out = op.outputs[0];
  const int64_t gates = attributes.gates() * out.shape[2];
  const std::string gx = PythonArgument(op.args[0], name), w_hh = PythonArgument(op.args[1], name);
  const std::string h0 = PythonArgument(op.args[3], name);
  const bool bias = op.args[2].Is<ir::NodeRef>();
  std::string sequence = attributes.batch_first ? fmt::format("{}.view({}).transpose(0, 1)", gx, ShapeTuple({out.shape[1], out.shape[0], gates}))
                                                : fmt::format("{}.view({})", gx, ShapeTuple({out.shape[0], out.shape[1], gates}));
  if (attributes.reverse) sequence += ".flip(0)";
  const std::string eye = fmt::format("torch.eye({}, dtype={}.dtype, device={}.device)", gates, gx, gx);
  std::string params = fmt::format("[{}, {}", eye, w_hh);
  if (bias) params += fmt::format(", torch.zeros({}, dtype={}.dtype, device={}.device), {}", gates, gx, gx, PythonArgument(op.args[2], name));
  params += "]";
  const std::string hx = attributes.has_cell_state() ? fmt::format("[{}[None], {}[None]]", h0, PythonArgument(op.args[4], name))
                                                     : fmt::format("{}[None]", h0);
  const std::string call = fmt::format("torch.ops.aten.{}.input({}, {}, {}, {}, 1, 0.0, False, False, False)", attributes.cell,
                                       sequence, hx, params, bias ? "True" : "False");
  const std::string flip = attributes.reverse ? ".flip(0)" : "";
  std::vector<std::string> results;
  for (int32_t i = 0; i < op.num_outputs(); ++i) results.push_back(name(op.ref(i)));
  const std::string unpack = attributes.has_cell_state() ? fmt::format("(lambda o, h, c: (o{}, h[0], c[0]))", flip)
                                                         : fmt::format("(lambda o, h: (o{}, h[0]))", flip);
  return fmt::format("{} = {}(*{})", fmt::join(results, ", "), unpack, call);
}

}  // namespace

std::string AtenCallLine(const ir::OpNode& op, const ValueNamer& name) {
  if (op.op == ir::kAttentionOp) return AttentionCallLine(op, name);
  if (op.op == ir::kRnnScanOp) return ScanCallLine(op, name);
  std::vector<std::string> args;
  for (const ir::Argument& arg : op.args) {
    // A number the compiler inlined into a pointwise op's tensor slot goes back as a 0-d tensor.
    bool tensor_slot = op.op_kind() == ir::OpKind::kPointwise && op.info != nullptr &&
                       static_cast<int>(args.size()) < op.info->tensor_inputs;
    bool number = arg.Is<double>() || arg.Is<int64_t>();
    std::string text = PythonArgument(arg, name);
    args.push_back(tensor_slot && number ? fmt::format("torch.full((), {}, device=device)", text) : text);
  }
  for (const ir::NamedArgument& kwarg : op.kwargs) args.push_back(kwarg.name + "=" + PythonArgument(kwarg.argument, name));
  std::string call = fmt::format("torch.ops.{}({})", op.op, fmt::join(args, ", "));
  std::vector<std::string> results;
  for (int32_t i = 0; i < op.num_outputs(); ++i) results.push_back(name(op.ref(i)));
  return results.empty() ? call : fmt::format("{} = {}", fmt::join(results, ", "), call);
}

}  // namespace kforge::codegen
