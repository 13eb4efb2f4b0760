// Library calls written for groups without a kernel; kforge.attention, which has no ATen
// operator, as torch's matmul, softmax and matmul; kforge.rnn_scan as ATen's recurrent op with an
// identity input projection (its halves for two directions).
#include "compiler/codegen/aten_call.h"

#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "compiler/ir/graph_builder.h"
#include "compiler/passes/recurrence.h"
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

// A scan of two lanes over gx [B * T, G * H] (batch-first rows) into [T, B, D * H], with or
// without biases and a cell state: two stacked layers, or a bidirectional layer's two directions.
std::string ScanLine(const std::string& cell, bool directions, bool bias) {
  const int64_t gates = cell == "lstm" ? 4 : cell == "gru" ? 3 : 1;
  ir::GraphBuilder b("hand/scan");
  int input = 0;
  auto add = [&](const std::string& name, ir::Shape shape) { return Ref(AddInputOk(b, name, std::move(shape), input++)); };
  passes::ScanOperands operands;
  operands.gx.push_back(add("gx", {2 * 5, gates * 8}).As<ir::NodeRef>());
  if (directions) {
    operands.gx.push_back(add("gx_back", {2 * 5, gates * 8}).As<ir::NodeRef>());
  } else {
    operands.w_ih.push_back(add("w_ih1", {gates * 8, 8}).As<ir::NodeRef>());
    if (bias) operands.b_ih.push_back(add("b_ih1", {gates * 8}).As<ir::NodeRef>());
  }
  for (const char* lane : {"0", "1"}) {
    operands.w_hh.push_back(add(fmt::format("w_hh{}", lane), {gates * 8, 8}).As<ir::NodeRef>());
    if (bias) operands.b_hh.push_back(add(fmt::format("b_hh{}", lane), {gates * 8}).As<ir::NodeRef>());
  }
  const bool lstm = cell == "lstm";
  operands.h0 = add("h0", {2, 2, 8}).As<ir::NodeRef>();
  if (lstm) operands.c0 = add("c0", {2, 2, 8}).As<ir::NodeRef>();
  std::vector<ir::TensorType> outputs = {F32({5, 2, directions ? 16 : 8}), F32({2, 2, 8})};
  if (lstm) outputs.push_back(F32({2, 2, 8}));
  const passes::RecurrenceAttributes attributes{.cell = cell, .directions = directions, .batch_first = true};
  Result<ir::ValueId> op = b.AddOp("scan", "kforge.rnn_scan.default", operands.ToArgs(), attributes.ToKwargs(), outputs);
  EXPECT_TRUE(op.ok()) << op.status().ToString();
  ir::Graph graph = std::move(b).Build();
  return AtenCallLine(graph.value(*op).As<ir::OpNode>(), [&graph](ir::NodeRef ref) {
    return graph.value(ref.value).name + (ref.value == graph.size() - 1 ? std::to_string(ref.output) : "");
  });
}

TEST(AtenCallTest, StackedLstmScanIsAtenLstmOfTwoLayersWhoseFirstProjectionIsTheIdentity) {
  EXPECT_EQ(ScanLine("lstm", false, true),
            "scan0, scan1, scan2 = torch.ops.aten.lstm.input(gx.view((2, 5, 32)).transpose(0, 1), [h0, c0], "
            "[torch.eye(32, dtype=gx.dtype, device=gx.device), w_hh0, torch.zeros(32, dtype=gx.dtype, device=gx.device), b_hh0, "
            "w_ih1, w_hh1, b_ih1, b_hh1], True, 2, 0.0, False, False, False)");
}

TEST(AtenCallTest, BidirectionalGruScanWithoutBiasesSelectsEachDirectionsHalfOfBothGx) {
  EXPECT_EQ(ScanLine("gru", true, false),
            "scan0, scan1 = torch.ops.aten.gru.input(torch.cat([gx.view((2, 5, 24)).transpose(0, 1), "
            "gx_back.view((2, 5, 24)).transpose(0, 1)], -1), h0, [torch.eye(24, 48, dtype=gx.dtype, device=gx.device), w_hh0, "
            "torch.eye(24, 48, dtype=gx.dtype, device=gx.device).roll(24, 1), w_hh1], False, 1, 0.0, False, True, False)");
}

}  // namespace
}  // namespace kforge::codegen
