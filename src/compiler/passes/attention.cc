#include "compiler/passes/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ir/visitor.h"
#include "compiler/passes/causal_mask.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::passes {
namespace {

using ir::NodeRef;

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();
// The attention kernel holds a head's whole (power-of-two padded) row of q, k and v.
constexpr int64_t kMaxHeadDim = 256;

bool IsFloat32(const ir::Graph& graph, NodeRef ref) { return graph.TypeOf(ref)->dtype == ir::DType::kFloat32; }

// A number: an int or float argument, a 0-d scalar_tensor, or a 0-d constant whose value is known.
std::optional<double> NumberOf(const ir::Graph& graph, const ir::Argument& arg) {
  if (const auto* i = arg.TryAs<int64_t>()) return static_cast<double>(*i);
  if (const auto* d = arg.TryAs<double>()) return *d;
  const auto* ref = arg.TryAs<NodeRef>();
  if (ref == nullptr || graph.TypeOf(*ref)->rank() != 0) return std::nullopt;
  const ir::Value& value = graph.value(ref->value);
  if (const auto* constant = value.TryAs<ir::ConstantValue>()) return constant->scalar;
  const auto* op = value.TryAs<ir::OpNode>();
  if (op == nullptr || op->op != "aten.scalar_tensor.default" || op->args.empty()) return std::nullopt;
  return NumberOf(graph, op->args[0]);
}

bool IsZero(const ir::Graph& graph, const ir::Argument& arg) {
  if (std::optional<double> number = NumberOf(graph, arg)) return *number == 0.0;
  const ir::OpNode* op = OpAt(graph, arg);
  if (op == nullptr || (op->op != "aten.full_like.default" && op->op != "aten.zeros_like.default")) return false;
  if (op->op == "aten.zeros_like.default") return true;
  std::optional<double> fill = op->args.size() > 1 ? NumberOf(graph, op->args[1]) : std::nullopt;
  return fill && *fill == 0.0;
}

bool IsMinusInf(const ir::Graph& graph, const ir::Argument& arg) {
  std::optional<double> number = NumberOf(graph, arg);
  return number && *number == kMinusInf;
}

// Ops that return their input's values unchanged: copies, aliases, and an expand or view to the
// input's own shape.
bool PreservesValues(const ir::Graph& graph, const ir::OpNode& op) {
  static const char* const kCopies[] = {"aten.clone.default", "aten.alias.default", "aten.detach.default",
                                        "aten.contiguous.default", "aten.lift_fresh_copy.default"};
  if (op.args.empty() || !op.args[0].Is<NodeRef>() || op.num_outputs() != 1) return false;
  if (std::find(std::begin(kCopies), std::end(kCopies), op.op) != std::end(kCopies)) return true;
  const ir::TensorType& input = *graph.TypeOf(op.args[0].As<NodeRef>());
  bool same = input.shape == op.type().shape && input.dtype == op.type().dtype;
  return same && (op.op == "aten.expand.default" || op.op == "aten.view.default" || op.op == "aten._unsafe_view.default" ||
                  op.op == "aten.reshape.default" || op.op == "aten._to_copy.default");
}

// Whether `merged` is `split` [B, H, ...] with B and H merged, as the bmms see per-head tensors.
bool MergedBatch(const ir::Shape& split, const ir::Shape& merged) {
  return split.size() == 4 && merged.size() == 3 && split[0] * split[1] == merged[0] &&
         std::equal(split.begin() + 2, split.end(), merged.begin() + 1);
}

bool IsReshape(const ir::OpNode& op) {
  return op.op == "aten.view.default" || op.op == "aten._unsafe_view.default" || op.op == "aten.reshape.default";
}

// A view of [B, H, ...] as [B * H, ...] (a bmm's operand).
bool MergesBatchDims(const ir::Graph& graph, const ir::OpNode& op) {
  return IsReshape(op) && MergedBatch(graph.TypeOf(op.args.at(0).As<NodeRef>())->shape, op.type().shape);
}

// A view of [B * H, ...] as [B, H, ...] (a bmm's result).
bool SplitsBatchDims(const ir::Graph& graph, const ir::OpNode& op) {
  return IsReshape(op) && MergedBatch(op.type().shape, graph.TypeOf(op.args.at(0).As<NodeRef>())->shape);
}

// A scalar multiple: mul(x, c), mul(c, x) or div(x, c) with a number c; the tensor and the factor.
std::optional<std::pair<NodeRef, double>> ScalarMultiple(const ir::Graph& graph, const ir::OpNode& op) {
  if (op.args.size() != 2) return std::nullopt;
  bool mul = op.op == "aten.mul.Tensor" || op.op == "aten.mul.Scalar";
  bool div = op.op == "aten.div.Tensor" || op.op == "aten.div.Scalar";
  if (!mul && !div) return std::nullopt;
  for (int side : {0, 1}) {
    if (div && side == 1) break;
    std::optional<double> factor = NumberOf(graph, op.args[1 - side]);
    if (factor && op.args[side].Is<NodeRef>() && std::isfinite(*factor) && *factor != 0.0) {
      return std::make_pair(op.args[side].As<NodeRef>(), div ? 1.0 / *factor : *factor);
    }
  }
  return std::nullopt;
}

// One additive term of the scores before the softmax: a tensor, or a -inf fill where `tensor`
// (a mask) is `fill_when`.
struct ScoreTerm {
  NodeRef tensor;
  bool fill = false;
  bool fill_when = true;
};

// A recognized attention ending at a bmm (`anchor`), in the source graph's references.
struct Match {
  NodeRef q, k, v;
  bool k_transposed = true;  // false: `k` is k^T [..., D, Tk] and needs a permute
  double scale = 1.0;    // applied to the scores
  double q_scale = 1.0;  // applied to the operands (q's and k's multiples, on q)
  std::vector<ScoreTerm> terms;
  std::optional<int64_t> causal;
  bool zero_empty_rows = false;
  ir::Shape scores;  // [..., Tq, Tk]
  ir::Shape shape;   // the output [..., Tq, Dv]
};

// Finds the attention subgraph that ends at a bmm, walking its operands backwards.
class Matcher {
 public:
  explicit Matcher(const ir::Graph& graph) : graph_(graph) {}

