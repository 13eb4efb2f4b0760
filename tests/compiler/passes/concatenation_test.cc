// ConcatenateInPlace and the families it lays out, on hand-built graphs.
#include "compiler/passes/concatenation.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ir_test_util.h"

namespace kforge::passes {
namespace {

using ir::testing::AddInputOk;
using ir::testing::AddOk;
using ir::testing::F32;
using ir::testing::Int;
using ir::testing::Ints;
using ir::testing::Ref;

ir::Argument List(std::vector<ir::ValueId> ids) {
  ir::TensorList list;
  for (ir::ValueId id : ids) list.push_back(ir::NodeRef{id, 0});
  return ir::Argument{std::move(list)};
}

// [2, c, 4, 4] from x through a 1x1 convolution of c output channels.
ir::ValueId Conv(ir::GraphBuilder& b, const std::string& name, ir::ValueId x, int64_t in, int64_t out) {
  const ir::ValueId w = b.AddParameter("w_" + name, name + ".weight", ir::ParameterKind::kParameter, F32({out, in, 1, 1})).value();
  return AddOk(b, name, "aten.convolution.default",
               {Ref(x), Ref(w), ir::Argument{ir::NoneArg{}}, Ints({1, 1}), Ints({0, 0}), Ints({1, 1}), ir::Argument{false},
                Ints({0, 0}), Int(1)},
               {F32({2, out, 4, 4})});
}


ir::Graph DenseBlock(const std::string& reader_of_first_cat = "aten.relu.default", bool return_first_cat = false) {
  ir::GraphBuilder b("dense");
  const ir::ValueId x = AddInputOk(b, "x", {2, 3, 4, 4});
  const ir::ValueId f1 = Conv(b, "f1", x, 3, 2);
  const ir::ValueId cat = AddOk(b, "cat", "aten.cat.default", {List({x, f1}), Int(1)}, {F32({2, 5, 4, 4})});
  const ir::ValueId read = AddOk(b, "read", reader_of_first_cat, {Ref(cat)}, {F32({2, 5, 4, 4})});
  const ir::ValueId f2 = Conv(b, "f2", read, 5, 2);
  const ir::ValueId cat1 = AddOk(b, "cat1", "aten.cat.default", {List({x, f1, f2}), Int(-3)}, {F32({2, 7, 4, 4})});
  b.AddOutput({cat1, 0});
  if (return_first_cat) b.AddOutput({cat, 0});
  return std::move(b).Build();
}

const ir::TensorType& TypeOf(const ir::Graph& graph, const std::string& name) { return graph.Find(name)->type(); }

TEST(ConcatenationTest, ADenseBlocksCatsAreLeadingSlicesOfTheLastAndItsConvolutionsWriteTheirSlices) {
  ir::Graph graph = DenseBlock();
  std::vector<Concatenation> found = FindConcatenations(graph);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].buffer, graph.Find("cat1")->id);
  EXPECT_EQ(found[0].dim, 1);  // -3 of rank 4
  EXPECT_EQ(found[0].members, (std::vector<ir::ValueId>{graph.Find("cat")->id, graph.Find("cat1")->id}));
  ASSERT_EQ(found[0].parts.size(), 3u);
  EXPECT_FALSE(found[0].parts[0].slot);  // x, a graph input: copied in
  EXPECT_TRUE(found[0].parts[1].slot);
  EXPECT_TRUE(found[0].parts[2].slot);
  EXPECT_EQ(found[0].parts[1].offset, 3);
  EXPECT_EQ(found[0].parts[2].offset, 5);
  EXPECT_EQ(found[0].parts[2].size, 2);

