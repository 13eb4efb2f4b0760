#include "compiler/passes/product_epilogues.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compiler/ir/visitor.h"
#include "compiler/passes/copy_elision.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::passes {
namespace {

using ir::NodeRef;

// One dim of a tensor that lies densely in memory: which dim, its size and stride.
struct LaidDim {
  size_t dim = 0;
  int64_t size = 1;
  int64_t stride = 0;
};

// `type`'s dims of a size other than 1, outermost (largest stride) first, when together they hold
// each of `type`'s elements exactly once in as many consecutive positions; nullopt otherwise.
std::optional<std::vector<LaidDim>> DenseOrder(const ir::TensorType& type) {
  std::vector<LaidDim> dims;
  for (size_t d = 0; d < type.shape.size(); ++d) {
    if (type.shape[d] != 1) dims.push_back(LaidDim{d, type.shape[d], type.stride[d]});
  }
  std::sort(dims.begin(), dims.end(), [](const LaidDim& a, const LaidDim& b) { return a.stride > b.stride; });
  int64_t expected = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i].stride != expected) return std::nullopt;
    expected *= dims[i].size;
  }
  return dims;
}

// A run of the product's memory that lies inside one dim of the product and one dim of the view
// the pointwise op reads.
struct Piece {
  int64_t size = 1;
  int64_t stride = 1;
  size_t product_dim = 0;
  size_t view_dim = 0;
  int64_t inner = 1;  // the sizes of the pieces of its view dim that lie inside it, multiplied
};

// The coarsest pieces both layouts agree on, outermost first; nullopt where a dim of one layout
// cuts a dim of the other at no whole number of its elements.
std::optional<std::vector<Piece>> CommonPieces(const std::vector<LaidDim>& product, const std::vector<LaidDim>& view,
                                               int64_t numel) {
  std::set<int64_t> bounds = {numel};
  for (const LaidDim& d : product) bounds.insert(d.stride);
  for (const LaidDim& d : view) bounds.insert(d.stride);
  const std::vector<int64_t> b(bounds.begin(), bounds.end());
  auto owner = [](const std::vector<LaidDim>& dims, int64_t from, int64_t to) -> std::optional<size_t> {
    for (const LaidDim& d : dims) {
      if (d.stride <= from && to <= d.stride * d.size) return d.dim;
    }
    return std::nullopt;
  };
  std::vector<Piece> pieces;
  for (size_t i = 0; i + 1 < b.size(); ++i) {
    if (b[i + 1] % b[i] != 0) return std::nullopt;
    std::optional<size_t> in_product = owner(product, b[i], b[i + 1]), in_view = owner(view, b[i], b[i + 1]);
    if (!in_product || !in_view) return std::nullopt;
    pieces.push_back(Piece{b[i + 1] / b[i], b[i], *in_product, *in_view, 1});
  }
  std::reverse(pieces.begin(), pieces.end());
  for (size_t i = pieces.size(); i-- > 0;) {
    for (size_t j = i + 1; j < pieces.size(); ++j) {
      if (pieces[j].view_dim == pieces[i].view_dim) pieces[i].inner *= pieces[j].size;
    }
  }
  return pieces;
}

// A dim of the rewritten product: consecutive pieces of one dim of the original.
struct Group {
  std::vector<size_t> pieces;  // indices into the pieces, outermost first
  int64_t size = 1;
};

// How the rewritten product's dims, and the pointwise op's other tensors viewed over them, lie.
class Refinement {
 public:
  Refinement(std::vector<Piece> pieces, std::vector<std::vector<int64_t>> others, size_t product_rank)
      : pieces_(std::move(pieces)), others_(std::move(others)) {
    for (size_t d = 0; d < product_rank; ++d) {
      for (size_t p = 0; p < pieces_.size(); ++p) {
        if (pieces_[p].product_dim != d) continue;
        if (!groups_.empty() && group_dim_.back() == d && Merge(groups_.back().pieces.back(), p)) {
          groups_.back().pieces.push_back(p);
          groups_.back().size *= pieces_[p].size;
        } else {
          groups_.push_back(Group{{p}, pieces_[p].size});
          group_dim_.push_back(d);
        }
      }
    }
  }

