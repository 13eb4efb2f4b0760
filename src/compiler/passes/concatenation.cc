#include "compiler/passes/concatenation.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "compiler/ir/visitor.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::passes {
namespace {

using ir::NodeRef;

// A cat this pass can lay out: its inputs (all tensors, of its rank and dtype, its shape but along
// the dim) and the dim, made non-negative.
struct Cat {
  const ir::OpNode* op = nullptr;
  int64_t dim = 0;
  std::vector<NodeRef> inputs;
};

std::optional<Cat> AsCat(const ir::Graph& graph, const ir::OpNode& op) {
  if (op.op != "aten.cat.default" || op.num_outputs() != 1 || op.args.empty()) return std::nullopt;
  const auto* list = op.args[0].TryAs<ir::TensorList>();
  const ir::TensorType& type = op.type();
  const int64_t rank = type.rank();
  const ir::Argument* dim_arg = op.FindArgument(ir::ArgSlot{1, "dim"});
  int64_t dim = 0;
  if (dim_arg != nullptr) {
    const auto* given = dim_arg->TryAs<int64_t>();
    if (given == nullptr) return std::nullopt;
    dim = *given < 0 ? *given + rank : *given;
  }
  if (list == nullptr || list->empty() || rank == 0 || dim < 0 || dim >= rank) return std::nullopt;
  Cat cat{&op, dim, {}};
  int64_t extent = 0;
  for (const std::optional<NodeRef>& input : *list) {
    if (!input) return std::nullopt;
    const ir::TensorType* input_type = graph.TypeOf(*input);
    if (input_type == nullptr || input_type->dtype != type.dtype || input_type->rank() != rank) return std::nullopt;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != dim && input_type->shape[static_cast<size_t>(d)] != type.shape[static_cast<size_t>(d)]) return std::nullopt;
    }
    extent += input_type->shape[static_cast<size_t>(dim)];
    cat.inputs.push_back(*input);
  }
  if (extent != type.shape[static_cast<size_t>(dim)]) return std::nullopt;
  return cat;
}

bool IsPrefix(const std::vector<NodeRef>& part, const std::vector<NodeRef>& whole) {
  return part.size() <= whole.size() && std::equal(part.begin(), part.end(), whole.begin());
}

// Whether every reader of `value` reads it through its strides in whatever kernel it lands in.
bool ReadThroughStrides(const ir::Graph& graph, const GraphReaders& readers, ir::ValueId value) {
  for (ir::ValueId reader : readers.of[static_cast<size_t>(value)]) {
    const auto* op = graph.value(reader).TryAs<ir::OpNode>();
    if (op == nullptr) return false;
    switch (op->op_kind()) {
      case ir::OpKind::kPointwise:
      case ir::OpKind::kReduction:
      case ir::OpKind::kNormalization:
      case ir::OpKind::kConvolution:
      case ir::OpKind::kPooling:
        break;
      default:
        if (op->op != "aten.cat.default") return false;
    }
  }
  return true;
}

// Whether `ref` can be written into its slice by the kernel that computes it: a convolution or a
// fusable pointwise op, its one output read only by `members` and not returned.
bool Slot(const ir::Graph& graph, const GraphReaders& readers, const NodeRef& ref, const std::set<ir::ValueId>& members) {
  const ir::OpNode* producer = OpAt(graph, ref);
  if (producer == nullptr || producer->num_outputs() != 1 || readers.returned.count(ref.value)) return false;
  if (producer->op_kind() != ir::OpKind::kConvolution && !IsFusablePointwise(graph, *producer)) return false;
  const std::set<ir::ValueId>& read_by = readers.of[static_cast<size_t>(ref.value)];
  return std::all_of(read_by.begin(), read_by.end(), [&](ir::ValueId reader) { return members.count(reader) > 0; });
}

// The buffer's row-major strides: what its members and slots are typed with.
std::vector<int64_t> BufferStrides(const ir::Graph& graph, const Concatenation& family) {
  return ir::ContiguousStrides(graph.value(family.buffer).type().shape);
}

// `type` with the buffer's strides.
ir::TensorType InBuffer(ir::TensorType type, const std::vector<int64_t>& strides) {
  type.stride = strides;
  return type;
}

