#include "compiler/passes/decompose.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "compiler/ir/visitor.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::passes {
namespace {

using ir::Argument;
using ir::NodeRef;

std::optional<double> Number(const Argument* arg) {
  if (arg == nullptr) return std::nullopt;
  if (const auto* i = arg->TryAs<int64_t>()) return static_cast<double>(*i);
  if (const auto* d = arg->TryAs<double>()) return *d;
  return std::nullopt;
}

bool Flag(const ir::OpNode& node, ir::ArgSlot slot, bool fallback) {
  const Argument* arg = node.FindArgument(slot);
  if (arg == nullptr) return fallback;
  const auto* value = arg->TryAs<bool>();
  return value ? *value : fallback;
}

// The shape of reducing `dims` of `shape`, with them kept as 1 (`keepdim`) or dropped.
ir::Shape Reduced(const ir::Shape& shape, const std::vector<int64_t>& dims, bool keepdim) {
  return ReductionSpace{shape, dims}.Kept(keepdim);
}

// Runs of dims [shape_begin, shape_end) of `shape` and [target_begin, target_end) of `target` with
// equal products, in order, covering both: how a contiguous view regroups dims.
struct DimRun {
  size_t shape_begin, shape_end, target_begin, target_end;
};
std::optional<std::vector<DimRun>> MatchingDims(const ir::Shape& shape, const ir::Shape& target) {
  std::vector<DimRun> runs;
  size_t i = 0, j = 0;
  while (i < shape.size() || j < target.size()) {
    DimRun run{i, i, j, j};
    int64_t left = i < shape.size() ? shape[i++] : 1, right = j < target.size() ? target[j++] : 1;
    while (left != right) {
      if (left < right && i < shape.size()) {
        left *= shape[i++];
      } else if (right < left && j < target.size()) {
        right *= target[j++];
      } else {
        return std::nullopt;
      }
    }
    run.shape_end = i;
    run.target_end = j;
    runs.push_back(run);
  }
  return runs;
}

// The shape an operand broadcasting to `shape` takes over `target` (the same runs of dims
// regrouped): each run is all ones or all of `shape`'s dims in the operand; nullopt otherwise.
std::optional<ir::IntList> Regrouped(const ir::Shape& operand, const ir::Shape& shape, const ir::Shape& target,
                                     const std::vector<DimRun>& runs) {
  if (operand.size() > shape.size()) return std::nullopt;
  ir::Shape padded(shape.size() - operand.size(), 1);
  padded.insert(padded.end(), operand.begin(), operand.end());
  ir::IntList result;
  for (const DimRun& run : runs) {
    bool ones = true, full = true;
    for (size_t d = run.shape_begin; d < run.shape_end; ++d) {
      ones = ones && padded[d] == 1;
      full = full && padded[d] == shape[d];
    }
    if (!ones && !full) return std::nullopt;
    for (size_t d = run.target_begin; d < run.target_end; ++d) result.push_back(ones ? 1 : target[d]);
  }
  return result;
}

class Decomposer : public ir::GraphRewriter {
 public:
  explicit Decomposer(const ir::Graph& graph) : source_(graph) {
    for (const NodeRef& out : graph.LiveOuts()) live_outs_.insert({out.value, out.output});
    for (const ir::Value& value : graph) {
      for (const NodeRef& ref : TensorInputs(value)) used_.insert({ref.value, ref.output});
    }
  }

 protected:
  Status RewriteOp(const ir::OpNode& node) override {
    const std::string& op = node.op;
    std::optional<Status> done;
    if (op == "aten.sum.dim_IntList" || op == "aten.amax.default" || op == "aten.amin.default" || op == "aten.mean.dim" ||
        op == "aten.max.dim" || op == "aten.min.dim") {
      done = UnitReduction(node);
      if (!done && (op == "aten.max.dim" || op == "aten.min.dim")) done = ValuesOnly(node);
      if (done) return *done;
    }
    if (op == "aten.mul.Tensor") done = Mish(node);
    if (done) return *done;
    if (op == "aten._softmax.default") done = Softmax(node, false);
    else if (op == "aten._log_softmax.default") done = Softmax(node, true);
    else if (op == "aten.native_layer_norm.default") done = LayerNorm(node);
    else if (op == "aten.native_group_norm.default") done = GroupNorm(node);
    else if (op == "aten._native_batch_norm_legit_no_training.default") done = BatchNormEval(node);
    else if (op == "aten._native_batch_norm_legit_functional.default") done = BatchNormTraining(node);
    else if (op == "aten._native_batch_norm_legit.no_stats") done = BatchNormWithoutRunningStatistics(node);
    else if (op == "aten.mean.dim" || op == "aten.mean.default") done = Mean(node);
    else if (op == "aten.linalg_vector_norm.default") done = VectorNorm(node);
    else if (op == "aten.addmm.default") done = Addmm(node);
    else if (op == "aten.mm.default") done = MatrixVector(node);
    else if (op == "aten.clone.default" || op == "aten._to_copy.default") done = DropCopy(node);
    else if (op == "aten.scalar_tensor.default") done = RememberScalar(node);
    else if (op == "aten.gather.default") done = GatherLogSoftmax(node);
    else if (op == "aten.sum.dim_IntList") done = CountTrue(node);
    else if (op == "aten.min.dim" || op == "aten.argmin.default") done = MinAsMaxOfNegation(node);
    else if (op == "aten.max_pool3d_with_indices.default" || op == "aten.avg_pool3d.default") done = Pool3dAsTwo2d(node);
    if (done) return *done;
    if (node.op_kind() == ir::OpKind::kPointwise) {
      if (std::optional<Status> sunk = SinkRegrouping(node)) return *sunk;
      return CopyWithScalars(node);
    }
    return CopyOp(node);
  }

 private:
  // Adds `op` and returns its single output.
  Result<NodeRef> Emit(const ir::OpNode& origin, const char* suffix, const char* op, std::vector<Argument> args,
                       const ir::Shape& shape, ir::DType dtype = ir::DType::kFloat32,
                       std::vector<ir::NamedArgument> kwargs = {}) {
    ASSIGN_OR_RETURN(ir::TensorType type, ir::TensorType::Contiguous(shape, dtype));
    ASSIGN_OR_RETURN(ir::ValueId id, builder().AddOp(builder().FreshName(origin.name + "_" + suffix), op,
                                                     std::move(args), std::move(kwargs), {type}));
    return NodeRef{id, 0};
  }
  // _to_copy(x, dtype=dtype): a cast, which both a kernel and the library call read from `dtype`.
  Result<NodeRef> Cast(const ir::OpNode& origin, const char* suffix, NodeRef x, ir::DType dtype) {
    return Emit(origin, suffix, "aten._to_copy.default", {{x}}, ShapeOf(x), dtype, {{"dtype", Argument(dtype)}});
  }
  const ir::Shape& ShapeOf(NodeRef ref) { return builder().TypeOf(ref)->shape; }
  bool Used(const ir::OpNode& node, int32_t output) const {
    return used_.count({node.id, output}) || live_outs_.count({node.id, output});
  }
  bool AnyUsed(const ir::OpNode& node, int32_t from) const {
    for (int32_t i = from; i < node.num_outputs(); ++i) {
      if (Used(node, i)) return true;
    }
    return false;
  }
  static bool AllFloat32(const ir::OpNode& node) {
    for (const ir::TensorType& type : node.outputs) {
      if (type.dtype != ir::DType::kFloat32) return false;
    }
    return true;
  }
  // The mapped tensor at `slot`, or nullopt when absent or None.
  std::optional<NodeRef> Tensor(const ir::OpNode& node, ir::ArgSlot slot) {
    const Argument* arg = node.FindArgument(slot);
    if (arg == nullptr || !arg->Is<NodeRef>()) return std::nullopt;
    return Map(arg->As<NodeRef>());
  }
  // Replaces `node` by `outputs` (padded with outputs[0] for outputs that are never read).
  Status Finish(const ir::OpNode& node, std::vector<NodeRef> outputs) {
    while (static_cast<int32_t>(outputs.size()) < node.num_outputs()) outputs.push_back(outputs.front());
    Replace(node, std::move(outputs));
    return Status::Ok();
  }

