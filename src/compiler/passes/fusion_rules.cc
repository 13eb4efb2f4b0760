#include "compiler/passes/fusion_rules.h"

#include <algorithm>

namespace kforge::passes {

GraphReaders::GraphReaders(const ir::Graph& graph) : of(static_cast<size_t>(graph.size())) {
  for (const ir::Value& value : graph) {
    for (const ir::NodeRef& ref : TensorInputs(value)) of[static_cast<size_t>(ref.value)].insert(value.id);
  }
  for (const ir::NodeRef& out : graph.LiveOuts()) returned.insert(out.value);
}

bool GraphReaders::OnlyReader(ir::ValueId value, ir::ValueId reader) const {
  const std::set<ir::ValueId>& readers = of[static_cast<size_t>(value)];
  return !returned.count(value) && readers.size() == 1 && readers.count(reader);
}

void WalkBackThroughDataMovement(const ir::Graph& graph, std::vector<ir::NodeRef> starts,
                                 const std::function<bool(const ir::NodeRef&)>& reached) {
  std::set<std::pair<ir::ValueId, int32_t>> seen;
  while (!starts.empty()) {
    const ir::NodeRef ref = starts.back();
    starts.pop_back();
    if (!seen.insert({ref.value, ref.output}).second || !reached(ref)) continue;
    const ir::OpNode* op = OpAt(graph, ref);
    if (op != nullptr && (op->op_kind() == ir::OpKind::kView || op->op_kind() == ir::OpKind::kDataMovement)) {
      for (const ir::NodeRef& input : TensorInputs(*op)) starts.push_back(input);
    }
  }
}

const ir::OpNode* OpAt(const ir::Graph& graph, ir::NodeRef ref) { return graph.value(ref.value).TryAs<ir::OpNode>(); }
const ir::OpNode* OpAt(const ir::Graph& graph, const ir::Argument& arg) {
  const auto* ref = arg.TryAs<ir::NodeRef>();
  return ref ? OpAt(graph, *ref) : nullptr;
}

std::vector<ir::NodeRef> TensorInputs(const ir::Value& value) {
  std::vector<ir::NodeRef> refs;
  const auto* op = value.TryAs<ir::OpNode>();
  if (op == nullptr) return refs;
  auto add = [&refs](const ir::NodeRef& ref) { refs.push_back(ref); };
  for (const ir::Argument& arg : op->args) ir::ForEachRef(arg, add);
  for (const ir::NamedArgument& kwarg : op->kwargs) ir::ForEachRef(kwarg.argument, add);
  return refs;
}

bool BroadcastsTo(const ir::Shape& from, const ir::Shape& to) {
  if (from.size() > to.size()) return false;
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != to[offset + i] && from[i] != 1) return false;
  }
  return true;
}

bool IsFlip(const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  if (op == nullptr || op->op != "aten.flip.default" || op->num_outputs() != 1 || op->args.size() != 2) return false;
  const auto* input = op->args[0].TryAs<ir::NodeRef>();
  return input != nullptr && op->args[1].Is<ir::IntList>();
}

std::optional<GatherAlongDim> GatherAlongOneDim(const ir::Graph& graph, const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  if (op == nullptr || op->num_outputs() != 1 || op->args.empty() || !op->args[0].Is<ir::NodeRef>()) return std::nullopt;
  GatherAlongDim gather;
  gather.x = op->args[0].As<ir::NodeRef>();
  const ir::TensorType* x = graph.TypeOf(gather.x);
  if (x == nullptr || x->rank() == 0) return std::nullopt;
  if (op->op == "aten.index_select.default" && op->args.size() == 3 && op->args[1].Is<int64_t>() &&
      op->args[2].Is<ir::NodeRef>()) {
    gather.dim = op->args[1].As<int64_t>();
    if (gather.dim < 0) gather.dim += x->rank();
    gather.index = op->args[2].As<ir::NodeRef>();
    if (gather.dim < 0 || gather.dim >= x->rank() || graph.TypeOf(gather.index)->rank() != 1) return std::nullopt;
  } else if (op->op == "aten.index.Tensor" && op->args.size() == 2 && op->args[1].Is<ir::TensorList>()) {
    const ir::TensorList& indices = op->args[1].As<ir::TensorList>();
    if (indices.size() != 1 || !indices[0]) return std::nullopt;
    gather.index = *indices[0];
  } else {
    return std::nullopt;
  }
  const ir::DType index = graph.TypeOf(gather.index)->dtype;
  if (index != ir::DType::kInt64 && index != ir::DType::kInt32) return std::nullopt;
  return gather;
}