  const std::vector<Piece>& pieces() const { return pieces_; }
  const std::vector<Group>& groups() const { return groups_; }
  // The groups that lie in the product's dim `d`.
  int count_in(size_t d) const { return static_cast<int>(std::count(group_dim_.begin(), group_dim_.end(), d)); }
  ir::Shape shape() const {
    ir::Shape shape;
    for (const Group& g : groups_) shape.push_back(g.size);
    return shape;
  }
  // Where each group lies in the product's memory.
  std::vector<int64_t> ProductStrides() const {
    std::vector<int64_t> strides;
    for (const Group& g : groups_) strides.push_back(pieces_[g.pieces.back()].stride);
    return strides;
  }
  // Where each group lies in a tensor whose strides over the view's dims are `view_strides`.
  std::vector<int64_t> Strides(const std::vector<int64_t>& view_strides) const {
    std::vector<int64_t> strides;
    for (const Group& g : groups_) strides.push_back(PieceStride(g.pieces.back(), view_strides));
    return strides;
  }
  int64_t PieceStride(size_t p, const std::vector<int64_t>& view_strides) const {
    return view_strides[pieces_[p].view_dim] * pieces_[p].inner;
  }

 private:
  // Whether piece `inner` may join the group ending with piece `outer` in every other tensor.
  bool Merge(size_t outer, size_t inner) const {
    for (const std::vector<int64_t>& strides : others_) {
      if (PieceStride(outer, strides) != PieceStride(inner, strides) * pieces_[inner].size) return false;
    }
    return true;
  }

  std::vector<Piece> pieces_;
  std::vector<std::vector<int64_t>> others_;
  std::vector<Group> groups_;
  std::vector<size_t> group_dim_;
};

// One view op to add: its op, its arguments after the input, and its result's type.
struct ViewStep {
  std::string op;
  ir::Argument argument;
  ir::TensorType type;
};

// View ops added one after another to a tensor of a given type, each typed by PyTorch's view
// rule; a step that changes nothing is left out.
class ViewChain {
 public:
  explicit ViewChain(ir::TensorType from) : at_(std::move(from)) {}

  const ir::TensorType& at() const { return at_; }
  std::vector<ViewStep> steps() && { return std::move(steps_); }

  void Expand(const ir::Shape& shape) {
    if (at_.shape != shape) Add("aten.expand.default", ir::IntList(shape), {shape, at_.dtype, ir::BroadcastStrides(at_, shape)});
  }
  // False where no view exists.
  bool View(const ir::Shape& shape) {
    std::optional<std::vector<int64_t>> strides = ViewStrides(at_.shape, at_.stride, shape);
    if (!strides) return false;
    Add("aten.view.default", ir::IntList(shape), {shape, at_.dtype, *strides});
    return true;
  }
  // The dims in the order `order` (each an index into the current dims).
  void Permute(const ir::IntList& order) {
    ir::TensorType permuted{{}, at_.dtype, {}};
    for (int64_t d : order) {
      permuted.shape.push_back(at_.shape[static_cast<size_t>(d)]);
      permuted.stride.push_back(at_.stride[static_cast<size_t>(d)]);
    }
    Add("aten.permute.default", order, std::move(permuted));
  }
  // A view to `type` (its strides checked by the caller).
  void ViewAs(const ir::TensorType& type) { Add("aten.view.default", ir::IntList(type.shape), type); }

 private:
  void Add(std::string op, ir::IntList argument, ir::TensorType type) {
    if (type.shape == at_.shape && type.stride == at_.stride) return;
    steps_.push_back(ViewStep{std::move(op), ir::Argument(std::move(argument)), type});
    at_ = std::move(type);
  }

  ir::TensorType at_;
  std::vector<ViewStep> steps_;
};

// The pieces in the view's order: by view dim, outermost first within each.
std::vector<size_t> ViewOrder(const Refinement& refinement, size_t view_rank) {
  std::vector<size_t> order;
  for (size_t d = 0; d < view_rank; ++d) {
    for (size_t p = 0; p < refinement.pieces().size(); ++p) {
      if (refinement.pieces()[p].view_dim == d) order.push_back(p);
    }
  }
  return order;
}

// The pieces in the product's order: by group, outermost first within each.
std::vector<size_t> ProductOrder(const Refinement& refinement) {
  std::vector<size_t> order;
  for (const Group& g : refinement.groups()) order.insert(order.end(), g.pieces.begin(), g.pieces.end());
  return order;
}