  // sum(x, dims, keepdim) * (1 / n).
  Result<std::pair<NodeRef, NodeRef>> MeanOf(const ir::OpNode& origin, NodeRef x, const std::vector<int64_t>& dims,
                                             bool keepdim) {
    const ir::Shape shape = ShapeOf(x);
    ir::Shape out = Reduced(shape, dims, keepdim);
    ASSIGN_OR_RETURN(NodeRef sum, Emit(origin, "sum", "aten.sum.dim_IntList", {{x}, {ir::IntList(dims)}, {keepdim}}, out));
    double n = static_cast<double>(ReductionSpace{shape, dims}.reduced_count());
    ASSIGN_OR_RETURN(NodeRef mean, Emit(origin, "mean", "aten.mul.Tensor", {{sum}, {1.0 / n}}, out));
    return std::make_pair(sum, mean);
  }

  // var_mean(x, dims, correction=0, keepdim=True): (population variance, mean). Its kernel folds
  // Welford updates and merges the partial statistics of a split row with Chan's formula.
  Result<std::pair<NodeRef, NodeRef>> VarMean(const ir::OpNode& origin, NodeRef x, const std::vector<int64_t>& dims) {
    ASSIGN_OR_RETURN(ir::TensorType type, ir::TensorType::Contiguous(Reduced(ShapeOf(x), dims, true), ir::DType::kFloat32));
    std::vector<ir::NamedArgument> kwargs = {{"correction", Argument(int64_t{0})}, {"keepdim", Argument(true)}};
    ASSIGN_OR_RETURN(ir::ValueId id, builder().AddOp(builder().FreshName(origin.name + "_var_mean"),
                                                     "aten.var_mean.correction", {{x}, {ir::IntList(dims)}},
                                                     std::move(kwargs), {type, type}));
    return std::make_pair(NodeRef{id, 0}, NodeRef{id, 1});
  }

  // rsqrt(var + eps).
  Result<NodeRef> Rstd(const ir::OpNode& origin, NodeRef var, double eps) {
    ASSIGN_OR_RETURN(NodeRef shifted, Emit(origin, "var_eps", "aten.add.Tensor", {{var}, {eps}}, ShapeOf(var)));
    return Emit(origin, "rstd", "aten.rsqrt.default", {{shifted}}, ShapeOf(var));
  }

  // mean and rsqrt(var + eps) over `dims` (kept as 1) from one var_mean, so no x - mean of the
  // full shape is materialized for a second reduction.
  Result<std::pair<NodeRef, NodeRef>> MeanAndRstd(const ir::OpNode& origin, NodeRef x, const std::vector<int64_t>& dims,
                                                  double eps) {
    ASSIGN_OR_RETURN(auto stats, VarMean(origin, x, dims));
    ASSIGN_OR_RETURN(NodeRef rstd, Rstd(origin, stats.first, eps));
    return std::make_pair(stats.second, rstd);
  }

  // Batch statistics over dim 0 and the inner `dims` (dims.front() == 0): var_mean per (n, c) row,
  // many contiguous rows in parallel instead of one long strided row per channel, then Chan's
  // merge of the N rows of equal count over dim 0: mean = avg(mean_n),
  // var = avg(var_n + (mean_n - mean)^2). Returns (population variance, mean), as VarMean does.
  Result<std::pair<NodeRef, NodeRef>> StagedVarMean(const ir::OpNode& origin, NodeRef x, const std::vector<int64_t>& dims) {
    ASSIGN_OR_RETURN(auto row, VarMean(origin, x, std::vector<int64_t>(dims.begin() + 1, dims.end())));
    const ir::Shape rows = ShapeOf(row.second);
    ASSIGN_OR_RETURN(auto mean, MeanOf(origin, row.second, {0}, true));
    ASSIGN_OR_RETURN(NodeRef deviation, Emit(origin, "deviation", "aten.sub.Tensor", {{row.second}, {mean.second}}, rows));
    ASSIGN_OR_RETURN(NodeRef squared, Emit(origin, "deviation_squared", "aten.mul.Tensor", {{deviation}, {deviation}}, rows));
    ASSIGN_OR_RETURN(NodeRef spread, Emit(origin, "spread", "aten.add.Tensor", {{row.first}, {squared}}, rows));
    ASSIGN_OR_RETURN(auto var, MeanOf(origin, spread, {0}, true));
    return std::make_pair(var.second, mean.second);
  }

  // What Normalize computes: x normalized over the reduced dims, and its statistics with those
  // dims kept as 1 (the population variance, as the running statistics need it).
  struct Normalized {
    NodeRef normed, mean, var, rstd;
  };

  // Normalizes x over `dims`: (x - mean) * rsqrt(var + eps). Rows split over many programs
  // (ReductionSpace::split) take their statistics from one var_mean, and batch statistics
  // (`staged`, over dim 0 and inner dims) from StagedVarMean; both are normalized by a separate
  // pass. Shorter rows reduce sum(x) and sum((x - mean)^2), which one kernel fuses with the
  // normalization.
  Result<Normalized> Normalize(const ir::OpNode& origin, NodeRef x, const std::vector<int64_t>& dims, double eps,
                               bool staged = false) {
    const ir::Shape shape = ShapeOf(x);
    bool batch = staged && dims.size() > 1 && dims.front() == 0;
    Normalized parts;
    NodeRef centered;
    if (batch || (!staged && ReductionSpace{shape, dims}.split())) {
      std::pair<NodeRef, NodeRef> stats;
      if (batch) {
        ASSIGN_OR_RETURN(stats, StagedVarMean(origin, x, dims));
      } else {
        ASSIGN_OR_RETURN(stats, VarMean(origin, x, dims));
      }
      std::tie(parts.var, parts.mean) = stats;
      ASSIGN_OR_RETURN(parts.rstd, Rstd(origin, parts.var, eps));
      ASSIGN_OR_RETURN(centered, Emit(origin, "centered", "aten.sub.Tensor", {{x}, {parts.mean}}, shape));
    } else {
      ASSIGN_OR_RETURN(auto mean, MeanOf(origin, x, dims, true));
      parts.mean = mean.second;
      ASSIGN_OR_RETURN(centered, Emit(origin, "centered", "aten.sub.Tensor", {{x}, {parts.mean}}, shape));
      ASSIGN_OR_RETURN(NodeRef squared, Emit(origin, "squared", "aten.mul.Tensor", {{centered}, {centered}}, shape));
      ASSIGN_OR_RETURN(auto var, MeanOf(origin, squared, dims, true));
      parts.var = var.second;
      ASSIGN_OR_RETURN(parts.rstd, Rstd(origin, parts.var, eps));
    }
    ASSIGN_OR_RETURN(parts.normed, Emit(origin, "normed", "aten.mul.Tensor", {{centered}, {parts.rstd}}, shape));
    return parts;
  }

  // y * weight + bias with a norm op's per-channel weight and bias (arguments 1 and 2 of group,
  // batch and instance norm, each optional) viewed to broadcast over y of rank `rank`.
  Result<NodeRef> ChannelAffine(const ir::OpNode& node, NodeRef y, int64_t rank) {
    ASSIGN_OR_RETURN(auto weight, PerChannel(node, Tensor(node, {1, "weight"}), rank));
    ASSIGN_OR_RETURN(auto bias, PerChannel(node, Tensor(node, {2, "bias"}), rank));
    return Affine(node, y, weight, bias);
  }

