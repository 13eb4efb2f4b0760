#include "compiler/codegen/tile_expression.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "compiler/codegen/epilogue.h"
#include "compiler/codegen/python_names.h"
#include "compiler/codegen/triton_pointwise.h"

namespace kforge::codegen {
namespace {

const IndexDigit kZero{"0", 1, {}};

TileAxes AxesOf(const DimIndex& dim) {
  TileAxes axes;
  for (const IndexDigit& digit : dim) axes = axes | digit.axes;
  return axes;
}

// The dim's index as one expression: digits in mixed radix, those of extent 1 (always 0) left out.
std::string Linear(const DimIndex& dim) {
  std::string expr;
  for (const IndexDigit& digit : dim) {
    if (digit.extent == 1) continue;
    expr = expr.empty() ? digit.expr : fmt::format("({} * {} + {})", expr, digit.extent, digit.expr);
  }
  return expr.empty() ? "0" : expr;
}

int64_t Normalized(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

std::optional<int64_t> IntAt(const ir::OpNode& op, ir::ArgSlot slot) {
  const ir::Argument* arg = op.FindArgument(slot);
  const auto* value = arg ? arg->TryAs<int64_t>() : nullptr;
  return value ? std::optional<int64_t>(*value) : std::nullopt;
}

// The index of a tensor of shape `in` that a reshape to the shape of `index` reads: the digits
// regrouped into `in`'s dims where their extents line up, else the flat offset divided out.
TileIndex Reshape(const TileIndex& index, const ir::Shape& in) {
  std::vector<IndexDigit> digits;
  for (const DimIndex& dim : index) {
    for (const IndexDigit& digit : dim) {
      if (digit.extent > 1) digits.push_back(digit);
    }
  }
  TileIndex result(in.size());
  std::vector<IndexDigit> left = digits;
  bool aligned = true;
  for (size_t d = in.size(); d-- > 0 && aligned;) {
    int64_t product = 1;
    while (product < in[d] && !left.empty() && in[d] % (product * left.back().extent) == 0) {
      product *= left.back().extent;
      result[d].insert(result[d].begin(), left.back());
      left.pop_back();
    }
    aligned = product == in[d];
    if (result[d].empty()) result[d] = {kZero};
  }
  if (aligned && left.empty()) return result;
  const DimIndex flat(digits.begin(), digits.end());
  const std::string offset = Linear(flat);
  int64_t stride = 1;
  for (size_t d = in.size(); d-- > 0;) {
    std::string expr = stride == 1 ? offset : fmt::format("({} // {})", offset, stride);
    if (d > 0) expr = fmt::format("({} % {})", expr, in[d]);
    result[d] = {IndexDigit{expr, in[d], AxesOf(flat)}};
    stride *= in[d];
  }
  return result;
}

std::string Key(ir::NodeRef ref, const TileIndex& index) {
  std::string key = fmt::format("{}.{}", ref.value, ref.output);
  for (const DimIndex& dim : index) {
    key += "|";
    for (const IndexDigit& digit : dim) key += fmt::format("{}:{};", digit.expr, digit.extent);
  }
  return key;
}

// The Triton type of a constant fill.
std::string FillType(ir::DType dtype) {
  if (dtype == ir::DType::kBool) return "tl.int1";
  if (dtype == ir::DType::kInt64) return "tl.int64";
  if (dtype == ir::DType::kInt32) return "tl.int32";
  return "tl.float32";
}

}  // namespace

TileExpressions::TileExpressions(const ir::Graph& graph, std::set<ir::ValueId> computed, TileMasks masks, SourceWriter& out,
                                 std::set<std::string>& helpers)
    : graph_(graph), computed_(std::move(computed)), masks_(std::move(masks)), out_(out), helpers_(helpers) {}

TileIndex TileExpressions::Broadcast(const ir::Shape& from, const ir::Shape& to, const TileIndex& index) {
  TileIndex result;
  const size_t lead = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d) {
    result.push_back(from[d] == 1 && to[lead + d] != 1 ? DimIndex{kZero} : index[lead + d]);
  }
  return result;
}

Result<TileValue> TileExpressions::At(ir::NodeRef ref, const TileIndex& index) {
  const std::string key = Key(ref, index);
  if (auto found = memo_.find(key); found != memo_.end()) return found->second;
  Result<TileValue> value = Status::Internal("unset");
  const ir::Value& source = graph_.value(ref.value);
  if (const auto* op = source.TryAs<ir::OpNode>(); op != nullptr && computed_.count(ref.value)) {
    value = Compute(*op, index);
  } else {
    value = Load(ref, index);
  }
  if (value.ok()) memo_[key] = *value;
  return value;
}

TileValue TileExpressions::Bind(ir::NodeRef ref, const std::string& expr, TileAxes axes) {
  std::string var = VarName(graph_, ref);
  for (int n = 1; taken_.count(var); ++n) var = fmt::format("kf_{}_{}", VarName(graph_, ref), n);
  taken_.insert(var);
  out_.Line(fmt::format("{} = {}", var, expr));
  return TileValue{var, axes};
}

Result<TileValue> TileExpressions::Load(ir::NodeRef ref, const TileIndex& index) {
  const ir::Value& value = graph_.value(ref.value);
  const ir::TensorType& type = *graph_.TypeOf(ref);
  if (const auto* constant = value.TryAs<ir::ConstantValue>()) {
    if (!constant->scalar || type.rank() != 0) return Status::InvalidArgument(fmt::format("%{}: a tensor constant", value.name));
    return Bind(ref, fmt::format("tl.full([1, 1], {}, {})", FloatLiteral(*constant->scalar), FillType(type.dtype)), {});
  }
  std::vector<std::string> terms;
  TileAxes axes;
  for (size_t d = 0; d < index.size(); ++d) {
    if (type.stride[d] == 0 || type.shape[d] == 1) continue;
    terms.push_back(Term(Linear(index[d]), type.stride[d]));
    axes = axes | AxesOf(index[d]);
  }
  std::vector<std::string> mask;
  if (axes.rows) mask.push_back(masks_.rows);
  if (axes.columns) mask.push_back(masks_.columns);
  std::string address = fmt::format("{}_ptr + {}", VarName(graph_, ref), Sum(terms));
  std::string load = mask.empty() ? fmt::format("tl.load({})", address)
                                  : fmt::format("tl.load({}, mask={}, other=0)", address, fmt::join(mask, " & "));
  return Bind(ref, load + ComputeCast(type.dtype), axes);
}

Result<TileIndex> TileExpressions::ViewInput(const ir::OpNode& op, const TileIndex& index) {
  const ir::Shape& in = graph_.TypeOf(op.args.at(0).As<ir::NodeRef>())->shape;
  const ir::Shape& out = op.type().shape;
  const auto rank_in = static_cast<int64_t>(in.size()), rank_out = static_cast<int64_t>(out.size());
  const std::string& name = op.op;
  if (name == "aten.clone.default" || name == "aten.alias.default" || name == "aten.detach.default" ||
      name == "aten.contiguous.default" || name == "aten.lift_fresh_copy.default") {
    return index;
  }
  if (name == "aten.view.default" || name == "aten._unsafe_view.default" || name == "aten.reshape.default") {
    return in == out ? index : Reshape(index, in);
  }
  TileIndex result = index;
  if (name == "aten.permute.default") {
    const ir::IntList& dims = op.args.at(1).As<ir::IntList>();
    for (size_t d = 0; d < dims.size(); ++d) result[Normalized(dims[d], rank_in)] = index[d];
  } else if (name == "aten.transpose.int" || name == "aten.t.default") {
    int64_t a = rank_in < 2 ? 0 : Normalized(IntAt(op, {1, "dim0"}).value_or(0), rank_in);
    int64_t b = rank_in < 2 ? 0 : Normalized(IntAt(op, {2, "dim1"}).value_or(1), rank_in);
    std::swap(result[a], result[b]);
  } else if (name == "aten.unsqueeze.default") {
    result.erase(result.begin() + Normalized(IntAt(op, {1, "dim"}).value_or(0), rank_out));
  } else if (name == "aten.squeeze.dim" || name == "aten.squeeze.dims" || name == "aten.squeeze.default") {
    std::set<int64_t> squeezed;
    const ir::Argument* dims = op.FindArgument({1, "dim"});
    for (int64_t d = 0; d < rank_in; ++d) {
      bool named = dims == nullptr || (dims->Is<int64_t>() && Normalized(dims->As<int64_t>(), rank_in) == d) ||
                   (dims->Is<ir::IntList>() && std::any_of(dims->As<ir::IntList>().begin(), dims->As<ir::IntList>().end(),
                                                           [&](int64_t n) { return Normalized(n, rank_in) == d; }));
      if (named && in[d] == 1) squeezed.insert(d);
    }
    result.clear();
    size_t next = 0;
    for (int64_t d = 0; d < rank_in; ++d) result.push_back(squeezed.count(d) ? DimIndex{kZero} : index[next++]);
  } else if (name == "aten.expand.default") {
    result = Broadcast(in, out, index);
  } else if (name == "aten.slice.Tensor") {
    const int64_t dim = Normalized(IntAt(op, {1, "dim"}).value_or(0), rank_in);
    int64_t start = IntAt(op, {2, "start"}).value_or(0), step = IntAt(op, {4, "step"}).value_or(1);
    start = std::clamp(start < 0 ? start + in[dim] : start, int64_t{0}, in[dim]);
    if (start != 0 || step != 1) {
      DimIndex& at = result[dim];
      at = {IndexDigit{fmt::format("({} + {} * {})", start, step, Linear(at)), in[dim], AxesOf(at)}};
    }
  } else if (name == "aten.select.int") {
    const int64_t dim = Normalized(IntAt(op, {1, "dim"}).value_or(0), rank_in);
    const int64_t at = IntAt(op, {2, "index"}).value_or(0);
    result.insert(result.begin() + dim, DimIndex{IndexDigit{std::to_string(at < 0 ? at + in[dim] : at), in[dim], {}}});
  } else {
    return Status::InvalidArgument(fmt::format("%{}: not a view", op.name));
  }
  return result;
}

Result<TileValue> TileExpressions::Compute(const ir::OpNode& op, const TileIndex& index) {
  const std::string& name = op.op;
  if (op.op_kind() == ir::OpKind::kView || name == "aten.clone.default" || name == "aten.contiguous.default" ||
      name == "aten.lift_fresh_copy.default") {
    ASSIGN_OR_RETURN(TileIndex in, ViewInput(op, index));
    return At(op.args.at(0).As<ir::NodeRef>(), in);
  }
  if (name.rfind("aten.arange.", 0) == 0) {
    bool with_start = name != "aten.arange.default";
    std::optional<int64_t> start = with_start ? IntAt(op, {0, "start"}) : 0;
    std::optional<int64_t> step = name == "aten.arange.start_step" && op.FindArgument({2, "step"}) ? IntAt(op, {2, "step"}) : 1;
    if (!start || !step) return Status::InvalidArgument(fmt::format("%{}: an arange with non-integer bounds", op.name));
    std::string value = fmt::format("({} + {} * {})", *start, *step, Linear(index.at(0)));
    if (ir::IsFloatingPoint(op.type().dtype)) value += ".to(tl.float32)";
    return Bind(op.ref(), value, AxesOf(index.at(0)));
  }
  if (name == "aten.full.default" || name == "aten.full_like.default" || name == "aten.zeros_like.default" ||
      name == "aten.ones_like.default" || name == "aten.scalar_tensor.default") {
    double fill = name == "aten.zeros_like.default" ? 0.0 : 1.0;
    const ir::Argument* arg = name == "aten.scalar_tensor.default" ? op.FindArgument({0, "s"})
                              : name.find("full") != std::string::npos ? op.FindArgument({1, "fill_value"})
                                                                       : nullptr;
    if (arg != nullptr) {
      if (const auto* b = arg->TryAs<bool>()) fill = *b ? 1.0 : 0.0;
      else if (const auto* i = arg->TryAs<int64_t>()) fill = static_cast<double>(*i);
      else if (const auto* d = arg->TryAs<double>()) fill = *d;
      else return Status::InvalidArgument(fmt::format("%{}: a fill that is not a number", op.name));
    }
    std::string literal = ir::IsFloatingPoint(op.type().dtype) ? FloatLiteral(fill) : std::to_string(static_cast<int64_t>(fill));
    return Bind(op.ref(), fmt::format("tl.full([1, 1], {}, {})", literal, FillType(op.type().dtype)), {});
  }
  if (name == "aten.index.Tensor") return Gather(op, index);
  if (op.op_kind() == ir::OpKind::kPointwise) return Pointwise(op, index);
  return Status::InvalidArgument(fmt::format("%{}: {} is not computed per tile", op.name, name));
}

Result<TileValue> TileExpressions::Pointwise(const ir::OpNode& op, const TileIndex& index) {
  TileAxes axes;
  auto bind_operand = [&](const ir::Argument& arg) -> Status {
    const auto* ref = arg.TryAs<ir::NodeRef>();
    if (ref == nullptr) return Status::Ok();
    ASSIGN_OR_RETURN(TileValue value, At(*ref, Broadcast(graph_.TypeOf(*ref)->shape, op.type().shape, index)));
    axes = axes | value.axes;
    // The op's expression names its operands by their variables (VarName): bind the name to this
    // index's value, and forget other values the name held.
    const std::string name = VarName(graph_, *ref);
    if (value.var == name) return Status::Ok();
    out_.Line(fmt::format("{} = {}", name, value.var));
    taken_.insert(name);
    for (auto it = memo_.begin(); it != memo_.end();) it = it->second.var == name ? memo_.erase(it) : std::next(it);
    return Status::Ok();
  };
  for (const ir::Argument& arg : op.args) RETURN_IF_ERROR(bind_operand(arg));
  for (const ir::NamedArgument& kwarg : op.kwargs) RETURN_IF_ERROR(bind_operand(kwarg.argument));
  ASSIGN_OR_RETURN(std::string expr, PointwiseExpression(graph_, op, helpers_));
  return Bind(op.ref(), expr, axes);
}

// index.Tensor(table, [None, ..., idx_0, ..., idx_k-1]): the indexed dims of the table are read
// at the index tensors' values (broadcast together; negative ones count from the end).
Result<TileValue> TileExpressions::Gather(const ir::OpNode& op, const TileIndex& index) {
  const ir::NodeRef table = op.args.at(0).As<ir::NodeRef>();
  const ir::Shape& table_shape = graph_.TypeOf(table)->shape;
  const ir::TensorList& indices = op.args.at(1).As<ir::TensorList>();
  size_t first = 0;
  while (first < indices.size() && !indices[first]) ++first;
  std::vector<ir::NodeRef> refs;
  for (size_t d = first; d < indices.size() && indices[d]; ++d) refs.push_back(*indices[d]);
  if (refs.empty() || first + refs.size() != indices.size()) {
    return Status::InvalidArgument(fmt::format("%{}: an index other than one run of index tensors", op.name));
  }
  ir::Shape indexed = graph_.TypeOf(refs[0])->shape;
  for (const ir::NodeRef& ref : refs) indexed = ir::BroadcastShapes(indexed, graph_.TypeOf(ref)->shape).value_or(indexed);
  const size_t span = indexed.size();
  TileIndex at(index.begin() + first, index.begin() + first + span);
  TileIndex read(index.begin(), index.begin() + first);
  for (size_t t = 0; t < refs.size(); ++t) {
    ASSIGN_OR_RETURN(TileValue position, At(refs[t], Broadcast(graph_.TypeOf(refs[t])->shape, indexed, at)));
    const int64_t size = table_shape[first + t];
    TileValue wrapped = Bind(refs[t], fmt::format("tl.where({0} < 0, {0} + {1}, {0})", position.var, size), position.axes);
    read.push_back({IndexDigit{wrapped.var, size, wrapped.axes}});
  }
  read.insert(read.end(), index.begin() + first + span, index.end());
  return At(table, read);
}

}  // namespace kforge::codegen