class CatLayout : public ir::GraphRewriter {
 public:
  explicit CatLayout(std::map<ir::ValueId, ir::TensorType> retyped) : retyped_(std::move(retyped)) {}

 protected:
  Status RewriteOp(const ir::OpNode& node) override {
    auto found = retyped_.find(node.id);
    return found == retyped_.end() ? CopyOp(node) : CopyOp(node, {found->second});
  }

 private:
  std::map<ir::ValueId, ir::TensorType> retyped_;
};

}  // namespace

std::vector<Concatenation> FindConcatenations(const ir::Graph& graph) {
  const GraphReaders readers(graph);
  std::vector<Cat> cats;
  for (const ir::Value& value : graph) {
    const auto* op = value.TryAs<ir::OpNode>();
    if (op == nullptr) continue;
    if (std::optional<Cat> cat = AsCat(graph, *op)) cats.push_back(std::move(*cat));
  }
  // Longest first (graph order among equals): each family's buffer is its longest cat.
  std::stable_sort(cats.begin(), cats.end(), [](const Cat& a, const Cat& b) { return a.inputs.size() > b.inputs.size(); });
  std::set<ir::ValueId> taken;
  std::vector<Concatenation> families;
  for (const Cat& buffer : cats) {
    const ir::OpNode& op = *buffer.op;
    if (taken.count(op.id) || !op.type().is_contiguous()) continue;
    Concatenation family;
    family.buffer = op.id;
    family.dim = buffer.dim;
    std::set<ir::ValueId> members = {op.id};
    for (const Cat& other : cats) {
      const ir::OpNode& member = *other.op;
      if (member.id == op.id || taken.count(member.id) || other.dim != buffer.dim || member.type().dtype != op.type().dtype ||
          !IsPrefix(other.inputs, buffer.inputs) || readers.returned.count(member.id) ||
          !ReadThroughStrides(graph, readers, member.id)) {
        continue;
      }
      members.insert(member.id);
    }
    int64_t offset = 0, slots = 0;
    for (const NodeRef& input : buffer.inputs) {
      const int64_t size = graph.TypeOf(input)->shape[static_cast<size_t>(buffer.dim)];
      const bool once = std::count(buffer.inputs.begin(), buffer.inputs.end(), input) == 1;
      const bool slot = once && Slot(graph, readers, input, members);
      family.parts.push_back({input, offset, size, slot});
      slots += slot;
      offset += size;
    }
    if (slots == 0 && members.size() < 2) continue;
    family.members.assign(members.begin(), members.end());  // ids rise in graph order
    taken.insert(members.begin(), members.end());
    families.push_back(std::move(family));
  }
  return families;
}

Result<ir::Graph> ConcatenateInPlace(const ir::Graph& graph) {
  std::map<ir::ValueId, ir::TensorType> retyped;
  for (const Concatenation& family : FindConcatenations(graph)) {
    const std::vector<int64_t> strides = BufferStrides(graph, family);
    for (ir::ValueId member : family.members) retyped[member] = InBuffer(graph.value(member).type(), strides);
    for (const Concatenation::Part& part : family.parts) {
      if (part.slot) retyped[part.value.value] = InBuffer(*graph.TypeOf(part.value), strides);
    }
  }
  CatLayout layout(std::move(retyped));
  return layout.Rewrite(graph);
}

std::vector<Concatenation> ConcatenationsInPlace(const ir::Graph& graph) {
  std::vector<Concatenation> laid_out;
  for (Concatenation family : FindConcatenations(graph)) {
    const std::vector<int64_t> strides = BufferStrides(graph, family);
    const bool members_in_buffer = std::all_of(family.members.begin(), family.members.end(), [&](ir::ValueId member) {
      return graph.value(member).type().stride == strides;
    });
    if (!members_in_buffer) continue;
    bool slots = false;
    for (Concatenation::Part& part : family.parts) {
      part.slot = part.slot && graph.TypeOf(part.value)->stride == strides;
      slots = slots || part.slot;
    }
    if (slots || family.members.size() > 1) laid_out.push_back(std::move(family));
  }
  return laid_out;
}

}  // namespace kforge::passes
