// Pointwise ops that read a product through views, moved into the product's shape (hand-built
// graphs): the product's batch dims split where the other operands need it, producers recomputed
// from smaller inputs, and the cases left alone.
#include "compiler/passes/product_epilogues.h"

#include <gtest/gtest.h>

#include "compiler/passes/dead_code.h"
#include "compiler/passes/fusion_plan.h"
#include "compiler/passes/fusion_rules.h"
#include "ir_test_util.h"

namespace kforge::passes {
namespace {

using ir::testing::AddInputOk;
using ir::testing::AddOk;
using ir::testing::CountOps;
using ir::testing::F32;
using ir::testing::Ints;
using ir::testing::Ref;
using ir::testing::Strided;

ir::Graph Moved(const ir::Graph& graph) {
  auto moved = MoveEpiloguesIntoProducts(graph);
  EXPECT_TRUE(moved.ok()) << moved.status().ToString();
  auto live = RemoveDeadCode(*moved);
  EXPECT_TRUE(live.ok()) << live.status().ToString();
  return std::move(live).value();
}

// The plan's groups of `kind`.
std::vector<FusionGroup> GroupsOf(const FusionPlan& plan, FusionGroup::Kind kind) {
  std::vector<FusionGroup> groups;
  for (const FusionGroup& group : plan.groups) {
    if (group.kind == kind) groups.push_back(group);
  }
  return groups;
}

// bmm [6, 8, 5] viewed as [2, 3, 8, 5] and permuted to [2, 8, 3, 5] (the batch's two factors
// apart), multiplied by y, a contiguous [2, 8, 3, 5] (or by a producer of y's shape).
struct PermutedProduct {
  ir::GraphBuilder b{"permuted_product"};
  ir::ValueId bmm = ir::kNoValue, permuted = ir::kNoValue;
};

void AddPermutedProduct(PermutedProduct& g) {
  ir::ValueId a = AddInputOk(g.b, "a", {6, 8, 4});
  ir::ValueId w = AddInputOk(g.b, "w", {6, 4, 5}, 1);
  g.bmm = AddOk(g.b, "bmm", "aten.bmm.default", {Ref(a), Ref(w)}, {F32({6, 8, 5})});
  ir::ValueId view = AddOk(g.b, "view", "aten.view.default", {Ref(g.bmm), Ints({2, 3, 8, 5})}, {F32({2, 3, 8, 5})});
  g.permuted = AddOk(g.b, "permute", "aten.permute.default", {Ref(view), Ints({0, 2, 1, 3})},
                     {Strided({2, 8, 3, 5}, {120, 5, 40, 1})});
}

TEST(ProductEpiloguesTest, AMultiplyThroughViewsRunsOverTheProductsSplitBatchDims) {
  PermutedProduct g;
  AddPermutedProduct(g);
  ir::ValueId y = AddInputOk(g.b, "y", {2, 8, 3, 5}, 2);
  ir::ValueId mul = AddOk(g.b, "mul", "aten.mul.Tensor", {Ref(g.permuted), Ref(y)}, {F32({2, 8, 3, 5})});
  g.b.AddOutput({mul, 0});
  ir::Graph graph = Moved(std::move(g.b).Build());

  // The batch of 6 splits into 2 x 3: y's stride over the 3 (5) is not its stride over the 2 (120) / 3.
  const ir::Value* product = graph.Find("bmm_split");
  ASSERT_NE(product, nullptr);
  EXPECT_EQ(product->As<ir::OpNode>().op, "aten.matmul.default");
  EXPECT_EQ(product->type().shape, (ir::Shape{2, 3, 8, 5}));
  EXPECT_TRUE(IsFusableMatmul(graph, *product));
  const ir::Value* epilogue = graph.Find("mul_epilogue");
  ASSERT_NE(epilogue, nullptr);
  EXPECT_EQ(epilogue->type().shape, (ir::Shape{2, 3, 8, 5}));
  // Stored where the contiguous [2, 8, 3, 5] result keeps each element.
  EXPECT_EQ(epilogue->type().stride, (std::vector<int64_t>{120, 5, 15, 1}));
  // y read over the product's dims with its own strides, in one view.
  const auto& y_view = graph.value(epilogue->As<ir::OpNode>().args[1].As<ir::NodeRef>().value);
  EXPECT_EQ(y_view.type().stride, (std::vector<int64_t>{120, 5, 15, 1}));
  // The result is the op's, as captured.
  const ir::Value* result = graph.Find("mul");
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(result->type(), F32({2, 8, 3, 5}));
  EXPECT_EQ(graph.LiveOuts().front().value, result->id);

  FusionPlan plan = PlanFusion(graph);
  std::vector<FusionGroup> matmuls = GroupsOf(plan, FusionGroup::Kind::kMatmul);
  ASSERT_EQ(matmuls.size(), 1u);
  EXPECT_EQ(matmuls[0].nodes, (std::vector<ir::ValueId>{product->id, epilogue->id}));
  EXPECT_TRUE(GroupsOf(plan, FusionGroup::Kind::kPointwise).empty());
}

TEST(ProductEpiloguesTest, AProducerOfSmallerInputsIsRecomputedInTheEpilogue) {
  PermutedProduct g;
  AddPermutedProduct(g);
  ir::ValueId rows = AddInputOk(g.b, "rows", {2, 1, 3, 1}, 2);
  ir::ValueId cols = AddInputOk(g.b, "cols", {5}, 3);
  ir::ValueId sum = AddOk(g.b, "sum", "aten.add.Tensor", {Ref(rows), Ref(cols)}, {F32({2, 1, 3, 5})});
  ir::ValueId wide = AddOk(g.b, "wide", "aten.expand.default", {Ref(sum), Ints({2, 8, 3, 5})}, {Strided({2, 8, 3, 5}, {15, 0, 5, 1})});
  ir::ValueId decay = AddOk(g.b, "decay", "aten.exp.default", {Ref(wide)}, {F32({2, 8, 3, 5})});
  ir::ValueId mul = AddOk(g.b, "mul", "aten.mul.Tensor", {Ref(g.permuted), Ref(decay)}, {F32({2, 8, 3, 5})});
  g.b.AddOutput({mul, 0});
  ir::Graph graph = Moved(std::move(g.b).Build());

  const ir::Value* recomputed = graph.Find("decay_over_bmm");
  ASSERT_NE(recomputed, nullptr);
  EXPECT_EQ(recomputed->type().shape, (ir::Shape{2, 3, 8, 5}));
  EXPECT_EQ(graph.Find("decay"), nullptr);
  FusionPlan plan = PlanFusion(graph);
  std::vector<FusionGroup> matmuls = GroupsOf(plan, FusionGroup::Kind::kMatmul);
  ASSERT_EQ(matmuls.size(), 1u);
  EXPECT_EQ(matmuls[0].nodes.size(), 3u);  // the product, the exp, the multiply
  // The sum of the two small inputs stays a small kernel of its own; nothing of the full shape does.
  for (const FusionGroup& group : GroupsOf(plan, FusionGroup::Kind::kPointwise)) {
    for (ir::ValueId id : group.nodes) EXPECT_LT(graph.value(id).type().numel(), 240) << graph.value(id).name;
  }
}

TEST(ProductEpiloguesTest, AnEpilogueOverTheProductsShapeIsReadAsItIs) {
  // mm + bias (already the product's epilogue), viewed [3, 4, 7], then relu.
  ir::GraphBuilder b("linear_3d");
  ir::ValueId x = AddInputOk(b, "x", {12, 5});
  ir::ValueId w = AddInputOk(b, "w", {5, 7}, 1);
  ir::ValueId bias = AddInputOk(b, "bias", {7}, 2);
  ir::ValueId mm = AddOk(b, "mm", "aten.mm.default", {Ref(x), Ref(w)}, {F32({12, 7})});
  ir::ValueId add = AddOk(b, "add", "aten.add.Tensor", {Ref(mm), Ref(bias)}, {F32({12, 7})});
  ir::ValueId view = AddOk(b, "view", "aten.view.default", {Ref(add), Ints({3, 4, 7})}, {F32({3, 4, 7})});
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(view)}, {F32({3, 4, 7})});
  b.AddOutput({relu, 0});
  ir::Graph graph = Moved(std::move(b).Build());