  // y * weight + bias, with weight and bias optional.
  Result<NodeRef> Affine(const ir::OpNode& origin, NodeRef y, std::optional<NodeRef> weight, std::optional<NodeRef> bias) {
    const ir::Shape shape = ShapeOf(y);
    if (weight) {
      ASSIGN_OR_RETURN(y, Emit(origin, "scaled", "aten.mul.Tensor", {{y}, {*weight}}, shape));
    }
    if (bias) {
      ASSIGN_OR_RETURN(y, Emit(origin, "shifted", "aten.add.Tensor", {{y}, {*bias}}, shape));
    }
    return y;
  }

  // A per-channel vector [C] viewed as [C, 1, ..., 1] so that it broadcasts over dim 1 of a rank-`rank` tensor.
  Result<std::optional<NodeRef>> PerChannel(const ir::OpNode& origin, std::optional<NodeRef> vector, int64_t rank) {
    if (!vector) return std::optional<NodeRef>();
    const ir::Shape shape = ShapeOf(*vector);
    if (shape.size() != 1) return Status::InvalidArgument("not a vector");
    ir::IntList view = {shape[0]};
    for (int64_t d = 2; d < rank; ++d) view.push_back(1);
    ASSIGN_OR_RETURN(NodeRef viewed, Emit(origin, "channel", "aten.view.default", {{*vector}, {view}}, view));
    return std::optional<NodeRef>(viewed);
  }

  std::optional<Status> Softmax(const ir::OpNode& node, bool log) {
    if (!AllFloat32(node) || Flag(node, {2, "half_to_float"}, false)) return std::nullopt;
    NodeRef x = Map(node.args.at(0).As<NodeRef>());
    const ir::Shape shape = ShapeOf(x);
    auto dims = ReducedDims(node.FindArgument({1, "dim"}), static_cast<int64_t>(shape.size()));
    if (!dims || dims->size() != 1) return std::nullopt;
    return Run(node, [&]() -> Status {
      ir::Shape kept = Reduced(shape, *dims, true);
      ASSIGN_OR_RETURN(NodeRef max, Emit(node, "max", "aten.amax.default", {{x}, {ir::IntList(*dims)}, {true}}, kept));
      ASSIGN_OR_RETURN(NodeRef shifted, Emit(node, "shifted", "aten.sub.Tensor", {{x}, {max}}, shape));
      ASSIGN_OR_RETURN(NodeRef exp, Emit(node, "exp", "aten.exp.default", {{shifted}}, shape));
      ASSIGN_OR_RETURN(NodeRef sum, Emit(node, "sum", "aten.sum.dim_IntList", {{exp}, {ir::IntList(*dims)}, {true}}, kept));
      if (!log) {
        ASSIGN_OR_RETURN(NodeRef out, Emit(node, "out", "aten.div.Tensor", {{exp}, {sum}}, shape));
        return Finish(node, {out});
      }
      ASSIGN_OR_RETURN(NodeRef log_sum, Emit(node, "log_sum", "aten.log.default", {{sum}}, kept));
      ASSIGN_OR_RETURN(NodeRef out, Emit(node, "out", "aten.sub.Tensor", {{shifted}, {log_sum}}, shape));
      log_softmax_.emplace(std::make_pair(out.value, out.output), LogSoftmax{x, max, log_sum, (*dims)[0]});
      return Finish(node, {out});
    });
  }

  std::optional<Status> LayerNorm(const ir::OpNode& node) {
    if (!AllFloat32(node)) return std::nullopt;
    NodeRef x = Map(node.args.at(0).As<NodeRef>());
    const ir::Shape shape = ShapeOf(x);
    const Argument* normalized = node.FindArgument({1, "normalized_shape"});
    std::optional<double> eps = Number(node.FindArgument({4, "eps"}));
    if (normalized == nullptr || !normalized->Is<ir::IntList>() || !eps) return std::nullopt;
    size_t k = normalized->As<ir::IntList>().size();
    if (k == 0 || k > shape.size()) return std::nullopt;
    std::vector<int64_t> dims;
    for (size_t d = shape.size() - k; d < shape.size(); ++d) dims.push_back(static_cast<int64_t>(d));
    return Run(node, [&]() -> Status {
      ASSIGN_OR_RETURN(Normalized parts, Normalize(node, x, dims, *eps));
      ASSIGN_OR_RETURN(NodeRef y, Affine(node, parts.normed, Tensor(node, {2, "weight"}), Tensor(node, {3, "bias"})));
      return Finish(node, {y, parts.mean, parts.rstd});
    });
  }

  // native_group_norm(x, weight, bias, N, C, HxW, group, eps): x viewed as [N, group, C/group * HxW].
  std::optional<Status> GroupNorm(const ir::OpNode& node) {
    if (!AllFloat32(node) || AnyUsed(node, 1)) return std::nullopt;
    NodeRef x = Map(node.args.at(0).As<NodeRef>());
    const ir::TensorType& type = *builder().TypeOf(x);
    std::optional<double> groups = Number(node.FindArgument({6, "group"}));
    std::optional<double> eps = Number(node.FindArgument({7, "eps"}));
    if (!groups || !eps || type.shape.size() < 2 || !type.is_contiguous()) return std::nullopt;
    int64_t n = type.shape[0], g = static_cast<int64_t>(*groups);
    if (g <= 0 || type.numel() % (n * g) != 0) return std::nullopt;
    ir::IntList grouped = {n, g, type.numel() / (n * g)};
    if (type.shape[1] % g != 0) return std::nullopt;
    if (ReductionSpace{grouped, {2}}.split()) return SplitGroupNorm(node, x, grouped, *eps);
    // Normalized and scaled in x viewed [N, group, C/group(, the rest)], where the per-channel
    // weight and bias broadcast as [group, C/group(, 1)]: the affine joins the statistics' kernel.
    ir::IntList blocks = {n, g, type.shape[1] / g};
    std::vector<int64_t> dims = {2};
    if (type.shape.size() > 2) {
      blocks.push_back(grouped[2] / blocks[2]);
      dims.push_back(3);
    }
    return Run(node, [&]() -> Status {
      ASSIGN_OR_RETURN(NodeRef viewed, Emit(node, "grouped", "aten.view.default", {{x}, {blocks}}, blocks));
      ASSIGN_OR_RETURN(Normalized parts, Normalize(node, viewed, dims, *eps));
      const bool flat = type.shape.size() == 2;
      ASSIGN_OR_RETURN(auto weight, PerGroupChannel(node, Tensor(node, {1, "weight"}), g, flat));
      ASSIGN_OR_RETURN(auto bias, PerGroupChannel(node, Tensor(node, {2, "bias"}), g, flat));
      ASSIGN_OR_RETURN(NodeRef y, Affine(node, parts.normed, weight, bias));
      ASSIGN_OR_RETURN(NodeRef back, Emit(node, "ungrouped", "aten.view.default", {{y}, {ir::IntList(type.shape)}}, type.shape));
      sinkable_.insert({back.value, back.output});
      return Finish(node, {back});
    });
  }

  // Group norm whose rows the statistics kernel splits: mean and rstd per (image, group) from the
  // rows [N, group, C/group * HxW], then normalization and the per-channel affine as one pointwise
  // pass over x viewed [N, group, C/group, HxW] (the statistics broadcast over its last two dims,
  // weight and bias over the first and last).
  Status SplitGroupNorm(const ir::OpNode& node, NodeRef x, const ir::IntList& grouped, double eps) {
    const ir::Shape shape = ShapeOf(x);
    const int64_t n = grouped[0], g = grouped[1], c = shape[1] / g;
    return Run(node, [&]() -> Status {
      ASSIGN_OR_RETURN(NodeRef rows, Emit(node, "grouped", "aten.view.default", {{x}, {grouped}}, grouped));
      ASSIGN_OR_RETURN(auto stats, MeanAndRstd(node, rows, {2}, eps));
      ir::IntList blocks = {n, g, c, grouped[2] / c};
      ir::IntList per_row = {n, g, 1, 1};
      ASSIGN_OR_RETURN(NodeRef viewed, Emit(node, "blocks", "aten.view.default", {{x}, {blocks}}, blocks));
      ASSIGN_OR_RETURN(NodeRef mean, Emit(node, "row_mean", "aten.view.default", {{stats.first}, {per_row}}, per_row));
      ASSIGN_OR_RETURN(NodeRef rstd, Emit(node, "row_rstd", "aten.view.default", {{stats.second}, {per_row}}, per_row));
      ASSIGN_OR_RETURN(NodeRef centered, Emit(node, "centered", "aten.sub.Tensor", {{viewed}, {mean}}, blocks));
      ASSIGN_OR_RETURN(NodeRef normed, Emit(node, "normed", "aten.mul.Tensor", {{centered}, {rstd}}, blocks));
      ASSIGN_OR_RETURN(auto weight, PerGroupChannel(node, Tensor(node, {1, "weight"}), g));
      ASSIGN_OR_RETURN(auto bias, PerGroupChannel(node, Tensor(node, {2, "bias"}), g));
      ASSIGN_OR_RETURN(NodeRef y, Affine(node, normed, weight, bias));
      ASSIGN_OR_RETURN(NodeRef back, Emit(node, "ungrouped", "aten.view.default", {{y}, {ir::IntList(shape)}}, shape));
      return Finish(node, {back});
    });
  }