// Where each of `to`'s pieces is in `from`, as a permutation.
ir::IntList Reordering(const std::vector<size_t>& from, const std::vector<size_t>& to) {
  ir::IntList permutation;
  for (size_t p : to) permutation.push_back(static_cast<int64_t>(std::find(from.begin(), from.end(), p) - from.begin()));
  return permutation;
}

ir::Shape PieceSizes(const Refinement& refinement, const std::vector<size_t>& order) {
  ir::Shape sizes;
  for (size_t p : order) sizes.push_back(refinement.pieces()[p].size);
  return sizes;
}

// The view ops that give `from` the shape and strides of `to`: an expand to `view_shape` where
// `from` broadcasts to it, a split of each dim into its pieces, a permute to the product's order
// of pieces, a merge into the product's dims; nullopt when the last strides are not `to`'s.
std::optional<std::vector<ViewStep>> ViewsInto(const ir::TensorType& from, const ir::Shape& view_shape,
                                               const Refinement& refinement, const ir::TensorType& to) {
  ViewChain chain(from);
  chain.Expand(view_shape);
  const std::vector<size_t> view_order = ViewOrder(refinement, view_shape.size());
  if (!chain.View(PieceSizes(refinement, view_order))) return std::nullopt;
  chain.Permute(Reordering(view_order, ProductOrder(refinement)));
  if (!chain.View(to.shape) || chain.at().stride != to.stride) return std::nullopt;
  return std::move(chain).steps();
}

// The view ops that give the rewritten result (the product's shape) the pointwise op's own shape
// and strides: a split into pieces, a permute to the view's order, a merge into its dims.
std::optional<std::vector<ViewStep>> ViewsBack(const ir::TensorType& from, const Refinement& refinement,
                                               const ir::TensorType& to) {
  ViewChain chain(from);
  const std::vector<size_t> product_order = ProductOrder(refinement);
  if (!chain.View(PieceSizes(refinement, product_order))) return std::nullopt;
  chain.Permute(Reordering(product_order, ViewOrder(refinement, to.shape.size())));
  std::optional<std::vector<int64_t>> strides = ViewStrides(chain.at().shape, chain.at().stride, to.shape);
  if (!strides) return std::nullopt;
  for (size_t d = 0; d < to.shape.size(); ++d) {
    if (to.shape[d] != 1 && (*strides)[d] != to.stride[d]) return std::nullopt;
  }
  chain.ViewAs(to);
  return std::move(chain).steps();
}

// The views that give a tensor broadcasting to `q_shape` the dims of `view_shape`, whose dims of a
// size other than 1 are `q_dims` of `q_shape` in that order: an expand, a permute, a view.
std::optional<std::vector<ViewStep>> LeafOverView(const ir::TensorType& leaf, const ir::Shape& q_shape,
                                                  const std::vector<size_t>& q_dims, const ir::Shape& view_shape) {
  ViewChain chain(leaf);
  chain.Expand(q_shape);
  ir::IntList permutation(q_dims.begin(), q_dims.end());
  for (size_t d = 0; d < q_shape.size(); ++d) {
    if (std::find(q_dims.begin(), q_dims.end(), d) == q_dims.end()) permutation.push_back(static_cast<int64_t>(d));
  }
  chain.Permute(permutation);
  if (!chain.View(view_shape)) return std::nullopt;
  return std::move(chain).steps();
}

// Values of the source graph and what stands for them in the rewritten one.
using RefMap = std::vector<std::pair<NodeRef, NodeRef>>;
const NodeRef* Find(const RefMap& map, const NodeRef& ref) {
  for (const auto& [from, to] : map) {
    if (from == ref) return &to;
  }
  return nullptr;
}

class EpilogueMover : public ir::GraphRewriter {
 public:
  explicit EpilogueMover(const ir::Graph& graph) : readers_(graph) {}

 protected:
  Status RewriteOp(const ir::OpNode& node) override {
    if (IsFusablePointwise(source(), node) && node.type().dtype == ir::DType::kFloat32) {
      for (const NodeRef& input : TensorInputs(node)) {
        std::optional<Behind> behind = ProductBehindViews(input, node.id);
        if (!behind || (ReadByAReduction(node) && !LastReaderOfItsInputs(node, input))) continue;
        for (bool pull : {true, false}) {
          if (std::optional<Status> done = MoveInto(node, input, *behind, pull)) return *done;
        }
      }
    }
    return CopyOp(node);
  }

