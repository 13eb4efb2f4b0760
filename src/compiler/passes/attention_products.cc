#include "compiler/passes/attention_products.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
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

// In rising order: a chunk attention reads as both v and q or k is a score chunk.
enum class Role { kNone, kValue, kScore };

// A product split into attention's operands, and the runs of chunks its products are to cover.
struct SplitProduct {
  const ir::OpNode* product = nullptr;  // addmm(bias, x, w) or mm(x, w), [M, N]
  const ir::OpNode* view = nullptr;     // the view of it the split reads, or nullptr
  const ir::OpNode* split = nullptr;    // split_with_sizes along the last dim
  ir::IntList sizes;
  std::vector<std::pair<size_t, size_t>> runs;  // [first, last) chunks of one role each
};

// The role of each split chunk attention reads (traced back from q, k and v through views and
// copies), by (split id, chunk).
std::map<std::pair<ir::ValueId, int32_t>, Role> ChunkRoles(const ir::Graph& graph) {
  std::map<std::pair<ir::ValueId, int32_t>, Role> roles;
  for (const ir::Value& value : graph) {
    const auto* attention = value.TryAs<ir::OpNode>();
    if (attention == nullptr || !IsAttention(*attention) || attention->args.size() < 3) continue;
    for (int operand = 0; operand < 3; ++operand) {
      const Role role = operand < 2 ? Role::kScore : Role::kValue;
      const auto* start = attention->args[static_cast<size_t>(operand)].TryAs<NodeRef>();
      if (start == nullptr) continue;
      WalkBackThroughDataMovement(graph, {*start}, [&](const NodeRef& ref) {
        const ir::OpNode* op = OpAt(graph, ref);
        if (op == nullptr || op->op != "aten.split_with_sizes.default") return true;
        Role& known = roles[{op->id, ref.output}];
        known = std::max(known, role);
        return false;
      });
    }
  }
  return roles;
}

// The product `ref` is, where it is one this pass splits: addmm of a 1-D bias or mm, 2-D fp32,
// contiguous, no keyword arguments.
const ir::OpNode* SplittableProduct(const ir::Graph& graph, const NodeRef& ref) {
  const ir::OpNode* op = OpAt(graph, ref);
  if (op == nullptr || !op->kwargs.empty() || op->type().rank() != 2 || !op->type().is_contiguous() ||
      op->type().dtype != ir::DType::kFloat32) {
    return nullptr;
  }
  const size_t operands = op->op == "aten.addmm.default" ? 3 : op->op == "aten.mm.default" ? 2 : 0;
  if (operands == 0 || op->args.size() != operands) return nullptr;
  for (const ir::Argument& arg : op->args) {
    if (!arg.Is<NodeRef>()) return nullptr;
  }
  const ir::TensorType* weight = graph.TypeOf(op->args.back().As<NodeRef>());
  if (weight == nullptr || weight->rank() != 2) return nullptr;
  if (operands == 3) {
    const ir::TensorType* bias = graph.TypeOf(op->args[0].As<NodeRef>());
    if (bias == nullptr || bias->shape != ir::Shape{op->type().shape[1]}) return nullptr;
  }
  return op;
}

// The new types of the values downstream of the chunks, through views only, given the chunks'
// new types; nullopt when one is read by what this pass does not retype (a view it cannot
// follow, an aliasing op other than a view, a graph output).
std::optional<std::map<ir::ValueId, ir::TensorType>> Retyped(const ir::Graph& graph, const SplitProduct& s,
                                                              const std::vector<ir::TensorType>& chunks) {
  std::map<std::pair<ir::ValueId, int32_t>, ir::TensorType> types;  // by (value, output)
  for (size_t c = 0; c < chunks.size(); ++c) types.emplace(std::pair(s.split->id, static_cast<int32_t>(c)), chunks[c]);
  auto new_type = [&](const NodeRef& ref) {
    auto found = types.find({ref.value, ref.output});
    return found == types.end() ? nullptr : &found->second;
  };
  std::map<ir::ValueId, ir::TensorType> retyped;
  for (ir::ValueId id = s.split->id + 1; id < graph.size(); ++id) {
    const auto* op = graph.value(id).TryAs<ir::OpNode>();
    if (op == nullptr) continue;
    const std::vector<NodeRef> inputs = TensorInputs(*op);
    if (std::none_of(inputs.begin(), inputs.end(), [&](const NodeRef& ref) { return new_type(ref) != nullptr; })) continue;
    if (IsMetadataView(*op)) {
      const ir::TensorType* input = op->args.empty() || !op->args[0].Is<NodeRef>() ? nullptr : new_type(op->args[0].As<NodeRef>());
      std::optional<ir::TensorType> type = input ? Reviewed(*op, *input) : std::nullopt;
      if (!type) return std::nullopt;
      types.emplace(std::pair(id, 0), *type);
      retyped[id] = *type;
    } else if (op->op_kind() == ir::OpKind::kDataMovement && op->op != "aten.clone.default" && op->op != "aten.contiguous.default") {
      return std::nullopt;  // split, unbind and the like alias their input
    }
  }
  for (const NodeRef& out : graph.LiveOuts()) {
    if (new_type(out) != nullptr) return std::nullopt;
  }
  return retyped;
}

