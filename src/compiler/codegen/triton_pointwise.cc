#include "compiler/codegen/triton_pointwise.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "compiler/codegen/epilogue.h"
#include "compiler/codegen/python_names.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::codegen {
namespace {

bool IsInteger(ir::DType dtype) { return dtype == ir::DType::kInt64 || dtype == ir::DType::kInt32; }
bool Supported(ir::DType dtype) { return ir::IsFloatingPoint(dtype) || dtype == ir::DType::kBool || IsInteger(dtype); }

// The Triton type of a dtype, or nullptr.
const char* TritonType(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat32: return "tl.float32";
    case ir::DType::kFloat64: return "tl.float64";
    case ir::DType::kFloat16: return "tl.float16";
    case ir::DType::kBFloat16: return "tl.bfloat16";
    case ir::DType::kInt64: return "tl.int64";
    case ir::DType::kInt32: return "tl.int32";
    case ir::DType::kBool: return "tl.int1";
    default: return nullptr;
  }
}

// Ops whose integer result Triton computes exactly as torch does (no true division, no rounding).
bool IntegerSafe(const std::string& op) {
  static const char* const kOps[] = {"aten.arange.default", "aten.arange.start", "aten.arange.start_step",
                                     "aten.add.Tensor",     "aten.add.Scalar",   "aten.sub.Tensor",
                                     "aten.sub.Scalar",     "aten.mul.Tensor",   "aten.mul.Scalar",
                                     "aten.neg.default",    "aten.abs.default",  "aten.where.self",
                                     "aten.maximum.default", "aten.minimum.default", "aten._to_copy.default",
                                     "aten.clamp.default",  "aten.clamp_min.default", "aten.clamp_max.default",
                                     "aten.bitwise_not.default", "aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor",
                                     "aten.bitwise_xor.Tensor", "aten.fmod.Tensor", "aten.fmod.Scalar",
                                     "aten.remainder.Tensor", "aten.remainder.Scalar"};
  return std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
}

// Translates one op node into a Triton expression over already-named operands.
class ExprBuilder {
 public:
  ExprBuilder(const ir::Graph& graph, std::set<std::string>& helpers) : graph_(graph), helpers_(helpers) {}

  Result<std::string> Build(const ir::OpNode& op) {
    op_ = &op;
    error_.clear();
    std::string expr = Translate(op.op);
    if (!error_.empty()) return Status::InvalidArgument(fmt::format("%{}: {}", op.name, error_));
    if (expr.empty()) return Status::InvalidArgument(fmt::format("%{}: unsupported op {}", op.name, op.op));
    return expr;
  }