 private:
  // Whether a reduction reads `node`: its kernel computes the op from the op's inputs as it
  // folds, where moved into a product the op's result would be stored for it (a norm's squares
  // of a value stored anyway).
  bool ReadByAReduction(const ir::OpNode& node) const {
    return std::any_of(readers_.of[node.id].begin(), readers_.of[node.id].end(),
                       [&](ir::ValueId reader) { return FusableReductionSpace(source(), source().value(reader)).has_value(); });
  }

  // Whether `node` is the last reader not yet moved of `x` and of the moved ops it reads: moved, it
  // leaves none of them to be stored (a residual sum a layer norm reads, after the GELU ops that
  // also read the product).
  bool LastReaderOfItsInputs(const ir::OpNode& node, NodeRef x) const {
    for (const NodeRef& ref : TensorInputs(node)) {
      if (!(ref == x) && !moved_.count(ref.value)) continue;
      for (ir::ValueId reader : readers_.of[ref.value]) {
        if (reader != node.id && !moved_.count(reader)) return false;
      }
    }
    return true;
  }

  // What a chain of views leads back to (the anchor): a matmul; a pointwise op over the matmul's
  // shape that reads it (an epilogue the planner already joins to it, such as a bias); or an op
  // this pass moved into a matmul's shape (a GELU's later ops reading its earlier ones).
  struct Behind {
    const ir::OpNode* product = nullptr;  // the matmul, in the source graph
    bool is_product = false;              // the anchor is the matmul itself
    NodeRef anchor;                       // in the rewritten graph
    ir::TensorType anchor_type;
    // Every value from the anchor to the chain's end is read only by the next: the product may be
    // rewritten (split) for this op alone. Otherwise the anchor is read as it is.
    bool only_reader = true;
  };

  // Where an op this pass moved went: its result is views of `moved` (the product's shape), which
  // holds element x of the op where the product holds x; `key` says how the op's input viewed
  // the anchor, so that a later op reading it the same way reads `moved` directly.
  struct Moved {
    const ir::OpNode* product = nullptr;
    NodeRef moved;
    ir::TensorType type;
    std::string relation;  // RelationKey
    ir::Shape shape;
  };

  static bool IsProduct(const ir::Graph& graph, const ir::Value& value) {
    return IsFusableMatmul(graph, value) && value.As<ir::OpNode>().op != "aten.convolution.default";
  }

  // What `ref` views through a chain of views (or none, for an op this pass moved): nullopt for
  // anything else.
  std::optional<Behind> ProductBehindViews(NodeRef ref, ir::ValueId reader) const {
    ir::ValueId at = ref.value, next = reader;
    bool only_reader = true;
    for (int views = 0;; ++views) {
      if (auto moved = moved_.find(at); moved != moved_.end()) {
        return Behind{moved->second.product, false, moved->second.moved, moved->second.type, false};
      }
      const ir::Value& value = source().value(at);
      const auto* op = value.TryAs<ir::OpNode>();
      if (op == nullptr || op->num_outputs() != 1) return std::nullopt;
      only_reader = only_reader && readers_.OnlyReader(at, next);
      const std::vector<NodeRef> inputs = TensorInputs(value);
      if (IsProduct(source(), value)) {
        if (views == 0) return std::nullopt;  // read directly: the planner joins the op already
        return Behind{op, true, Map(op->ref()), op->type(), only_reader};
      }
      if (IsFusablePointwise(source(), value)) {
        if (views == 0) return std::nullopt;
        for (const NodeRef& input : inputs) {
          const ir::Value& product = source().value(input.value);
          if (IsProduct(source(), product) && product.type().shape == value.type().shape) {
            return Behind{&product.As<ir::OpNode>(), false, Map(op->ref()), op->type(), false};
          }
        }
        return std::nullopt;
      }
      if (!IsMetadataView(value) || inputs.size() != 1) return std::nullopt;
      next = at;
      at = inputs.front().value;
    }
  }