  // A per-channel vector [C] viewed as [group, C/group, 1]: it broadcasts over [N, group, C/group, HxW]
  // (as [group, C/group] over [N, group, C/group] where `flat`).
  Result<std::optional<NodeRef>> PerGroupChannel(const ir::OpNode& origin, std::optional<NodeRef> vector, int64_t g,
                                                 bool flat = false) {
    if (!vector) return std::optional<NodeRef>();
    const ir::Shape shape = ShapeOf(*vector);
    if (shape.size() != 1) return Status::InvalidArgument("not a vector");
    ir::IntList view = {g, shape[0] / g};
    if (!flat) view.push_back(1);
    ASSIGN_OR_RETURN(NodeRef viewed, Emit(origin, "channel", "aten.view.default", {{*vector}, {view}}, view));
    return std::optional<NodeRef>(viewed);
  }

  // Inference batch norm: (x - running_mean) * rsqrt(running_var + eps) * weight + bias, per channel.
  std::optional<Status> BatchNormEval(const ir::OpNode& node) {
    if (!AllFloat32(node) || AnyUsed(node, 1)) return std::nullopt;
    NodeRef x = Map(node.args.at(0).As<NodeRef>());
    const ir::Shape shape = ShapeOf(x);
    std::optional<double> eps = Number(node.FindArgument({6, "eps"}));
    if (!eps || shape.size() < 2) return std::nullopt;
    return Run(node, [&]() -> Status {
      int64_t rank = static_cast<int64_t>(shape.size());
      ASSIGN_OR_RETURN(auto mean, PerChannel(node, Tensor(node, {3, "running_mean"}), rank));
      ASSIGN_OR_RETURN(auto var, PerChannel(node, Tensor(node, {4, "running_var"}), rank));
      if (!mean || !var) return Status::InvalidArgument("batch norm without running statistics");
      ASSIGN_OR_RETURN(NodeRef centered, Emit(node, "centered", "aten.sub.Tensor", {{x}, {*mean}}, shape));
      ASSIGN_OR_RETURN(NodeRef rstd, Rstd(node, *var, *eps));
      ASSIGN_OR_RETURN(NodeRef normed, Emit(node, "normed", "aten.mul.Tensor", {{centered}, {rstd}}, shape));
      ASSIGN_OR_RETURN(NodeRef y, ChannelAffine(node, normed, rank));
      return Finish(node, {y});
    });
  }

  // Training batch norm: statistics over every dim but the channel (dim 1). The normalized output
  // and the updated running statistics (outputs 3 and 4, which forward() writes back) may be read;
  // the saved mean and rstd of the backward pass (outputs 1 and 2) may not.
  std::optional<Status> BatchNormTraining(const ir::OpNode& node) {
    if (!AllFloat32(node) || Used(node, 1) || Used(node, 2) || !Flag(node, {5, "training"}, false)) return std::nullopt;
    NodeRef x = Map(node.args.at(0).As<NodeRef>());
    const ir::Shape shape = ShapeOf(x);
    std::optional<double> momentum = Number(node.FindArgument({6, "momentum"}));
    std::optional<double> eps = Number(node.FindArgument({7, "eps"}));
    if (!momentum || !eps || shape.size() < 2) return std::nullopt;
    std::vector<int64_t> dims = {0};
    for (int64_t d = 2; d < static_cast<int64_t>(shape.size()); ++d) dims.push_back(d);
    // The unbiased variance divides by n - 1: one value per channel has none (eager batch norm refuses it).
    const int64_t count = ReductionSpace{shape, dims}.reduced_count();
    if (count < 2) return std::nullopt;
    return Run(node, [&]() -> Status {
      int64_t rank = static_cast<int64_t>(shape.size());
      ASSIGN_OR_RETURN(Normalized parts, Normalize(node, x, dims, *eps, /*staged=*/true));
      ASSIGN_OR_RETURN(NodeRef y, ChannelAffine(node, parts.normed, rank));
      std::vector<NodeRef> outputs(5, y);
      RETURN_IF_ERROR(UpdateRunningStatistics(node, parts, count, *momentum, outputs));
      return Finish(node, outputs);
    });
  }

  // _native_batch_norm_legit.no_stats(x, weight, bias, training, momentum, eps): batch statistics
  // and no running ones, as instance norm is captured (x viewed [1, N * C, ...]).
  std::optional<Status> BatchNormWithoutRunningStatistics(const ir::OpNode& node) {
    if (!AllFloat32(node) || Used(node, 1) || Used(node, 2) || !Flag(node, {3, "training"}, false)) return std::nullopt;
    NodeRef x = Map(node.args.at(0).As<NodeRef>());
    const ir::Shape shape = ShapeOf(x);
    std::optional<double> eps = Number(node.FindArgument({5, "eps"}));
    if (!eps || shape.size() < 2) return std::nullopt;
    // Over one image (instance norm's view) the statistics are rows of the channel's elements, as
    // a layer norm's; over several, merged over the images as a training batch norm's.
    const bool one_image = shape[0] == 1;
    std::vector<int64_t> dims;
    if (!one_image) dims.push_back(0);
    for (int64_t d = 2; d < static_cast<int64_t>(shape.size()); ++d) dims.push_back(d);
    if (dims.empty()) return std::nullopt;
    return Run(node, [&]() -> Status {
      int64_t rank = static_cast<int64_t>(shape.size());
      ASSIGN_OR_RETURN(Normalized parts, Normalize(node, x, dims, *eps, /*staged=*/!one_image));
      ASSIGN_OR_RETURN(NodeRef y, ChannelAffine(node, parts.normed, rank));
      return Finish(node, {y});
    });
  }

  // Sets the new running mean and variance (outputs 3 and 4 of a training batch norm over `count`
  // values per channel) where they are read: the batch mean, and the batch variance unbiased by
  // count / (count - 1).
  Status UpdateRunningStatistics(const ir::OpNode& node, const Normalized& batch, int64_t count, double momentum,
                                 std::vector<NodeRef>& outputs) {
    if (Used(node, 3)) {
      ASSIGN_OR_RETURN(outputs[3], RunningUpdate(node, {3, "running_mean"}, batch.mean, momentum));
    }
    if (Used(node, 4)) {
      const double bessel = static_cast<double>(count) / static_cast<double>(count - 1);
      ASSIGN_OR_RETURN(NodeRef unbiased,
                       Emit(node, "unbiased_var", "aten.mul.Tensor", {{batch.var}, {bessel}}, ShapeOf(batch.var)));
      ASSIGN_OR_RETURN(outputs[4], RunningUpdate(node, {4, "running_var"}, unbiased, momentum));
    }
    return Status::Ok();
  }