 private:
  // The operand at (position, keyword): a variable or a literal; records an error when absent.
  std::string Operand(int position, const char* name = "") {
    const ir::Argument* arg = op_->FindArgument(ir::ArgSlot{position, name});
    if (arg == nullptr) return Fail(fmt::format("missing argument {}", position));
    if (const auto* ref = arg->TryAs<ir::NodeRef>()) return VarName(graph_, *ref);
    // Integer operands keep integer literals: a float literal would promote them to fp32.
    if (const auto* i = arg->TryAs<int64_t>(); i != nullptr && IntegerOperands()) return std::to_string(*i);
    std::optional<double> scalar = AsNumber(*arg);
    if (!scalar) return Fail(fmt::format("argument {} is not a tensor or number", position));
    return FloatLiteral(*scalar);
  }
  // Whether the op computes on integers: an integer result, or an integer first tensor operand
  // (a comparison of labels).
  bool IntegerOperands() const {
    if (IsInteger(op_->type().dtype)) return true;
    const ir::Argument* first = op_->FindArgument(ir::ArgSlot{0, "self"});
    const auto* ref = first ? first->TryAs<ir::NodeRef>() : nullptr;
    const ir::TensorType* type = ref ? graph_.TypeOf(*ref) : nullptr;
    return type != nullptr && IsInteger(type->dtype);
  }
  // A scalar argument as a literal, `fallback` when absent, "" when None and `allow_none`; an
  // integer one of an integer op stays an integer literal (a clamp of index arithmetic).
  std::string Scalar(int position, const char* name, std::optional<double> fallback, bool allow_none = false) {
    const ir::Argument* arg = op_->FindArgument(ir::ArgSlot{position, name});
    if (const auto* i = arg ? arg->TryAs<int64_t>() : nullptr; i != nullptr && IntegerOperands()) return std::to_string(*i);
    if (arg == nullptr || arg->Is<ir::NoneArg>()) {
      if (arg != nullptr && allow_none) return "";
      if (fallback) return FloatLiteral(*fallback);
      return allow_none ? "" : Fail(fmt::format("missing scalar {}", name));
    }
    std::optional<double> value = AsNumber(*arg);
    return value ? FloatLiteral(*value) : Fail(fmt::format("{} is not a number", name));
  }
  std::string String(int position, const char* name, const char* fallback) {
    const ir::Argument* arg = op_->FindArgument(ir::ArgSlot{position, name});
    if (arg == nullptr) return fallback;
    const auto* text = arg->TryAs<std::string>();
    return text ? *text : Fail(fmt::format("{} is not a string", name));
  }
  static std::optional<double> AsNumber(const ir::Argument& arg) {
    if (const auto* i = arg.TryAs<int64_t>()) return static_cast<double>(*i);
    if (const auto* d = arg.TryAs<double>()) return *d;
    if (const auto* b = arg.TryAs<bool>()) return *b ? 1.0 : 0.0;
    return std::nullopt;
  }
  std::string Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return "0.0";
  }
  std::string Helper(const char* name, const std::string& arg) {
    helpers_.insert(name);
    return fmt::format("{}({})", name, arg);
  }
  // `a + alpha * b` for add/sub with an optional alpha.
  std::string WithAlpha(const char* sign) {
    std::string a = Operand(0, "self"), b = Operand(1, "other");
    std::string alpha = Scalar(2, "alpha", 1.0);
    if (alpha == "1.0") return fmt::format("{} {} {}", a, sign, b);
    return fmt::format("{} {} {} * {}", a, sign, alpha, b);
  }
  std::string Clamp(const std::string& x, const std::string& lo, const std::string& hi) {
    std::string expr = x;
    if (!lo.empty()) expr = fmt::format("tl.maximum({}, {})", expr, lo);
    if (!hi.empty()) expr = fmt::format("tl.minimum({}, {})", expr, hi);
    return expr;
  }
  std::string Pow(const std::string& a, double e) {
    if (e == 0.5) return fmt::format("tl.sqrt_rn({})", a);
    if (e == -0.5) return fmt::format("1.0 / tl.sqrt_rn({})", a);
    if (e == std::round(e) && std::abs(e) <= 4) {
      if (e == 0) return fmt::format("tl.full_like({}, 1.0)", a);
      std::string product = a;
      for (int i = 1; i < std::abs(e); ++i) product += " * " + a;
      return e > 0 ? fmt::format("({})", product) : fmt::format("1.0 / ({})", product);
    }
    if (e == std::round(e)) return Fail("pow with a large integer exponent");
    return fmt::format("tl.exp({} * tl.log({}))", FloatLiteral(e), a);  // NaN below 0, as in torch
  }

  // An integer literal for an int argument (arange's bounds), else the float literal.
  std::string Integer(int position, const char* name, int64_t fallback) {
    const ir::Argument* arg = op_->FindArgument(ir::ArgSlot{position, name});
    if (arg == nullptr) return std::to_string(fallback);
    if (const auto* i = arg->TryAs<int64_t>()) return std::to_string(*i);
    return Scalar(position, name, static_cast<double>(fallback));
  }

  std::string Translate(const std::string& name) {
    // arange: the value of element `offsets` of the 1-D iteration space.
    if (name == "aten.arange.default") return "offsets";
    if (name == "aten.arange.start") return fmt::format("({} + offsets)", Integer(0, "start", 0));
    if (name == "aten.arange.start_step") {
      return fmt::format("({} + offsets * {})", Integer(0, "start", 0), Integer(2, "step", 1));
    }
    auto unary = [&](const char* fn) { return fmt::format("{}({})", fn, Operand(0, "self")); };
    auto compare = [&](const char* sym) { return fmt::format("{} {} {}", Operand(0, "self"), sym, Operand(1, "other")); };
    if (name == "aten.relu.default") return fmt::format("tl.maximum({}, 0.0)", Operand(0, "self"));
    if (name == "aten.abs.default") return unary("tl.abs");
    if (name == "aten.neg.default") return "-" + Operand(0, "self");
    if (name == "aten.exp.default") return unary("tl.exp");
    if (name == "aten.log.default") return unary("tl.log");
    if (name == "aten.sqrt.default") return unary("tl.sqrt_rn");
    if (name == "aten.rsqrt.default") return "1.0 / " + unary("tl.sqrt_rn");
    if (name == "aten.reciprocal.default") return "1.0 / " + Operand(0, "self");
    if (name == "aten.erf.default") return unary("tl.erf");
    if (name == "aten.exp2.default") return unary("tl.exp2");
    if (name == "aten.log2.default") return unary("tl.log2");
    if (name == "aten.sin.default") return unary("tl.sin");
    if (name == "aten.cos.default") return unary("tl.cos");
    if (name == "aten.floor.default") return unary("tl.floor");
    if (name == "aten.ceil.default") return unary("tl.ceil");
    if (name == "aten.round.default") return Helper("_kf_round", Operand(0, "self"));
    if (name == "aten.trunc.default") return fmt::format("tl.where({0} < 0.0, tl.ceil({0}), tl.floor({0}))", Operand(0, "self"));
    if (name == "aten.isnan.default") return fmt::format("{0} != {0}", Operand(0, "self"));
    if (name == "aten.isinf.default") return fmt::format("tl.abs({}) == float('inf')", Operand(0, "self"));
    if (name == "aten.logical_not.default") return fmt::format("{} == 0", Operand(0, "self"));
    if (name == "aten.logical_and.default") return fmt::format("({} != 0) & ({} != 0)", Operand(0, "self"), Operand(1, "other"));
    if (name == "aten.logical_or.default") return fmt::format("({} != 0) | ({} != 0)", Operand(0, "self"), Operand(1, "other"));
    if (name == "aten.logical_xor.default") return fmt::format("({} != 0) != ({} != 0)", Operand(0, "self"), Operand(1, "other"));
    // Bitwise ops on booleans and integers (torch refuses them on floats).
    if (name == "aten.bitwise_not.default") {
      return op_->type().dtype == ir::DType::kBool ? fmt::format("{} == 0", Operand(0, "self")) : "~" + Operand(0, "self");
    }
    if (name == "aten.bitwise_and.Tensor") return fmt::format("{} & {}", Operand(0, "self"), Operand(1, "other"));
    if (name == "aten.bitwise_or.Tensor") return fmt::format("{} | {}", Operand(0, "self"), Operand(1, "other"));
    if (name == "aten.bitwise_xor.Tensor") return fmt::format("{} ^ {}", Operand(0, "self"), Operand(1, "other"));
    if (name == "aten.sign.default" || name == "aten.sgn.default") {
      std::string x = Operand(0, "self");
      return fmt::format("tl.where({0} > 0.0, 1.0, tl.where({0} < 0.0, -1.0, {0} * 0.0))", x);
    }
    if (name == "aten.mish.default") return fmt::format("{} * {}", Operand(0, "self"), Helper("_kf_tanh_softplus", Operand(0, "self")));
    if (name == "aten.sigmoid.default") return unary("tl.sigmoid");
    if (name == "aten.tanh.default") return Helper("_kf_tanh", Operand(0, "self"));
    if (name == "aten.log1p.default") return Helper("_kf_log1p", Operand(0, "self"));
    if (name == "aten.expm1.default") return Helper("_kf_expm1", Operand(0, "self"));
    if (name == "aten.silu.default") return fmt::format("{0} * tl.sigmoid({0})", Operand(0, "self"));
    if (name == "aten.gelu.default") {
      std::string x = Operand(0, "self");
      std::string approximate = String(1, "approximate", "none");
      if (approximate == "none") return fmt::format("0.5 * {0} * (1.0 + tl.erf({0} * 0.7071067811865476))", x);
      if (approximate == "tanh") {
        std::string inner = fmt::format("0.7978845608028654 * ({0} + 0.044715 * {0} * {0} * {0})", x);
        return fmt::format("0.5 * {} * (1.0 + {})", x, Helper("_kf_tanh", inner));
      }
      return Fail("gelu approximate=" + approximate);
    }
    if (name == "aten.leaky_relu.default") {
      std::string x = Operand(0, "self");
      return fmt::format("tl.where({0} > 0.0, {0}, {0} * {1})", x, Scalar(1, "negative_slope", 0.01));
    }
    if (name == "aten.elu.default") {
      std::string x = Operand(0, "self");
      std::string alpha = Scalar(1, "alpha", 1.0), scale = Scalar(2, "scale", 1.0);
      std::string input_scale = Scalar(3, "input_scale", 1.0);
      return fmt::format("tl.where({0} > 0.0, {0} * {2}, {1} * {2} * {3})", x, alpha, scale,
                         Helper("_kf_expm1", fmt::format("{} * {}", x, input_scale)));
    }
    if (name == "aten.softplus.default") {
      std::string x = Operand(0, "self");
      std::string beta = Scalar(1, "beta", 1.0), threshold = Scalar(2, "threshold", 20.0);
      return fmt::format("tl.where({0} * {1} > {2}, {0}, {3} / {1})", x, beta, threshold,
                         Helper("_kf_log1p", fmt::format("tl.exp({} * {})", x, beta)));
    }
    if (name == "aten.hardtanh.default") {
      return Clamp(Operand(0, "self"), Scalar(1, "min_val", -1.0), Scalar(2, "max_val", 1.0));
    }
    if (name == "aten.hardsigmoid.default") {
      return fmt::format("{} / 6.0", Clamp(Operand(0, "self") + " + 3.0", "0.0", "6.0"));
    }
    if (name == "aten.hardswish.default") {
      std::string x = Operand(0, "self");
      return fmt::format("{} * {} / 6.0", x, Clamp(x + " + 3.0", "0.0", "6.0"));
    }
    if (name == "aten.clamp.default") {
      return Clamp(Operand(0, "self"), Scalar(1, "min", std::nullopt, true), Scalar(2, "max", std::nullopt, true));
    }
    if (name == "aten.clamp.Tensor") {
      auto bound = [&](int position, const char* key) -> std::string {
        const ir::Argument* arg = op_->FindArgument(ir::ArgSlot{position, key});
        return arg == nullptr || arg->Is<ir::NoneArg>() ? "" : Operand(position, key);
      };
      return Clamp(Operand(0, "self"), bound(1, "min"), bound(2, "max"));
    }
    if (name == "aten.clamp_min.default") return Clamp(Operand(0, "self"), Scalar(1, "min", std::nullopt), "");
    if (name == "aten.clamp_max.default") return Clamp(Operand(0, "self"), "", Scalar(1, "max", std::nullopt));
    if (name == "aten.add.Tensor" || name == "aten.add.Scalar") return WithAlpha("+");
    if (name == "aten.sub.Tensor" || name == "aten.sub.Scalar") return WithAlpha("-");
    if (name == "aten.mul.Tensor" || name == "aten.mul.Scalar") return compare("*");
    if (name == "aten.div.Tensor" || name == "aten.div.Scalar") return compare("/");
    // Integers only: Triton's `%` truncates like C, as torch.fmod does (the dividend's sign);
    // remainder takes the divisor's sign. (A rolled index: (arange + shift) % size.)
    if (name == "aten.fmod.Tensor" || name == "aten.fmod.Scalar") {
      return IntegerOperands() ? compare("%") : Fail("fmod of floating values");
    }
    if (name == "aten.remainder.Tensor" || name == "aten.remainder.Scalar") {
      if (!IntegerOperands()) return Fail("remainder of floating values");
      const std::string b = Operand(1, "other");
      return fmt::format("(({0} % {1}) + {1}) % {1}", Operand(0, "self"), b);
    }
    if (name == "aten.pow.Tensor_Scalar") {
      const ir::Argument* e = op_->FindArgument(ir::ArgSlot{1, "exponent"});
      std::optional<double> exponent = e ? AsNumber(*e) : std::nullopt;
      return exponent ? Pow(Operand(0, "self"), *exponent) : Fail("pow exponent is not a number");
    }
    if (name == "aten.maximum.default") return fmt::format("tl.maximum({}, {})", Operand(0, "self"), Operand(1, "other"));
    if (name == "aten.minimum.default") return fmt::format("tl.minimum({}, {})", Operand(0, "self"), Operand(1, "other"));
    if (name == "aten._to_copy.default") {
      // A cast on the same device (dtype, device and layout are all the copy may name).
      for (const ir::NamedArgument& kwarg : op_->kwargs) {
        if (kwarg.name != "dtype" && kwarg.name != "device" && kwarg.name != "layout") return Fail("a copy with " + kwarg.name);
      }
      const char* type = TritonType(op_->type().dtype);
      return type ? fmt::format("{}.to({})", Operand(0, "self"), type) : Fail("a cast to an unsupported dtype");
    }
    if (name == "aten.where.self") {
      return fmt::format("tl.where({}, {}, {})", Operand(0, "condition"), Operand(1, "self"), Operand(2, "other"));
    }
    static const std::pair<const char*, const char*> kComparisons[] = {
        {"eq", "=="}, {"ne", "!="}, {"lt", "<"}, {"le", "<="}, {"gt", ">"}, {"ge", ">="}};
    for (const auto& [cmp, sym] : kComparisons) {
      if (name == fmt::format("aten.{}.Tensor", cmp) || name == fmt::format("aten.{}.Scalar", cmp)) return compare(sym);
    }
    return "";
  }

  const ir::Graph& graph_;
  std::set<std::string>& helpers_;
  const ir::OpNode* op_ = nullptr;
  std::string error_;
};