bool ReadsAtComputedPositions(const ir::Graph& graph, const ir::Value& value) {
  return IsFlip(value) || GatherAlongOneDim(graph, value).has_value();
}

bool IsArange(const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  return op != nullptr && op->num_outputs() == 1 && op->type().rank() == 1 &&
         (op->op == "aten.arange.default" || op->op == "aten.arange.start" || op->op == "aten.arange.start_step");
}

bool IsFusablePointwise(const ir::Graph& graph, const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  if (op == nullptr || op->num_outputs() != 1) return false;
  if (op->op_kind() != ir::OpKind::kPointwise && !IsArange(value)) return false;
  for (const ir::NodeRef& ref : TensorInputs(value)) {
    const ir::TensorType* type = graph.TypeOf(ref);
    if (type == nullptr || !BroadcastsTo(type->shape, op->type().shape)) return false;
  }
  return true;
}

bool IsAttention(const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  return op != nullptr && op->op_kind() == ir::OpKind::kAttention;
}

bool IsRecurrence(const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  return op != nullptr && op->op_kind() == ir::OpKind::kRecurrence;
}

bool IsTileRecomputable(const ir::Value& value) {
  static const char* const kOps[] = {
      "aten.view.default",     "aten._unsafe_view.default", "aten.reshape.default", "aten.permute.default",
      "aten.expand.default",   "aten.unsqueeze.default",    "aten.squeeze.dim",     "aten.squeeze.dims",
      "aten.squeeze.default",  "aten.alias.default",        "aten.detach.default",  "aten.t.default",
      "aten.transpose.int",    "aten.slice.Tensor",         "aten.select.int",      "aten.clone.default",
      "aten.contiguous.default", "aten.lift_fresh_copy.default", "aten.full.default", "aten.full_like.default",
      "aten.zeros_like.default", "aten.ones_like.default",  "aten.scalar_tensor.default", "aten.index.Tensor"};
  const auto* op = value.TryAs<ir::OpNode>();
  if (op == nullptr || op->num_outputs() != 1) return false;
  if (op->op_kind() == ir::OpKind::kPointwise || IsArange(value)) return true;
  return std::find(std::begin(kOps), std::end(kOps), op->op) != std::end(kOps);
}

bool IsMetadataView(const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  return op != nullptr && op->info != nullptr && op->info->metadata_only;
}

bool SameIterationSpace(const ir::Value& op, const ir::Shape& group_shape) {
  return op.num_outputs() == 1 && op.type().shape == group_shape;
}

ir::Shape ReductionSpace::Kept(bool keepdim) const {
  ir::Shape kept;
  for (size_t d = 0; d < full.size(); ++d) {
    bool folded = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
    if (!folded) kept.push_back(full[d]);
    else if (keepdim) kept.push_back(1);
  }
  return kept;
}

int64_t ReductionSpace::reduced_count() const {
  int64_t count = 1;
  for (int64_t d : dims) count *= full[static_cast<size_t>(d)];
  return count;
}

int64_t ReductionSpace::kept_count() const {
  int64_t count = 1;
  for (size_t d = 0; d < full.size(); ++d) {
    if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) == dims.end()) count *= full[d];
  }
  return count;
}

bool ReductionSpace::split() const { return kept_count() <= kMaxSplitRows && reduced_count() >= kMinSplitLength; }

