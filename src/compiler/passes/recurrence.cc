#include "compiler/passes/recurrence.h"

#include <optional>
#include <utility>

#include <fmt/format.h>

#include "compiler/ir/op_registry.h"
#include "compiler/ir/visitor.h"

namespace kforge::passes {
namespace {

using ir::NodeRef;

// What a captured recurrent layer asks for, read off its node:
//   lstm.input(input, [h0, c0], params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
//   gru.input / rnn_tanh.input / rnn_relu.input(input, h0, params, ...the same)
struct Layers {
  std::string cell;
  NodeRef input;
  NodeRef h0;
  std::optional<NodeRef> c0;
  std::vector<NodeRef> params;  // per layer, per direction: w_ih, w_hh[, b_ih, b_hh]
  bool has_biases = true;
  int64_t num_layers = 1;
  int directions = 1;
  bool batch_first = false;
  int64_t steps = 0, batch = 0, hidden = 0;

  int params_per_layer() const { return has_biases ? 4 : 2; }
};

std::optional<std::string> CellOf(const std::string& op) {
  for (const char* cell : {"lstm", "gru", "rnn_tanh", "rnn_relu"}) {
    if (op == fmt::format("aten.{}.input", cell)) return std::string(cell);
  }
  return std::nullopt;
}

// The layers of `node`, or why they stay a library call.
Result<Layers> ReadLayers(const ir::Graph& graph, const ir::OpNode& node, const std::string& cell) {
  auto unsupported = [&node](const std::string& why) {
    return Status::InvalidArgument(fmt::format("%{}: {}", node.name, why));
  };
  if (node.args.size() != 9) return unsupported("not the (input, hx, params, ...) overload");
  Layers layers;
  layers.cell = cell;
  if (!node.args[0].Is<NodeRef>()) return unsupported("no input tensor");
  layers.input = node.args[0].As<NodeRef>();
  if (cell == "lstm") {
    if (!node.args[1].Is<ir::TensorList>() || node.args[1].As<ir::TensorList>().size() != 2) return unsupported("hx is not (h0, c0)");
    const ir::TensorList& hx = node.args[1].As<ir::TensorList>();
    if (!hx[0] || !hx[1]) return unsupported("a missing initial state");
    layers.h0 = *hx[0];
    layers.c0 = *hx[1];
  } else {
    if (!node.args[1].Is<NodeRef>()) return unsupported("no initial state tensor");
    layers.h0 = node.args[1].As<NodeRef>();
  }
  if (!node.args[2].Is<ir::TensorList>()) return unsupported("no parameter list");
  for (const std::optional<NodeRef>& param : node.args[2].As<ir::TensorList>()) {
    if (!param) return unsupported("a missing parameter");
    layers.params.push_back(*param);
  }
  if (!node.args[3].Is<bool>() || !node.args[4].Is<int64_t>() || !node.args[7].Is<bool>() || !node.args[8].Is<bool>()) {
    return unsupported("unexpected argument types");
  }
  layers.has_biases = node.args[3].As<bool>();
  layers.num_layers = node.args[4].As<int64_t>();
  layers.directions = node.args[7].As<bool>() ? 2 : 1;
  layers.batch_first = node.args[8].As<bool>();
  const double dropout = node.args[5].Is<double>() ? node.args[5].As<double>() : 0.0;
  const bool train = node.args[6].Is<bool>() && node.args[6].As<bool>();
  if (dropout != 0.0 && train && layers.num_layers > 1) return unsupported("dropout between layers in training");
  if (static_cast<int64_t>(layers.params.size()) != layers.num_layers * layers.directions * layers.params_per_layer()) {
    return unsupported("a parameter list of another form (projections)");
  }
  const ir::TensorType& input = *graph.TypeOf(layers.input);
  const ir::TensorType& h0 = *graph.TypeOf(layers.h0);
  if (input.rank() != 3 || h0.rank() != 3) return unsupported("unbatched input");
  if (input.dtype != ir::DType::kFloat32 || h0.dtype != ir::DType::kFloat32) return unsupported("not fp32");
  layers.steps = input.shape[layers.batch_first ? 1 : 0];
  layers.batch = input.shape[layers.batch_first ? 0 : 1];
  layers.hidden = h0.shape[2];
  if (h0.shape[0] != layers.num_layers * layers.directions || h0.shape[1] != layers.batch) return unsupported("hx of another shape");
  for (const NodeRef& param : layers.params) {
    if (graph.TypeOf(param)->dtype != ir::DType::kFloat32) return unsupported("non-fp32 parameters");
  }
  return layers;
}

// [d0, d1, d2] viewed [d1, d0, d2]: the same memory.
Result<ir::TensorType> SwapFirstDims(const ir::TensorType& type) {
  return ir::TensorType::Make({type.shape[1], type.shape[0], type.shape[2]}, type.dtype,
                              {type.stride[1], type.stride[0], type.stride[2]});
}

bool SameLayout(const ir::TensorType& a, const ir::TensorType& b) {
  return a.shape == b.shape && a.dtype == b.dtype && ((a.is_contiguous() && b.is_contiguous()) || a.stride == b.stride);
}

// Whether the lowering's results have the captured types: the ops after the layer were traced
// with those, and kernels read through their strides. The sequence comes out time-major, permuted
// for a batch-first layer; h_n and c_n are contiguous.
bool LoweredTypesMatch(const ir::OpNode& node, const Layers& layers) {
  const int64_t t = layers.steps, b = layers.batch, features = layers.directions * layers.hidden;
  Result<ir::TensorType> sequence = ir::TensorType::Contiguous({t, b, features}, ir::DType::kFloat32);
  if (sequence.ok() && layers.batch_first) sequence = SwapFirstDims(*sequence);
  Result<ir::TensorType> state =
      ir::TensorType::Contiguous({layers.num_layers * layers.directions, b, layers.hidden}, ir::DType::kFloat32);
  if (!sequence.ok() || !state.ok() || node.num_outputs() != (layers.c0 ? 3 : 2)) return false;
  if (!SameLayout(*sequence, node.outputs[0])) return false;
  for (int32_t i = 1; i < node.num_outputs(); ++i) {
    if (!SameLayout(*state, node.outputs[i])) return false;
  }
  return true;
}

class RecurrenceRewriter : public ir::GraphRewriter {
 protected:
  Status RewriteOp(const ir::OpNode& node) override {
    std::optional<std::string> cell = CellOf(node.op);
    if (!cell) return CopyOp(node);
    Result<Layers> layers = ReadLayers(source(), node, *cell);
    if (!layers.ok() || !Rows(Map(layers->input)) || !LoweredTypesMatch(node, *layers)) return CopyOp(node);
    return Lower(node, *layers);
  }