// An input is read at the flat output offset only when it has the output's shape and is contiguous.
// The dims of a dense tensor of `type` from outermost to innermost in memory (logical order for a
// contiguous one), or nullopt when its strides leave gaps or overlap.
std::optional<std::vector<size_t>> MemoryOrder(const ir::TensorType& type) {
  std::vector<size_t> order(type.shape.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return type.stride[a] > type.stride[b]; });
  int64_t expected = 1;
  for (size_t i = order.size(); i-- > 0;) {
    const size_t d = order[i];
    if (type.shape[d] != 1 && type.stride[d] != expected) return std::nullopt;
    expected *= type.shape[d];
  }
  return order;
}

// Whether a tensor of `type` is read or written at the flat offsets of an iteration over `shape`
// whose consecutive offsets step through memory with `flat` strides.
bool ReadsFlat(const ir::TensorType& type, const ir::Shape& shape, const std::vector<int64_t>& flat) {
  if (type.shape != shape) return false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != 1 && type.stride[d] != flat[d]) return false;
  }
  return true;
}

// Output elements per run over which a broadcast input keeps one value: the product of the
// innermost output dims it does not vary along; 1 when it varies along the innermost dim.
int64_t ConstantRun(const ir::TensorType& type, const ir::Shape& shape) {
  std::vector<int64_t> strides = ir::BroadcastStrides(type, shape);
  int64_t run = 1;
  for (size_t d = shape.size(); d-- > 0 && strides[d] == 0;) run *= shape[d];
  return run;
}