  std::optional<Match> At(const ir::OpNode& bmm) {
    if (bmm.op != "aten.bmm.default" || bmm.args.size() != 2 || bmm.type().dtype != ir::DType::kFloat32) return std::nullopt;
    Match match;
    NodeRef probs = Strip(bmm.args[0].As<NodeRef>(), nullptr);
    match.v = Strip(bmm.args[1].As<NodeRef>(), nullptr);
    if (std::optional<NodeRef> softmax = EmptyRowFixup(probs)) {
      match.zero_empty_rows = true;
      probs = *softmax;
    }
    const ir::OpNode* softmax = OpAt(graph_, probs);
    if (softmax == nullptr || !IsLastDimSoftmax(*softmax)) return std::nullopt;
    NodeRef scores = softmax->args[0].As<NodeRef>();
    match.scores = graph_.TypeOf(scores)->shape;
    std::vector<ScoreTerm> terms;
    const ir::OpNode* product = nullptr;
    if (!Scores(scores, 1.0, match, terms, product)) return std::nullopt;
    match.terms.assign(terms.rbegin(), terms.rend());
    match.q = Strip(product->args[0].As<NodeRef>(), &match.q_scale);
    match.k = Strip(product->args[1].As<NodeRef>(), &match.q_scale);
    if (std::optional<NodeRef> k = Untransposed(match.k)) {
      match.k = Strip(*k, &match.q_scale);
    } else {
      match.k_transposed = false;
    }
    match.shape = graph_.TypeOf(match.q)->shape;
    match.shape.back() = graph_.TypeOf(match.v)->shape.back();
    if (!Consistent(match)) return std::nullopt;
    FindCausal(match);
    return match;
  }