  // Nothing is laid out before the pass; after it, the members and slots carry the buffer's strides.
  EXPECT_TRUE(ConcatenationsInPlace(graph).empty());
  Result<ir::Graph> laid_out = ConcatenateInPlace(graph);
  ASSERT_TRUE(laid_out.ok()) << laid_out.status().ToString();
  const std::vector<int64_t> buffer = {112, 16, 4, 1};
  EXPECT_EQ(TypeOf(*laid_out, "cat").stride, buffer);
  EXPECT_EQ(TypeOf(*laid_out, "f1").stride, buffer);
  EXPECT_EQ(TypeOf(*laid_out, "f2").stride, buffer);
  EXPECT_TRUE(TypeOf(*laid_out, "cat1").is_contiguous());
  EXPECT_TRUE(TypeOf(*laid_out, "x").is_contiguous());
  std::vector<Concatenation> in_place = ConcatenationsInPlace(*laid_out);
  ASSERT_EQ(in_place.size(), 1u);
  EXPECT_EQ(in_place[0].members.size(), 2u);
  EXPECT_TRUE(in_place[0].parts[1].slot && in_place[0].parts[2].slot);
}

// A cat a matrix product reads (its kernel may assume what strides it meets) or the graph returns
// stays a cat of its own: it copies, and so the values it holds are no slots either.
TEST(ConcatenationTest, ACatReadByAProductOrReturnedStaysACopy) {
  for (bool returned : {false, true}) {
    ir::Graph graph = DenseBlock(returned ? "aten.relu.default" : "aten.mm.default", returned);
    std::vector<Concatenation> found = FindConcatenations(graph);
    ASSERT_EQ(found.size(), 1u) << returned;
    EXPECT_EQ(found[0].members, (std::vector<ir::ValueId>{graph.Find("cat1")->id}));
    EXPECT_FALSE(found[0].parts[1].slot);  // f1: the first cat reads it too
    EXPECT_TRUE(found[0].parts[2].slot);
    Result<ir::Graph> laid_out = ConcatenateInPlace(graph);
    ASSERT_TRUE(laid_out.ok());
    EXPECT_TRUE(TypeOf(*laid_out, "cat").is_contiguous());
    EXPECT_TRUE(TypeOf(*laid_out, "f1").is_contiguous());
  }
}

// A part that anything besides the family's cats reads and one the cat holds
// twice are copied in; with no slot and one member there is nothing to lay out.
TEST(ConcatenationTest, PartsReadElsewhereAndRepeatsAreCopiedIn) {
  ir::GraphBuilder b("parts");
  const ir::ValueId x = AddInputOk(b, "x", {2, 3, 4, 4});
  const ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(x)}, {F32({2, 3, 4, 4})});
  const ir::ValueId sum = AddOk(b, "sum", "aten.sum.default", {Ref(relu)}, {F32({})});
  const ir::ValueId tanh = AddOk(b, "tanh", "aten.tanh.default", {Ref(x)}, {F32({2, 3, 4, 4})});
  const ir::ValueId twice = AddOk(b, "twice", "aten.cat.default", {List({relu, tanh, tanh}), Int(1)}, {F32({2, 9, 4, 4})});
  b.AddOutput({twice, 0});
  b.AddOutput({sum, 0});
  ir::Graph graph = std::move(b).Build();
  EXPECT_TRUE(FindConcatenations(graph).empty());

  ir::GraphBuilder c("slot");
  const ir::ValueId y = AddInputOk(c, "y", {2, 3, 4, 4});
  const ir::ValueId exp = AddOk(c, "exp", "aten.exp.default", {Ref(y)}, {F32({2, 3, 4, 4})});
  const ir::ValueId cat = AddOk(c, "cat", "aten.cat.default", {List({y, exp})}, {F32({4, 3, 4, 4})});  // dim 0 by default
  c.AddOutput({cat, 0});
  std::vector<Concatenation> found = FindConcatenations(std::move(c).Build());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].dim, 0);
  EXPECT_FALSE(found[0].parts[0].slot);
  EXPECT_TRUE(found[0].parts[1].slot);
  EXPECT_EQ(found[0].parts[1].offset, 2);
}

}  // namespace
}  // namespace kforge::passes