// The products to split and the types their chunks' views take.
struct Plan {
  std::map<ir::ValueId, SplitProduct> by_split;
  std::map<ir::ValueId, ir::ValueId> replaced;  // product and view ids -> their split's id
  std::map<ir::ValueId, ir::TensorType> retyped;
};

// The split and the product it reads (through a view keeping the product's last dim, or none),
// where `split` is one this pass may take apart: along the last dim, each value between read by
// the next alone.
std::optional<SplitProduct> MatchSplitProduct(const ir::Graph& graph, const GraphReaders& readers, const ir::OpNode& split) {
  if (split.op != "aten.split_with_sizes.default" || split.args.size() != 3 || !split.args[0].Is<NodeRef>() ||
      !split.args[1].Is<ir::IntList>() || !split.args[2].Is<int64_t>()) {
    return std::nullopt;
  }
  SplitProduct s;
  s.split = &split;
  s.sizes = split.args[1].As<ir::IntList>();
  const NodeRef input = split.args[0].As<NodeRef>();
  const ir::TensorType& input_type = *graph.TypeOf(input);
  const int64_t dim = split.args[2].As<int64_t>();
  if (dim != input_type.rank() - 1 && dim != -1) return std::nullopt;
  NodeRef product_ref = input;
  if (const ir::OpNode* view = OpAt(graph, input); view != nullptr && view->op == "aten.view.default") {
    if (!readers.OnlyReader(view->id, split.id) || !view->args[0].Is<NodeRef>() || !input_type.is_contiguous()) return std::nullopt;
    s.view = view;
    product_ref = view->args[0].As<NodeRef>();
  }
  s.product = SplittableProduct(graph, product_ref);
  if (s.product == nullptr || !readers.OnlyReader(s.product->id, s.view ? s.view->id : split.id) ||
      input_type.shape.back() != s.product->type().shape[1]) {
    return std::nullopt;
  }
  return s;
}

// The runs of consecutive chunks of one role; none unless q or k and v both come from the split.
std::vector<std::pair<size_t, size_t>> RoleRuns(const std::map<std::pair<ir::ValueId, int32_t>, Role>& roles, const SplitProduct& s) {
  std::vector<Role> chunk_roles;
  for (size_t c = 0; c < s.sizes.size(); ++c) {
    auto found = roles.find({s.split->id, static_cast<int32_t>(c)});
    chunk_roles.push_back(found == roles.end() ? Role::kNone : found->second);
  }
  const bool scores = std::count(chunk_roles.begin(), chunk_roles.end(), Role::kScore) > 0;
  const bool values = std::count(chunk_roles.begin(), chunk_roles.end(), Role::kValue) > 0;
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t c = 0; scores && values && c < chunk_roles.size(); ++c) {
    if (c == 0 || chunk_roles[c] != chunk_roles[c - 1]) runs.push_back({c, c});
    runs.back().second = c + 1;
  }
  return runs;
}

// Each chunk's type as its run's product leaves it: contiguous along the split's view, or a split
// of that.
std::vector<ir::TensorType> ChunkTypes(const SplitProduct& s, const ir::TensorType& viewed) {
  std::vector<ir::TensorType> chunks;
  for (const auto& [first, last] : s.runs) {
    ir::Shape run_shape = viewed.shape;
    run_shape.back() = std::accumulate(s.sizes.begin() + first, s.sizes.begin() + last, int64_t{0});
    const std::vector<int64_t> stride = ir::ContiguousStrides(run_shape);
    for (size_t c = first; c < last; ++c) {
      ir::Shape shape = run_shape;
      shape.back() = s.sizes[c];
      chunks.push_back(ir::TensorType{shape, viewed.dtype, stride});
    }
  }
  return chunks;
}

Plan PlanSplits(const ir::Graph& graph) {
  Plan plan;
  const GraphReaders readers(graph);
  const auto roles = ChunkRoles(graph);
  for (const ir::Value& value : graph) {
    const auto* split = value.TryAs<ir::OpNode>();
    std::optional<SplitProduct> s = split ? MatchSplitProduct(graph, readers, *split) : std::nullopt;
    if (!s) continue;
    s->runs = RoleRuns(roles, *s);
    if (s->runs.size() < 2) continue;
    std::optional<std::map<ir::ValueId, ir::TensorType>> retyped =
        Retyped(graph, *s, ChunkTypes(*s, *graph.TypeOf(split->args[0].As<NodeRef>())));
    if (!retyped) continue;
    plan.retyped.insert(retyped->begin(), retyped->end());
    plan.replaced[s->product->id] = split->id;
    if (s->view) plan.replaced[s->view->id] = split->id;
    plan.by_split.emplace(split->id, std::move(*s));
  }
  return plan;
}

