// Copy elision on hand-built graphs: a bmm reads a copied operand through its strides, and a
// pointwise result copied to contiguous is written contiguous.
#include "compiler/passes/copy_elision.h"

#include <gtest/gtest.h>

#include "compiler/passes/dead_code.h"
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

ir::Graph Elided(ir::Graph graph) {
  auto elided = ElideCopies(graph);
  EXPECT_TRUE(elided.ok()) << elided.status().ToString();
  auto live = RemoveDeadCode(*elided);
  EXPECT_TRUE(live.ok()) << live.status().ToString();
  return std::move(live).value();
}

// x: [b=2, c=3, l=8, h=4, n=16] -> permute to [b, c, h, l, n] -> copy -> [24, 8, 16] @ w [24, 16, 5].
// The batch dims (b, c) merge, h does not merge with them (its stride is 16, c's is 512).
struct BmmOfACopy {
  ir::Graph graph;
  ir::ValueId clone;
};

BmmOfACopy BuildBmmOfACopy(bool copy_read_elsewhere) {
  ir::GraphBuilder b("bmm_of_a_copy");
  ir::ValueId x = AddInputOk(b, "x", {2, 3, 8, 4, 16});
  ir::ValueId w = AddInputOk(b, "w", {24, 16, 5}, 1);
  ir::ValueId permuted = AddOk(b, "permute", "aten.permute.default", {Ref(x), Ints({0, 1, 3, 2, 4})},
                               {Strided({2, 3, 4, 8, 16}, {1536, 512, 16, 64, 1})});
  ir::ValueId clone = AddOk(b, "clone", "aten.clone.default", {Ref(permuted)}, {F32({2, 3, 4, 8, 16})});
  ir::ValueId flat = AddOk(b, "flat", "aten.view.default", {Ref(clone), Ints({24, 8, 16})}, {F32({24, 8, 16})});
  ir::ValueId bmm = AddOk(b, "bmm", "aten.bmm.default", {Ref(flat), Ref(w)}, {F32({24, 8, 5})});
  b.AddOutput({bmm, 0});
  if (copy_read_elsewhere) {
    ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(clone)}, {F32({2, 3, 4, 8, 16})});
    b.AddOutput({relu, 0});
  }
  return {std::move(b).Build(), clone};
}

TEST(CopyElisionTest, ABmmReadsACopiedOperandThroughItsStridesOverBatchDimsThatDoNotMerge) {
  ir::Graph graph = Elided(BuildBmmOfACopy(false).graph);
  EXPECT_EQ(CountOps(graph, "aten.clone.default"), 0);
  EXPECT_EQ(CountOps(graph, "aten.bmm.default"), 0);
  ASSERT_EQ(CountOps(graph, "aten.matmul.default"), 1);
  const ir::Value* product = graph.Find("bmm_strided");
  ASSERT_NE(product, nullptr);
  const auto& matmul = product->As<ir::OpNode>();
  EXPECT_TRUE(IsFusableMatmul(graph, *product));
  EXPECT_EQ(matmul.type().shape, (ir::Shape{6, 4, 8, 5}));
  // a: x itself viewed as [b*c, h, l, n] (b and c merge); w split alike.
  const ir::TensorType& a = *graph.TypeOf(matmul.args[0].As<ir::NodeRef>());
  EXPECT_EQ(a.shape, (ir::Shape{6, 4, 8, 16}));
  EXPECT_EQ(a.stride, (std::vector<int64_t>{512, 16, 64, 1}));
  const ir::TensorType& w = *graph.TypeOf(matmul.args[1].As<ir::NodeRef>());
  EXPECT_EQ(w.shape, (ir::Shape{6, 4, 16, 5}));
  EXPECT_EQ(w.stride, (std::vector<int64_t>{320, 80, 5, 1}));
  // The bmm's name now holds its result, flattened back.
  const ir::Value* out = graph.Find("bmm");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->As<ir::OpNode>().op, "aten.view.default");
  EXPECT_EQ(out->type().shape, (ir::Shape{24, 8, 5}));
  EXPECT_EQ(graph.outputs()[0].value, out->id);
}

TEST(CopyElisionTest, ACopyAnotherOpAlsoReadsStays) {
  ir::Graph graph = Elided(BuildBmmOfACopy(true).graph);
  EXPECT_EQ(CountOps(graph, "aten.clone.default"), 1);
  EXPECT_EQ(CountOps(graph, "aten.bmm.default"), 1);
  EXPECT_EQ(CountOps(graph, "aten.matmul.default"), 0);
}

TEST(CopyElisionTest, RowsThatDoNotMergeKeepTheCopy) {
  // [2, 8, 4, 16] permuted to [2, 4, 8, 16] and flattened to [2, 32, 16]: the rows (h, l) do not
  // merge, so the product cannot read them with one stride.
  ir::GraphBuilder b("rows_apart");
  ir::ValueId x = AddInputOk(b, "x", {2, 8, 4, 16});
  ir::ValueId w = AddInputOk(b, "w", {2, 16, 5}, 1);
  ir::ValueId permuted = AddOk(b, "permute", "aten.permute.default", {Ref(x), Ints({0, 2, 1, 3})},
                               {Strided({2, 4, 8, 16}, {512, 16, 64, 1})});
  ir::ValueId clone = AddOk(b, "clone", "aten.clone.default", {Ref(permuted)}, {F32({2, 4, 8, 16})});
  ir::ValueId flat = AddOk(b, "flat", "aten.view.default", {Ref(clone), Ints({2, 32, 16})}, {F32({2, 32, 16})});
  ir::ValueId bmm = AddOk(b, "bmm", "aten.bmm.default", {Ref(flat), Ref(w)}, {F32({2, 32, 5})});
  b.AddOutput({bmm, 0});
  ir::Graph graph = Elided(std::move(b).Build());
  EXPECT_EQ(CountOps(graph, "aten.clone.default"), 1);
  EXPECT_EQ(CountOps(graph, "aten.matmul.default"), 0);
}

