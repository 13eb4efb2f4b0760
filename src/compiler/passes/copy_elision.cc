#include "compiler/passes/copy_elision.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/visitor.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::passes {
namespace {

using ir::NodeRef;

struct Dim {
  int64_t size = 1;
  int64_t stride = 0;
};

// Whether `outer` followed by `inner` is one dim of a strided view (PyTorch's view rule).
bool Merges(const Dim& outer, const Dim& inner) { return outer.stride == inner.size * inner.stride; }

// An operand of a batched product as the kernel reads it: the value it loads from, its batch dims
// (outermost first, not yet matched with the other operand's), and its rows and columns.
struct Operand {
  NodeRef base;  // in the rewritten graph
  std::vector<Dim> batch;
  Dim rows, cols;
  bool through_copy = false;
};

// Dims taken from the back of `dims` whose sizes multiply to `count`, merged into one; nullopt
// when they do not multiply to it exactly or do not merge.
std::optional<Dim> TakeMerged(std::vector<Dim>& dims, int64_t count) {
  if (count == 1) return Dim{1, 0};
  std::optional<Dim> merged;
  while (!dims.empty() && (!merged || merged->size < count)) {
    const Dim outer = dims.back();
    dims.pop_back();
    if (!merged) {
      merged = outer;
      continue;
    }
    if (!Merges(outer, *merged)) return std::nullopt;
    merged = Dim{outer.size * merged->size, merged->stride};
  }
  if (!merged || merged->size != count) return std::nullopt;
  return merged;
}

// `type`'s dims of a size other than 1, with their strides.
std::vector<Dim> NonUnitDims(const ir::TensorType& type) {
  std::vector<Dim> dims;
  for (size_t d = 0; d < type.shape.size(); ++d) {
    if (type.shape[d] != 1) dims.push_back(Dim{type.shape[d], type.stride[d]});
  }
  return dims;
}

// x (strided) read as a [batch, rows, cols] product operand whose flattening it is.
std::optional<Operand> SplitAs(const ir::TensorType& x, const ir::Shape& operand_shape) {
  std::vector<Dim> dims = NonUnitDims(x);
  Operand operand;
  std::optional<Dim> cols = TakeMerged(dims, operand_shape[2]);
  std::optional<Dim> rows = cols ? TakeMerged(dims, operand_shape[1]) : std::nullopt;
  if (!rows) return std::nullopt;
  int64_t batch = 1;
  for (const Dim& dim : dims) batch *= dim.size;
  if (batch != operand_shape[0]) return std::nullopt;
  operand.batch = std::move(dims);
  operand.rows = *rows;
  operand.cols = *cols;
  return operand;
}

bool IsCopy(const ir::OpNode& op) { return op.op == "aten.clone.default" || op.op == "aten.contiguous.default"; }

bool IsFlatteningView(const ir::OpNode& op) {
  return op.op == "aten.view.default" || op.op == "aten._unsafe_view.default" || op.op == "aten.reshape.default";
}

// Splits every dim of `dims` (whose sizes multiply to the last of `bounds`) at the running
// products `bounds` (ascending, each dividing the next); nullopt when a bound falls inside a dim
// at no whole number of its elements.
std::optional<std::vector<Dim>> SplitAt(const std::vector<Dim>& dims, const std::vector<int64_t>& bounds) {
  std::vector<Dim> split;
  int64_t reached = 1;
  size_t next = 0;
  for (const Dim& dim : dims) {
    const int64_t end = reached * dim.size;
    std::vector<int64_t> sizes;  // outermost first
    int64_t start = reached;
    while (next < bounds.size() && bounds[next] <= end) {
      if (bounds[next] % start != 0) return std::nullopt;
      sizes.push_back(bounds[next] / start);
      start = bounds[next++];
    }
    if (start != end) return std::nullopt;
    int64_t stride = dim.stride;
    std::vector<Dim> pieces(sizes.size());
    for (size_t i = sizes.size(); i-- > 0;) {
      pieces[i] = Dim{sizes[i], stride};
      stride *= sizes[i];
    }
    split.insert(split.end(), pieces.begin(), pieces.end());
    reached = end;
  }
  return split;
}

// The running products of `dims`' sizes, outermost first.
std::vector<int64_t> Bounds(const std::vector<Dim>& dims) {
  std::vector<int64_t> bounds;
  int64_t product = 1;
  for (const Dim& dim : dims) bounds.push_back(product *= dim.size);
  return bounds;
}

// Both operands' batch dims over one common batch shape (each dim split where the other's is),
// neighbours merged again where both operands allow; nullopt when they cannot be matched.
std::optional<std::pair<std::vector<Dim>, std::vector<Dim>>> MatchBatches(const Operand& a, const Operand& b) {
  std::vector<int64_t> bounds = Bounds(a.batch);
  const std::vector<int64_t> more = Bounds(b.batch);
  bounds.insert(bounds.end(), more.begin(), more.end());
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::optional<std::vector<Dim>> sa = SplitAt(a.batch, bounds), sb = SplitAt(b.batch, bounds);
  if (!sa || !sb || sa->size() != sb->size()) return std::nullopt;
  std::vector<Dim> ma, mb;
  for (size_t i = 0; i < sa->size(); ++i) {
    if (!ma.empty() && Merges(ma.back(), (*sa)[i]) && Merges(mb.back(), (*sb)[i])) {
      ma.back() = Dim{ma.back().size * (*sa)[i].size, (*sa)[i].stride};
      mb.back() = Dim{mb.back().size * (*sb)[i].size, (*sb)[i].stride};
    } else {
      ma.push_back((*sa)[i]);
      mb.push_back((*sb)[i]);
    }
  }
  return std::make_pair(std::move(ma), std::move(mb));
}

}  // namespace