  EXPECT_EQ(CountOps(graph, "aten.mm.default"), 1);
  const ir::Value* epilogue = graph.Find("relu_epilogue");
  ASSERT_NE(epilogue, nullptr);
  EXPECT_EQ(epilogue->type(), F32({12, 7}));
  EXPECT_EQ(epilogue->As<ir::OpNode>().args[0].As<ir::NodeRef>().value, graph.Find("add")->id);
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(GroupsOf(plan, FusionGroup::Kind::kMatmul).size(), 1u);
  EXPECT_EQ(GroupsOf(plan, FusionGroup::Kind::kMatmul)[0].nodes.size(), 3u);
  EXPECT_TRUE(GroupsOf(plan, FusionGroup::Kind::kPointwise).empty());
}

TEST(ProductEpiloguesTest, OpsSharingTheViewAndReadingEachOtherAllMoveButNotANormOfThem) {
  // h = view(mm) [3, 4, 7]; g = 0.5 * h * tanh(h); s = g + h; then s - mean(s): s is the last
  // reader of what it reads, so it moves although a reduction reads it; the subtraction reads the
  // mean, a reduction of s, so it could not join the product's kernel and stays over [3, 4, 7].
  // And h * h, read by a sum while h stays stored for the other ops, is left to the sum's kernel.
  auto build = [](bool square_too) {
    ir::GraphBuilder b("gelu_like");
    ir::ValueId x = AddInputOk(b, "x", {12, 5});
    ir::ValueId w = AddInputOk(b, "w", {5, 7}, 1);
    ir::ValueId mm = AddOk(b, "mm", "aten.mm.default", {Ref(x), Ref(w)}, {F32({12, 7})});
    ir::ValueId h = AddOk(b, "h", "aten.view.default", {Ref(mm), Ints({3, 4, 7})}, {F32({3, 4, 7})});
    ir::ValueId square = ir::kNoValue;
    if (square_too) square = AddOk(b, "square", "aten.mul.Tensor", {Ref(h), Ref(h)}, {F32({3, 4, 7})});
    ir::ValueId half = AddOk(b, "half", "aten.mul.Tensor", {Ref(h), ir::Argument(0.5)}, {F32({3, 4, 7})});
    ir::ValueId tanh = AddOk(b, "tanh", "aten.tanh.default", {Ref(h)}, {F32({3, 4, 7})});
    ir::ValueId g = AddOk(b, "g", "aten.mul.Tensor", {Ref(half), Ref(tanh)}, {F32({3, 4, 7})});
    ir::ValueId sum = AddOk(b, "s", "aten.add.Tensor", {Ref(g), Ref(h)}, {F32({3, 4, 7})});
    ir::ValueId mean = AddOk(b, "mean", "aten.sum.dim_IntList", {Ref(sum), Ints({2}), ir::Argument(true)}, {F32({3, 4, 1})});
    ir::ValueId centered = AddOk(b, "centered", "aten.sub.Tensor", {Ref(sum), Ref(mean)}, {F32({3, 4, 7})});
    b.AddOutput({centered, 0});
    if (square_too) {
      ir::ValueId squares = AddOk(b, "squares", "aten.sum.dim_IntList", {Ref(square), Ints({2}), ir::Argument(true)}, {F32({3, 4, 1})});
      b.AddOutput({squares, 0});
    }
    return Moved(std::move(b).Build());
  };
  ir::Graph graph = build(false);
  for (const char* name : {"half_epilogue", "tanh_epilogue", "g_epilogue", "s_epilogue"}) {
    const ir::Value* moved = graph.Find(name);
    ASSERT_NE(moved, nullptr) << name;
    EXPECT_EQ(moved->type(), F32({12, 7})) << name;
  }
  // g's epilogue reads half's and tanh's results as they are, not through views.
  const auto& g_moved = graph.Find("g_epilogue")->As<ir::OpNode>();
  EXPECT_EQ(g_moved.args[0].As<ir::NodeRef>().value, graph.Find("half_epilogue")->id);
  EXPECT_EQ(g_moved.args[1].As<ir::NodeRef>().value, graph.Find("tanh_epilogue")->id);
  EXPECT_EQ(graph.Find("centered_epilogue"), nullptr);
  EXPECT_EQ(graph.Find("centered")->type(), F32({3, 4, 7}));
  FusionPlan plan = PlanFusion(graph);
  std::vector<FusionGroup> matmuls = GroupsOf(plan, FusionGroup::Kind::kMatmul);
  ASSERT_EQ(matmuls.size(), 1u);
  EXPECT_EQ(matmuls[0].nodes.size(), 5u);  // mm and the four moved ops
  EXPECT_EQ(GroupsOf(plan, FusionGroup::Kind::kReduction).size(), 1u);  // the sum and the subtraction
  EXPECT_TRUE(GroupsOf(plan, FusionGroup::Kind::kPointwise).empty());

  ir::Graph with_square = build(true);
  EXPECT_EQ(with_square.Find("square_epilogue"), nullptr);
  EXPECT_NE(with_square.Find("g_epilogue"), nullptr);
}