// Shortest such run worth a per-program load (a per-channel vector over an image's pixels).
constexpr int64_t kMinConstantRun = 256;

}  // namespace

std::string ComputeCast(ir::DType dtype) {
  return ir::IsFloatingPoint(dtype) && dtype != ir::DType::kFloat32 ? ".to(tl.float32)" : "";
}

Result<std::string> PointwiseExpression(const ir::Graph& graph, const ir::OpNode& op, std::set<std::string>& helpers) {
  if (!Supported(op.type().dtype) || (IsInteger(op.type().dtype) && !IntegerSafe(op.op))) {
    return Status::InvalidArgument(fmt::format("%{}: unsupported dtype {} for {}", op.name, ToString(op.type().dtype), op.op));
  }
  ExprBuilder exprs(graph, helpers);
  return exprs.Build(op);
}

namespace {

// A gather along one dim (fusion_rules.h) into `var`: element i reads x at i's index with the dims
// the index covers replaced by the index's value there (the output's dims unravelled as idx_*);
// out-of-range values (torch would raise) read 0 instead of memory outside x.
void EmitGatherLoad(SourceWriter& out, const ir::Graph& graph, const passes::GatherAlongDim& gather, const std::string& var) {
  const ir::TensorType &x = *graph.TypeOf(gather.x), &index = *graph.TypeOf(gather.index);
  const size_t covered = index.shape.size(), dim = static_cast<size_t>(gather.dim);
  std::vector<std::string> at_terms;
  for (size_t i = 0; i < covered; ++i) at_terms.push_back(Term(fmt::format("idx_{}", dim + i), index.stride[i]));
  out.Line(fmt::format("kf_at = tl.load({}_ptr + {}, mask=mask, other=0)", VarName(graph, gather.index), Sum(at_terms)));
  out.Line(fmt::format("kf_at = tl.where(kf_at < 0, kf_at + {0}, kf_at)", x.shape[dim]));
  std::vector<std::string> x_terms;
  for (size_t d = 0; d < dim; ++d) x_terms.push_back(Term(fmt::format("idx_{}", d), x.stride[d]));
  x_terms.push_back(Term("kf_at", x.stride[dim]));
  for (size_t d = dim + 1; d < x.shape.size(); ++d) x_terms.push_back(Term(fmt::format("idx_{}", d + covered - 1), x.stride[d]));
  out.Line(fmt::format("{} = tl.load({}_ptr + {}, mask=mask & (kf_at >= 0) & (kf_at < {}), other=0){}", var,
                       VarName(graph, gather.x), Sum(x_terms), x.shape[dim], ComputeCast(x.dtype)));
}

}  // namespace

