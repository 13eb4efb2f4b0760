#include "compiler/passes/causal_mask.h"

#include <cstdlib>
#include <string>

#include "compiler/passes/fusion_rules.h"

namespace kforge::passes {
namespace {

// An integer tensor's value at (i, j) of the score plane: ci * i + cj * j + c.
struct Affine {
  int64_t ci = 0, cj = 0, c = 0;
};

std::optional<int64_t> IntArg(const ir::OpNode& op, ir::ArgSlot slot, std::optional<int64_t> fallback) {
  const ir::Argument* arg = op.FindArgument(slot);
  if (arg == nullptr) return fallback;
  if (const auto* i = arg->TryAs<int64_t>()) return *i;
  return std::nullopt;
}

std::optional<Affine> AffineOf(const ir::Graph& graph, const ir::Argument& arg);

// arange(end), arange(start, end), arange(start, end, step): 1-D, so it varies along the last dim.
std::optional<Affine> Arange(const ir::OpNode& op) {
  bool with_start = op.op != "aten.arange.default";
  std::optional<int64_t> start = with_start ? IntArg(op, {0, "start"}, std::nullopt) : 0;
  std::optional<int64_t> step = IntArg(op, {2, "step"}, 1);
  if (!start || !step) return std::nullopt;
  // A single element broadcasts: the same value at every key.
  if (op.type().shape[0] == 1) return Affine{0, 0, *start};
  return Affine{0, *step, *start};
}

// unsqueeze(x, dim): a new dim after the last moves x's last dim to the query position; one
// before the last moves x's query dim out of the plane, which must then not vary.
std::optional<Affine> Unsqueeze(const ir::Graph& graph, const ir::OpNode& op) {
  std::optional<Affine> x = AffineOf(graph, op.args.at(0));
  std::optional<int64_t> dim = IntArg(op, {1, "dim"}, std::nullopt);
  if (!x || !dim) return std::nullopt;
  const int64_t rank = op.type().rank();
  const int64_t at = *dim < 0 ? *dim + rank : *dim;
  if (at == rank - 1) return x->ci == 0 ? std::optional<Affine>(Affine{x->cj, 0, x->c}) : std::nullopt;
  if (at == rank - 2) return x->ci == 0 ? x : std::nullopt;
  return x;
}

std::optional<Affine> Combine(const ir::Graph& graph, const ir::OpNode& op, int64_t sign) {
  std::optional<Affine> a = AffineOf(graph, op.args.at(0)), b = AffineOf(graph, op.args.at(1));
  std::optional<int64_t> alpha = IntArg(op, {2, "alpha"}, 1);
  if (!a || !b || !alpha) return std::nullopt;
  const int64_t k = sign * *alpha;
  return Affine{a->ci + k * b->ci, a->cj + k * b->cj, a->c + k * b->c};
}

// An integer number, or an integer tensor computed from aranges by adds, subtractions and
// broadcasting views.
std::optional<Affine> AffineOf(const ir::Graph& graph, const ir::Argument& arg) {
  if (const auto* number = arg.TryAs<int64_t>()) return Affine{0, 0, *number};
  const auto* ref = arg.TryAs<ir::NodeRef>();
  const ir::OpNode* op = ref ? OpAt(graph, *ref) : nullptr;
  if (op == nullptr || ir::IsFloatingPoint(op->type().dtype) || op->type().dtype == ir::DType::kBool) return std::nullopt;
  const std::string& name = op->op;
  if (name.rfind("aten.arange.", 0) == 0 && op->type().rank() == 1) return Arange(*op);
  if (name == "aten.unsqueeze.default") return Unsqueeze(graph, *op);
  if (name == "aten.expand.default" || name == "aten.clone.default" || name == "aten.alias.default") {
    return AffineOf(graph, op->args.at(0));
  }
  if (name == "aten.add.Tensor" || name == "aten.add.Scalar") return Combine(graph, *op, 1);
  if (name == "aten.sub.Tensor" || name == "aten.sub.Scalar") return Combine(graph, *op, -1);
  if (name == "aten.neg.default") {
    std::optional<Affine> x = AffineOf(graph, op->args.at(0));
    return x ? std::optional<Affine>(Affine{-x->ci, -x->cj, -x->c}) : std::nullopt;
  }
  return std::nullopt;
}

// `lhs OP rhs` normalized to a * (j - i) + c <= 0 with a = +-1, as a band.
std::optional<CausalBand> Comparison(const ir::Graph& graph, const ir::OpNode& op, const std::string& kind) {
  std::optional<Affine> lhs = AffineOf(graph, op.args.at(0)), rhs = AffineOf(graph, op.args.at(1));
  if (!lhs || !rhs) return std::nullopt;
  Affine d{lhs->ci - rhs->ci, lhs->cj - rhs->cj, lhs->c - rhs->c};
  if (kind == "lt") d.c += 1;  // x < 0  <=>  x + 1 <= 0 on integers
  if (kind == "ge" || kind == "gt") {
    d = Affine{-d.ci, -d.cj, -d.c};  // x >= 0  <=>  -x <= 0
    if (kind == "gt") d.c += 1;      // x > 0  <=>  -x + 1 <= 0
  }
  if (std::abs(d.cj) != 1 || d.ci != -d.cj) return std::nullopt;
  // j - i + c <= 0 is j - i <= -c; -(j - i) + c <= 0 is j - i >= c, the complement of j - i <= c - 1.
  if (d.cj == 1) return CausalBand{-d.c, true};
  return CausalBand{d.c - 1, false};
}

bool AllTrue(const ir::Graph& graph, const ir::Argument& arg) {
  const auto* ref = arg.TryAs<ir::NodeRef>();
  const ir::OpNode* op = ref ? OpAt(graph, *ref) : nullptr;
  if (op == nullptr || op->op != "aten.full.default" || op->type().dtype != ir::DType::kBool) return false;
  const ir::Argument* fill = op->FindArgument({1, "fill_value"});
  const auto* value = fill ? fill->TryAs<bool>() : nullptr;
  return value != nullptr && *value;
}

}  // namespace

std::optional<CausalBand> FindCausalBand(const ir::Graph& graph, ir::NodeRef mask) {
  const ir::OpNode* op = OpAt(graph, mask);
  if (op == nullptr || op->type().dtype != ir::DType::kBool || op->args.empty()) return std::nullopt;
  const std::string& name = op->op;
  if (name == "aten.logical_not.default") {
    std::optional<CausalBand> band = FindCausalBand(graph, op->args[0].As<ir::NodeRef>());
    return band ? std::optional<CausalBand>(CausalBand{band->offset, !band->lower}) : std::nullopt;
  }
  if (name == "aten.logical_and.default" && op->args.size() == 2) {
    for (int side : {0, 1}) {
      if (AllTrue(graph, op->args[1 - side]) && op->args[side].Is<ir::NodeRef>()) {
        return FindCausalBand(graph, op->args[side].As<ir::NodeRef>());
      }
    }
    return std::nullopt;
  }
  if (name == "aten.expand.default" || name == "aten.clone.default") return FindCausalBand(graph, op->args[0].As<ir::NodeRef>());
  for (const char* kind : {"le", "lt", "ge", "gt"}) {
    if ((name == "aten." + std::string(kind) + ".Tensor" || name == "aten." + std::string(kind) + ".Scalar") &&
        op->args.size() == 2) {
      return Comparison(graph, *op, kind);
    }
  }
  return std::nullopt;
}

}  // namespace kforge::passes