 private:
  // `ref` without the ops that only copy, alias or merge [B, H] for the bmm; with `scale`, also
  // without scalar multiples (SDPA scales q and k^T by sqrt(scale) each), folded into it.
  NodeRef Strip(NodeRef ref, double* scale) {
    for (;;) {
      const ir::OpNode* op = OpAt(graph_, ref);
      if (op == nullptr) return ref;
      if (PreservesValues(graph_, *op) || MergesBatchDims(graph_, *op)) {
        ref = op->args[0].As<NodeRef>();
        continue;
      }
      std::optional<std::pair<NodeRef, double>> multiple = scale ? ScalarMultiple(graph_, *op) : std::nullopt;
      if (!multiple) return ref;
      *scale *= multiple->second;
      ref = multiple->first;
    }
  }

  bool IsLastDimSoftmax(const ir::OpNode& op) const {
    if (op.op != "aten._softmax.default" || op.type().dtype != ir::DType::kFloat32 || op.args.size() < 2) return false;
    auto dims = ReducedDims(&op.args[1], op.type().rank());
    const ir::Argument* half = op.FindArgument({2, "half_to_float"});
    bool half_to_float = half != nullptr && half->Is<bool>() && half->As<bool>();
    return !half_to_float && dims && *dims == std::vector<int64_t>{op.type().rank() - 1};
  }

  // SDPA's fix-up of rows with every score -inf: where(all masked, 0, softmax), the condition
  // being logical_not(any(logical_not(eq(scores, -inf)), -1, keepdim)). The softmax, or nullopt.
  std::optional<NodeRef> EmptyRowFixup(NodeRef ref) const {
    const ir::OpNode* where = OpAt(graph_, ref);
    if (where == nullptr || where->op != "aten.where.self" || where->args.size() != 3 || !IsZero(graph_, where->args[1])) {
      return std::nullopt;
    }
    const ir::OpNode* softmax = OpAt(graph_, where->args[2]);
    const ir::OpNode* none_kept = OpAt(graph_, where->args[0]);
    const ir::OpNode* any = none_kept && none_kept->op == "aten.logical_not.default" ? OpAt(graph_, none_kept->args[0]) : nullptr;
    const ir::OpNode* kept = any && any->op == "aten.any.dim" ? OpAt(graph_, any->args[0]) : nullptr;
    const ir::OpNode* masked = kept && kept->op == "aten.logical_not.default" ? OpAt(graph_, kept->args[0]) : nullptr;
    if (softmax == nullptr || masked == nullptr || masked->op != "aten.eq.Scalar" || !IsMinusInf(graph_, masked->args.at(1)) ||
        !IsLastDimSoftmax(*softmax) || !(masked->args[0] == softmax->args[0])) {
      return std::nullopt;
    }
    auto dims = ReducedDims(&any->args.at(1), any->type().rank());
    if (!dims || *dims != std::vector<int64_t>{any->type().rank() - 1}) return std::nullopt;
    return where->args[2].As<NodeRef>();
  }

  // Walks the scores back from the softmax to the bmm q @ k^T, collecting the additive terms
  // (last applied first) and the scale. `after` is the product of the scales applied after this
  // point: an additive term under a scale would be scaled too, a -inf fill only under a positive one.
  bool Scores(NodeRef ref, double after, Match& match, std::vector<ScoreTerm>& terms, const ir::OpNode*& product) {
    const ir::OpNode* op = OpAt(graph_, ref);
    if (op == nullptr) return false;
    if (op->op == "aten.bmm.default") {
      product = op;
      return op->type().dtype == ir::DType::kFloat32;
    }
    if (PreservesValues(graph_, *op) || SplitsBatchDims(graph_, *op)) {
      return Scores(op->args[0].As<NodeRef>(), after, match, terms, product);
    }
    if (auto multiple = ScalarMultiple(graph_, *op)) {
      match.scale *= multiple->second;
      return Scores(multiple->first, after * multiple->second, match, terms, product);
    }
    if (op->op == "aten.add.Tensor" && op->args.size() == 2 && op->FindArgument({2, "alpha"}) == nullptr && after == 1.0) {
      for (int side : {0, 1}) {
        if (!op->args[0].Is<NodeRef>() || !op->args[1].Is<NodeRef>()) break;
        const size_t before = terms.size();
        const double scale = match.scale;
        terms.push_back(ScoreTerm{op->args[1 - side].As<NodeRef>()});
        if (Scores(op->args[side].As<NodeRef>(), after, match, terms, product)) return true;
        terms.resize(before);
        match.scale = scale;
      }
      return false;
    }
    if (after <= 0.0) return false;
    if (op->op == "aten.where.self" && op->args.size() == 3 && op->args[0].Is<NodeRef>()) {
      for (int side : {1, 2}) {
        if (!IsMinusInf(graph_, op->args[side]) || !op->args[3 - side].Is<NodeRef>()) continue;
        terms.push_back(ScoreTerm{op->args[0].As<NodeRef>(), true, side == 1});
        return Scores(op->args[3 - side].As<NodeRef>(), after, match, terms, product);
      }
      return false;
    }
    if (op->op == "aten.masked_fill.Scalar" && op->args.size() == 3 && IsMinusInf(graph_, op->args[2])) {
      terms.push_back(ScoreTerm{op->args[1].As<NodeRef>(), true, true});
      return Scores(op->args[0].As<NodeRef>(), after, match, terms, product);
    }
    return false;
  }