  // How an input of type `x` views an anchor of type `anchor` in `product`'s shape: two inputs
  // with the same key (and the same split shape) hold element x where the anchor holds the same one.
  // Whether source value `id` is computed from `product`'s result.
  bool DependsOn(ir::ValueId id, const ir::OpNode& product) {
    std::vector<bool>& downstream = downstream_[product.id];
    if (downstream.empty()) {
      downstream.assign(source().size(), false);
      std::vector<ir::ValueId> stack = {product.id};
      while (!stack.empty()) {
        const ir::ValueId at = stack.back();
        stack.pop_back();
        for (ir::ValueId reader : readers_.of[at]) {
          if (!downstream[reader]) {
            downstream[reader] = true;
            stack.push_back(reader);
          }
        }
      }
    }
    return downstream[id];
  }

  static std::string RelationKey(const ir::OpNode& product, const ir::TensorType& x, const ir::TensorType& anchor) {
    return fmt::format("{} {}{} {}{}", product.id, x.ToString(), ir::ShapeToString(x.stride), anchor.ToString(),
                       ir::ShapeToString(anchor.stride));
  }

  // A pointwise op Q that another input of the moved op views (each view read only by the next,
  // Q's other dims of size 1), with the same-shape pointwise ops only it reads: recomputed over the
  // product's dims from their smaller inputs (the leaves) instead of stored and loaded again
  // (Mamba2's decay mask, exp of masked segment sums of a [.., 64] cumsum, read as a [.., 64, 64]
  // operand).
  struct Pulled {
    NodeRef input;                              // the moved op's input that views Q
    std::vector<const ir::OpNode*> cluster;     // id order; the last is Q
    std::vector<NodeRef> leaves;
    std::vector<size_t> q_dims;                 // Q's dims in the order of the input's dims of a size other than 1
    std::vector<std::vector<int64_t>> strides;  // per leaf: its strides over the moved op's dims
  };

  std::optional<Pulled> Pull(NodeRef input, ir::ValueId reader, const ir::Shape& view_shape) const {
    const ir::TensorType& input_type = *source().TypeOf(input);
    if (input_type.shape != view_shape) return std::nullopt;
    ir::ValueId at = input.value, next = reader;
    while (IsMetadataView(source().value(at))) {
      const std::vector<NodeRef> inputs = TensorInputs(source().value(at));
      if (inputs.size() != 1 || !readers_.OnlyReader(at, next)) return std::nullopt;
      next = at;
      at = inputs.front().value;
    }
    const ir::Value& q = source().value(at);
    if (!IsFusablePointwise(source(), q) || IsArange(q) || !readers_.OnlyReader(at, next)) return std::nullopt;
    const ir::TensorType& q_type = q.type();
    std::optional<std::vector<LaidDim>> q_laid = DenseOrder(q_type), input_laid = DenseOrder(input_type);
    if (!q_laid || !input_laid || q_laid->size() != input_laid->size()) return std::nullopt;
    Pulled pulled;
    pulled.input = input;
    // The input's dims are Q's, permuted (views that only permute and add or drop dims of size 1).
    std::vector<size_t> q_of_view(view_shape.size(), 0);
    for (size_t d = 0; d < view_shape.size(); ++d) {
      if (view_shape[d] == 1) continue;
      auto same = std::find_if(q_laid->begin(), q_laid->end(), [&](const LaidDim& laid) {
        return laid.stride == input_type.stride[d] && laid.size == view_shape[d];
      });
      if (same == q_laid->end()) return std::nullopt;
      q_of_view[d] = same->dim;
      pulled.q_dims.push_back(same->dim);
    }
    // The cluster: Q and the same-shape pointwise ops whose every reader is in it.
    std::vector<bool> in(source().size(), false), reached(source().size(), false);
    in[at] = true;
    for (const NodeRef& ref : TensorInputs(q)) reached[ref.value] = true;
    for (ir::ValueId id = at - 1; id >= 0; --id) {
      const ir::Value& value = source().value(id);
      if (!reached[id] || readers_.returned.count(id) || !IsFusablePointwise(source(), value) || IsArange(value) ||
          value.type().shape != q_type.shape) {
        continue;
      }
      in[id] = std::all_of(readers_.of[id].begin(), readers_.of[id].end(), [&](ir::ValueId user) { return in[user]; });
      if (!in[id]) continue;
      for (const NodeRef& ref : TensorInputs(value)) reached[ref.value] = true;
    }
    int64_t leaf_bytes = 0;
    for (ir::ValueId id = 0; id <= at; ++id) {
      if (!in[id]) continue;
      pulled.cluster.push_back(&source().value(id).As<ir::OpNode>());
      for (const NodeRef& ref : TensorInputs(source().value(id))) {
        if (in[ref.value] || std::find(pulled.leaves.begin(), pulled.leaves.end(), ref) != pulled.leaves.end()) continue;
        pulled.leaves.push_back(ref);
        const ir::TensorType& leaf = *source().TypeOf(ref);
        leaf_bytes += leaf.bytes();
        const std::vector<int64_t> over_q = ir::BroadcastStrides(leaf, q_type.shape);
        std::vector<int64_t> over_view(view_shape.size(), 0);
        for (size_t d = 0; d < view_shape.size(); ++d) {
          if (view_shape[d] != 1) over_view[d] = over_q[q_of_view[d]];
        }
        pulled.strides.push_back(std::move(over_view));
      }
    }
    // Recomputing reads no more than loading Q would.
    if (leaf_bytes > q_type.bytes()) return std::nullopt;
    return pulled;
  }