std::optional<std::vector<int64_t>> ReducedDims(const ir::Argument* arg, int64_t rank) {
  std::vector<int64_t> dims;
  if (const auto* one = arg ? arg->TryAs<int64_t>() : nullptr) {
    dims.push_back(*one);
  } else if (const auto* list = arg ? arg->TryAs<ir::IntList>() : nullptr) {
    dims = *list;
  } else if (arg != nullptr && !arg->Is<ir::NoneArg>()) {
    return std::nullopt;
  }
  if (dims.empty() && (arg == nullptr || !arg->Is<int64_t>())) {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  }
  for (int64_t& d : dims) {
    if (d < 0) d += rank;
    if (d < 0 || d >= std::max<int64_t>(rank, 1)) return std::nullopt;
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

bool IsScan(const std::string& op) { return op == "aten.cumsum.default" || op == "aten.cumprod.default"; }

std::optional<ReductionSpace> FusableReductionSpace(const ir::Graph& graph, const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  if (op == nullptr) return std::nullopt;
  static const char* const kOps[] = {"aten.sum.dim_IntList", "aten.amax.default", "aten.amin.default",
                                     "aten.argmax.default", "aten.max.dim",     "aten.cumsum.default", "aten.cumprod.default",
                                     "aten.var_mean.correction"};
  if (std::find(std::begin(kOps), std::end(kOps), op->op) == std::end(kOps)) return std::nullopt;
  if (op->args.empty() || !op->args[0].Is<ir::NodeRef>()) return std::nullopt;
  const ir::TensorType* input = graph.TypeOf(op->args[0].As<ir::NodeRef>());
  if (input == nullptr || input->dtype != ir::DType::kFloat32 || input->numel() == 0) return std::nullopt;
  if (op->FindArgument({-1, "dtype"}) != nullptr) return std::nullopt;
  ReductionSpace space{input->shape, {}};
  const int64_t rank = input->rank();
  const ir::Argument* dims = op->FindArgument({1, "dim"});
  if (rank == 0) return std::nullopt;
  auto reduced = ReducedDims(dims, rank);
  if (!reduced) return std::nullopt;
  space.dims = *reduced;
  if (space.dims.empty() || (op->op == "aten.argmax.default" && dims == nullptr && rank > 1)) return std::nullopt;
  if (IsScan(op->op) && space.dims.size() != 1) return std::nullopt;
  if (op->op == "aten.var_mean.correction") {
    auto correction = VarianceCorrection(*op);
    if (!correction || static_cast<double>(space.reduced_count()) <= *correction) return std::nullopt;
  }
  for (const ir::TensorType& out : op->outputs) {
    if (out.dtype != ir::DType::kFloat32 && out.dtype != ir::DType::kInt64) return std::nullopt;
  }
  return space;
}

std::optional<double> VarianceCorrection(const ir::OpNode& op) {
  const ir::Argument* arg = op.FindArgument({-1, "correction"});
  if (arg == nullptr || arg->Is<ir::NoneArg>()) return 1.0;
  if (const auto* i = arg->TryAs<int64_t>()) return static_cast<double>(*i);
  if (const auto* d = arg->TryAs<double>()) return *d;
  return std::nullopt;
}

bool IsRowGatherShape(const ir::Shape& x, int64_t dim, const ir::TensorType& index) {
  if (index.dtype != ir::DType::kInt64 && index.dtype != ir::DType::kInt32) return false;
  if (index.shape.size() != x.size() || dim < 0 || dim >= static_cast<int64_t>(x.size())) return false;
  for (size_t d = 0; d < x.size(); ++d) {
    if (index.shape[d] != (static_cast<int64_t>(d) == dim ? 1 : x[d])) return false;
  }
  return true;
}

std::optional<ReductionSpace> RowGatherSpace(const ir::Graph& graph, const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  if (op == nullptr || op->op != "aten.gather.default" || op->num_outputs() != 1 || op->args.size() < 3) return std::nullopt;
  const auto* x = op->args[0].TryAs<ir::NodeRef>();
  const auto* index = op->args[2].TryAs<ir::NodeRef>();
  if (x == nullptr || !op->args[1].Is<int64_t>() || index == nullptr) return std::nullopt;
  const ir::TensorType* x_type = graph.TypeOf(*x);
  const ir::TensorType* index_type = graph.TypeOf(*index);
  if (x_type == nullptr || index_type == nullptr || x_type->dtype != ir::DType::kFloat32 || x_type->numel() == 0) {
    return std::nullopt;
  }
  auto dims = ReducedDims(&op->args[1], x_type->rank());
  if (!dims || !IsRowGatherShape(x_type->shape, dims->front(), *index_type)) return std::nullopt;
  return ReductionSpace{x_type->shape, *dims};
}

bool InReductionSpace(const ir::Shape& shape, const ReductionSpace& space) {
  return shape == space.full || shape == space.Kept(true) || shape == space.Kept(false);
}

bool IsFusableMatmul(const ir::Graph& graph, const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  if (op == nullptr || op->num_outputs() != 1 || op->type().dtype != ir::DType::kFloat32) return false;
  auto fp32 = [&graph](const ir::Argument& arg, size_t rank) {
    const auto* ref = arg.TryAs<ir::NodeRef>();
    const ir::TensorType* type = ref ? graph.TypeOf(*ref) : nullptr;
    return type != nullptr && type->dtype == ir::DType::kFloat32 && type->shape.size() == rank && type->numel() > 0;
  };
  if (op->op == "aten.mm.default" || op->op == "aten.bmm.default") {
    const size_t rank = op->op == "aten.mm.default" ? 2 : 3;
    return op->args.size() == 2 && fp32(op->args[0], rank) && fp32(op->args[1], rank);
  }
  // A product over several batch dims, both operands with the same ones (copy elision makes it).
  if (op->op == "aten.matmul.default") {
    const size_t rank = op->type().shape.size();
    if (op->args.size() != 2 || rank < 3 || !fp32(op->args[0], rank) || !fp32(op->args[1], rank)) return false;
    const ir::Shape& a = graph.TypeOf(op->args[0].As<ir::NodeRef>())->shape;
    const ir::Shape& b = graph.TypeOf(op->args[1].As<ir::NodeRef>())->shape;
    return std::equal(a.begin(), a.end() - 2, b.begin()) && a[rank - 1] == b[rank - 2];
  }
  if (op->op != "aten.convolution.default" || op->args.size() != 9 || IsDepthwiseConvolution(graph, value)) return false;
  // convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
  const size_t rank = op->type().shape.size();
  const auto* transposed = op->args[6].TryAs<bool>();
  const auto* groups = op->args[8].TryAs<int64_t>();
  if (rank < 3 || transposed == nullptr || groups == nullptr || *groups < 1) return false;
  for (int i : {3, 4, 5}) {
    const auto* list = op->args[static_cast<size_t>(i)].TryAs<ir::IntList>();
    if (list == nullptr || list->size() != rank - 2) return false;
  }
  bool bias_ok = op->args[2].Is<ir::NoneArg>() || fp32(op->args[2], 1);
  return fp32(op->args[0], rank) && fp32(op->args[1], rank) && bias_ok;
}

namespace {

// An fp32 2-D convolution's facts the window forms depend on, or nullopt when the node is not one
// (convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)).
struct Convolution2d {
  const ir::TensorType* input;
  const ir::TensorType* weight;
  bool transposed;
  int64_t groups;
};

std::optional<Convolution2d> AsConvolution2d(const ir::Graph& graph, const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  if (op == nullptr || op->op != "aten.convolution.default" || op->args.size() != 9) return std::nullopt;
  const auto* x = op->args[0].TryAs<ir::NodeRef>();
  const auto* w = op->args[1].TryAs<ir::NodeRef>();
  const auto* transposed = op->args[6].TryAs<bool>();
  const auto* groups = op->args[8].TryAs<int64_t>();
  if (x == nullptr || w == nullptr || transposed == nullptr || groups == nullptr) return std::nullopt;
  const ir::TensorType* x_type = graph.TypeOf(*x);
  const ir::TensorType* w_type = graph.TypeOf(*w);
  if (x_type == nullptr || w_type == nullptr || x_type->shape.size() != 4 || w_type->shape.size() != 4) return std::nullopt;
  for (int i : {3, 4, 5, 7}) {
    const auto* list = op->args[static_cast<size_t>(i)].TryAs<ir::IntList>();
    if (list == nullptr || list->size() != 2) return std::nullopt;
  }
  bool bias_ok = op->args[2].Is<ir::NoneArg>() || op->args[2].Is<ir::NodeRef>();
  if (!bias_ok || x_type->dtype != ir::DType::kFloat32 || w_type->dtype != ir::DType::kFloat32 ||
      op->type().dtype != ir::DType::kFloat32) {
    return std::nullopt;
  }
  return Convolution2d{x_type, w_type, *transposed, *groups};
}

}  // namespace

bool IsDepthwiseConvolution(const ir::Graph& graph, const ir::Value& value) {
  auto conv = AsConvolution2d(graph, value);
  return conv && !conv->transposed && conv->groups > 1 && conv->groups == conv->input->shape[1] &&
         conv->weight->shape[0] == conv->groups && conv->weight->shape[1] == 1;
}

bool IsFusablePooling(const ir::Graph& graph, const ir::Value& value) {
  const auto* op = value.TryAs<ir::OpNode>();
  if (op == nullptr || op->args.empty() || !op->args[0].Is<ir::NodeRef>()) return false;
  if (IsDepthwiseConvolution(graph, value)) return true;
  if (op->op != "aten.max_pool2d_with_indices.default" && op->op != "aten.avg_pool2d.default" &&
      op->op != "aten._adaptive_avg_pool2d.default") {
    return false;
  }
  const ir::TensorType* input = graph.TypeOf(op->args[0].As<ir::NodeRef>());
  return input != nullptr && input->dtype == ir::DType::kFloat32 && input->shape.size() == 4 && input->numel() > 0 &&
         op->type().dtype == ir::DType::kFloat32 && op->type().shape.size() == 4;
}

}  // namespace kforge::passes
