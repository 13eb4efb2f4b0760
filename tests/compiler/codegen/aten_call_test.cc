// Library calls written for groups without a kernel; kforge.attention, which has no ATen
// operator, as torch's matmul, softmax and matmul; kforge.rnn_scan as ATen's recurrent op with an
// identity input projection.
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

// A scan over gx [B * T, G * H] (batch-first rows) into [T, B, H], with or without biases and a
// cell state.
std::string ScanLine(const std::string& cell, bool reverse, bool bias) {
  const int64_t gates = cell == "lstm" ? 4 : cell == "gru" ? 3 : 1;
  ir::GraphBuilder b("hand/scan");
  ir::ValueId gx = AddInputOk(b, "gx", {2 * 5, gates * 8}, 0), w_hh = AddInputOk(b, "w_hh", {gates * 8, 8}, 1);
  ir::ValueId b_hh = AddInputOk(b, "b_hh", {gates * 8}, 2), h0 = AddInputOk(b, "h0", {2, 8}, 3), c0 = AddInputOk(b, "c0", {2, 8}, 4);
  const bool lstm = cell == "lstm";
  std::vector<ir::TensorType> outputs = {F32({5, 2, 8}), F32({2, 8})};
  if (lstm) outputs.push_back(F32({2, 8}));
  Result<ir::ValueId> op =
      b.AddOp("scan", "kforge.rnn_scan.default",
              {Ref(gx), Ref(w_hh), bias ? Ref(b_hh) : ir::Argument{ir::NoneArg{}}, Ref(h0), lstm ? Ref(c0) : ir::Argument{ir::NoneArg{}}},
              {{"cell", ir::Argument{cell}}, {"reverse", ir::Argument{reverse}}, {"batch_first", ir::Argument{true}}}, outputs);
  EXPECT_TRUE(op.ok()) << op.status().ToString();
  ir::Graph graph = std::move(b).Build();
  return AtenCallLine(graph.value(*op).As<ir::OpNode>(), [&graph](ir::NodeRef ref) {
    return graph.value(ref.value).name + (ref.value == graph.size() - 1 ? std::to_string(ref.output) : "");
  });
}

TEST(AtenCallTest, ReversedLstmScanIsAtenLstmOverTheFlippedSteps) {
  EXPECT_EQ(ScanLine("lstm", true, true),
            "scan0, scan1, scan2 = (lambda o, h, c: (o.flip(0), h[0], c[0]))(*torch.ops.aten.lstm.input(gx.view((2, 5, 32))"
            ".transpose(0, 1).flip(0), [h0[None], c0[None]], [torch.eye(32, dtype=gx.dtype, device=gx.device), w_hh, "
            "torch.zeros(32, dtype=gx.dtype, device=gx.device), b_hh], True, 1, 0.0, False, False, False))");
}

TEST(AtenCallTest, GruScanWithoutBiasesPassesTwoParameters) {
  EXPECT_EQ(ScanLine("gru", false, false),
            "scan0, scan1 = (lambda o, h: (o, h[0]))(*torch.ops.aten.gru.input(gx.view((2, 5, 24)).transpose(0, 1), h0[None], "
            "[torch.eye(24, dtype=gx.dtype, device=gx.device), w_hh], False, 1, 0.0, False, False, False))");
}

}  // namespace
}  // namespace kforge::codegen