  // x when `ref` is x with its last two dims swapped.
  std::optional<NodeRef> Untransposed(NodeRef ref) const {
    const ir::OpNode* op = OpAt(graph_, ref);
    if (op == nullptr || op->args.size() < 2) return std::nullopt;
    const int64_t rank = op->type().rank();
    ir::IntList swapped;
    if (op->op == "aten.permute.default" && op->args[1].Is<ir::IntList>()) {
      swapped = op->args[1].As<ir::IntList>();
      for (int64_t& d : swapped) d = d < 0 ? d + rank : d;
    } else if (op->op == "aten.transpose.int" && op->args.size() == 3 && op->args[1].Is<int64_t>() && op->args[2].Is<int64_t>()) {
      for (int64_t d = 0; d < rank; ++d) swapped.push_back(d);
      auto norm = [rank](int64_t d) { return d < 0 ? d + rank : d; };
      std::swap(swapped[norm(op->args[1].As<int64_t>())], swapped[norm(op->args[2].As<int64_t>())]);
    } else {
      return std::nullopt;
    }
    for (int64_t d = 0; d < rank; ++d) {
      int64_t want = d == rank - 2 ? rank - 1 : d == rank - 1 ? rank - 2 : d;
      if (swapped.size() != static_cast<size_t>(rank) || swapped[d] != want) return std::nullopt;
    }
    return op->args[0].As<NodeRef>();
  }

  // The shapes agree: q [..., Tq, D], k [..., Tk, D] (or k^T), v [..., Tk, Dv], scores
  // [..., Tq, Tk], fp32, head dims the kernel holds, terms that broadcast to the scores.
  bool Consistent(const Match& match) const {
    const ir::Shape &q = graph_.TypeOf(match.q)->shape, &v = graph_.TypeOf(match.v)->shape;
    ir::Shape k = graph_.TypeOf(match.k)->shape;
    if (q.size() < 3 || q.size() > 4 || k.size() != q.size() || v.size() != q.size() || match.scores.size() != q.size()) return false;
    if (!match.k_transposed) std::swap(k[k.size() - 1], k[k.size() - 2]);
    const size_t r = q.size() - 2;
    ir::Shape batch(q.begin(), q.begin() + r);
    for (const ir::Shape* shape : std::vector<const ir::Shape*>{&k, &v, &match.scores}) {
      if (!std::equal(batch.begin(), batch.end(), shape->begin())) return false;
    }
    if (k[r + 1] != q[r + 1] || v[r] != k[r] || match.scores[r] != q[r] || match.scores[r + 1] != k[r]) return false;
    if (q[r + 1] > kMaxHeadDim || v[r + 1] > kMaxHeadDim || q[r] == 0 || k[r] == 0) return false;
    for (NodeRef ref : {match.q, match.k, match.v}) {
      if (!IsFloat32(graph_, ref)) return false;
    }
    for (const ScoreTerm& term : match.terms) {
      const ir::TensorType& type = *graph_.TypeOf(term.tensor);
      if (!BroadcastsTo(type.shape, match.scores)) return false;
      if (term.fill ? type.dtype != ir::DType::kBool : type.dtype != ir::DType::kFloat32) return false;
    }
    return true;
  }

