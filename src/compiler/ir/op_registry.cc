#include "compiler/ir/op_registry.h"

#include <string>
#include <unordered_map>
#include <utility>

namespace kforge::ir {
namespace {

constexpr ArgSlot kDim{1, "dim"};
constexpr ArgSlot kKeepdim{2, "keepdim"};
constexpr ArgSlot kKeepdimKeyword{-1, "keepdim"};

OpInfo Op(std::string name, OpKind kind, int tensor_inputs, ArgSlot dims = {}) {
  OpInfo info;
  info.name = std::move(name);
  info.kind = kind;
  info.tensor_inputs = tensor_inputs;
  info.dims = dims;
  return info;
}
OpInfo Pointwise(std::string name, int tensor_inputs) { return Op(std::move(name), OpKind::kPointwise, tensor_inputs); }
OpInfo Reduction(const char* name, ArgSlot dims = {}, ArgSlot keepdim = {}) {
  OpInfo info = Op(name, OpKind::kReduction, 1, dims);
  info.keepdim = keepdim;
  return info;
}
// A view; reshape may copy, so it alone is a view that is not metadata-only.
OpInfo View(const char* name, bool preserves_numel, bool metadata_only = true) {
  OpInfo info = Op(name, OpKind::kView, 1);
  info.metadata_only = metadata_only;
  info.preserves_numel = preserves_numel;
  return info;
}

// Pointwise ops whose only overload in the core set is .default, by their tensor-input count.
void AddDefaultPointwise(std::vector<OpInfo>& ops) {
  const std::pair<int, std::vector<const char*>> groups[] = {
      {1, {"abs",       "neg",       "exp",         "exp2",        "expm1",      "log",      "log1p",
           "log2",      "log10",     "sqrt",        "rsqrt",       "reciprocal", "sin",      "cos",
           "tan",       "asin",      "acos",        "atan",        "sinh",       "cosh",     "tanh",
           "sigmoid",   "erf",       "erfinv",      "relu",        "gelu",       "silu",     "mish",
           "hardtanh",  "hardswish", "hardsigmoid", "leaky_relu",  "elu",        "softplus", "sign",
           "sgn",       "floor",     "ceil",        "round",       "trunc",      "frac",     "clamp",
           "clamp_min", "clamp_max", "logical_not", "bitwise_not", "isnan",      "isinf",    "_to_copy"}},
      {2, {"maximum", "minimum", "logical_and", "logical_or", "logical_xor", "atan2", "floor_divide"}},
      {3, {"addcmul", "addcdiv"}},
  };
  for (const auto& [tensor_inputs, names] : groups) {
    for (const char* name : names) ops.push_back(Pointwise("aten." + std::string(name) + ".default", tensor_inputs));
  }
  for (const char* comparison : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    ops.push_back(Pointwise("aten." + std::string(comparison) + ".Tensor", 2));
    ops.push_back(Pointwise("aten." + std::string(comparison) + ".Scalar", 1));
  }
}

std::vector<OpInfo> BuildTable() {
  std::vector<OpInfo> ops = {
      // Pointwise with an overload other than .default; the .default ones are added by name below.
      Pointwise("aten.add.Tensor", 2),
      Pointwise("aten.add.Scalar", 1),
      Pointwise("aten.sub.Tensor", 2),
      Pointwise("aten.sub.Scalar", 1),
      Pointwise("aten.rsub.Tensor", 2),
      Pointwise("aten.rsub.Scalar", 1),
      Pointwise("aten.mul.Tensor", 2),
      Pointwise("aten.mul.Scalar", 1),
      Pointwise("aten.div.Tensor", 2),
      Pointwise("aten.div.Scalar", 1),
      Pointwise("aten.div.Tensor_mode", 2),
      Pointwise("aten.div.Scalar_mode", 1),
      Pointwise("aten.pow.Tensor_Scalar", 1),
      Pointwise("aten.pow.Tensor_Tensor", 2),
      Pointwise("aten.pow.Scalar", 1),
      Pointwise("aten.round.decimals", 1),
      Pointwise("aten.clamp.Tensor", 3),
      Pointwise("aten.clamp_min.Tensor", 2),
      Pointwise("aten.clamp_max.Tensor", 2),
      Pointwise("aten.where.self", 3),
      Pointwise("aten.remainder.Tensor", 2),
      Pointwise("aten.remainder.Scalar", 1),
      Pointwise("aten.fmod.Tensor", 2),
      Pointwise("aten.fmod.Scalar", 1),
      Pointwise("aten.masked_fill.Scalar", 2),
      Pointwise("aten.masked_fill.Tensor", 3),
      Pointwise("aten.lerp.Scalar", 2),
      Pointwise("aten.lerp.Tensor", 3),
      Pointwise("aten.bitwise_and.Tensor", 2),
      Pointwise("aten.bitwise_or.Tensor", 2),
      Pointwise("aten.bitwise_xor.Tensor", 2),
      Pointwise("aten.bitwise_and.Scalar", 1),
      Pointwise("aten.bitwise_or.Scalar", 1),
      Pointwise("aten.bitwise_xor.Scalar", 1),
      // Reductions.
      Reduction("aten.sum.dim_IntList", kDim, kKeepdim),
      Reduction("aten.sum.default"),
      Reduction("aten.mean.dim", kDim, kKeepdim),
      Reduction("aten.mean.default"),
      Reduction("aten.amax.default", kDim, kKeepdim),
      Reduction("aten.amin.default", kDim, kKeepdim),
      Reduction("aten.max.dim", kDim, kKeepdim),
      Reduction("aten.min.dim", kDim, kKeepdim),
      Reduction("aten.max.default"),
      Reduction("aten.min.default"),
      Reduction("aten.argmax.default", kDim, kKeepdim),
      Reduction("aten.argmin.default", kDim, kKeepdim),
      Reduction("aten.prod.dim_int", kDim, kKeepdim),
      Reduction("aten.prod.default"),
      Reduction("aten.var.correction", kDim, kKeepdimKeyword),
      Reduction("aten.var.dim", kDim, {3, "keepdim"}),
      Reduction("aten.std.correction", kDim, kKeepdimKeyword),
      Reduction("aten.std.dim", kDim, {3, "keepdim"}),
      Reduction("aten.var_mean.correction", kDim, kKeepdimKeyword),
      Reduction("aten.any.dim", kDim, kKeepdim),
      Reduction("aten.any.dims", kDim, kKeepdim),
      Reduction("aten.any.default"),
      Reduction("aten.all.dim", kDim, kKeepdim),
      Reduction("aten.all.dims", kDim, kKeepdim),
      Reduction("aten.all.default"),
      Reduction("aten.logsumexp.default", kDim, kKeepdim),
      Reduction("aten.linalg_vector_norm.default", {2, "dim"}, {3, "keepdim"}),
      // Matmul-like.
      Op("aten.mm.default", OpKind::kMatmul, 2),
      Op("aten.bmm.default", OpKind::kMatmul, 2),
      Op("aten.addmm.default", OpKind::kMatmul, 3),
      Op("aten.baddbmm.default", OpKind::kMatmul, 3),
      Op("aten.matmul.default", OpKind::kMatmul, 2),
      Op("aten.dot.default", OpKind::kMatmul, 2),
      Op("aten.mv.default", OpKind::kMatmul, 2),
      Op("aten.addmv.default", OpKind::kMatmul, 3),
      Op("aten.linear.default", OpKind::kMatmul, 3),
      // Convolution.
      Op("aten.convolution.default", OpKind::kConvolution, 3),
      Op("aten.conv1d.default", OpKind::kConvolution, 3),
      Op("aten.conv2d.default", OpKind::kConvolution, 3),
      Op("aten.conv3d.default", OpKind::kConvolution, 3),
      // Pooling.
      Op("aten.max_pool2d_with_indices.default", OpKind::kPooling, 1),
      Op("aten.max_pool3d_with_indices.default", OpKind::kPooling, 1),
      Op("aten.avg_pool1d.default", OpKind::kPooling, 1),
      Op("aten.avg_pool2d.default", OpKind::kPooling, 1),
      Op("aten.avg_pool3d.default", OpKind::kPooling, 1),
      Op("aten._adaptive_avg_pool2d.default", OpKind::kPooling, 1),
      Op("aten._adaptive_avg_pool3d.default", OpKind::kPooling, 1),
      Op("aten.adaptive_max_pool2d.default", OpKind::kPooling, 1),
      // Normalization.
      Op("aten.native_layer_norm.default", OpKind::kNormalization, 3),
      Op("aten.native_group_norm.default", OpKind::kNormalization, 3),
      Op("aten.native_batch_norm.default", OpKind::kNormalization, 5),
      Op("aten._native_batch_norm_legit_no_training.default", OpKind::kNormalization, 5),
      Op("aten._native_batch_norm_legit_functional.default", OpKind::kNormalization, 5),
      Op("aten._native_batch_norm_legit.default", OpKind::kNormalization, 5),
      Op("aten._native_batch_norm_legit.no_stats", OpKind::kNormalization, 3),
      Op("aten._softmax.default", OpKind::kNormalization, 1, kDim),
      Op("aten._log_softmax.default", OpKind::kNormalization, 1, kDim),
      // Views.
      View("aten.view.default", true),
      View("aten._unsafe_view.default", true),
      View("aten.reshape.default", true, /*metadata_only=*/false),
      View("aten.permute.default", true),
      View("aten.expand.default", false),
      View("aten.squeeze.dim", true),
      View("aten.squeeze.dims", true),
      View("aten.squeeze.default", true),
      View("aten.unsqueeze.default", true),
      View("aten.alias.default", true),
      View("aten.detach.default", true),
      View("aten.t.default", true),
      View("aten.transpose.int", true),
      View("aten.slice.Tensor", false),
      View("aten.select.int", false),
      View("aten.narrow.default", false),
      View("aten.as_strided.default", false),
      View("aten.unfold.default", false),
      View("aten.diagonal.default", false),
      View("aten.unbind.int", false),
      // Data movement.
      Op("aten.clone.default", OpKind::kDataMovement, 1),
      Op("aten.cat.default", OpKind::kDataMovement, 0),
      Op("aten.stack.default", OpKind::kDataMovement, 0),
      Op("aten.constant_pad_nd.default", OpKind::kDataMovement, 1),
      Op("aten.reflection_pad2d.default", OpKind::kDataMovement, 1),
      Op("aten.replication_pad2d.default", OpKind::kDataMovement, 1),
      Op("aten.flip.default", OpKind::kDataMovement, 1),
      Op("aten.roll.default", OpKind::kDataMovement, 1),
      Op("aten.repeat.default", OpKind::kDataMovement, 1),
      Op("aten.index_select.default", OpKind::kDataMovement, 2),
      Op("aten.split_with_sizes.default", OpKind::kDataMovement, 1),
      Op("aten.split.Tensor", OpKind::kDataMovement, 1),
      Op("aten.copy.default", OpKind::kDataMovement, 2),
      Op("aten.contiguous.default", OpKind::kDataMovement, 1),
      Op("aten.lift_fresh_copy.default", OpKind::kDataMovement, 1),
      // Scans.
      Op("aten.cumsum.default", OpKind::kScan, 1, kDim),
      Op("aten.cumprod.default", OpKind::kScan, 1, kDim),
      Op("aten.cummax.default", OpKind::kScan, 1, kDim),
      Op("aten.cummin.default", OpKind::kScan, 1, kDim),
      Op("aten._cummax_helper.default", OpKind::kScan, 3, {3, "dim"}),
      Op("aten._cummin_helper.default", OpKind::kScan, 3, {3, "dim"}),
      Op("aten.logcumsumexp.default", OpKind::kScan, 1, kDim),
      // Index and gather.
      Op("aten.index.Tensor", OpKind::kIndex, 1),
      Op("aten.index_put.default", OpKind::kIndex, 2),
      Op("aten.gather.default", OpKind::kIndex, 2),
      Op("aten.scatter.src", OpKind::kIndex, 3),
      Op("aten.scatter.value", OpKind::kIndex, 2),
      Op("aten.scatter_add.default", OpKind::kIndex, 3),
      Op("aten.scatter_reduce.two", OpKind::kIndex, 3),
      Op("aten.embedding.default", OpKind::kIndex, 2),
      // Creation.
      Op("aten.full.default", OpKind::kCreation, 0),
      Op("aten.full_like.default", OpKind::kCreation, 1),
      Op("aten.zeros.default", OpKind::kCreation, 0),
      Op("aten.zeros_like.default", OpKind::kCreation, 1),
      Op("aten.ones.default", OpKind::kCreation, 0),
      Op("aten.ones_like.default", OpKind::kCreation, 1),
      Op("aten.empty.memory_format", OpKind::kCreation, 0),
      Op("aten.empty_like.default", OpKind::kCreation, 1),
      Op("aten.empty_strided.default", OpKind::kCreation, 0),
      Op("aten.scalar_tensor.default", OpKind::kCreation, 0),
      Op("aten.arange.default", OpKind::kCreation, 0),
      Op("aten.arange.start", OpKind::kCreation, 0),
      Op("aten.arange.start_step", OpKind::kCreation, 0),
      Op("aten.iota.default", OpKind::kCreation, 0),
      Op("aten.rand.default", OpKind::kCreation, 0),
      Op("aten.randn.default", OpKind::kCreation, 0),
      Op("aten.rand_like.default", OpKind::kCreation, 1),
      Op("aten.randn_like.default", OpKind::kCreation, 1),
      // kforge's own ops, which passes make (never captured).
      Op(kAttentionOp, OpKind::kAttention, 4),
      Op(kRnnScanOp, OpKind::kRecurrence, 2),
  };
  AddDefaultPointwise(ops);
  return ops;
}

}  // namespace

const char* ToString(OpKind kind) {
  switch (kind) {
    case OpKind::kPointwise: return "pointwise";
    case OpKind::kReduction: return "reduction";
    case OpKind::kMatmul: return "matmul";
    case OpKind::kConvolution: return "convolution";
    case OpKind::kPooling: return "pooling";
    case OpKind::kNormalization: return "normalization";
    case OpKind::kView: return "view";
    case OpKind::kDataMovement: return "data_movement";
    case OpKind::kScan: return "scan";
    case OpKind::kIndex: return "index";
    case OpKind::kCreation: return "creation";
    case OpKind::kAttention: return "attention";
    case OpKind::kRecurrence: return "recurrence";
    case OpKind::kOpaque: return "opaque";
  }
  return "opaque";
}

const std::vector<OpInfo>& AllOps() {
  static const std::vector<OpInfo> kOps = BuildTable();
  return kOps;
}

const OpInfo* FindOp(std::string_view op) {
  static const std::unordered_map<std::string_view, const OpInfo*> kByName = [] {
    std::unordered_map<std::string_view, const OpInfo*> by_name;
    for (const OpInfo& info : AllOps()) by_name.emplace(info.name, &info);
    return by_name;
  }();
  auto it = kByName.find(op);
  return it == kByName.end() ? nullptr : it->second;
}

OpKind OpKindOf(std::string_view op) {
  const OpInfo* info = FindOp(op);
  return info ? info->kind : OpKind::kOpaque;
}

}  // namespace kforge::ir
