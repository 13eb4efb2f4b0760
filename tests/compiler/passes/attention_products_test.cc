// SplitAttentionProducts on a hand-built projection whose split feeds attention, as minGPT's does.
#include "compiler/passes/attention_products.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/ir/verifier.h"
#include "compiler/passes/attention.h"
#include "ir_test_util.h"

namespace kforge::passes {
namespace {

using ir::testing::AddInputOk;
using ir::testing::AddOk;
using ir::testing::CountOps;
using ir::testing::F32;
using ir::testing::Ints;
using ir::testing::Int;
using ir::testing::Ref;
using ir::testing::Strided;

// x [4, 8] times W^T (W [12, 8]) plus b, viewed [1, 4, 12] and split in three chunks of 4, each
// viewed [1, 4, 1, 4] and permuted to [1, 1, 4, 4]: attention's operands in the order `roles`
// gives (the chunk q, k and v are read from). With `chunk_out`, chunk 0 is also an output.
ir::Graph Projection(std::vector<int> roles, bool chunk_out = false) {
  ir::GraphBuilder b("projection");
  const ir::ValueId x = AddInputOk(b, "x", {4, 8});
  const ir::ValueId w = b.AddParameter("w", "proj.weight", ir::ParameterKind::kParameter, F32({12, 8})).value();
  const ir::ValueId bias = b.AddParameter("b", "proj.bias", ir::ParameterKind::kParameter, F32({12})).value();
  const ir::ValueId wt = AddOk(b, "wt", "aten.permute.default", {Ref(w), Ints({1, 0})}, {Strided({8, 12}, {1, 8})});
  const ir::ValueId addmm = AddOk(b, "addmm", "aten.addmm.default", {Ref(bias), Ref(x), Ref(wt)}, {F32({4, 12})});
  const ir::ValueId viewed = AddOk(b, "viewed", "aten.view.default", {Ref(addmm), Ints({1, 4, 12})}, {F32({1, 4, 12})});
  const ir::TensorType chunk = Strided({1, 4, 4}, {48, 12, 1});
  const ir::ValueId split =
      AddOk(b, "split", "aten.split_with_sizes.default", {Ref(viewed), Ints({4, 4, 4}), Int(2)}, {chunk, chunk, chunk});
  std::vector<ir::ValueId> heads;
  for (int c = 0; c < 3; ++c) {
    const ir::ValueId v = AddOk(b, "v" + std::to_string(c), "aten.view.default", {Ref(split, c), Ints({1, 4, 1, 4})},
                                {Strided({1, 4, 1, 4}, {48, 12, 4, 1})});
    heads.push_back(AddOk(b, "h" + std::to_string(c), "aten.permute.default", {Ref(v), Ints({0, 2, 1, 3})},
                          {Strided({1, 1, 4, 4}, {48, 4, 12, 1})}));
  }
  AttentionAttributes attributes;
  attributes.scale = 0.5;
  Result<ir::ValueId> attention =
      b.AddOp("attention", "kforge.attention.default",
              {Ref(heads[roles[0]]), Ref(heads[roles[1]]), Ref(heads[roles[2]]), ir::Argument{ir::NoneArg{}}}, attributes.ToKwargs(),
              {F32({1, 1, 4, 4})});
  EXPECT_TRUE(attention.ok()) << attention.status().ToString();
  b.AddOutput({*attention, 0});
  if (chunk_out) b.AddOutput({split, 0});
  return std::move(b).Build();
}

const ir::TensorType& TypeOf(const ir::Graph& graph, const std::string& name) { return graph.Find(name)->type(); }

TEST(AttentionProductsTest, QAndKTakeOneProductAndVItsOwnWithTheViewsRetyped) {
  Result<ir::Graph> split = SplitAttentionProducts(Projection({0, 1, 2}));
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  ASSERT_TRUE(ir::VerifyGraph(*split).ok());
  EXPECT_EQ(CountOps(*split, "aten.addmm.default"), 2);
  EXPECT_EQ(split->Find("addmm"), nullptr);
  // Columns 0-7 (q and k) of W and b, then 8-11 (v).
  EXPECT_EQ(TypeOf(*split, "addmm_0_8"), F32({4, 8}));
  EXPECT_EQ(TypeOf(*split, "addmm_0_8_weight"), Strided({8, 8}, {1, 8}));
  EXPECT_EQ(TypeOf(*split, "addmm_8_12"), F32({4, 4}));
  EXPECT_EQ(TypeOf(*split, "addmm_8_12_bias"), F32({4}));
  // q and k are the halves of the first product, rows 8 apart; v is its own, rows 4 apart.
  EXPECT_EQ(TypeOf(*split, "h0"), Strided({1, 1, 4, 4}, {32, 4, 8, 1}));
  EXPECT_EQ(TypeOf(*split, "h1"), Strided({1, 1, 4, 4}, {32, 4, 8, 1}));
  EXPECT_EQ(TypeOf(*split, "h2"), Strided({1, 1, 4, 4}, {16, 4, 4, 1}));
}

TEST(AttentionProductsTest, ChunksOfOneRoleApartTakeAProductEach) {
  // q, v, k: three runs of one chunk, no split left.
  Result<ir::Graph> split = SplitAttentionProducts(Projection({0, 2, 1}));
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_EQ(CountOps(*split, "aten.addmm.default"), 3);
  EXPECT_EQ(CountOps(*split, "aten.split_with_sizes.default"), 0);
  EXPECT_EQ(TypeOf(*split, "h1"), Strided({1, 1, 4, 4}, {16, 4, 4, 1}));
}

TEST(AttentionProductsTest, LeavesAProjectionWithoutBothRolesOrWithAChunkItCannotRetype) {
  // q, k and v all from chunk 0: one role.
  Result<ir::Graph> one_role = SplitAttentionProducts(Projection({0, 0, 0}));
  ASSERT_TRUE(one_role.ok());
  EXPECT_NE(one_role->Find("addmm"), nullptr);
  // A chunk that is also a graph output keeps its layout.
  Result<ir::Graph> output = SplitAttentionProducts(Projection({0, 1, 2}, /*chunk_out=*/true));
  ASSERT_TRUE(output.ok());
  EXPECT_NE(output->Find("addmm"), nullptr);
  EXPECT_EQ(CountOps(*output, "aten.addmm.default"), 1);
}

}  // namespace
}  // namespace kforge::passes
