#include "compiler/ir/graph_builder.h"

#include <gtest/gtest.h>

#include "ir_test_util.h"

namespace kforge::ir {
namespace {

using testing::F32;
using testing::Int;
using testing::Ref;

TEST(ValueTest, MakeValidatesNamesTypesAndKeywords) {
  EXPECT_TRUE(InputValue::Make("x", 0, F32({2})).ok());
  EXPECT_FALSE(InputValue::Make("", 0, F32({2})).ok());
  EXPECT_FALSE(InputValue::Make("1x", 0, F32({2})).ok());
  EXPECT_FALSE(InputValue::Make("a b", 0, F32({2})).ok());
  EXPECT_FALSE(InputValue::Make("x", -1, F32({2})).ok());
  EXPECT_FALSE(InputValue::Make("x", 0, TensorType{{2, 3}, DType::kFloat32, {1}}).ok());
  EXPECT_FALSE(ParameterValue::Make("w", "", ParameterKind::kParameter, F32({2})).ok());
  EXPECT_FALSE(ConstantValue::Make("c", "lifted", F32({2}), 0.5).ok());  // a value needs a 0-d tensor
  EXPECT_FALSE(OpNode::Make("n", "", {}, {}, {F32({2})}).ok());
  Argument one{int64_t{1}};
  EXPECT_FALSE(OpNode::Make("n", "aten.sum.dim_IntList", {}, {{"dim", one}, {"dim", one}}, {F32({})}).ok());
}

TEST(ValueTest, DownCastsAreChecked) {
  InputValue input = InputValue::Make("x", 0, F32({2})).value();
  const Value& value = input;
  EXPECT_EQ(&value.As<InputValue>(), &input);
  EXPECT_EQ(value.TryAs<OpNode>(), nullptr);
  EXPECT_DEATH(value.As<OpNode>(), "wrong value kind");
  Argument arg{int64_t{3}};
  EXPECT_EQ(arg.kind(), ArgKind::kInt);
  EXPECT_EQ(arg.TryAs<double>(), nullptr);
  EXPECT_DEATH(arg.As<NodeRef>(), "wrong argument kind");
}

TEST(GraphBuilderTest, AssignsIdsInOrderAndFindsByName) {
  GraphBuilder builder("t");
  ValueId x = testing::AddInputOk(builder, "x", {4});
  Result<ValueId> w = builder.AddParameter("w", "lin.weight", ParameterKind::kParameter, F32({4}));
  ASSERT_TRUE(w.ok());
  ValueId add = testing::AddOk(builder, "add", "aten.add.Tensor", {Ref(x), Ref(*w)}, {F32({4})});
  builder.AddOutput(NodeRef{add, 0});
  Graph graph = std::move(builder).Build();
  EXPECT_EQ(graph.name(), "t");
  EXPECT_EQ(graph.size(), 3);
  EXPECT_EQ(graph.Find("w")->id, 1);
  EXPECT_EQ(graph.Find("nope"), nullptr);
  const OpNode& node = graph.value(add).As<OpNode>();
  EXPECT_EQ(node.op_kind(), OpKind::kPointwise);
  EXPECT_EQ(graph.TypeOf(NodeRef{add, 1}), nullptr);
  EXPECT_EQ(graph.Resolve(NodeRef{7, 0}), nullptr);
}

TEST(GraphBuilderTest, RejectsDuplicateNamesAndHandsOutFreshOnes) {
  GraphBuilder builder("t");
  testing::AddInputOk(builder, "x", {4});
  Result<ValueId> again = builder.AddInput("x", 1, F32({4}));
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("duplicate name \"x\""), std::string::npos);
  EXPECT_EQ(builder.FreshName("y"), "y");
  EXPECT_EQ(builder.FreshName("x"), "x_1");
  testing::AddInputOk(builder, "x_1", {4}, 1);
  EXPECT_EQ(builder.FreshName("x"), "x_2");
}

TEST(GraphBuilderTest, AMutationNamesAParameterOrBufferOnce) {
  GraphBuilder builder("t");
  ValueId x = testing::AddInputOk(builder, "x", {4});
  ASSERT_TRUE(builder.AddParameter("mean", "bn.running_mean", ParameterKind::kBuffer, F32({4})).ok());
  ValueId neg = testing::AddOk(builder, "neg", "aten.neg.default", {Ref(x)}, {F32({4})});
  Status unknown = builder.AddMutation("bn.running_var", NodeRef{neg, 0});
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("\"bn.running_var\" is not a parameter or buffer"), std::string::npos);
  EXPECT_FALSE(builder.AddMutation("x", NodeRef{neg, 0}).ok());  // an input is not state
  ASSERT_TRUE(builder.AddMutation("bn.running_mean", NodeRef{neg, 0}).ok());
  Status twice = builder.AddMutation("bn.running_mean", NodeRef{x, 0});
  EXPECT_NE(twice.message().find("\"bn.running_mean\" is mutated twice"), std::string::npos);
  builder.AddOutput(NodeRef{x, 0});
  Graph graph = std::move(builder).Build();
  EXPECT_EQ(graph.mutations(), (std::vector<Mutation>{{"bn.running_mean", NodeRef{neg, 0}}}));
  EXPECT_EQ(graph.LiveOuts(), (std::vector<NodeRef>{{x, 0}, {neg, 0}}));
  EXPECT_EQ(graph.FindTarget("bn.running_mean"), graph.Find("mean"));
  EXPECT_EQ(graph.FindTarget("mean"), nullptr);
}

TEST(OpNodeTest, FindsArgumentsPositionallyOrByKeyword) {
  const OpInfo& sum = *FindOp("aten.sum.dim_IntList");
  OpNode positional =
      OpNode::Make("s", sum.name, {Ref(0), testing::Ints({1}), Argument{true}}, {}, {F32({2, 1})}).value();
  EXPECT_EQ(positional.FindArgument(sum.keepdim)->As<bool>(), true);
  OpNode keyword =
      OpNode::Make("s", sum.name, {Ref(0), testing::Ints({1})}, {{"keepdim", Argument{false}}}, {F32({2})}).value();
  EXPECT_EQ(keyword.FindArgument(sum.keepdim)->As<bool>(), false);
  OpNode bare = OpNode::Make("s", sum.name, {Ref(0), testing::Ints({1})}, {}, {F32({2})}).value();
  EXPECT_EQ(bare.FindArgument(sum.keepdim), nullptr);
  EXPECT_EQ(bare.FindArgument(ArgSlot{}), nullptr);
  EXPECT_EQ(Int(3).As<int64_t>(), 3);
}

}  // namespace
}  // namespace kforge::ir