 private:
  // Whether a [d0, d1, I] input's rows are dense in (d0, d1) order (false) or in (d1, d0) order
  // (true: the permuted time-major output of a batch-first layer lowered before); nullopt when
  // neither, which a GEMM over rows cannot read.
  std::optional<bool> Rows(NodeRef x) {
    const ir::TensorType& type = *builder().TypeOf(x);
    if (type.is_contiguous()) return false;
    Result<ir::TensorType> swapped = SwapFirstDims(type);
    if (swapped.ok() && swapped->is_contiguous()) return true;
    return std::nullopt;
  }

  // x [d0, d1, I] with its dims swapped: a view.
  Result<NodeRef> Swapped(NodeRef x) {
    ASSIGN_OR_RETURN(ir::TensorType swapped, SwapFirstDims(*builder().TypeOf(x)));
    return Add("rnn_swap", "aten.permute.default", {{x}, {ir::IntList{1, 0, 2}}}, swapped);
  }

  Result<NodeRef> Add(const std::string& base, const std::string& op, std::vector<ir::Argument> args, ir::TensorType type) {
    ASSIGN_OR_RETURN(ir::ValueId id, builder().AddOp(builder().FreshName(base), op, std::move(args), {}, {type}));
    return NodeRef{id, 0};
  }

