// Fusion legality as small named predicates, each with its rule in one comment line. PlanFusion
// (fusion_plan.h) combines them; nothing here looks beyond the values it is given.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace kforge::passes {

// A tensor input of a value: every reference among its positional and keyword arguments.
std::vector<ir::NodeRef> TensorInputs(const ir::Value& value);
// The op node that `ref` (or `arg`, when it is a reference) names; null for a graph input, a
// constant, or an argument that is not a reference.
const ir::OpNode* OpAt(const ir::Graph& graph, ir::NodeRef ref);
const ir::OpNode* OpAt(const ir::Graph& graph, const ir::Argument& arg);

// Who reads each value of a graph (the op nodes, by id) and which values it returns or leaves in a
// parameter or buffer (LiveOuts).
struct GraphReaders {
  explicit GraphReaders(const ir::Graph& graph);
  // Whether `reader` alone reads `value` and the graph does not return it.
  bool OnlyReader(ir::ValueId value, ir::ValueId reader) const;

  std::vector<std::set<ir::ValueId>> of;  // by value id
  std::set<ir::ValueId> returned;
};

// Walks back from `starts` through the ops that only move data (views, splits, copies), calling
// `reached` for each reference it comes to, each once: the starts, then what those ops read, as far
// as an op that computes, an input, a parameter or a constant. Where `reached` says false the walk
// does not go past that reference.
void WalkBackThroughDataMovement(const ir::Graph& graph, std::vector<ir::NodeRef> starts,
                                 const std::function<bool(const ir::NodeRef&)>& reached);

// Fusable pointwise: a known pointwise op with exactly one output whose every tensor input broadcasts to it,
// or a 1-D arange (each element a function of its index).
bool IsFusablePointwise(const ir::Graph& graph, const ir::Value& value);
// Flip: flip(x, dims) with a list of dims, a copy that reads x at reversed indices; it starts a
// pointwise group (it reads its input from memory, so nothing computes that input beside it).
bool IsFlip(const ir::Value& value);
// Gather along one dim: index_select(x, dim, index) with a 1-D integer index, or index.Tensor(x,
// [index]) with one integer index tensor for dim 0. The result is x.shape[:dim] + index.shape +
// x.shape[dim + 1:], read from x at the index's values along dim (negative ones counting from the
// end): a copy at computed positions (torch.roll's `(arange + shift) % n`, a relative-position
// table read by its index buffer), which starts a pointwise group like a flip.
struct GatherAlongDim {
  ir::NodeRef x, index;
  int64_t dim = 0;
};
std::optional<GatherAlongDim> GatherAlongOneDim(const ir::Graph& graph, const ir::Value& value);
// A flip or a gather along one dim: its kernel reads its input at positions it computes, so its
// group merges with no other group and joins no reduction; only same-shape pointwise consumers join it.
bool ReadsAtComputedPositions(const ir::Graph& graph, const ir::Value& value);
// arange(end), arange(start, end) or arange(start, end, step) with a 1-D result.
bool IsArange(const ir::Value& value);
// Metadata view: a view the registry marks metadata-only (never copies), kept as its own kView group.
bool IsMetadataView(const ir::Value& value);
// Broadcast: `from` broadcasts to `to` when, aligned at the right, each dim is equal or 1 and `from` is no longer.
bool BroadcastsTo(const ir::Shape& from, const ir::Shape& to);
// Same iteration space: a pointwise op joins a group only when its output has the group's output shape.
bool SameIterationSpace(const ir::Value& op, const ir::Shape& group_shape);

// What a reduction iterates over: the shape it reads and the dims it folds (normalized, sorted).
struct ReductionSpace {
  ir::Shape full;
  std::vector<int64_t> dims;
  bool operator==(const ReductionSpace&) const = default;

  // The reduced shape with the folded dims kept as 1 (`keepdim`) or dropped.
  ir::Shape Kept(bool keepdim) const;
  int64_t reduced_count() const;
  int64_t kept_count() const;
  // A few very long rows (a loss over a whole tensor): the kernel splits each row over many
  // programs and combines their partial results in a second kernel, so nothing of the full shape
  // may be computed after the reduction in the same group.
  bool split() const;
};
// Split rows: at most kMaxSplitRows rows (one program per row would leave most of a GPU's 132 SMs
// idle or with one long program each) of at least kMinSplitLength elements.
inline constexpr int64_t kMaxSplitRows = 256;
inline constexpr int64_t kMinSplitLength = 1 << 17;
// The dims a reduction-like argument names (an int or a list; absent, None or [] for all), normalized
// to [0, rank) (a 0-d tensor's dim 0 included) and sorted without repeats; nullopt for anything else.
std::optional<std::vector<int64_t>> ReducedDims(const ir::Argument* arg, int64_t rank);
// Scan: cumsum or cumprod (its output has its input's full shape).
bool IsScan(const std::string& op);
// Fusable reduction: sum, amax, amin, argmax, max.dim or var_mean (rows longer than its correction) of an fp32
// tensor over explicit or all dims, or a scan along one dim.
std::optional<ReductionSpace> FusableReductionSpace(const ir::Graph& graph, const ir::Value& value);
// The divisor offset of var_mean.correction (n - correction): its `correction` keyword, 1 when absent or None.
std::optional<double> VarianceCorrection(const ir::OpNode& op);
// Row gather: gather(x, dim, index) of an fp32 x with one integer index per row along `dim` (index
// has x's shape with 1 at `dim`): a reduction group over those rows computes it, one load per row.
bool IsRowGatherShape(const ir::Shape& x, int64_t dim, const ir::TensorType& index);
// The rows a row gather picks from (x's shape, folding `dim`), or nullopt for any other value.
std::optional<ReductionSpace> RowGatherSpace(const ir::Graph& graph, const ir::Value& value);
// In the space: a pointwise op joins a reduction's group when its shape is the full or a reduced shape.
bool InReductionSpace(const ir::Shape& shape, const ReductionSpace& space);
// Fusable matmul: mm of fp32 matrices, bmm of fp32 batches, a matmul over several batch dims both
// operands share (strided: copy elision's form), or a non-depthwise fp32 convolution, plain or
// transposed, any groups (an implicit GEMM); its pointwise consumers of the same shape join it as an epilogue.
bool IsFusableMatmul(const ir::Graph& graph, const ir::Value& value);
// Fusable window op: 2-D max (indices unread), average or adaptive average pooling of an fp32 NCHW tensor,
// or a depthwise 2-D convolution (a weighted window per channel); its pointwise consumers of the same shape
// join it as an epilogue.
bool IsFusablePooling(const ir::Graph& graph, const ir::Value& value);
// Attention: a kforge.attention node (the attention pass made it), one kernel with the producers of its bias.
bool IsAttention(const ir::Value& value);
// A kforge.rnn_scan node (passes/recurrence.h).
bool IsRecurrence(const ir::Value& value);
// Recomputable per score tile: a pointwise op, an arange or a constant fill, a view or copy, or a gather
// (index.Tensor) of one value; the attention kernel computes such producers of its bias at each tile's
// indices instead of reading them from memory (a relative-position bias gathered from its table).
bool IsTileRecomputable(const ir::Value& value);
// Depthwise: a 2-D convolution with one input and one output channel per group (a window op, not a GEMM).
bool IsDepthwiseConvolution(const ir::Graph& graph, const ir::Value& value);

}  // namespace kforge::passes
