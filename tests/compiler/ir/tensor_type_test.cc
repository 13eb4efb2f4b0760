#include "compiler/ir/tensor_type.h"

#include <gtest/gtest.h>

namespace kforge::ir {
namespace {

TEST(DTypeTest, NamesRoundTripAndSizesAreRight) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt64, DType::kInt32,
                      DType::kInt16, DType::kInt8, DType::kUInt8, DType::kBool, DType::kComplex64}) {
    EXPECT_EQ(ParseDType(ToString(dtype)), dtype);
  }
  EXPECT_EQ(ParseDType("float"), std::nullopt);
  EXPECT_EQ(ParseDType("f32"), std::nullopt);
  EXPECT_EQ(ElementSize(DType::kBFloat16), 2);
  EXPECT_EQ(ElementSize(DType::kComplex64), 8);
  EXPECT_STREQ(ShortName(DType::kBFloat16), "bf16");
  EXPECT_TRUE(IsFloatingPoint(DType::kFloat16));
  EXPECT_FALSE(IsFloatingPoint(DType::kBool));
}

TEST(TensorTypeTest, MakeRejectsMalformedTypes) {
  EXPECT_FALSE(TensorType::Make({2, 3}, DType::kFloat32, {3}).ok());
  EXPECT_FALSE(TensorType::Make({2, -1}, DType::kFloat32, {1, 1}).ok());
  EXPECT_FALSE(TensorType::Make({2, 3}, DType::kFloat32, {-3, 1}).ok());
  Result<TensorType> huge = TensorType::Contiguous({1LL << 40, 1LL << 40}, DType::kFloat32);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("overflows"), std::string::npos);
}

TEST(TensorTypeTest, SizesAndContiguity) {
  TensorType matrix = TensorType::Contiguous({8, 64}, DType::kFloat32).value();
  EXPECT_EQ(matrix.stride, (std::vector<int64_t>{64, 1}));
  EXPECT_EQ(matrix.numel(), 512);
  EXPECT_EQ(matrix.bytes(), 2048);
  EXPECT_TRUE(matrix.is_contiguous());
  EXPECT_FALSE(TensorType::Make({64, 32}, DType::kFloat32, {1, 64}).value().is_contiguous());
  // Size-1 dimensions may have any stride, and empty tensors are contiguous, as in PyTorch.
  EXPECT_TRUE(TensorType::Make({8, 1}, DType::kFloat32, {1, 1}).value().is_contiguous());
  EXPECT_TRUE(TensorType::Make({0, 4}, DType::kFloat32, {7, 9}).value().is_contiguous());
  TensorType scalar = TensorType::Contiguous({}, DType::kInt64).value();
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.ToString(), "i64[]");
}

TEST(TensorTypeTest, PrintsStridesOnlyWhenNotContiguous) {
  EXPECT_EQ(TensorType::Contiguous({8, 64}, DType::kFloat32).value().ToString(), "f32[8, 64]");
  EXPECT_EQ(TensorType::Make({64, 32}, DType::kBFloat16, {1, 64}).value().ToString(), "bf16[64, 32]{1, 64}");
}

TEST(BroadcastTest, FollowsNumpyRules) {
  EXPECT_EQ(BroadcastShapes({8, 32}, {32}), (Shape{8, 32}));
  EXPECT_EQ(BroadcastShapes({8, 1}, {1, 32}), (Shape{8, 32}));
  EXPECT_EQ(BroadcastShapes({}, {2, 3}), (Shape{2, 3}));
  EXPECT_EQ(BroadcastShapes({2, 1, 4}, {3, 1}), (Shape{2, 3, 4}));
  EXPECT_EQ(BroadcastShapes({0, 1}, {1, 5}), (Shape{0, 5}));
  EXPECT_EQ(BroadcastShapes({8, 32}, {64}), std::nullopt);
  EXPECT_EQ(BroadcastShapes({2, 3}, {3, 3}), std::nullopt);
}

}  // namespace
}  // namespace kforge::ir