  // `ref` viewed by `steps`: the one view op, or for several a single as_strided to the last one's
  // shape and strides (one call on the host instead of a chain).
  Result<NodeRef> AddSteps(const std::string& base_name, NodeRef ref, const std::vector<ViewStep>& steps,
                           const std::string& name = "") {
    if (steps.empty()) return ref;
    const ViewStep& last = steps.back();
    std::vector<ir::Argument> args = {ir::Argument(ref), last.argument};
    std::string op = last.op;
    if (steps.size() > 1) {
      op = "aten.as_strided.default";
      args = {ir::Argument(ref), ir::Argument(ir::IntList(last.type.shape)), ir::Argument(ir::IntList(last.type.stride))};
    }
    ASSIGN_OR_RETURN(ir::ValueId id, builder().AddOp(name.empty() ? builder().FreshName(base_name) : name, op, std::move(args), {},
                                                     {last.type}));
    return NodeRef{id, 0};
  }

  // `node` computed over the product's dims (its batch dims split where needed), reading `x` (a
  // chain of views of `behind.anchor`) as the anchor itself, and with `pull` the producers Pull
  // finds recomputed there; nullopt where the layouts do not allow it.
  std::optional<Status> MoveInto(const ir::OpNode& node, NodeRef x, const Behind& behind, bool pull) {
    const ir::OpNode& product = *behind.product;
    const ir::TensorType& x_type = *source().TypeOf(x);
    const ir::Shape& view_shape = x_type.shape;
    const ir::TensorType& product_type = behind.anchor_type;
    const size_t rank = product_type.shape.size();
    if (view_shape != node.type().shape || x_type.numel() != product_type.numel()) return std::nullopt;
    if (product_type.shape[rank - 2] == 1 || product_type.shape[rank - 1] == 1) return std::nullopt;
    std::optional<std::vector<LaidDim>> product_dims = DenseOrder(product_type), x_dims = DenseOrder(x_type);
    if (!product_dims || !x_dims) return std::nullopt;
    std::optional<std::vector<Piece>> pieces = CommonPieces(*product_dims, *x_dims, product_type.numel());
    if (!pieces) return std::nullopt;

    // The tensors to view over the product's dims (the op's other inputs, or the leaves of the
    // producers recomputed in their place), each with its strides over the view's dims, after the
    // views that give it the view's shape.
    struct Viewed {
      NodeRef ref;
      std::vector<int64_t> strides;
      std::vector<ViewStep> steps;
    };
    std::vector<Viewed> viewed;
    std::vector<Pulled> pulled;
    std::vector<NodeRef> others;
    // Ops this pass moved into the product's shape that the input's way of viewing it: read there.
    const std::string relation = RelationKey(product, x_type, product_type);
    std::vector<std::pair<NodeRef, const Moved*>> direct;
    for (const NodeRef& ref : TensorInputs(node)) {
      if (ref == x || std::find(others.begin(), others.end(), ref) != others.end()) continue;
      others.push_back(ref);
      if (auto moved = moved_.find(ref.value); moved != moved_.end() && moved->second.relation == relation) {
        direct.emplace_back(ref, &moved->second);
        continue;
      }
      // A value computed from the product by another kernel (a norm's statistics of it) could not
      // be read by the product's own kernel: the op would run alone, as before but split apart.
      if (DependsOn(ref.value, product)) return std::nullopt;
      std::optional<Pulled> producers = pull ? Pull(ref, node.id, view_shape) : std::nullopt;
      if (!producers) {
        viewed.push_back(Viewed{ref, ir::BroadcastStrides(*builder().TypeOf(Map(ref)), view_shape), {}});
        continue;
      }
      const ir::TensorType& q_type = producers->cluster.back()->type();
      for (size_t i = 0; i < producers->leaves.size(); ++i) {
        const NodeRef leaf = producers->leaves[i];
        if (std::any_of(viewed.begin(), viewed.end(), [&](const Viewed& v) { return v.ref == leaf && v.strides == producers->strides[i]; })) {
          continue;
        }
        std::optional<std::vector<ViewStep>> steps = LeafOverView(*builder().TypeOf(Map(leaf)), q_type.shape, producers->q_dims, view_shape);
        if (!steps) return std::nullopt;
        viewed.push_back(Viewed{leaf, producers->strides[i], std::move(*steps)});
      }
      pulled.push_back(std::move(*producers));
    }
    if (pull && pulled.empty()) return std::nullopt;  // the same as without
    std::vector<std::vector<int64_t>> other_strides = {node.type().stride};
    for (const Viewed& v : viewed) other_strides.push_back(v.strides);
    Refinement refinement(std::move(*pieces), other_strides, rank);
    if (refinement.count_in(rank - 2) != 1 || refinement.count_in(rank - 1) != 1) return std::nullopt;
    const ir::Shape shape = refinement.shape();
    const size_t r = shape.size() - 2;
    // An anchor other than the product alone is read as it is.
    if (!(behind.is_product && behind.only_reader) && shape != product_type.shape) return std::nullopt;
    for (const auto& [ref, moved] : direct) {
      if (moved->shape != shape) return std::nullopt;
    }
    auto made = [](Result<ir::TensorType> type) { return type.ok() ? std::optional<ir::TensorType>(*type) : std::nullopt; };
    std::optional<ir::TensorType> out_type = made(ir::TensorType::Make(shape, node.type().dtype, refinement.Strides(node.type().stride)));
    std::optional<ir::TensorType> product_out = made(ir::TensorType::Make(shape, product_type.dtype, refinement.ProductStrides()));
    if (!out_type || !product_out) return std::nullopt;
    // The epilogue stores along a matrix dim, as the product's own store would.
    if (out_type->stride[r] != 1 && out_type->stride[r + 1] != 1) return std::nullopt;

    // The operands, their batch dims split as the product's.
    std::vector<ir::TensorType> operand_types;
    for (size_t i = 0; i < 2; ++i) {
      const ir::TensorType& operand = *builder().TypeOf(Map(product.args[i].As<NodeRef>()));
      ir::Shape split(shape.begin(), shape.end() - 2);
      split.push_back(operand.shape[rank - 2]);
      split.push_back(operand.shape[rank - 1]);
      std::optional<std::vector<int64_t>> strides = ViewStrides(operand.shape, operand.stride, split);
      if (!strides) return std::nullopt;
      operand_types.push_back(ir::TensorType{split, operand.dtype, *strides});
    }
    for (Viewed& v : viewed) {
      ir::TensorType at = *builder().TypeOf(Map(v.ref));
      if (!v.steps.empty()) at = v.steps.back().type;
      std::optional<ir::TensorType> target = made(ir::TensorType::Make(shape, at.dtype, refinement.Strides(v.strides)));
      std::optional<std::vector<ViewStep>> steps = target ? ViewsInto(at, view_shape, refinement, *target) : std::nullopt;
      if (!steps) return std::nullopt;
      v.steps.insert(v.steps.end(), steps->begin(), steps->end());
    }
    std::optional<std::vector<ViewStep>> back = ViewsBack(*out_type, refinement, node.type());
    if (!back) return std::nullopt;

    Status status = [&]() -> Status {
      NodeRef product_ref = behind.anchor;
      if (shape != product_type.shape) {
        std::vector<ir::Argument> operands;
        for (size_t i = 0; i < 2; ++i) {
          const NodeRef operand = Map(product.args[i].As<NodeRef>());
          const ir::TensorType& type = operand_types[i];
          std::vector<ViewStep> split;
          if (type.shape != builder().TypeOf(operand)->shape) split.push_back({"aten.view.default", ir::Argument(ir::IntList(type.shape)), type});
          ASSIGN_OR_RETURN(NodeRef operand_view, AddSteps(product.name + (i == 0 ? "_a" : "_b"), operand, split));
          operands.push_back(ir::Argument(operand_view));
        }
        const char* op = shape.size() == 2 ? "aten.mm.default" : shape.size() == 3 ? "aten.bmm.default" : "aten.matmul.default";
        ASSIGN_OR_RETURN(ir::ValueId id, builder().AddOp(builder().FreshName(product.name + "_split"), op, std::move(operands), {},
                                                         {*product_out}));
        product_ref = NodeRef{id, 0};
      }
      const std::string over = "_over_" + product.name;
      std::vector<NodeRef> viewed_refs;
      for (const Viewed& v : viewed) {
        ASSIGN_OR_RETURN(NodeRef ref, AddSteps(std::string(source().value(v.ref.value).name) + over, Map(v.ref), v.steps));
        viewed_refs.push_back(ref);
      }
      // Each tensor as the product's dims see it: a viewed input, or a recomputed producer.
      RefMap as_product = {{x, product_ref}};
      for (const auto& [ref, moved] : direct) as_product.push_back({ref, moved->moved});
      auto viewed_ref = [&](const NodeRef& ref, const std::vector<int64_t>* strides) {
        for (size_t i = 0; i < viewed.size(); ++i) {
          if (viewed[i].ref == ref && (strides == nullptr || viewed[i].strides == *strides)) return viewed_refs[i];
        }
        return Map(ref);
      };
      for (const Pulled& producers : pulled) {
        RefMap recomputed;
        auto map = [&](const NodeRef& ref) {
          if (const NodeRef* found = Find(recomputed, ref)) return *found;
          const size_t leaf = static_cast<size_t>(std::find(producers.leaves.begin(), producers.leaves.end(), ref) - producers.leaves.begin());
          return viewed_ref(ref, &producers.strides[leaf]);
        };
        for (const ir::OpNode* op : producers.cluster) {
          ASSIGN_OR_RETURN(ir::TensorType type, ir::TensorType::Contiguous(shape, op->type().dtype));
          ASSIGN_OR_RETURN(NodeRef added, AddMapped(*op, builder().FreshName(op->name + over), map, type));
          recomputed.push_back({op->ref(), added});
        }
        as_product.push_back({producers.input, recomputed.back().second});
      }
      auto map = [&](const NodeRef& ref) {
        if (const NodeRef* found = Find(as_product, ref)) return *found;
        return viewed_ref(ref, nullptr);
      };
      const std::string name = back->empty() ? node.name : builder().FreshName(node.name + "_epilogue");
      ASSIGN_OR_RETURN(NodeRef moved, AddMapped(node, name, map, *out_type));
      ASSIGN_OR_RETURN(NodeRef result, AddSteps(node.name + "_view", moved, *back, node.name));
      Replace(node, {result});
      moved_[node.id] = Moved{&product, moved, *out_type, RelationKey(product, node.type(), *out_type), shape};
      return Status::Ok();
    }();
    if (!status.ok()) return std::nullopt;  // values already added stay unused; dead code drops them
    return status;
  }

  // `node` added as `name` of `type`, its tensor arguments mapped by `map`.
  Result<NodeRef> AddMapped(const ir::OpNode& node, const std::string& name, const std::function<NodeRef(const NodeRef&)>& map,
                            ir::TensorType type) {
    std::vector<ir::Argument> args;
    for (const ir::Argument& arg : node.args) args.push_back(ir::MapRefs(arg, map));
    std::vector<ir::NamedArgument> kwargs;
    for (const ir::NamedArgument& kwarg : node.kwargs) kwargs.push_back({kwarg.name, ir::MapRefs(kwarg.argument, map)});
    ASSIGN_OR_RETURN(ir::ValueId id, builder().AddOp(name, node.op, std::move(args), std::move(kwargs), {std::move(type)}));
    return NodeRef{id, 0};
  }

  const GraphReaders readers_;
  std::map<ir::ValueId, Moved> moved_;                     // by source id
  std::map<ir::ValueId, std::vector<bool>> downstream_;  // by product: the values computed from it
};

}  // namespace

Result<ir::Graph> MoveEpiloguesIntoProducts(const ir::Graph& graph) {
  EpilogueMover mover(graph);
  return mover.Rewrite(graph);
}

}  // namespace kforge::passes