  // The band of key j a term keeps for query i when it is a causal mask: a -inf fill where the
  // mask is `fill_when`, or an additive where(mask, 0, -inf) (SDPA's causal and boolean masks).
  std::optional<CausalBand> KeptBand(const ScoreTerm& term) const {
    NodeRef mask = term.tensor;
    bool masked_when = term.fill_when;
    if (!term.fill) {
      const ir::OpNode* where = OpAt(graph_, term.tensor);
      if (where == nullptr || where->op != "aten.where.self" || where->args.size() != 3 || !where->args[0].Is<NodeRef>()) {
        return std::nullopt;
      }
      bool keep_true = IsZero(graph_, where->args[1]) && IsMinusInf(graph_, where->args[2]);
      bool keep_false = IsMinusInf(graph_, where->args[1]) && IsZero(graph_, where->args[2]);
      if (!keep_true && !keep_false) return std::nullopt;
      mask = where->args[0].As<NodeRef>();
      masked_when = keep_false;
    }
    std::optional<CausalBand> band = FindCausalBand(graph_, mask);
    if (!band) return std::nullopt;
    return masked_when ? CausalBand{band->offset, !band->lower} : *band;
  }

  // Moves the terms that keep a lower band into `causal` (their intersection).
  void FindCausal(Match& match) const {
    std::vector<ScoreTerm> kept;
    for (const ScoreTerm& term : match.terms) {
      std::optional<CausalBand> band = KeptBand(term);
      if (band && band->lower) {
        match.causal = match.causal ? std::min(*match.causal, band->offset) : band->offset;
      } else {
        kept.push_back(term);
      }
    }
    match.terms = std::move(kept);
  }

  const ir::Graph& graph_;
};

// PyTorch's fused attention, as a capture on a GPU records F.scaled_dot_product_attention: the
// op, where its attn_bias, dropout_p and is_causal arguments sit (-1: none), its q, k, v
// [B, H, T, D] not transposed.
struct FusedForm {
  const char* op;
  int bias, dropout, causal;
};
constexpr FusedForm kFusedForms[] = {
    {"aten._scaled_dot_product_efficient_attention.default", 3, 5, 6},
    {"aten._scaled_dot_product_flash_attention.default", -1, 3, 4},
    {"aten._scaled_dot_product_cudnn_attention.default", 3, 5, 6},
};

// A fused attention this pass can replace: fp32, no dropout, nothing reading its other outputs
// (log-sum-exp, RNG state), a head dim the kernel holds.
struct Fused {
  NodeRef q, k, v;
  std::optional<NodeRef> bias;
  double scale = 1.0;
  std::optional<int64_t> causal;
};

bool ReadsOnlyFirstOutput(const ir::Graph& graph, ir::ValueId id) {
  for (const NodeRef& out : graph.LiveOuts()) {
    if (out.value == id && out.output != 0) return false;
  }
  for (const ir::Value& value : graph) {
    for (const NodeRef& ref : TensorInputs(value)) {
      if (ref.value == id && ref.output != 0) return false;
    }
  }
  return true;
}

std::optional<Fused> ReadFused(const ir::Graph& graph, const ir::OpNode& node) {
  const FusedForm* form = nullptr;
  for (const FusedForm& candidate : kFusedForms) {
    if (node.op == candidate.op) form = &candidate;
  }
  if (form == nullptr || node.args.size() < 3) return std::nullopt;
  auto arg = [&node](int index) -> const ir::Argument* {
    return index >= 0 && static_cast<size_t>(index) < node.args.size() ? &node.args[index] : nullptr;
  };
  Fused fused;
  for (int i = 0; i < 3; ++i) {
    if (!node.args[i].Is<NodeRef>() || !IsFloat32(graph, node.args[i].As<NodeRef>())) return std::nullopt;
  }
  fused.q = node.args[0].As<NodeRef>();
  fused.k = node.args[1].As<NodeRef>();
  fused.v = node.args[2].As<NodeRef>();
  if (const ir::Argument* bias = arg(form->bias); bias != nullptr && bias->Is<NodeRef>()) {
    if (!IsFloat32(graph, bias->As<NodeRef>())) return std::nullopt;
    fused.bias = bias->As<NodeRef>();
  }
  if (const ir::Argument* dropout = arg(form->dropout); dropout != nullptr && !IsZero(graph, *dropout)) return std::nullopt;
  if (const ir::Argument* causal = arg(form->causal); causal != nullptr && causal->Is<bool>() && causal->As<bool>()) {
    fused.causal = 0;  // top-left aligned, as SDPA's is_causal
  }
  const ir::Shape& q = graph.TypeOf(fused.q)->shape;
  if (q.size() != 4 || q[3] > kMaxHeadDim || !ReadsOnlyFirstOutput(graph, node.id)) return std::nullopt;
  fused.scale = 1.0 / std::sqrt(static_cast<double>(q[3]));
  if (const ir::Argument* scale = node.FindArgument({-1, "scale"}); scale != nullptr && !scale->Is<ir::NoneArg>()) {
    std::optional<double> number = NumberOf(graph, *scale);
    if (!number) return std::nullopt;
    fused.scale = *number;
  }
  return fused;
}

// Rewrites each matched bmm into the attention node and drops what only it needed.
class AttentionRewriter : public ir::GraphRewriter {
 public:
  explicit AttentionRewriter(const ir::Graph& graph) : graph_(graph) {
    Matcher matcher(graph);
    for (const ir::Value& value : graph) {
      const auto* op = value.TryAs<ir::OpNode>();
      if (op == nullptr) continue;
      if (std::optional<Match> match = matcher.At(*op)) matches_.emplace(value.id, std::move(*match));
    }
    FindDropped();
  }