  // The running statistic at `slot` updated with a batch statistic as torch's decomposition does:
  // momentum * batch + (1 - momentum) * running. Computed in the batch statistic's shape (channels
  // with every other dim kept as 1), which the statistics kernel fuses, then viewed back as the
  // running vector [C].
  Result<NodeRef> RunningUpdate(const ir::OpNode& node, ir::ArgSlot slot, NodeRef batch, double momentum) {
    std::optional<NodeRef> running = Tensor(node, slot);
    if (!running || builder().TypeOf(*running)->numel() != builder().TypeOf(batch)->numel()) {
      return Status::InvalidArgument("no running statistic of one value per channel");
    }
    const ir::Shape kept = ShapeOf(batch), vector = ShapeOf(*running);
    ASSIGN_OR_RETURN(NodeRef old, Emit(node, "running", "aten.view.default", {{*running}, {ir::IntList(kept)}}, kept));
    ASSIGN_OR_RETURN(NodeRef fresh, Emit(node, "momentum_batch", "aten.mul.Tensor", {{batch}, {momentum}}, kept));
    ASSIGN_OR_RETURN(NodeRef kept_part, Emit(node, "momentum_running", "aten.mul.Tensor", {{old}, {1.0 - momentum}}, kept));
    ASSIGN_OR_RETURN(NodeRef updated, Emit(node, "updated", "aten.add.Tensor", {{fresh}, {kept_part}}, kept));
    return Emit(node, "new_running", "aten.view.default", {{updated}, {ir::IntList(vector)}}, vector);
  }

  std::optional<Status> Mean(const ir::OpNode& node) {
    if (!AllFloat32(node) || node.FindArgument({-1, "dtype"}) != nullptr) return std::nullopt;
    NodeRef x = Map(node.args.at(0).As<NodeRef>());
    const ir::Shape shape = ShapeOf(x);
    bool by_dim = node.op == "aten.mean.dim";
    auto dims = ReducedDims(by_dim ? node.FindArgument({1, "dim"}) : nullptr, static_cast<int64_t>(shape.size()));
    if (!dims) return std::nullopt;
    bool keepdim = by_dim && Flag(node, {2, "keepdim"}, false);
    return Run(node, [&]() -> Status {
      ASSIGN_OR_RETURN(auto mean, MeanOf(node, x, *dims, keepdim));
      return Finish(node, {mean.second});
    });
  }

  // The source graph's op producing `ref`, when it is `op`.
  const ir::OpNode* Producer(const Argument& arg, const char* op) const {
    const auto* ref = arg.TryAs<NodeRef>();
    const ir::OpNode* node = ref != nullptr && ref->output == 0 ? OpAt(source_, *ref) : nullptr;
    return node != nullptr && node->op == op ? node : nullptr;
  }
  static bool SameTensor(const Argument& arg, NodeRef ref) {
    const auto* other = arg.TryAs<NodeRef>();
    return other != nullptr && *other == ref;
  }
  // a * tanh(softplus(a)) as captured (softplus decomposed: where(a > T, a, log1p(exp(a))) with T
  // at least 15, past which tanh is 1 in fp32 on either side) back as mish(a): its kernel
  // computes tanh(log(1 + n)) = n (n + 2) / (n (n + 2) + 2) for n = exp(a), one exponential and
  // one division where the chain took two exponentials, two logarithms and three divisions.
  std::optional<Status> Mish(const ir::OpNode& node) {
    if (node.args.size() != 2 || !AllFloat32(node)) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      const auto* a = node.args[side].TryAs<NodeRef>();
      const ir::OpNode* tanh = Producer(node.args[1 - side], "aten.tanh.default");
      const ir::OpNode* where = tanh && !tanh->args.empty() ? Producer(tanh->args[0], "aten.where.self") : nullptr;
      if (a == nullptr || where == nullptr || where->args.size() != 3 || !SameTensor(where->args[1], *a)) continue;
      const ir::OpNode* above = Producer(where->args[0], "aten.gt.Scalar");
      const ir::OpNode* log1p = Producer(where->args[2], "aten.log1p.default");
      const ir::OpNode* exp = log1p && !log1p->args.empty() ? Producer(log1p->args[0], "aten.exp.default") : nullptr;
      if (above == nullptr || exp == nullptr || above->args.size() != 2 || !SameTensor(above->args[0], *a) ||
          exp->args.empty() || !SameTensor(exp->args[0], *a)) {
        continue;
      }
      std::optional<double> threshold = Number(&above->args[1]);
      if (!threshold || *threshold < 15.0 || ShapeOf(Map(*a)) != node.outputs[0].shape) continue;
      NodeRef x = Map(*a);
      return Run(node, [&]() -> Status {
        ASSIGN_OR_RETURN(NodeRef mish, Emit(node, "mish", "aten.mish.default", {{x}}, node.outputs[0].shape));
        return Finish(node, {mish});
      });
    }
    return std::nullopt;
  }

  // max.dim or min.dim whose indices nothing reads as amax or amin over [d]: a plain reduction,
  // which folds a row a block at a time (or splits it, or takes several columns per program)
  // instead of holding the whole row to find where its extreme lies.
  std::optional<Status> ValuesOnly(const ir::OpNode& node) {
    if (node.args.size() < 2 || !node.args[0].Is<NodeRef>() || !node.args[1].Is<int64_t>() || node.num_outputs() != 2 ||
        AnyUsed(node, 1)) {
      return std::nullopt;
    }
    NodeRef x = Map(node.args[0].As<NodeRef>());
    const bool keepdim = Flag(node, {2, "keepdim"}, false);
    const char* reduce = node.op == "aten.max.dim" ? "aten.amax.default" : "aten.amin.default";
    return Run(node, [&]() -> Status {
      ASSIGN_OR_RETURN(NodeRef values, Emit(node, "values", reduce, {{x}, {ir::IntList{node.args[1].As<int64_t>()}}, {keepdim}},
                                            node.outputs[0].shape, node.outputs[0].dtype));
      return Finish(node, {values});
    });
  }

  // min.dim(x, d, keepdim) as -max.dim(-x, d, keepdim) with its indices, argmin(x) as argmax(-x):
  // negation is exact, the first of equal minima is the first of equal maxima of -x, and NaN is
  // the extreme torch picks on both sides.
  std::optional<Status> MinAsMaxOfNegation(const ir::OpNode& node) {
    const bool values = node.op == "aten.min.dim";
    if (node.args.empty() || !node.args[0].Is<NodeRef>()) return std::nullopt;
    NodeRef x = Map(node.args[0].As<NodeRef>());
    if (builder().TypeOf(x)->dtype != ir::DType::kFloat32 || node.num_outputs() != (values ? 2 : 1)) return std::nullopt;
    const Argument* dim = node.FindArgument({1, "dim"});
    if (dim == nullptr || !dim->Is<int64_t>()) return std::nullopt;
    const bool keepdim = Flag(node, {2, "keepdim"}, false);
    return Run(node, [&]() -> Status {
      ASSIGN_OR_RETURN(NodeRef negated, Emit(node, "negated", "aten.neg.default", {{x}}, ShapeOf(x)));
      if (!values) {
        ASSIGN_OR_RETURN(NodeRef index, Emit(node, "argmax", "aten.argmax.default", {{negated}, *dim, {keepdim}},
                                             node.outputs[0].shape, ir::DType::kInt64));
        return Finish(node, {index});
      }
      ASSIGN_OR_RETURN(ir::TensorType kept, ir::TensorType::Contiguous(node.outputs[0].shape, ir::DType::kFloat32));
      ASSIGN_OR_RETURN(ir::TensorType indices, ir::TensorType::Contiguous(node.outputs[1].shape, ir::DType::kInt64));
      ASSIGN_OR_RETURN(ir::ValueId max, builder().AddOp(builder().FreshName(node.name + "_max"), "aten.max.dim",
                                                        {{negated}, *dim, {keepdim}}, {}, {kept, indices}));
      ASSIGN_OR_RETURN(NodeRef minimum, Emit(node, "min", "aten.neg.default", {{NodeRef{max, 0}}}, kept.shape));
      return Finish(node, {minimum, NodeRef{max, 1}});
    });
  }