  Result<NodeRef> View(NodeRef x, const ir::Shape& shape) {
    ASSIGN_OR_RETURN(ir::TensorType type, ir::TensorType::Contiguous(shape, builder().TypeOf(x)->dtype));
    return Add("rnn_view", "aten.view.default", {{x}, {ir::IntList(shape)}}, type);
  }

  // Rows [first, first + count) of [L * D, B, H]: the initial states of some lanes (all of them: the tensor).
  Result<NodeRef> StateRows(NodeRef states, int64_t first, int64_t count) {
    const ir::TensorType& type = *builder().TypeOf(states);
    if (first == 0 && count == type.shape[0]) return states;
    ir::Shape shape = type.shape;
    shape[0] = count;
    ASSIGN_OR_RETURN(ir::TensorType rows, ir::TensorType::Make(shape, type.dtype, type.stride));
    return Add("rnn_state", "aten.slice.Tensor", {{states}, {int64_t{0}}, {first}, {first + count}, {int64_t{1}}}, rows);
  }

  Result<NodeRef> Cat(const std::vector<NodeRef>& parts, int64_t dim) {
    if (parts.size() == 1) return parts[0];
    ir::Shape shape = builder().TypeOf(parts[0])->shape;
    ir::TensorList list;
    shape[dim] = 0;
    for (const NodeRef& part : parts) {
      shape[dim] += builder().TypeOf(part)->shape[dim];
      list.push_back(part);
    }
    ASSIGN_OR_RETURN(ir::TensorType type, ir::TensorType::Contiguous(shape, ir::DType::kFloat32));
    return Add("rnn_cat", "aten.cat.default", {{list}, {dim}}, type);
  }

  // Every time step's input projection x @ w_ih^T (+ b_ih): [T * B, G * H].
  Result<NodeRef> InputProjection(NodeRef x, NodeRef w_ih, std::optional<NodeRef> b_ih) {
    const ir::TensorType& in = *builder().TypeOf(x);
    const int64_t rows = in.shape[0] * in.shape[1];
    ASSIGN_OR_RETURN(NodeRef flat, View(x, {rows, in.shape[2]}));
    const ir::TensorType& w = *builder().TypeOf(w_ih);
    ASSIGN_OR_RETURN(ir::TensorType wt_type, ir::TensorType::Make({w.shape[1], w.shape[0]}, w.dtype, {w.stride[1], w.stride[0]}));
    ASSIGN_OR_RETURN(NodeRef wt, Add("rnn_w_ih_t", "aten.permute.default", {{w_ih}, {ir::IntList{1, 0}}}, wt_type));
    ASSIGN_OR_RETURN(ir::TensorType type, ir::TensorType::Contiguous({rows, w.shape[0]}, ir::DType::kFloat32));
    if (b_ih) return Add("rnn_gx", "aten.addmm.default", {{*b_ih}, {flat}, {wt}}, type);
    return Add("rnn_gx", "aten.mm.default", {{flat}, {wt}}, type);
  }

  // Lanes share a scan only where one kernel can read every lane's weights with the same strides.
  bool SameStrides(const std::vector<NodeRef>& weights) {
    for (const NodeRef& w : weights) {
      if (builder().TypeOf(w)->shape != builder().TypeOf(weights[0])->shape ||
          builder().TypeOf(w)->stride != builder().TypeOf(weights[0])->stride) {
        return false;
      }
    }
    return true;
  }

  // The scan of `lanes` (h0 and c0 their rows of the initial states), appended: its output
  // sequence [T, B, D * H] and final states [N, B, H].
  Result<ir::ValueId> AddScan(const ir::OpNode& node, const Layers& layers, const ScanOperands& lanes, bool directions,
                              bool rows_batch_first) {
    const int64_t t = layers.steps, b = layers.batch, h = layers.hidden, n = lanes.lanes();
    const RecurrenceAttributes attributes{.cell = layers.cell, .directions = directions, .batch_first = rows_batch_first};
    ASSIGN_OR_RETURN(ir::TensorType seq_type, ir::TensorType::Contiguous({t, b, (directions ? 2 : 1) * h}, ir::DType::kFloat32));
    ASSIGN_OR_RETURN(ir::TensorType state_type, ir::TensorType::Contiguous({n, b, h}, ir::DType::kFloat32));
    std::vector<ir::TensorType> types = {seq_type, state_type};
    if (lanes.c0) types.push_back(state_type);
    return builder().AddOp(builder().FreshName(node.name + "_scan"), ir::kRnnScanOp, lanes.ToArgs(), attributes.ToKwargs(), types);
  }