 protected:
  Status RewriteOp(const ir::OpNode& node) override {
    if (dropped_[node.id]) return Status::Ok();
    if (auto match = matches_.find(node.id); match != matches_.end()) return EmitAttention(node, match->second);
    if (std::optional<Fused> fused = ReadFused(graph_, node)) return EmitFused(node, *fused);
    if (node.op == "aten.view.default" && !node.args.empty() && node.args[0].Is<NodeRef>()) {
      auto attention = attention_.find(node.args[0].As<NodeRef>().value);
      if (attention != attention_.end() && builder().TypeOf(attention->second)->shape == node.type().shape) {
        Replace(node, {attention->second});
        return Status::Ok();
      }
    }
    return CopyOp(node);
  }

 private:
  // The tensors each op reads, except that a matched bmm reads the attention's operands.
  std::vector<NodeRef> Reads(const ir::Value& value) const {
    auto match = matches_.find(value.id);
    if (match == matches_.end()) return TensorInputs(value);
    std::vector<NodeRef> reads = {match->second.q, match->second.k, match->second.v};
    for (const ScoreTerm& term : match->second.terms) reads.push_back(term.tensor);
    return reads;
  }

  // The ops feeding a matched bmm that nothing needs once it is the attention node (the softmax,
  // the first bmm, the copies, a causal mask): walking backwards from what the graph returns.
  void FindDropped() {
    const size_t n = static_cast<size_t>(graph_.size());
    std::vector<bool> live(n, false), feeds(n, false);
    for (const NodeRef& out : graph_.LiveOuts()) live[out.value] = true;
    for (const auto& [id, match] : matches_) feeds[id] = true;
    for (ir::ValueId id = graph_.size() - 1; id >= 0; --id) {
      const ir::Value& value = graph_.value(id);
      if (live[id]) {
        for (const NodeRef& ref : Reads(value)) live[ref.value] = true;
      }
      if (feeds[id]) {
        for (const NodeRef& ref : TensorInputs(value)) feeds[ref.value] = true;
      }
    }
    dropped_.assign(n, false);
    for (size_t id = 0; id < n; ++id) {
      dropped_[id] = feeds[id] && !live[id] && graph_.value(static_cast<ir::ValueId>(id)).kind == ir::ValueKind::kOp;
    }
  }

