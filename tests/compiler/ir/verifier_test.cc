#include "compiler/ir/verifier.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/ir/graph_builder.h"
#include "ir_test_util.h"

namespace kforge::ir {
namespace {

using testing::AddOk;
using testing::F32;
using testing::Ints;
using testing::Ref;

constexpr ValueId kX = 0;  // x: f32[8, 64]
constexpr ValueId kW = 1;  // w: f32[64, 32]

// Builds x and w, then one op `op(args) -> output`, returned as the graph's output.
Graph OneOpGraph(const std::string& op, std::vector<Argument> args, Shape output) {
  GraphBuilder builder("verifier_case");
  testing::AddInputOk(builder, "x", {8, 64});
  EXPECT_TRUE(builder.AddParameter("w", "lin.weight", ParameterKind::kParameter, F32({64, 32})).ok());
  std::string name = op.substr(5, op.find('.', 5) - 5);  // "aten.mm.default" -> "mm"
  builder.AddOutput(NodeRef{AddOk(builder, name, op, std::move(args), {F32(std::move(output))}), 0});
  return std::move(builder).Build();
}

struct VerifierCase {
  const char* op;
  std::vector<Argument> args;
  Shape output;
  const char* expected;  // phrase of the error; "" when the graph is well-formed
};

const std::vector<VerifierCase>& Cases() {
  static const std::vector<VerifierCase> cases = {
      {"aten.mm.default", {Ref(kX), Ref(kW)}, {8, 32}, ""},
      {"aten.mul.Tensor", {Ref(kX), Argument{2.0}}, {8, 64}, ""},
      {"aten.frob.default", {Ref(kX)}, {3}, ""},  // opaque: no shape rule
      {"aten.view.default", {Ref(kX), Ints({512})}, {512}, ""},
      {"aten.expand.default", {Ref(kX), Ints({2, 8, 64})}, {2, 8, 64}, ""},
      // Broadcasting.
      {"aten.add.Tensor", {Ref(kX), Ref(kW)}, {8, 64}, "%add: tensor inputs do not broadcast"},
      {"aten.relu.default",
       {Ref(kX)},
       {8, 32},
       "%relu: output shape [8, 32] is not the broadcast [8, 64] of its inputs"},
      // Matmul shapes.
      {"aten.mm.default", {Ref(kW), Ref(kX)}, {64, 64}, "%mm: operand shapes [64, 32] x [8, 64] do not agree"},
      {"aten.mm.default", {Ref(kX), Ref(kW)}, {8, 64}, "%mm: output shape [8, 64] is not [8, 32]"},
      {"aten.addmm.default",
       {Ref(kX), Ref(kX), Ref(kW)},
       {8, 32},
       "%addmm: bias [8, 64] does not broadcast to [8, 32]"},
      {"aten.bmm.default", {Ref(kX), Ref(kW)}, {8, 32}, "%bmm: operand shapes [8, 64] x [64, 32] do not agree"},
      {"aten.mv.default", {Ref(kW), Ref(kX)}, {64}, "%mv: operand shapes"},
      // Views.
      {"aten.view.default",
       {Ref(kX), Ints({8, 8})},
       {8, 8},
       "%view: view changes the element count: [8, 64] to [8, 8]"},
      // Arity.
      {"aten.relu.default", {Ref(kX), Ref(kX)}, {8, 64}, "aten.relu.default takes at most 1 tensor argument(s), got 2"},
      // References.
      {"aten.relu.default", {Ref(9)}, {8, 64}, "%relu: args[0] refers to value #9, which is not an earlier value"},
      {"aten.relu.default", {Ref(2)}, {8, 64}, "%relu: args[0] refers to value #2, which is not an earlier value"},
      {"aten.relu.default", {Ref(kX, 1)}, {8, 64}, "%relu: args[0] refers to output 1 of %x, which has 1 output(s)"},
      {"aten.cat.default", {Argument{TensorList{NodeRef{kX, 0}, NodeRef{5, 0}}}}, {16, 64}, "refers to value #5"},
  };
  return cases;
}

TEST(VerifierTest, TableOfOneOpGraphs) {
  for (const VerifierCase& c : Cases()) {
    Status status = VerifyGraph(OneOpGraph(c.op, c.args, c.output));
    std::string label = std::string(c.op) + " -> " + ShapeToString(c.output);
    if (std::string(c.expected).empty()) {
      EXPECT_TRUE(status.ok()) << label << ": " << status.ToString();
      continue;
    }
    ASSERT_FALSE(status.ok()) << label;
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << label;
    EXPECT_NE(status.message().find(c.expected), std::string::npos) << label << ": got \"" << status.message() << "\"";
  }
}

// x -> native_layer_norm (3 outputs) -> x - mean, returning output refs to choose from.
GraphBuilder LayerNormGraph(std::vector<NodeRef>& refs) {
  GraphBuilder builder("t");
  ValueId x = testing::AddInputOk(builder, "x", {8, 32});
  Argument none{NoneArg{}};
  ValueId ln = AddOk(builder, "ln", "aten.native_layer_norm.default", {Ref(x), Ints({32}), none, none, Argument{1e-5}},
                     {F32({8, 32}), F32({8, 1}), F32({8, 1})});
  ValueId centered = AddOk(builder, "centered", "aten.sub.Tensor", {Ref(x), Ref(ln, 1)}, {F32({8, 32})});
  refs = {NodeRef{centered, 0}, NodeRef{ln, 2}, NodeRef{ln, 3}};
  return builder;
}

TEST(VerifierTest, GraphOutputsMustExist) {
  std::vector<NodeRef> refs;
  Graph no_outputs = LayerNormGraph(refs).Build();
  EXPECT_NE(VerifyGraph(no_outputs).message().find("the graph has no outputs"), std::string::npos);

  GraphBuilder good = LayerNormGraph(refs);
  good.AddOutput(refs[0]);
  good.AddOutput(refs[1]);
  EXPECT_TRUE(VerifyGraph(std::move(good).Build()).ok());

  GraphBuilder bad = LayerNormGraph(refs);
  bad.AddOutput(refs[2]);
  EXPECT_NE(VerifyGraph(std::move(bad).Build()).message().find("graph output 0 refers to output 3 of %ln, which has 3"),
            std::string::npos);
}

// x -> neg, returned; `target` (a buffer f32[8, 32] or i64[]) mutated to `value`.
Status VerifyMutation(NodeRef value, TensorType target) {
  GraphBuilder builder("t");
  ValueId x = testing::AddInputOk(builder, "x", {8, 32});
  EXPECT_TRUE(builder.AddParameter("state", "m.state", ParameterKind::kBuffer, std::move(target)).ok());
  ValueId neg = AddOk(builder, "neg", "aten.neg.default", {Ref(x)}, {F32({8, 32})});
  builder.AddOutput(NodeRef{neg, 0});
  EXPECT_TRUE(builder.AddMutation("m.state", value).ok());
  return VerifyGraph(std::move(builder).Build());
}

TEST(VerifierTest, AMutationGivesItsTargetAnExistingValueOfItsType) {
  EXPECT_TRUE(VerifyMutation(NodeRef{2, 0}, F32({8, 32})).ok());
  EXPECT_NE(VerifyMutation(NodeRef{3, 0}, F32({8, 32})).message().find(
                "mutation of m.state refers to value #3, which is not an earlier value"),
            std::string::npos);
  EXPECT_NE(VerifyMutation(NodeRef{2, 1}, F32({8, 32})).message().find("refers to output 1 of %neg"), std::string::npos);
  EXPECT_NE(VerifyMutation(NodeRef{2, 0}, F32({32})).message().find(
                "mutation of m.state: the new value is f32[8, 32], the buffer is f32[32]"),
            std::string::npos);
  TensorType steps = TensorType::Contiguous({}, DType::kInt64).value();
  EXPECT_NE(VerifyMutation(NodeRef{2, 0}, steps).message().find("the buffer is i64[]"), std::string::npos);
}

}  // namespace
}  // namespace kforge::ir