  Status Lower(const ir::OpNode& node, const Layers& layers) {
    NodeRef x = Map(layers.input);
    bool rows_batch_first = layers.batch_first;  // how x's rows are ordered (time-major after the first layer)
    if (*Rows(x)) {
      ASSIGN_OR_RETURN(x, Swapped(x));
      rows_batch_first = !rows_batch_first;
    }
    const NodeRef h0 = Map(layers.h0);
    const std::optional<NodeRef> c0 = layers.c0 ? std::optional<NodeRef>(Map(*layers.c0)) : std::nullopt;
    // Parameter i of lane (layer, direction) `index`: w_ih, w_hh, b_ih, b_hh.
    const auto param = [&](int64_t index, int i) { return Map(layers.params[index * layers.params_per_layer() + i]); };
    std::vector<NodeRef> final_h, final_c;
    // The scans, each a run of lanes [first, first + count) (layers, or one layer's directions).
    std::vector<std::pair<int64_t, int64_t>> runs;
    if (layers.directions == 2) {
      for (int64_t layer = 0; layer < layers.num_layers; ++layer) runs.push_back({2 * layer, 2});
    } else {
      for (int64_t first = 0; first < layers.num_layers;) {
        int64_t count = 1;
        while (first + count < layers.num_layers && count < kMaxStackedLayers) {
          std::vector<NodeRef> w_ih, w_hh;
          for (int64_t k = first; k <= first + count; ++k) {
            if (k > first) w_ih.push_back(param(k, 0));
            w_hh.push_back(param(k, 1));
          }
          if (!SameStrides(w_ih) || !SameStrides(w_hh)) break;
          ++count;
        }
        runs.push_back({first, count});
        first += count;
      }
    }
    for (const auto& [first, count] : runs) {
      ScanOperands lanes;
      const bool directions = layers.directions == 2;
      for (int64_t k = first; k < first + count; ++k) {
        if (k == first || directions) {
          std::optional<NodeRef> b_ih;
          if (layers.has_biases) b_ih = param(k, 2);
          ASSIGN_OR_RETURN(NodeRef gx, InputProjection(x, param(k, 0), b_ih));
          lanes.gx.push_back(gx);
        } else {
          lanes.w_ih.push_back(param(k, 0));
          if (layers.has_biases) lanes.b_ih.push_back(param(k, 2));
        }
        lanes.w_hh.push_back(param(k, 1));
        if (layers.has_biases) lanes.b_hh.push_back(param(k, 3));
      }
      ASSIGN_OR_RETURN(lanes.h0, StateRows(h0, first, count));
      if (c0) {
        ASSIGN_OR_RETURN(lanes.c0, StateRows(*c0, first, count));
      }
      ASSIGN_OR_RETURN(ir::ValueId scan, AddScan(node, layers, lanes, directions, rows_batch_first));
      x = {scan, 0};
      rows_batch_first = false;
      final_h.push_back({scan, 1});
      if (c0) final_c.push_back({scan, 2});
    }
    if (layers.batch_first) {
      ASSIGN_OR_RETURN(x, Swapped(x));
    }
    std::vector<NodeRef> replacements = {x};
    ASSIGN_OR_RETURN(NodeRef h_n, Cat(final_h, 0));
    replacements.push_back(h_n);
    if (c0) {
      ASSIGN_OR_RETURN(NodeRef c_n, Cat(final_c, 0));
      replacements.push_back(c_n);
    }
    for (size_t i = 0; i < replacements.size(); ++i) {
      if (!SameLayout(*builder().TypeOf(replacements[i]), node.outputs[i])) {
        return Status::Internal(fmt::format("%{}: output {} lowered as {}, captured as {}", node.name, i,
                                            builder().TypeOf(replacements[i])->ToString(), node.outputs[i].ToString()));
      }
    }
    Replace(node, std::move(replacements));
    return Status::Ok();
  }
};

}  // namespace

int RecurrenceAttributes::gates() const { return cell == "lstm" ? 4 : cell == "gru" ? 3 : 1; }

std::vector<ir::NamedArgument> RecurrenceAttributes::ToKwargs() const {
  return {{"cell", ir::Argument{cell}}, {"directions", ir::Argument{directions}}, {"batch_first", ir::Argument{batch_first}}};
}

RecurrenceAttributes RecurrenceAttributes::Of(const ir::OpNode& node) {
  RecurrenceAttributes attributes;
  if (const ir::Argument* cell = node.FindArgument({-1, "cell"}); cell != nullptr && cell->Is<std::string>()) {
    attributes.cell = cell->As<std::string>();
  }
  if (const ir::Argument* directions = node.FindArgument({-1, "directions"}); directions != nullptr && directions->Is<bool>()) {
    attributes.directions = directions->As<bool>();
  }
  if (const ir::Argument* batch_first = node.FindArgument({-1, "batch_first"}); batch_first != nullptr && batch_first->Is<bool>()) {
    attributes.batch_first = batch_first->As<bool>();
  }
  return attributes;
}

std::vector<ir::Argument> ScanOperands::ToArgs() const {
  const auto list = [](const std::vector<NodeRef>& refs) { return ir::Argument{ir::TensorList(refs.begin(), refs.end())}; };
  return {list(gx), list(w_ih), list(b_ih), list(w_hh), list(b_hh), ir::Argument{h0}, c0 ? ir::Argument{*c0} : ir::Argument{ir::NoneArg{}}};
}

Result<ScanOperands> ScanOperands::Of(const ir::OpNode& node) {
  auto invalid = [&node](const std::string& why) { return Status::InvalidArgument(fmt::format("%{}: {}", node.name, why)); };
  if (node.args.size() != 7 || !node.args[5].Is<NodeRef>()) return invalid("a scan without ([gx], [w_ih], [b_ih], [w_hh], [b_hh], h0, c0)");
  ScanOperands operands;
  std::vector<NodeRef>* lists[] = {&operands.gx, &operands.w_ih, &operands.b_ih, &operands.w_hh, &operands.b_hh};
  for (int i = 0; i < 5; ++i) {
    if (!node.args[i].Is<ir::TensorList>()) return invalid(fmt::format("argument {} is not a tensor list", i));
    for (const std::optional<NodeRef>& ref : node.args[i].As<ir::TensorList>()) {
      if (!ref) return invalid(fmt::format("a missing tensor in argument {}", i));
      lists[i]->push_back(*ref);
    }
  }
  operands.h0 = node.args[5].As<NodeRef>();
  if (node.args[6].Is<NodeRef>()) operands.c0 = node.args[6].As<NodeRef>();
  const RecurrenceAttributes attributes = RecurrenceAttributes::Of(node);
  const size_t lanes = operands.w_hh.size();
  const size_t projected = attributes.directions ? 0 : lanes - 1;
  if (lanes == 0 || (attributes.directions && lanes != 2) || operands.gx.size() != lanes - projected || operands.w_ih.size() != projected) {
    return invalid(fmt::format("{} gx and {} w_ih for {} lanes", operands.gx.size(), operands.w_ih.size(), lanes));
  }
  if (!operands.b_hh.empty() && (operands.b_hh.size() != lanes || operands.b_ih.size() != projected)) return invalid("biases for some lanes only");
  if (operands.b_hh.empty() && !operands.b_ih.empty()) return invalid("input biases without hidden biases");
  if (attributes.has_cell_state() != operands.c0.has_value() || node.num_outputs() != (operands.c0 ? 3 : 2)) {
    return invalid(fmt::format("the cell state does not match the {} cell", attributes.cell));
  }
  return operands;
}

Result<ir::Graph> LowerRecurrence(const ir::Graph& graph) {
  RecurrenceRewriter rewriter;
  return rewriter.Rewrite(graph);
}

}  // namespace kforge::passes
