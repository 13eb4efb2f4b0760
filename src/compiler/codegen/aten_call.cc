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

// kforge.rnn_scan has no ATen operator: the same lanes as ATen's own recurrent op over gx's steps
// in time-major order, whose first input projection is a selection (an identity matrix, or for two
// directions of gx concatenated, its halves; zero biases: exact in fp32), since gx is already
// projected. Stacked lanes are its layers, two directions a bidirectional layer; its outputs are
// the scan's: the sequence [T, B, D * H] and the final states [N, B, H].
std::string ScanCallLine(const ir::OpNode& op, const ValueNamer& name) {
  const passes::RecurrenceAttributes attributes = passes::RecurrenceAttributes::Of(op);
  Result<passes::ScanOperands> operands = passes::ScanOperands::Of(op);
  if (!operands.ok()) return fmt::format("raise ValueError(\"%{}: operands of no recurrent scan\")", op.name);
  const ir::TensorType& out = op.outputs[0];
  const int64_t steps = out.shape[0], batch = out.shape[1], hidden = out.shape[2] / (attributes.directions ? 2 : 1);
  const int64_t gates = attributes.gates() * hidden;
  const std::string gx = name(operands->gx[0]);
  const auto sequence = [&](ir::NodeRef ref) {
    return attributes.batch_first ? fmt::format("{}.view({}).transpose(0, 1)", name(ref), ShapeTuple({batch, steps, gates}))
                                  : fmt::format("{}.view({})", name(ref), ShapeTuple({steps, batch, gates}));
  };
  const std::string like = fmt::format("dtype={}.dtype, device={}.device", gx, gx);
  const std::string zeros = fmt::format("torch.zeros({}, {})", gates, like);
  std::vector<std::string> params;
  std::string input;
  const auto add_lane = [&](const std::string& w_ih, const std::string& b_ih, size_t lane) {
    params.push_back(w_ih);
    params.push_back(name(operands->w_hh[lane]));
    if (operands->has_biases()) {
      params.push_back(b_ih);
      params.push_back(name(operands->b_hh[lane]));
    }
  };
  if (attributes.directions) {
    input = fmt::format("torch.cat([{}, {}], -1)", sequence(operands->gx[0]), sequence(operands->gx[1]));
    const std::string half = fmt::format("torch.eye({}, {}, {})", gates, 2 * gates, like);
    add_lane(half, zeros, 0);
    add_lane(fmt::format("{}.roll({}, 1)", half, gates), zeros, 1);
  } else {
    input = sequence(operands->gx[0]);
    add_lane(fmt::format("torch.eye({}, {})", gates, like), zeros, 0);
    for (size_t lane = 1; lane < operands->w_hh.size(); ++lane) {
      add_lane(name(operands->w_ih[lane - 1]), operands->has_biases() ? name(operands->b_ih[lane - 1]) : "", lane);
    }
  }
  const std::string hx = attributes.has_cell_state() ? fmt::format("[{}, {}]", name(operands->h0), name(*operands->c0))
                                                     : name(operands->h0);
  const int64_t layers = attributes.directions ? 1 : operands->lanes();
  std::vector<std::string> results;
  for (int32_t i = 0; i < op.num_outputs(); ++i) results.push_back(name(op.ref(i)));
  return fmt::format("{} = torch.ops.aten.{}.input({}, {}, [{}], {}, {}, 0.0, False, {}, False)", fmt::join(results, ", "),
                     attributes.cell, input, hx, fmt::join(params, ", "), operands->has_biases() ? "True" : "False", layers,
                     attributes.directions ? "True" : "False");
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