Result<PointwiseKernel> EmitPointwiseKernel(const ir::Graph& graph, const passes::FusionGroup& group) {
  PointwiseKernel kernel;
  kernel.name = "fused_" + group.name;
  kernel.shape = graph.value(group.nodes.back()).type().shape;
  kernel.inputs = passes::GroupInputs(graph, group);
  kernel.outputs = passes::GroupOutputs(graph, group);
  const size_t rank = kernel.shape.size();
  // The flat offsets walk the first output's memory in order (coalesced stores), permuted when its
  // captured layout is (a computed value keeps the strides torch gave it): its dims from innermost.
  std::vector<size_t> order(rank);
  for (size_t d = 0; d < rank; ++d) order[d] = d;
  std::vector<int64_t> flat = ir::ContiguousStrides(kernel.shape);
  if (!kernel.outputs.empty()) {
    const ir::TensorType& first = *graph.TypeOf(kernel.outputs.front());
    if (first.shape == kernel.shape && !first.is_contiguous()) {
      if (std::optional<std::vector<size_t>> memory = MemoryOrder(first)) {
        order = *memory;
        flat = first.stride;
      }
    }
  }
  const bool permuted = flat != ir::ContiguousStrides(kernel.shape);
  kernel.uses_sizes = permuted;
  // A flip or a gather starts its group (fusion_plan.h): its value is loaded at computed positions
  // (reversed along the flipped dims, or at the index's values), and the ops after it compute on it.
  const auto& first_op = graph.value(group.nodes.front()).As<ir::OpNode>();
  const std::optional<passes::GatherAlongDim> gather = passes::GatherAlongOneDim(graph, first_op);
  const bool positioned = gather.has_value() || passes::IsFlip(first_op);
  std::set<size_t> flipped;
  if (passes::IsFlip(first_op)) {
    std::optional<std::vector<int64_t>> dims = passes::ReducedDims(&first_op.args[1], static_cast<int64_t>(rank));
    if (!dims || first_op.type().shape != kernel.shape) {
      return Status::InvalidArgument(fmt::format("%{}: a flip of another shape than its group's or with bad dims", first_op.name));
    }
    for (int64_t d : *dims) {
      if (kernel.shape[static_cast<size_t>(d)] > 1) flipped.insert(static_cast<size_t>(d));
    }
  }
  if (gather && first_op.type().shape != kernel.shape) {
    return Status::InvalidArgument(fmt::format("%{}: a gather of another shape than its group's", first_op.name));
  }
  kernel.uses_sizes = kernel.uses_sizes || positioned;
  // The inputs the ops after a positioned read take (those only it reads are loaded by it).
  std::set<int64_t> read_by_ops;
  for (size_t n = positioned ? 1 : 0; n < group.nodes.size(); ++n) {
    for (const ir::NodeRef& ref : passes::TensorInputs(graph.value(group.nodes[n]))) {
      read_by_ops.insert(static_cast<int64_t>(ref.value) * 64 + ref.output);
    }
  }
  std::vector<bool> loaded;
  for (const ir::NodeRef& ref : kernel.inputs) {
    const ir::TensorType& type = *graph.TypeOf(ref);
    if (!Supported(type.dtype)) {
      return Status::InvalidArgument(fmt::format("{}: unsupported dtype {}", ir::PrintRef(graph, ref), ToString(type.dtype)));
    }
    loaded.push_back(read_by_ops.count(static_cast<int64_t>(ref.value) * 64 + ref.output) > 0);
    kernel.strided.push_back(!ReadsFlat(type, kernel.shape, flat));
    kernel.uses_sizes = kernel.uses_sizes || kernel.strided.back();
  }
  for (const ir::NodeRef& ref : kernel.outputs) {
    kernel.uses_sizes = kernel.uses_sizes || !ReadsFlat(*graph.TypeOf(ref), kernel.shape, flat);
  }

  // The body first: it decides which helpers the kernel needs.
  SourceWriter body;
  for (size_t n = positioned ? 1 : 0; n < group.nodes.size(); ++n) {
    const auto& op = graph.value(group.nodes[n]).As<ir::OpNode>();
    Result<std::string> expr = PointwiseExpression(graph, op, kernel.helpers);
    if (!expr.ok()) return expr.status();
    body.Line(fmt::format("{} = {}", VarName(graph, op.ref()), *expr));
  }

  std::vector<std::string> params;
  for (const ir::NodeRef& ref : kernel.inputs) params.push_back(VarName(graph, ref) + "_ptr");
  for (const ir::NodeRef& ref : kernel.outputs) params.push_back(VarName(graph, ref) + "_ptr");
  params.push_back("numel");
  if (kernel.uses_sizes) {
    // Compile-time sizes (the model checks its input shapes): unravelling the flat index then
    // divides by constants, not by runtime values, which cost more than the memory traffic.
    for (size_t d = 0; d < rank; ++d) params.push_back(fmt::format("size_{}: tl.constexpr", d));
  }
  params.push_back("BLOCK_SIZE: tl.constexpr");

  SourceWriter out;
  out.Line("@triton.jit");
  out.Open(fmt::format("def {}({}):", kernel.name, fmt::join(params, ", ")));
  std::vector<std::string> computes;
  for (ir::ValueId id : group.nodes) computes.push_back(ir::PrintRef(graph, graph.value(id).ref()));
  out.Line(fmt::format("# Computes {} over {} elements.", fmt::join(computes, ", "), ir::ShapeToString(kernel.shape)));
  out.Line("pid = tl.program_id(0)");
  out.Line("offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)");
  out.Line("mask = offsets < numel");
  if (kernel.uses_sizes) {
    out.Line(permuted ? "# Unravel the flat offset (the first output's memory order) into the output's dims."
                      : "# Unravel the flat output index into the output's dims.");
    out.Line("rem = offsets");
    for (size_t i = rank; i-- > 0;) {
      const size_t d = order[i];
      if (i == 0) {
        out.Line(fmt::format("idx_{} = rem", d));
      } else {
        out.Line(fmt::format("idx_{0} = rem % size_{0}", d));
        out.Line(fmt::format("rem = rem // size_{}", d));
      }
    }
  }
  // An input's offset at the index variables `index`0.., through its strides broadcast to the
  // output shape (a broadcast dim has stride 0 and no term).
  auto strided_offset = [&](const ir::TensorType& type, const std::string& index, const std::set<size_t>& reversed) {
    std::vector<int64_t> strides = ir::BroadcastStrides(type, kernel.shape);
    std::vector<std::string> terms;
    for (size_t d = 0; d < rank; ++d) {
      if (strides[d] == 0) continue;
      const std::string at = reversed.count(d) ? fmt::format("({} - {}{})", kernel.shape[d] - 1, index, d)
                                               : fmt::format("{}{}", index, d);
      terms.push_back(strides[d] == 1 ? at : fmt::format("{} * {}", at, strides[d]));
    }
    return terms.empty() ? std::string("0") : fmt::format("({})", fmt::join(terms, " + "));
  };
  if (gather) {
    EmitGatherLoad(out, graph, *gather, VarName(graph, first_op.ref()));
  } else if (positioned) {
    const ir::NodeRef x = first_op.args[0].As<ir::NodeRef>();
    out.Line(fmt::format("{} = {}{}", VarName(graph, first_op.ref()),
                         LoadAt(VarName(graph, x) + "_ptr", strided_offset(*graph.TypeOf(x), "idx_", flipped), "mask=mask, other=0"),
                         ComputeCast(graph.TypeOf(x)->dtype)));
  }
  bool unravelled_block = false;
  for (size_t i = 0; i < kernel.inputs.size(); ++i) {
    if (!loaded[i]) continue;
    const ir::NodeRef& ref = kernel.inputs[i];
    const ir::TensorType& type = *graph.TypeOf(ref);
    std::string name = VarName(graph, ref);
    std::string cast = ComputeCast(type.dtype);
    if (!kernel.strided[i]) {
      out.Line(fmt::format("{0} = tl.load({0}_ptr + offsets, mask=mask, other=0){1}", name, cast));
      continue;
    }
    std::string load = fmt::format("{} = {}{}", name, LoadAt(name + "_ptr", strided_offset(type, "idx_", {}), "mask=mask, other=0"), cast);
    const int64_t run = permuted ? 0 : ConstantRun(type, kernel.shape);
    if (run < kMinConstantRun) {
      out.Line(load);
      continue;
    }
    if (!unravelled_block) {
      // The first element's index: where a block lies inside one constant run of an input, the
      // whole block reads that input's value there.
      out.Line("kf_block_rem = pid * BLOCK_SIZE");
      for (size_t d = rank; d-- > 0;) {
        out.Line(d == 0 ? "kf_block_0 = kf_block_rem" : fmt::format("kf_block_{0} = kf_block_rem % size_{0}", d));
        if (d != 0) out.Line(fmt::format("kf_block_rem = kf_block_rem // size_{}", d));
      }
      unravelled_block = true;
    }
    out.Open(fmt::format("if {} % BLOCK_SIZE == 0:", run));
    out.Line(fmt::format("{0} = tl.load({0}_ptr + {1}){2}", name, strided_offset(type, "kf_block_", {}), cast));
    out.Close();
    out.Open("else:");
    out.Line(load);
    out.Close();
  }
  out.Lines(body.text());
  for (const ir::NodeRef& ref : kernel.outputs) {
    const ir::TensorType& type = *graph.TypeOf(ref);
    const std::string offset = ReadsFlat(type, kernel.shape, flat) ? "offsets" : strided_offset(type, "idx_", {});
    out.Line(fmt::format("tl.store({0}_ptr + {1}, {0}, mask=mask)", VarName(graph, ref), offset));
  }
  out.Close();
  kernel.source = out.text();
  return kernel;
}