  // A 3-D max or average pooling of [N, C, D, H, W] as two 2-D ones the window kernel computes:
  // over (H, W) of x viewed [N, C * D, H, W], then over D of that viewed [N, C, D, Ho * Wo] with a
  // (kd, 1) window. A maximum over a box is the maximum over D of the maxima over (H, W); an
  // average is too, since its divisor is the product of the axes' counts (the whole window, or
  // without count_include_pad the taps inside the input, a box as well).
  std::optional<Status> Pool3dAsTwo2d(const ir::OpNode& node) {
    const bool is_max = node.op == "aten.max_pool3d_with_indices.default";
    if (node.args.empty() || !node.args[0].Is<NodeRef>() || (is_max && Used(node, 1))) return std::nullopt;
    NodeRef x = Map(node.args[0].As<NodeRef>());
    const ir::TensorType& type = *builder().TypeOf(x);
    if (type.rank() != 5 || type.dtype != ir::DType::kFloat32 || !type.is_contiguous()) return std::nullopt;
    const ir::IntList k = node.FindIntList({1, "kernel_size"}, 3, {});
    const ir::IntList s = node.FindIntList({2, "stride"}, 3, k);
    const ir::IntList p = node.FindIntList({3, "padding"}, 3, {0, 0, 0});
    const ir::IntList d = is_max ? node.FindIntList({4, "dilation"}, 3, {1, 1, 1}) : ir::IntList{1, 1, 1};
    for (const ir::IntList* list : {&k, &s, &p, &d}) {
      if (list->size() != 3) return std::nullopt;
    }
    if (Flag(node, {is_max ? 5 : 4, "ceil_mode"}, false)) return std::nullopt;
    const bool count_include_pad = is_max || Flag(node, {5, "count_include_pad"}, true);
    if (!is_max) {
      const Argument* divisor = node.FindArgument({6, "divisor_override"});
      if (divisor != nullptr && !divisor->Is<ir::NoneArg>()) return std::nullopt;
    }
    const ir::Shape& in = type.shape;
    const ir::Shape& out = node.outputs[0].shape;
    if (out.size() != 5) return std::nullopt;
    // One 2-D pooling: its window arguments and output shape, and (max) its unread indices.
    auto pool2d = [&](NodeRef input, ir::IntList window, ir::IntList steps, ir::IntList pads, ir::IntList dilations,
                      const ir::Shape& shape) -> Result<NodeRef> {
      ASSIGN_OR_RETURN(ir::TensorType values, ir::TensorType::Contiguous(shape, ir::DType::kFloat32));
      std::vector<Argument> args = {{input}, {window}, {steps}, {pads}};
      std::vector<ir::TensorType> types = {values};
      if (is_max) {
        args.push_back({dilations});
        args.push_back({false});
        ASSIGN_OR_RETURN(ir::TensorType indices, ir::TensorType::Contiguous(shape, ir::DType::kInt64));
        types.push_back(indices);
      } else {
        args.push_back({false});
        args.push_back({count_include_pad});
        args.push_back({Argument(ir::NoneArg{})});
      }
      ASSIGN_OR_RETURN(ir::ValueId id, builder().AddOp(builder().FreshName(node.name + "_2d"),
                                                       is_max ? "aten.max_pool2d_with_indices.default" : "aten.avg_pool2d.default",
                                                       std::move(args), {}, std::move(types)));
      return NodeRef{id, 0};
    };
    return Run(node, [&]() -> Status {
      const ir::Shape planes = {in[0], in[1] * in[2], in[3], in[4]};
      ASSIGN_OR_RETURN(NodeRef flat, Emit(node, "planes", "aten.view.default", {{x}, {ir::IntList(planes)}}, planes));
      ASSIGN_OR_RETURN(NodeRef spatial, pool2d(flat, {k[1], k[2]}, {s[1], s[2]}, {p[1], p[2]}, {d[1], d[2]},
                                               {in[0], in[1] * in[2], out[3], out[4]}));
      const ir::Shape columns = {in[0], in[1], in[2], out[3] * out[4]};
      ASSIGN_OR_RETURN(NodeRef by_depth, Emit(node, "columns", "aten.view.default", {{spatial}, {ir::IntList(columns)}}, columns));
      ASSIGN_OR_RETURN(NodeRef deep, pool2d(by_depth, {k[0], 1}, {s[0], 1}, {p[0], 0}, {d[0], 1},
                                            {in[0], in[1], out[2], out[3] * out[4]}));
      ASSIGN_OR_RETURN(NodeRef pooled, Emit(node, "pooled", "aten.view.default", {{deep}, {ir::IntList(out)}}, out));
      return Finish(node, {pooled});
    });
  }

  // linalg_vector_norm(x, ord, dim, keepdim) for ord 1, 2 and inf.
  std::optional<Status> VectorNorm(const ir::OpNode& node) {
    if (!AllFloat32(node) || node.FindArgument({-1, "dtype"}) != nullptr) return std::nullopt;
    NodeRef x = Map(node.args.at(0).As<NodeRef>());
    const ir::Shape shape = ShapeOf(x);
    std::optional<double> ord = Number(node.FindArgument({1, "ord"}));
    if (!ord) ord = 2.0;
    auto dims = ReducedDims(node.FindArgument({2, "dim"}), static_cast<int64_t>(shape.size()));
    if (!dims || !(*ord == 1.0 || *ord == 2.0 || std::isinf(*ord))) return std::nullopt;
    bool keepdim = Flag(node, {3, "keepdim"}, false);
    return Run(node, [&]() -> Status {
      ir::Shape out = Reduced(shape, *dims, keepdim);
      if (*ord == 2.0) {
        ASSIGN_OR_RETURN(NodeRef squared, Emit(node, "squared", "aten.mul.Tensor", {{x}, {x}}, shape));
        ASSIGN_OR_RETURN(NodeRef sum, Emit(node, "sum", "aten.sum.dim_IntList", {{squared}, {ir::IntList(*dims)}, {keepdim}}, out));
        ASSIGN_OR_RETURN(NodeRef norm, Emit(node, "norm", "aten.sqrt.default", {{sum}}, out));
        return Finish(node, {norm});
      }
      ASSIGN_OR_RETURN(NodeRef magnitude, Emit(node, "abs", "aten.abs.default", {{x}}, shape));
      const char* reduce = *ord == 1.0 ? "aten.sum.dim_IntList" : (*ord > 0 ? "aten.amax.default" : "aten.amin.default");
      ASSIGN_OR_RETURN(NodeRef norm, Emit(node, "norm", reduce, {{magnitude}, {ir::IntList(*dims)}, {keepdim}}, out));
      return Finish(node, {norm});
    });
  }

  // addmm(bias, a, b, beta, alpha) = beta * bias + alpha * (a @ b).
  std::optional<Status> Addmm(const ir::OpNode& node) {
    if (!AllFloat32(node)) return std::nullopt;
    std::optional<NodeRef> bias = Tensor(node, {0, "self"}), a = Tensor(node, {1, "mat1"}), b = Tensor(node, {2, "mat2"});
    if (!bias || !a || !b) return std::nullopt;
    double beta = Number(node.FindArgument({3, "beta"})).value_or(1.0);
    double alpha = Number(node.FindArgument({4, "alpha"})).value_or(1.0);
    return Run(node, [&]() -> Status {
      const ir::Shape& shape = node.type().shape;
      ASSIGN_OR_RETURN(NodeRef product, Emit(node, "mm", "aten.mm.default", {{*a}, {*b}}, shape));
      if (alpha != 1.0) {
        ASSIGN_OR_RETURN(product, Emit(node, "alpha", "aten.mul.Tensor", {{product}, {alpha}}, shape));
      }
      NodeRef term = *bias;
      if (beta != 1.0) {
        ASSIGN_OR_RETURN(term, Emit(node, "beta", "aten.mul.Tensor", {{*bias}, {beta}}, ShapeOf(*bias)));
      }
      ASSIGN_OR_RETURN(NodeRef out, Emit(node, "out", "aten.add.Tensor", {{product}, {term}}, shape));
      return Finish(node, {out});
    });
  }