TEST(CopyElisionTest, AProductItsPointwiseReaderReadsTransposedIsStoredColumnMajor) {
  // bmm [6, 20, 12] -> view [2, 3, 20, 12] -> permute to [2, 3, 12, 20] -> + c, copied contiguous.
  ir::GraphBuilder b("transposed_read");
  ir::ValueId a = AddInputOk(b, "a", {6, 20, 9});
  ir::ValueId w = AddInputOk(b, "w", {6, 9, 12}, 1);
  ir::ValueId c = AddInputOk(b, "c", {2, 3, 12, 20}, 2);
  ir::ValueId bmm = AddOk(b, "bmm", "aten.bmm.default", {Ref(a), Ref(w)}, {F32({6, 20, 12})});
  ir::ValueId view = AddOk(b, "view", "aten.view.default", {Ref(bmm), Ints({2, 3, 20, 12})}, {F32({2, 3, 20, 12})});
  ir::ValueId permuted = AddOk(b, "permute", "aten.permute.default", {Ref(view), Ints({0, 1, 3, 2})},
                               {Strided({2, 3, 12, 20}, {720, 240, 1, 12})});
  ir::ValueId add = AddOk(b, "add", "aten.add.Tensor", {Ref(permuted), Ref(c)}, {Strided({2, 3, 12, 20}, {720, 240, 1, 12})});
  ir::ValueId clone = AddOk(b, "clone", "aten.clone.default", {Ref(add)}, {F32({2, 3, 12, 20})});
  ir::ValueId flat = AddOk(b, "flat", "aten.view.default", {Ref(clone), Ints({6, 240})}, {F32({6, 240})});
  b.AddOutput({flat, 0});
  ir::Graph graph = Elided(std::move(b).Build());
  EXPECT_EQ(graph.Find("bmm")->type().stride, (std::vector<int64_t>{240, 1, 20}));
  EXPECT_EQ(graph.Find("view")->type().stride, (std::vector<int64_t>{720, 240, 1, 20}));
  EXPECT_EQ(graph.Find("permute")->type().stride, (std::vector<int64_t>{720, 240, 20, 1}));
  EXPECT_TRUE(graph.Find("add")->type().is_contiguous());
  EXPECT_EQ(CountOps(graph, "aten.clone.default"), 0);
}

TEST(CopyElisionTest, ViewStridesFollowPyTorchsRule) {
  // Splitting a column-major matrix's batch dim and dropping a unit dim are views; merging its
  // rows and columns is not.
  EXPECT_EQ(ViewStrides({6, 20, 12}, {240, 1, 20}, {2, 3, 20, 12}), (std::vector<int64_t>{720, 240, 1, 20}));
  EXPECT_EQ(ViewStrides({4, 1, 8}, {8, 8, 1}, {4, 8}), (std::vector<int64_t>{8, 1}));
  EXPECT_EQ(ViewStrides({6, 20, 12}, {240, 1, 20}, {6, 240}), std::nullopt);
  EXPECT_EQ(ViewStrides({2, 3, 4}, {12, 4, 1}, {6, 4}), (std::vector<int64_t>{4, 1}));
}

TEST(CopyElisionTest, APointwiseResultOnlyACopyReadsIsWrittenContiguous) {
  ir::GraphBuilder b("write_contiguous");
  ir::ValueId x = AddInputOk(b, "x", {4, 6});
  ir::ValueId t = AddOk(b, "t", "aten.permute.default", {Ref(x), Ints({1, 0})}, {Strided({6, 4}, {1, 6})});
  ir::ValueId exp = AddOk(b, "exp", "aten.exp.default", {Ref(t)}, {Strided({6, 4}, {1, 6})});
  ir::ValueId clone = AddOk(b, "clone", "aten.clone.default", {Ref(exp)}, {F32({6, 4})});
  ir::ValueId flat = AddOk(b, "flat", "aten.view.default", {Ref(clone), Ints({24})}, {F32({24})});
  b.AddOutput({flat, 0});
  ir::Graph graph = Elided(std::move(b).Build());
  EXPECT_EQ(CountOps(graph, "aten.clone.default"), 0);
  const ir::Value* written = graph.Find("exp");
  ASSERT_NE(written, nullptr);
  EXPECT_TRUE(written->type().is_contiguous());
  const ir::Value* out = graph.Find("flat");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->As<ir::OpNode>().args[0].As<ir::NodeRef>().value, written->id);
}

TEST(CopyElisionTest, APointwiseResultReadByOthersKeepsItsLayoutAndTheCopy) {
  ir::GraphBuilder b("read_twice");
  ir::ValueId x = AddInputOk(b, "x", {4, 6});
  ir::ValueId t = AddOk(b, "t", "aten.permute.default", {Ref(x), Ints({1, 0})}, {Strided({6, 4}, {1, 6})});
  ir::ValueId exp = AddOk(b, "exp", "aten.exp.default", {Ref(t)}, {Strided({6, 4}, {1, 6})});
  ir::ValueId clone = AddOk(b, "clone", "aten.clone.default", {Ref(exp)}, {F32({6, 4})});
  b.AddOutput({clone, 0});
  b.AddOutput({exp, 0});
  ir::Graph graph = Elided(std::move(b).Build());
  EXPECT_EQ(CountOps(graph, "aten.clone.default"), 1);
  EXPECT_FALSE(graph.Find("exp")->type().is_contiguous());
}

}  // namespace
}  // namespace kforge::passes