  // Whether anything reads the bmm's [B * H, Tq, Dv] result other than a view back to `shape`
  // (which becomes the attention node itself).
  bool ReadFlat(const ir::OpNode& bmm, const ir::Shape& shape) const {
    for (const NodeRef& out : graph_.LiveOuts()) {
      if (out.value == bmm.id) return true;
    }
    for (const ir::Value& value : graph_) {
      const auto* op = value.TryAs<ir::OpNode>();
      if (op == nullptr || dropped_[value.id]) continue;
      bool reads = false;
      for (const NodeRef& ref : TensorInputs(value)) reads = reads || ref.value == bmm.id;
      if (reads && !(op->op == "aten.view.default" && op->type().shape == shape)) return true;
    }
    return false;
  }

  Result<NodeRef> Add(const std::string& base, const char* op, std::vector<ir::Argument> args, ir::TensorType type,
                      std::vector<ir::NamedArgument> kwargs = {}) {
    ASSIGN_OR_RETURN(ir::ValueId id, builder().AddOp(builder().FreshName(base), op, std::move(args), std::move(kwargs), {type}));
    return NodeRef{id, 0};
  }

  // k^T [..., D, Tk] viewed back as k [..., Tk, D].
  Result<NodeRef> Transposed(NodeRef kt) {
    const ir::TensorType& type = *builder().TypeOf(kt);
    const size_t r = type.shape.size();
    ir::IntList dims;
    for (size_t d = 0; d < r; ++d) dims.push_back(static_cast<int64_t>(d));
    std::swap(dims[r - 1], dims[r - 2]);
    ir::Shape shape = type.shape;
    std::vector<int64_t> stride = type.stride;
    std::swap(shape[r - 1], shape[r - 2]);
    std::swap(stride[r - 1], stride[r - 2]);
    ASSIGN_OR_RETURN(ir::TensorType key, ir::TensorType::Make(shape, type.dtype, stride));
    return Add("key", "aten.permute.default", {{kt}, {dims}}, key);
  }

  // The sum of the additive terms, each -inf fill as where(mask, -inf, 0); nullopt for none.
  Result<std::optional<NodeRef>> Bias(const Match& match) {
    std::optional<NodeRef> bias;
    for (const ScoreTerm& term : match.terms) {
      NodeRef value = Map(term.tensor);
      const ir::Shape& shape = builder().TypeOf(value)->shape;
      if (term.fill) {
        ir::Argument masked{kMinusInf}, kept{0.0};
        ASSIGN_OR_RETURN(ir::TensorType type, ir::TensorType::Contiguous(shape, ir::DType::kFloat32));
        ASSIGN_OR_RETURN(value, Add("score_mask", "aten.where.self",
                                    {{value}, term.fill_when ? masked : kept, term.fill_when ? kept : masked}, type));
      }
      if (bias) {
        ir::Shape sum = *ir::BroadcastShapes(builder().TypeOf(*bias)->shape, builder().TypeOf(value)->shape);
        ASSIGN_OR_RETURN(ir::TensorType type, ir::TensorType::Contiguous(sum, ir::DType::kFloat32));
        ASSIGN_OR_RETURN(value, Add("score_bias", "aten.add.Tensor", {{*bias}, {value}}, type));
      }
      bias = value;
    }
    return bias;
  }

