#include "compiler/ir/op_registry.h"

#include <algorithm>
#include <set>
#include <string>

#include <gtest/gtest.h>

namespace kforge::ir {
namespace {

struct CategoryCase {
  const char* op;
  OpKind kind;
};

TEST(OpRegistryTest, RepresentativeOpsHaveTheirCategory) {
  const CategoryCase cases[] = {
      {"aten.relu.default", OpKind::kPointwise},
      {"aten.add.Tensor", OpKind::kPointwise},
      {"aten.add.Scalar", OpKind::kPointwise},
      {"aten.div.Tensor_mode", OpKind::kPointwise},
      {"aten.where.self", OpKind::kPointwise},
      {"aten.ge.Scalar", OpKind::kPointwise},
      {"aten._to_copy.default", OpKind::kPointwise},
      {"aten.lerp.Tensor", OpKind::kPointwise},
      {"aten.sum.dim_IntList", OpKind::kReduction},
      {"aten.var.correction", OpKind::kReduction},
      {"aten.logsumexp.default", OpKind::kReduction},
      {"aten.addmm.default", OpKind::kMatmul},
      {"aten.bmm.default", OpKind::kMatmul},
      {"aten.convolution.default", OpKind::kConvolution},
      {"aten.max_pool2d_with_indices.default", OpKind::kPooling},
      {"aten._adaptive_avg_pool2d.default", OpKind::kPooling},
      {"aten.native_layer_norm.default", OpKind::kNormalization},
      {"aten._native_batch_norm_legit_no_training.default", OpKind::kNormalization},
      {"aten._softmax.default", OpKind::kNormalization},
      {"aten.permute.default", OpKind::kView},
      {"aten.slice.Tensor", OpKind::kView},
      {"aten.cat.default", OpKind::kDataMovement},
      {"aten.constant_pad_nd.default", OpKind::kDataMovement},
      {"aten.split_with_sizes.default", OpKind::kDataMovement},
      {"aten.cumsum.default", OpKind::kScan},
      {"aten.index.Tensor", OpKind::kIndex},
      {"aten.embedding.default", OpKind::kIndex},
      {"aten.full.default", OpKind::kCreation},
      {"aten.arange.start_step", OpKind::kCreation},
      {"kforge.attention.default", OpKind::kAttention},
  };
  for (const CategoryCase& c : cases) EXPECT_EQ(OpKindOf(c.op), c.kind) << c.op;
}

TEST(OpRegistryTest, UnknownOpsAreOpaqueNotErrors) {
  EXPECT_EQ(FindOp("aten.frobnicate.default"), nullptr);
  EXPECT_EQ(OpKindOf("aten.frobnicate.default"), OpKind::kOpaque);
  EXPECT_EQ(OpKindOf("aten.relu"), OpKind::kOpaque);  // the overload is part of the name
  EXPECT_EQ(OpKindOf(""), OpKind::kOpaque);
}

TEST(OpRegistryTest, NamesAreUniqueAndQualified) {
  std::set<std::string> names;
  for (const OpInfo& info : AllOps()) {
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate " << info.name;
    // ATen's ops, and the kforge ops passes make.
    EXPECT_TRUE(info.name.rfind("aten.", 0) == 0 || info.name.rfind("kforge.", 0) == 0) << info.name;
    EXPECT_EQ(std::count(info.name.begin(), info.name.end(), '.'), 2) << info.name;
    EXPECT_NE(info.kind, OpKind::kOpaque) << info.name;
  }
  EXPECT_GT(names.size(), 150u);
}

TEST(OpRegistryTest, ReductionsKnowWhereDimsAndKeepdimAre) {
  const OpInfo* sum = FindOp("aten.sum.dim_IntList");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->dims.position, 1);
  EXPECT_EQ(sum->keepdim.position, 2);
  const OpInfo* var = FindOp("aten.var.correction");
  ASSERT_NE(var, nullptr);
  EXPECT_EQ(var->keepdim.position, -1);  // keyword-only in the schema
  EXPECT_STREQ(var->keepdim.name, "keepdim");
  EXPECT_FALSE(FindOp("aten.sum.default")->dims.present());
}

TEST(OpRegistryTest, ViewFactsAndTensorCounts) {
  EXPECT_TRUE(FindOp("aten.view.default")->metadata_only);
  EXPECT_TRUE(FindOp("aten.view.default")->preserves_numel);
  EXPECT_FALSE(FindOp("aten.reshape.default")->metadata_only);
  EXPECT_FALSE(FindOp("aten.expand.default")->preserves_numel);
  EXPECT_EQ(FindOp("aten.addmm.default")->tensor_inputs, 3);
  EXPECT_EQ(FindOp("aten.where.self")->tensor_inputs, 3);
  EXPECT_EQ(FindOp("aten.mul.Scalar")->tensor_inputs, 1);
  EXPECT_EQ(FindOp("aten._native_batch_norm_legit_no_training.default")->tensor_inputs, 5);
}

TEST(OpRegistryTest, EveryKindHasADistinctName) {
  std::set<std::string> names;
  for (OpKind kind : {OpKind::kPointwise, OpKind::kReduction, OpKind::kMatmul, OpKind::kConvolution, OpKind::kPooling,
                      OpKind::kNormalization, OpKind::kView, OpKind::kDataMovement, OpKind::kScan, OpKind::kIndex,
                      OpKind::kCreation, OpKind::kOpaque}) {
    EXPECT_TRUE(names.insert(ToString(kind)).second);
  }
}

}  // namespace
}  // namespace kforge::ir