std::optional<std::vector<int64_t>> ViewStrides(const ir::Shape& shape, const std::vector<int64_t>& stride,
                                                const ir::Shape& target) {
  std::vector<int64_t> result(target.size(), 0);
  if (shape.empty()) return std::vector<int64_t>(target.size(), 1);
  int64_t view_d = static_cast<int64_t>(target.size()) - 1;
  int64_t chunk_stride = stride.back(), tensor_count = 1, view_count = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_count *= shape[static_cast<size_t>(d)];
    // A chunk ends where the next dim out is not contiguous with this one.
    if (d == 0 || (shape[static_cast<size_t>(d - 1)] != 1 && stride[static_cast<size_t>(d - 1)] != tensor_count * chunk_stride)) {
      while (view_d >= 0 && (view_count < tensor_count || target[static_cast<size_t>(view_d)] == 1)) {
        result[static_cast<size_t>(view_d)] = view_count * chunk_stride;
        view_count *= target[static_cast<size_t>(view_d)];
        --view_d;
      }
      if (view_count != tensor_count) return std::nullopt;
      if (d > 0) {
        chunk_stride = stride[static_cast<size_t>(d - 1)];
        tensor_count = 1;
        view_count = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return result;
}

std::optional<ir::TensorType> Reviewed(const ir::OpNode& view, const ir::TensorType& input) {
  ir::TensorType type = view.type();
  const int64_t rank = input.rank();
  auto dim_at = [](const ir::Argument& arg, int64_t n) -> std::optional<int64_t> {
    const auto* d = arg.TryAs<int64_t>();
    if (d == nullptr || *d < -n || *d >= n) return std::nullopt;
    return *d < 0 ? *d + n : *d;
  };
  if (IsFlatteningView(view)) {
    auto strides = ViewStrides(input.shape, input.stride, type.shape);
    if (!strides) return std::nullopt;
    type.stride = *strides;
  } else if (view.op == "aten.permute.default" && view.args.size() == 2 && view.args[1].Is<ir::IntList>()) {
    const ir::IntList& dims = view.args[1].As<ir::IntList>();
    if (static_cast<int64_t>(dims.size()) != rank) return std::nullopt;
    for (size_t i = 0; i < dims.size(); ++i) {
      auto d = dim_at(ir::Argument(dims[i]), rank);
      if (!d) return std::nullopt;
      type.stride[i] = input.stride[static_cast<size_t>(*d)];
    }
  } else if (view.op == "aten.unsqueeze.default" && view.args.size() == 2) {
    auto d = dim_at(view.args[1], rank + 1);
    if (!d) return std::nullopt;
    type.stride = input.stride;
    const size_t at = static_cast<size_t>(*d);
    type.stride.insert(type.stride.begin() + *d, at < input.shape.size() ? input.shape[at] * input.stride[at] : 1);
  } else {
    return std::nullopt;
  }
  if (type.shape.size() != type.stride.size()) return std::nullopt;
  return type;
}

namespace {

// A [B, M, N] product's result stored with each matrix column-major.
ir::TensorType ColumnMajor(const ir::TensorType& product) {
  ir::TensorType type = product;
  const size_t r = type.shape.size() - 2;
  const int64_t m = type.shape[r], n = type.shape[r + 1];
  type.stride[r] = 1;
  type.stride[r + 1] = m;
  int64_t stride = m * n;
  for (size_t d = r; d-- > 0;) {
    type.stride[d] = stride;
    stride *= type.shape[d];
  }
  return type;
}

class CopyElider : public ir::GraphRewriter {
 public:
  explicit CopyElider(const ir::Graph& graph) : readers_(graph) {}

 protected:
  Status RewriteOp(const ir::OpNode& node) override {
    if (node.op == "aten.bmm.default") {
      ChooseProductLayout(node);
      if (auto done = ReadThroughCopies(node)) return *done;
      if (auto done = Retyped(node)) return *done;
    }
    if (IsAttention(node)) ChooseAttentionLayout(node);
    if (auto done = Retyped(node)) return *done;
    if (IsCopy(node)) {
      if (auto done = DropCopyOfContiguousWrite(node)) return *done;
    }
    if (auto done = WriteContiguous(node)) return *done;
    return CopyOp(node);
  }

 private:
  const ir::OpNode* Producer(NodeRef ref) const {
    const ir::Value* value = source().Resolve(ref);
    return value ? value->TryAs<ir::OpNode>() : nullptr;
  }

  // The bmm operand `ref` as read through `view(copy(x))`, or as itself. Types are the rewritten
  // graph's: x may be written contiguous by now.
  std::optional<Operand> Read(NodeRef ref, ir::ValueId bmm) {
    const ir::TensorType& type = *builder().TypeOf(Map(ref));
    const ir::OpNode* view = Producer(ref);
    const ir::OpNode* copy = view && IsFlatteningView(*view) && readers_.OnlyReader(view->id, bmm) && !view->args.empty() &&
                                     view->args[0].Is<NodeRef>()
                                 ? Producer(view->args[0].As<NodeRef>())
                                 : nullptr;
    if (copy && IsCopy(*copy) && readers_.OnlyReader(copy->id, view->id) && copy->type().is_contiguous() &&
        !copy->args.empty() && copy->args[0].Is<NodeRef>()) {
      const NodeRef x = Map(copy->args[0].As<NodeRef>());
      if (std::optional<Operand> through = SplitAs(*builder().TypeOf(x), type.shape)) {
        through->base = x;
        through->through_copy = true;
        return through;
      }
    }
    Operand own{Map(ref), {}, {type.shape[1], type.stride[1]}, {type.shape[2], type.stride[2]}, false};
    if (type.shape[0] != 1) own.batch.push_back(Dim{type.shape[0], type.stride[0]});
    return own;
  }

  // `base` viewed as [batch..., rows, cols] with those strides.
  Result<NodeRef> ViewAs(const ir::OpNode& origin, const char* suffix, const Operand& operand,
                         const std::vector<Dim>& batch) {
    std::vector<Dim> dims = batch;
    dims.push_back(operand.rows);
    dims.push_back(operand.cols);
    ir::Shape shape;
    std::vector<int64_t> stride;
    for (const Dim& dim : dims) {
      shape.push_back(dim.size);
      stride.push_back(dim.stride);
    }
    const ir::TensorType& base = *builder().TypeOf(operand.base);
    if (shape == base.shape && stride == base.stride) return operand.base;
    ASSIGN_OR_RETURN(ir::TensorType type, ir::TensorType::Make(shape, base.dtype, stride));
    ASSIGN_OR_RETURN(ir::ValueId id, builder().AddOp(builder().FreshName(origin.name + "_" + suffix), "aten.view.default",
                                                     {ir::Argument(operand.base), ir::Argument(ir::IntList(shape))},
                                                     {}, {type}));
    return NodeRef{id, 0};
  }

  // bmm(view(copy(x)), ...) as a matmul reading x through its strides.
  std::optional<Status> ReadThroughCopies(const ir::OpNode& bmm) {
    if (bmm.args.size() != 2 || !bmm.args[0].Is<NodeRef>() || !bmm.args[1].Is<NodeRef>()) return std::nullopt;
    std::optional<Operand> a = Read(bmm.args[0].As<NodeRef>(), bmm.id), b = Read(bmm.args[1].As<NodeRef>(), bmm.id);
    if (!a || !b || !(a->through_copy || b->through_copy)) return std::nullopt;
    // A dim of one would take whatever stride PyTorch's view gives it: kept out.
    if (a->rows.size == 1 || a->cols.size == 1 || b->cols.size == 1 || bmm.type().shape[0] == 1) return std::nullopt;
    auto batches = MatchBatches(*a, *b);
    if (!batches) return std::nullopt;
    Status status = [&]() -> Status {
      ASSIGN_OR_RETURN(NodeRef va, ViewAs(bmm, "a", *a, batches->first));
      ASSIGN_OR_RETURN(NodeRef vb, ViewAs(bmm, "b", *b, batches->second));
      ir::Shape shape;
      for (const Dim& dim : batches->first) shape.push_back(dim.size);
      shape.push_back(a->rows.size);
      shape.push_back(b->cols.size);
      ASSIGN_OR_RETURN(ir::TensorType product_type, ir::TensorType::Contiguous(shape, bmm.type().dtype));
      const bool column_major = retyped_.count(bmm.id) > 0;
      if (column_major) product_type = ColumnMajor(product_type);
      const bool one_batch_dim = shape.size() == 3;
      ASSIGN_OR_RETURN(ir::ValueId product,
                       builder().AddOp(one_batch_dim ? bmm.name : builder().FreshName(bmm.name + "_strided"),
                                       one_batch_dim ? "aten.bmm.default" : "aten.matmul.default",
                                       {ir::Argument(va), ir::Argument(vb)}, {}, {product_type}));
      NodeRef result{product, 0};
      if (!one_batch_dim) {
        ASSIGN_OR_RETURN(ir::ValueId flat,
                         builder().AddOp(bmm.name, "aten.view.default",
                                         {ir::Argument(result), ir::Argument(ir::IntList(bmm.type().shape))}, {},
                                         {column_major ? ColumnMajor(bmm.type()) : bmm.type()}));
        result = NodeRef{flat, 0};
      }
      Replace(bmm, {result});
      return Status::Ok();
    }();
    if (!status.ok()) return std::nullopt;  // values already added stay unused; dead code drops them
    return status;
  }

  // A product whose result only views carry to one pointwise op, which would read it across its
  // rows (a transposed read, one element per row: Mamba2's y_diag added to y_off), is stored
  // column-major instead when that makes the read contiguous; the views are retyped to match.
  void ChooseProductLayout(const ir::OpNode& bmm) {
    std::vector<const ir::OpNode*> chain;
    ir::ValueId at = bmm.id;
    while (!readers_.returned.count(at) && readers_.of[at].size() == 1) {
      const auto* reader = source().value(*readers_.of[at].begin()).TryAs<ir::OpNode>();
      if (reader == nullptr || !Reviewed(*reader, source().value(at).type())) break;
      chain.push_back(reader);
      at = reader->id;
    }
    if (chain.empty() || readers_.returned.count(at) || readers_.of[at].size() != 1) return;
    const ir::Value& consumer = source().value(*readers_.of[at].begin());
    if (!IsFusablePointwise(source(), consumer) || !(source().value(at).type().shape == consumer.type().shape)) return;
    // The dim the consumer writes fastest: does the read follow it?
    const ir::TensorType& written = consumer.type();
    std::optional<size_t> fastest;
    for (size_t d = 0; d < written.shape.size(); ++d) {
      const bool unit = ToBeWrittenContiguous(consumer.As<ir::OpNode>()) ? d + 1 == written.shape.size() : written.stride[d] == 1;
      if (unit && written.shape[d] > 1) fastest = d;
    }
    if (!fastest || source().value(at).type().stride[*fastest] == 1) return;
    std::map<ir::ValueId, ir::TensorType> types = {{bmm.id, ColumnMajor(bmm.type())}};
    ir::TensorType type = types[bmm.id];
    for (const ir::OpNode* view : chain) {
      std::optional<ir::TensorType> next = Reviewed(*view, type);
      if (!next) return;
      type = *next;
      types[view->id] = type;
    }
    if (type.stride[*fastest] != 1) return;
    retyped_.insert(types.begin(), types.end());
  }

  // An attention result that permutes carry to one contiguous copy (a multi-head attention's
  // `y.transpose(1, 2).contiguous()` before its output projection) is stored in the copy's layout:
  // the permuted view is then contiguous, and the copy is dropped.
  void ChooseAttentionLayout(const ir::OpNode& attention) {
    if (attention.num_outputs() != 1 || readers_.returned.count(attention.id)) return;
    std::vector<const ir::OpNode*> chain;
    ir::ValueId at = attention.id;
    while (!readers_.returned.count(at) && readers_.of[at].size() == 1) {
      const auto* reader = source().value(*readers_.of[at].begin()).TryAs<ir::OpNode>();
      if (reader == nullptr || reader->op != "aten.permute.default") break;
      chain.push_back(reader);
      at = reader->id;
    }
    if (chain.empty() || readers_.returned.count(at) || readers_.of[at].size() != 1) return;
    const auto* copy = source().value(*readers_.of[at].begin()).TryAs<ir::OpNode>();
    if (copy == nullptr || !IsCopy(*copy) || !copy->type().is_contiguous() ||
        copy->type().shape != source().value(at).type().shape || copy->type().dtype != attention.type().dtype) {
      return;
    }
    // Which dim of the attention's result each dim of the copy is: permute dim indices as strides.
    ir::TensorType dims = attention.type();
    for (size_t d = 0; d < dims.stride.size(); ++d) dims.stride[d] = static_cast<int64_t>(d);
    for (const ir::OpNode* view : chain) {
      std::optional<ir::TensorType> next = Reviewed(*view, dims);
      if (!next) return;
      dims = *next;
    }
    ir::TensorType type = attention.type();
    const std::vector<int64_t> contiguous = ir::ContiguousStrides(dims.shape);
    for (size_t i = 0; i < dims.shape.size(); ++i) type.stride[static_cast<size_t>(dims.stride[i])] = contiguous[i];
    std::map<ir::ValueId, ir::TensorType> types = {{attention.id, type}};
    for (const ir::OpNode* view : chain) {
      std::optional<ir::TensorType> next = Reviewed(*view, type);
      if (!next) return;
      type = *next;
      types[view->id] = type;
    }
    if (!type.is_contiguous()) return;
    retyped_.insert(types.begin(), types.end());
    written_contiguous_.insert(at);
  }

  // A node ChooseProductLayout retyped, added with its new type.
  std::optional<Status> Retyped(const ir::OpNode& node) {
    auto it = retyped_.find(node.id);
    if (it == retyped_.end()) return std::nullopt;
    return CopyOp(node, {it->second});
  }

  // Whether `node` is a pointwise result only a contiguous copy reads (WriteContiguous's case).
  bool ToBeWrittenContiguous(const ir::OpNode& node) const {
    if (!IsFusablePointwise(source(), node) || node.type().is_contiguous() || readers_.returned.count(node.id) ||
        readers_.of[node.id].size() != 1) {
      return false;
    }
    const ir::OpNode* copy = source().value(*readers_.of[node.id].begin()).TryAs<ir::OpNode>();
    return copy != nullptr && IsCopy(*copy) && copy->type().is_contiguous() && copy->type().shape == node.type().shape &&
           copy->type().dtype == node.type().dtype;
  }

  // A pointwise result only a contiguous copy reads: written contiguous.
  std::optional<Status> WriteContiguous(const ir::OpNode& node) {
    if (!ToBeWrittenContiguous(node)) return std::nullopt;
    auto type = ir::TensorType::Contiguous(node.type().shape, node.type().dtype);
    if (!type.ok()) return std::nullopt;
    if (!CopyOp(node, {*type}).ok()) return std::nullopt;  // copied unchanged instead
    written_contiguous_.insert(node.id);
    return Status::Ok();
  }

  // The copy of a value WriteContiguous wrote contiguous: the value itself.
  std::optional<Status> DropCopyOfContiguousWrite(const ir::OpNode& copy) {
    if (copy.args.empty() || !copy.args[0].Is<NodeRef>()) return std::nullopt;
    const NodeRef x = copy.args[0].As<NodeRef>();
    if (!written_contiguous_.count(x.value)) return std::nullopt;
    Replace(copy, {Map(x)});
    return Status::Ok();
  }

  const GraphReaders readers_;
  std::set<ir::ValueId> written_contiguous_;
  std::map<ir::ValueId, ir::TensorType> retyped_;  // by source id: products stored column-major, their views
};

}  // namespace

Result<ir::Graph> ElideCopies(const ir::Graph& graph) {
  CopyElider elider(graph);
  return elider.Rewrite(graph);
}

}  // namespace kforge::passes