  Status EmitAttention(const ir::OpNode& bmm, const Match& match) {
    NodeRef k = Map(match.k);
    if (!match.k_transposed) {
      ASSIGN_OR_RETURN(k, Transposed(k));
    }
    ASSIGN_OR_RETURN(std::optional<NodeRef> bias, Bias(match));
    AttentionAttributes attributes{
        .scale = match.scale, .q_scale = match.q_scale, .causal = match.causal, .zero_empty_rows = match.zero_empty_rows};
    ASSIGN_OR_RETURN(NodeRef attention, AddAttention(Map(match.q), k, Map(match.v), bias, attributes, match.shape));
    attention_[bmm.id] = attention;
    if (match.shape == bmm.type().shape || !ReadFlat(bmm, match.shape)) {
      Replace(bmm, {attention});
      return Status::Ok();
    }
    // The bmm's own [B * H, Tq, Dv], for readers other than the view back to [B, H, Tq, Dv].
    ASSIGN_OR_RETURN(NodeRef flat, Add(bmm.name, "aten.view.default", {{attention}, {ir::IntList(bmm.type().shape)}},
                                       bmm.type()));
    Replace(bmm, {flat});
    return Status::Ok();
  }

  // A fused attention op as the attention node (its first output; nothing reads the others).
  Status EmitFused(const ir::OpNode& node, const Fused& fused) {
    ir::Shape shape = graph_.TypeOf(fused.q)->shape;
    shape.back() = graph_.TypeOf(fused.v)->shape.back();
    std::optional<NodeRef> bias;
    if (fused.bias) bias = Map(*fused.bias);
    AttentionAttributes attributes{.scale = fused.scale, .causal = fused.causal, .zero_empty_rows = true};
    ASSIGN_OR_RETURN(NodeRef attention, AddAttention(Map(fused.q), Map(fused.k), Map(fused.v), bias, attributes, shape));
    Replace(node, {attention});
    return Status::Ok();
  }

  // The kforge.attention node over q, k [..., Tk, D], v and an optional bias, its output `shape`.
  Result<NodeRef> AddAttention(NodeRef q, NodeRef k, NodeRef v, std::optional<NodeRef> bias,
                               const AttentionAttributes& attributes, const ir::Shape& shape) {
    ASSIGN_OR_RETURN(ir::TensorType type, ir::TensorType::Contiguous(shape, ir::DType::kFloat32));
    ir::Argument bias_arg = bias ? ir::Argument{*bias} : ir::Argument{ir::NoneArg{}};
    return Add("attention", ir::kAttentionOp, {{q}, {k}, {v}, bias_arg}, type, attributes.ToKwargs());
  }

  const ir::Graph& graph_;
  std::map<ir::ValueId, Match> matches_;        // by the bmm that ends each
  std::map<ir::ValueId, NodeRef> attention_;  // by the source bmm: its attention node
  std::vector<bool> dropped_;
};

}  // namespace

std::vector<ir::NamedArgument> AttentionAttributes::ToKwargs() const {
  std::vector<ir::NamedArgument> kwargs = {{"scale", ir::Argument{scale}}};
  if (q_scale != 1.0) kwargs.push_back({"q_scale", ir::Argument{q_scale}});
  kwargs.push_back({"causal", causal ? ir::Argument{*causal} : ir::Argument{ir::NoneArg{}}});
  kwargs.push_back({"empty_rows", ir::Argument{std::string(zero_empty_rows ? "zero" : "nan")}});
  return kwargs;
}

AttentionAttributes AttentionAttributes::Of(const ir::OpNode& node) {
  AttentionAttributes attributes;
  if (const ir::Argument* scale = node.FindArgument({-1, "scale"}); scale != nullptr && scale->Is<double>()) {
    attributes.scale = scale->As<double>();
  }
  if (const ir::Argument* q_scale = node.FindArgument({-1, "q_scale"}); q_scale != nullptr && q_scale->Is<double>()) {
    attributes.q_scale = q_scale->As<double>();
  }
  if (const ir::Argument* causal = node.FindArgument({-1, "causal"}); causal != nullptr && causal->Is<int64_t>()) {
    attributes.causal = causal->As<int64_t>();
  }
  const ir::Argument* empty_rows = node.FindArgument({-1, "empty_rows"});
  attributes.zero_empty_rows = empty_rows != nullptr && empty_rows->Is<std::string>() && empty_rows->As<std::string>() == "zero";
  return attributes;
}

Result<ir::Graph> FuseAttention(const ir::Graph& graph) {
  AttentionRewriter rewriter(graph);
  return rewriter.Rewrite(graph);
}

}  // namespace kforge::passes