  // mm(A [M, K], b [K, 1]) = sum(A * b^T, dim 1): a row reduction that streams A once at memory
  // speed, where a tiled product would waste all but one column of every tile.
  std::optional<Status> MatrixVector(const ir::OpNode& node) {
    if (!AllFloat32(node)) return std::nullopt;
    std::optional<NodeRef> a = Tensor(node, {0, "self"}), b = Tensor(node, {1, "mat2"});
    if (!a || !b) return std::nullopt;
    const ir::TensorType* b_type = builder().TypeOf(*b);
    const ir::Shape& a_shape = ShapeOf(*a);
    if (b_type == nullptr || b_type->shape.size() != 2 || b_type->shape[1] != 1 || !b_type->is_contiguous() ||
        a_shape.size() != 2) {
      return std::nullopt;
    }
    return Run(node, [&]() -> Status {
      ir::IntList row = {1, b_type->shape[0]};
      ASSIGN_OR_RETURN(NodeRef b_row, Emit(node, "row", "aten.view.default", {{*b}, {row}}, row));
      ASSIGN_OR_RETURN(NodeRef products, Emit(node, "products", "aten.mul.Tensor", {{*a}, {b_row}}, a_shape));
      ASSIGN_OR_RETURN(NodeRef out, Emit(node, "out", "aten.sum.dim_IntList", {{products}, {ir::IntList{1}}, {true}},
                                        node.type().shape));
      return Finish(node, {out});
    });
  }

  // gather(log_softmax(x, d), d, index) with one index per row (the loss of the target class):
  // x[index] - max - log(sum(exp(x - max))), so the row is gathered from x itself and the full
  // log-softmax never needs to exist.
  std::optional<Status> GatherLogSoftmax(const ir::OpNode& node) {
    std::optional<NodeRef> src = Tensor(node, {0, "self"}), index = Tensor(node, {2, "index"});
    const Argument* dim = node.FindArgument({1, "dim"});
    if (!src || !index || dim == nullptr || !dim->Is<int64_t>() || Flag(node, {3, "sparse_grad"}, false)) return std::nullopt;
    auto found = log_softmax_.find({src->value, src->output});
    if (found == log_softmax_.end()) return std::nullopt;
    const LogSoftmax& parts = found->second;
    const ir::Shape& shape = ShapeOf(parts.x);
    auto dims = ReducedDims(dim, static_cast<int64_t>(shape.size()));
    if (!dims || dims->front() != parts.dim || !IsRowGatherShape(shape, parts.dim, *builder().TypeOf(*index))) {
      return std::nullopt;
    }
    return Run(node, [&]() -> Status {
      const ir::Shape& kept = ShapeOf(*index);
      ASSIGN_OR_RETURN(NodeRef picked, Emit(node, "picked", "aten.gather.default", {{parts.x}, {parts.dim}, {*index}}, kept));
      ASSIGN_OR_RETURN(NodeRef shifted, Emit(node, "shifted", "aten.sub.Tensor", {{picked}, {parts.max}}, kept));
      ASSIGN_OR_RETURN(NodeRef out, Emit(node, "out", "aten.sub.Tensor", {{shifted}, {parts.log_sum}}, kept));
      return Finish(node, {out});
    });
  }

  // A sum, mean, amax, amin, or max/min values (their indices unread) over dims of size 1 (a sum
  // over H and W after global pooling kept them) is its input viewed without them: no reduction
  // kernel, and no reduction over a value that another reduction's group has already reduced.
  std::optional<Status> UnitReduction(const ir::OpNode& node) {
    if (node.args.empty() || !node.args[0].Is<NodeRef>() || node.FindArgument({-1, "dtype"}) != nullptr) return std::nullopt;
    NodeRef x = Map(node.args[0].As<NodeRef>());
    const ir::TensorType* type = builder().TypeOf(x);
    if (type == nullptr || type->dtype != node.type().dtype || !type->is_contiguous() || AnyUsed(node, 1)) {
      return std::nullopt;
    }
    auto dims = ReducedDims(node.FindArgument({1, "dim"}), type->rank());
    if (!dims || dims->empty() || type->rank() == 0 || ReductionSpace{type->shape, *dims}.reduced_count() != 1) return std::nullopt;
    return Run(node, [&]() -> Status {
      ASSIGN_OR_RETURN(NodeRef view, Emit(node, "view", "aten.view.default", {{x}, {ir::IntList(node.type().shape)}},
                                          node.type().shape, node.type().dtype));
      return Finish(node, {view});
    });
  }

  // sum of a boolean tensor (a count, such as cross-entropy's targets not ignored) as an fp32 sum
  // cast back to the integer result: exact while the count stays below 2^24, which the rewrite
  // requires of the number of elements summed.
  std::optional<Status> CountTrue(const ir::OpNode& node) {
    if (node.args.empty() || !node.args[0].Is<NodeRef>() || node.FindArgument({-1, "dtype"}) != nullptr) return std::nullopt;
    NodeRef x = Map(node.args[0].As<NodeRef>());
    const ir::TensorType* type = builder().TypeOf(x);
    if (type == nullptr || type->dtype != ir::DType::kBool || node.num_outputs() != 1 ||
        node.type().dtype != ir::DType::kInt64) {
      return std::nullopt;
    }
    auto dims = ReducedDims(node.FindArgument({1, "dim"}), type->rank());
    if (!dims || dims->empty() || ReductionSpace{type->shape, *dims}.reduced_count() >= (int64_t{1} << 24)) return std::nullopt;
    bool keepdim = Flag(node, {2, "keepdim"}, false);
    return Run(node, [&]() -> Status {
      ASSIGN_OR_RETURN(NodeRef ones, Cast(node, "ones", x, ir::DType::kFloat32));
      ASSIGN_OR_RETURN(NodeRef sum, Emit(node, "count", "aten.sum.dim_IntList", {{ones}, {ir::IntList(*dims)}, {keepdim}},
                                         node.type().shape));
      ASSIGN_OR_RETURN(NodeRef out, Cast(node, "out", sum, ir::DType::kInt64));
      return Finish(node, {out});
    });
  }

  // The value `ref` views (through view ops, which may alias their input), in the source graph.
  ir::ValueId ViewBase(NodeRef ref) const {
    ir::ValueId at = ref.value;
    while (true) {
      const auto* op = source().value(at).TryAs<ir::OpNode>();
      if (op == nullptr || (op->op_kind() != ir::OpKind::kView && op->op != "aten.contiguous.default") || op->args.empty() ||
          !op->args[0].Is<NodeRef>()) {
        return at;
      }
      at = op->args[0].As<NodeRef>().value;
    }
  }

  // Whether a returned copy of `x` may return x itself: x views a result the forward computes (not
  // an input, parameter or constant), which no other returned value views (the outputs would
  // alias each other).
  bool ReturnableWithoutCopy(const ir::OpNode& copy, NodeRef x) const {
    const ir::ValueId base = ViewBase(x);
    if (source().value(base).TryAs<ir::OpNode>() == nullptr) return false;
    for (const NodeRef& out : source().LiveOuts()) {
      if (out.value != copy.id && ViewBase(out) == base) return false;
    }
    return true;
  }