class ProductSplitter : public ir::GraphRewriter {
 public:
  explicit ProductSplitter(Plan plan) : plan_(std::move(plan)) {}

 protected:
  Status RewriteOp(const ir::OpNode& node) override {
    if (plan_.replaced.count(node.id)) return Status::Ok();  // made again per run at its split
    if (auto found = plan_.by_split.find(node.id); found != plan_.by_split.end()) return SplitAt(found->second);
    if (auto found = plan_.retyped.find(node.id); found != plan_.retyped.end()) return CopyOp(node, {found->second});
    return CopyOp(node);
  }

 private:
  Result<NodeRef> Add(const std::string& base, const std::string& op, std::vector<ir::Argument> args, ir::TensorType type) {
    ASSIGN_OR_RETURN(ir::ValueId id, builder().AddOp(builder().FreshName(base), op, std::move(args), {}, {std::move(type)}));
    return NodeRef{id, 0};
  }

  // One product per run: the weight's columns and the bias's elements of the run, viewed as the
  // split's input was, and split again where the run has several chunks.
  Status SplitAt(const SplitProduct& s) {
    const ir::OpNode& product = *s.product;
    const bool addmm = product.args.size() == 3;
    const NodeRef x = Map(product.args[addmm ? 1 : 0].As<NodeRef>());
    const NodeRef weight = Map(product.args.back().As<NodeRef>());
    const ir::TensorType& weight_type = *builder().TypeOf(weight);
    const int64_t m = product.type().shape[0];
    const ir::Shape viewed = s.view ? s.view->type().shape : product.type().shape;
    std::vector<NodeRef> chunks;
    int64_t begin = 0;
    for (const auto& [first, last] : s.runs) {
      const int64_t columns = std::accumulate(s.sizes.begin() + first, s.sizes.begin() + last, int64_t{0});
      const int64_t end = begin + columns;
      const std::string base = product.name + fmt::format("_{}_{}", begin, end);
      ASSIGN_OR_RETURN(NodeRef w, Add(base + "_weight", "aten.slice.Tensor",
                                      {ir::Argument{weight}, ir::Argument{int64_t{1}}, ir::Argument{begin}, ir::Argument{end}},
                                      ir::TensorType{{weight_type.shape[0], columns}, weight_type.dtype, weight_type.stride}));
      std::vector<ir::Argument> args = {ir::Argument{x}, ir::Argument{w}};
      if (addmm) {
        const NodeRef bias = Map(product.args[0].As<NodeRef>());
        const ir::TensorType& bias_type = *builder().TypeOf(bias);
        ASSIGN_OR_RETURN(NodeRef b, Add(base + "_bias", "aten.slice.Tensor",
                                        {ir::Argument{bias}, ir::Argument{int64_t{0}}, ir::Argument{begin}, ir::Argument{end}},
                                        ir::TensorType{{columns}, bias_type.dtype, bias_type.stride}));
        args.insert(args.begin(), ir::Argument{b});
      }
      ASSIGN_OR_RETURN(ir::TensorType out, ir::TensorType::Contiguous({m, columns}, product.type().dtype));
      ASSIGN_OR_RETURN(NodeRef made, Add(base, product.op, std::move(args), out));
      ir::Shape shape = viewed;
      shape.back() = columns;
      ASSIGN_OR_RETURN(ir::TensorType view_type, ir::TensorType::Contiguous(shape, out.dtype));
      if (s.view) {
        ASSIGN_OR_RETURN(made, Add(s.view->name, "aten.view.default", {ir::Argument{made}, ir::Argument{ir::IntList(shape)}}, view_type));
      }
      if (last - first == 1) {
        chunks.push_back(made);
      } else {
        const ir::IntList sizes(s.sizes.begin() + first, s.sizes.begin() + last);
        std::vector<ir::TensorType> outputs;
        for (int64_t size : sizes) {
          ir::Shape part = shape;
          part.back() = size;
          outputs.push_back(ir::TensorType{part, view_type.dtype, view_type.stride});
        }
        ASSIGN_OR_RETURN(ir::ValueId split,
                         builder().AddOp(builder().FreshName(s.split->name), s.split->op,
                                         {ir::Argument{made}, ir::Argument{sizes}, ir::Argument{static_cast<int64_t>(shape.size()) - 1}}, {},
                                         outputs));
        for (size_t c = 0; c < sizes.size(); ++c) chunks.push_back(NodeRef{split, static_cast<int32_t>(c)});
      }
      begin = end;
    }
    Replace(*s.split, std::move(chunks));
    return Status::Ok();
  }

  Plan plan_;
};

}  // namespace

Result<ir::Graph> SplitAttentionProducts(const ir::Graph& graph) {
  ProductSplitter splitter(PlanSplits(graph));
  return splitter.Rewrite(graph);
}

}  // namespace kforge::passes
