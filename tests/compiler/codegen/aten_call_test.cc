// Library calls written for groups without a kernel; kforge.attention, which has no ATen
// operator, as torch's matmul, softmax and matmul.
#include "compiler/codegen/aten_call.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/ir/graph_builder.h"
#include "ir_test_util.h"

namespace kforge::codegen {
namespace {

using ir::testing::AddInputOk;
using ir::testing::F32;
using ir::testing::Ref;

std::string AttentionLine(std::vector<ir::NamedArgument> kwargs, bool bias) {
  ir::GraphBuilder b("hand/attention");
  ir::ValueId q = AddInputOk(b, "q", {2, 3, 5, 8}, 0), k = AddInputOk(b, "k", {2, 3, 5, 8}, 1);
  ir::ValueId v = AddInputOk(b, "v", {2, 3, 5, 8}, 2), mask = AddInputOk(b, "mask", {5, 5}, 3);
  Result<ir::ValueId> op = b.AddOp("attention", "kforge.attention.default",
                                   {Ref(q), Ref(k), Ref(v), bias ? Ref(mask) : ir::Argument{ir::NoneArg{}}}, std::move(kwargs),
                                   {F32({2, 3, 5, 8})});
  EXPECT_TRUE(op.ok()) << op.status().ToString();
  b.AddOutput({*op, 0});
  ir::Graph graph = std::move(b).Build();
  return AtenCallLine(graph.value(*op).As<ir::OpNode>(), [&graph](ir::NodeRef ref) { return graph.value(ref.value).name; });
}

TEST(AtenCallTest, AttentionWithABiasIsMatmulSoftmaxMatmul) {
  EXPECT_EQ(AttentionLine({{"scale", ir::Argument{0.5}}, {"causal", ir::Argument{ir::NoneArg{}}}, {"empty_rows", ir::Argument{std::string("nan")}}}, true),
            "attention = torch.matmul(torch.softmax(((torch.matmul(q, k.transpose(-2, -1)) * 0.5) + mask), -1), v)");
}

TEST(AtenCallTest, CausalAttentionMasksAboveTheBandAndZeroesEmptyRows) {
  EXPECT_EQ(AttentionLine({{"scale", ir::Argument{0.25}}, {"causal", ir::Argument{int64_t{0}}}, {"empty_rows", ir::Argument{std::string("zero")}}}, false),
            "attention = torch.matmul(torch.nan_to_num(torch.softmax((torch.matmul(q, k.transpose(-2, -1)) * 0.25).masked_fill("
            "torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).triu(1), float(\"-inf\")), -1), nan=0.0), v)");
}

}  // namespace
}  // namespace kforge::codegen