  // A copy that changes nothing but identity is the input itself, unless it is returned and the
  // output would alias an input or another output, or it changes dtype, layout or memory format.
  std::optional<Status> DropCopy(const ir::OpNode& node) {
    if (node.args.empty() || !node.args[0].Is<NodeRef>()) return std::nullopt;
    if (live_outs_.count({node.id, 0}) && !ReturnableWithoutCopy(node, node.args[0].As<NodeRef>())) return std::nullopt;
    NodeRef x = Map(node.args[0].As<NodeRef>());
    const ir::TensorType* type = builder().TypeOf(x);
    if (type == nullptr || !(*type == node.type())) return std::nullopt;
    for (const ir::NamedArgument& kwarg : node.kwargs) {
      if (kwarg.name == "memory_format" && kwarg.argument.Is<ir::MemoryFormatArg>() &&
          kwarg.argument.As<ir::MemoryFormatArg>().name != "preserve_format" &&
          kwarg.argument.As<ir::MemoryFormatArg>().name != "contiguous_format") {
        return std::nullopt;
      }
    }
    Replace(node, {x});
    return Status::Ok();
  }

  // scalar_tensor(v): kept as a node (an op may need the tensor) and remembered so pointwise
  // readers take the number instead.
  std::optional<Status> RememberScalar(const ir::OpNode& node) {
    const Argument* value = node.FindArgument({0, "s"});
    if (value == nullptr || node.type().rank() != 0) return std::nullopt;
    // The number keeps the tensor's kind, so type promotion in the reader does not change.
    std::optional<double> number = Number(value);
    if (number && ir::IsFloatingPoint(node.type().dtype)) scalars_.emplace(node.id, Argument{*number});
    else if (value->Is<int64_t>() && !ir::IsFloatingPoint(node.type().dtype)) scalars_.emplace(node.id, *value);
    return std::nullopt;
  }

  Status CopyWithScalars(const ir::OpNode& node) {
    bool changed = false;
    std::vector<Argument> args;
    for (const Argument& arg : node.args) {
      const auto* ref = arg.TryAs<NodeRef>();
      auto scalar = ref ? scalars_.find(ref->value) : scalars_.end();
      if (scalar != scalars_.end()) {
        args.push_back(scalar->second);
        changed = true;
      } else {
        args.push_back(Map(arg));
      }
    }
    if (!changed) return CopyOp(node);
    std::vector<ir::NamedArgument> kwargs;
    for (const ir::NamedArgument& kwarg : node.kwargs) kwargs.push_back({kwarg.name, Map(kwarg.argument)});
    auto added = builder().AddOp(node.name, node.op, std::move(args), std::move(kwargs), node.outputs);
    if (!added.ok()) return CopyOp(node);
    std::vector<NodeRef> refs;
    for (int32_t i = 0; i < node.num_outputs(); ++i) refs.push_back(NodeRef{*added, i});
    Replace(node, std::move(refs));
    return Status::Ok();
  }

  // A pointwise op over a view that undoes a regrouping (sinkable_: group norm's [N, group,
  // C/group, HxW] back to [N, C, H, W]) runs in the regrouped shape instead, its other operands
  // viewed alike, and the view moves below it; so the chain after a norm joins the norm's kernel
  // instead of making a pass of its own. Declined where an operand cannot be viewed so (a
  // broadcast that splits a regrouped dim, a strided tensor) or is computed by a pointwise op (it
  // would leave that op's kernel).
  std::optional<Status> SinkRegrouping(const ir::OpNode& node) {
    if (sinkable_.empty() || node.num_outputs() != 1) return std::nullopt;
    std::vector<ir::NamedArgument> kwargs;  // gelu's `approximate`, a cast's dtype: no tensors
    for (const ir::NamedArgument& kwarg : node.kwargs) {
      if (kwarg.argument.Is<NodeRef>()) return std::nullopt;
      kwargs.push_back({kwarg.name, Map(kwarg.argument)});
    }
    const ir::Shape& shape = node.type().shape;
    std::optional<NodeRef> regrouped;
    for (const Argument& arg : node.args) {
      const auto* ref = arg.TryAs<NodeRef>();
      if (ref == nullptr || !sinkable_.count(Key(Map(*ref)))) continue;
      NodeRef base = builder().value(Map(*ref).value).As<ir::OpNode>().args.at(0).As<NodeRef>();
      if (ShapeOf(Map(*ref)) != shape || (regrouped && ShapeOf(*regrouped) != ShapeOf(base))) return std::nullopt;
      regrouped = base;
    }
    if (!regrouped) return std::nullopt;
    const ir::Shape target = ShapeOf(*regrouped);
    auto groups = MatchingDims(shape, target);
    if (!groups) return std::nullopt;
    std::vector<std::pair<NodeRef, ir::IntList>> views;  // operands to view, and their shapes
    std::vector<Argument> args;
    for (const Argument& arg : node.args) {
      const auto* ref = arg.TryAs<NodeRef>();
      if (ref == nullptr) {
        args.push_back(Map(arg));
        continue;
      }
      if (auto scalar = scalars_.find(ref->value); scalar != scalars_.end()) {
        args.push_back(scalar->second);
        continue;
      }
      NodeRef mapped = Map(*ref);
      if (sinkable_.count(Key(mapped))) {
        args.push_back(Argument(builder().value(mapped.value).As<ir::OpNode>().args.at(0).As<NodeRef>()));
        continue;
      }
      const ir::TensorType& type = *builder().TypeOf(mapped);
      const auto* producer = builder().value(mapped.value).TryAs<ir::OpNode>();
      if (!type.is_contiguous() || (producer != nullptr && producer->op_kind() == ir::OpKind::kPointwise)) return std::nullopt;
      auto viewed = Regrouped(type.shape, shape, target, *groups);
      if (!viewed) return std::nullopt;
      views.push_back({mapped, *viewed});
      args.push_back(Argument(mapped));  // replaced by its view below
    }
    return Run(node, [&]() -> Status {
      size_t next = 0;
      for (Argument& arg : args) {
        const auto* ref = arg.TryAs<NodeRef>();
        if (ref == nullptr || next == views.size() || !(*ref == views[next].first)) continue;
        ASSIGN_OR_RETURN(NodeRef viewed, Emit(node, "regrouped", "aten.view.default", {{*ref}, {views[next].second}},
                                              views[next].second, builder().TypeOf(*ref)->dtype));
        arg = Argument(viewed);
        ++next;
      }
      ASSIGN_OR_RETURN(ir::TensorType type, ir::TensorType::Contiguous(target, node.type().dtype));
      ASSIGN_OR_RETURN(ir::ValueId id, builder().AddOp(node.name, node.op, args, kwargs, {type}));
      ASSIGN_OR_RETURN(NodeRef back, Emit(node, "ungrouped", "aten.view.default", {{NodeRef{id, 0}}, {ir::IntList(shape)}},
                                          shape, node.type().dtype));
      sinkable_.insert(Key(back));
      return Finish(node, {back});
    });
  }

  static std::pair<ir::ValueId, int32_t> Key(NodeRef ref) { return {ref.value, ref.output}; }

  // Runs the rewrite of `node`; on failure the node is copied unchanged (values already added
  // stay unused and dead-code elimination drops them).
  Status Run(const ir::OpNode& node, const std::function<Status()>& rewrite) {
    Status status = rewrite();
    return status.ok() ? status : CopyOp(node);
  }

  // What a decomposed log-softmax computed: out = x - max - log_sum over `dim`.
  struct LogSoftmax {
    NodeRef x, max, log_sum;
    int64_t dim;
  };
  std::map<std::pair<ir::ValueId, int32_t>, LogSoftmax> log_softmax_;  // by the new graph's `out`
  const ir::Graph& source_;  // the graph being rewritten (Mish reads its producers)
  // Graph outputs and mutations' new values: read after the call, so never an alias of an input
  // or of the state a mutation overwrites.
  std::set<std::pair<ir::ValueId, int32_t>> live_outs_;
  std::set<std::pair<ir::ValueId, int32_t>> used_;
  std::map<ir::ValueId, Argument> scalars_;
  // Views of the new graph that undo a regrouping: pointwise ops over them may run regrouped.
  std::set<std::pair<ir::ValueId, int32_t>> sinkable_;
};

}  // namespace

Result<ir::Graph> Decompose(const ir::Graph& graph) {
  Decomposer decomposer(graph);
  return decomposer.Rewrite(graph);
}

}  // namespace kforge::passes