TEST(ProductEpiloguesTest, AProductReadElsewhereOrStoredAcrossItsMatricesStaysAsItWas) {
  {
    // The product is also an output: it is stored anyway, and the op keeps reading it.
    PermutedProduct g;
    AddPermutedProduct(g);
    ir::ValueId y = AddInputOk(g.b, "y", {2, 8, 3, 5}, 2);
    ir::ValueId mul = AddOk(g.b, "mul", "aten.mul.Tensor", {Ref(g.permuted), Ref(y)}, {F32({2, 8, 3, 5})});
    g.b.AddOutput({mul, 0});
    g.b.AddOutput({g.bmm, 0});
    ir::Graph graph = Moved(std::move(g.b).Build());
    EXPECT_EQ(graph.Find("mul_epilogue"), nullptr);
    EXPECT_EQ(CountOps(graph, "aten.matmul.default"), 0);
  }
  {
    // The op's result keeps the batch fastest: its stores would cross the product's matrices.
    ir::GraphBuilder b("batch_fastest");
    ir::ValueId a = AddInputOk(b, "a", {6, 8, 4});
    ir::ValueId w = AddInputOk(b, "w", {6, 4, 5}, 1);
    ir::ValueId bmm = AddOk(b, "bmm", "aten.bmm.default", {Ref(a), Ref(w)}, {F32({6, 8, 5})});
    ir::ValueId permuted =
        AddOk(b, "permute", "aten.permute.default", {Ref(bmm), Ints({1, 2, 0})}, {Strided({8, 5, 6}, {5, 1, 40})});
    ir::ValueId neg = AddOk(b, "neg", "aten.neg.default", {Ref(permuted)}, {F32({8, 5, 6})});
    b.AddOutput({neg, 0});
    ir::Graph graph = Moved(std::move(b).Build());
    EXPECT_EQ(graph.Find("neg_epilogue"), nullptr);
    EXPECT_NE(graph.Find("neg"), nullptr);
  }
}

}  // namespace
}  // namespace kforge::passes