void EmitPointwiseHelpers(const std::set<std::string>& helpers, SourceWriter& out) {
  std::set<std::string> needed = helpers;
  if (needed.count("_kf_tanh")) needed.insert("_kf_expm1");
  if (needed.count("_kf_expm1")) {
    out.Line("@triton.jit");
    out.Open("def _kf_expm1(x):");
    // Below |x| = 0.5 the Taylor polynomial to degree 9 (Horner; at most 1.5 ulp in fp32, where
    // Kahan's (u - 1) * x / log(u) reached 5 ulp and cost a log and a division more).
    out.Line("# exp(x) - 1 without cancellation near 0: its Taylor polynomial to degree 9 below |x| = 0.5, exp(x) - 1 above.");
    out.Line("p = 2.7557319223985893e-06");
    for (const char* c : {"2.48015873015873e-05", "0.0001984126984126984", "0.001388888888888889", "0.008333333333333333",
                          "0.041666666666666664", "0.16666666666666666", "0.5", "1.0"}) {
      out.Line(fmt::format("p = p * x + {}", c));
    }
    out.Line("return tl.where(tl.abs(x) < 0.5, p * x, tl.exp(x) - 1.0)");
    out.Close();
    out.Blank();
    out.Blank();
  }
  if (needed.count("_kf_tanh")) {
    out.Line("@triton.jit");
    out.Open("def _kf_tanh(x):");
    out.Line("# tanh(x) = sign(x) * -expm1(-2|x|) / (2 + expm1(-2|x|)): exact near 0, saturates for large |x|.");
    out.Line("e = _kf_expm1(-2.0 * tl.abs(x))");
    out.Line("t = -e / (2.0 + e)");
    out.Line("return tl.where(x < 0.0, -t, t)");
    out.Close();
    out.Blank();
    out.Blank();
  }
  if (needed.count("_kf_tanh_softplus")) {
    out.Line("@triton.jit");
    out.Open("def _kf_tanh_softplus(x):");
    out.Line("# tanh(log(1 + n)) = n (n + 2) / (n (n + 2) + 2) for n = exp(x): no term cancels; 1 from x = 20 on.");
    out.Line("n = tl.exp(tl.minimum(x, 20.0))");
    out.Line("q = n * (n + 2.0)");
    out.Line("return q / (q + 2.0)");
    out.Close();
    out.Blank();
    out.Blank();
  }
  if (needed.count("_kf_round")) {
    out.Line("@triton.jit");
    out.Open("def _kf_round(x):");
    out.Line("# Half to even, as torch.round: floor(x + 0.5), one less where that rounded a tie up to an odd");
    out.Line("# number; from 2^23 on every float is an integer (and x + 0.5 would round).");
    out.Line("r = tl.floor(x + 0.5)");
    out.Line("odd = r - 2.0 * tl.floor(r * 0.5) != 0.0");
    out.Line("r = tl.where((r - x == 0.5) & odd, r - 1.0, r)");
    out.Line("return tl.where(tl.abs(x) < 8388608.0, r, x)");
    out.Close();
    out.Blank();
    out.Blank();
  }
  if (needed.count("_kf_multiply")) {
    out.Line("@triton.jit");
    out.Open("def _kf_multiply(a, b):");
    out.Line("return a * b");
    out.Close();
    out.Blank();
    out.Blank();
  }
  if (needed.count("_kf_log1p")) {
    out.Line("@triton.jit");
    out.Open("def _kf_log1p(x):");
    out.Line("# log(1 + x) without cancellation near 0 (Goldberg): log(u) * x / (u - 1) for u = 1 + x.");
    out.Line("u = 1.0 + x");
    out.Line("d = u - 1.0");
    out.Line("exact = tl.where(d == x, tl.log(u), tl.log(u) * (x / tl.where(d == 0.0, 1.0, d)))");
    out.Line("return tl.where(d == 0.0, x, exact)");
    out.Close();
    out.Blank();
    out.Blank();
  }
}

}  // namespace kforge::codegen
