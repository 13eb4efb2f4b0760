// The pass pipeline and dead-code elimination on small hand-built graphs.
#include "compiler/passes/pipeline.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "compiler/passes/dead_code.h"
#include "ir_test_util.h"

namespace kforge::passes {
namespace {

using ir::testing::AddInputOk;
using ir::testing::AddOk;
using ir::testing::F32;
using ir::testing::Ref;

// x -> neg -> relu (output), plus exp(x) and exp(exp(x)) that nothing uses.
ir::Graph GraphWithDeadOps() {
  ir::GraphBuilder b("dead");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId neg = AddOk(b, "neg", "aten.neg.default", {Ref(x)}, {F32({4, 8})});
  ir::ValueId exp = AddOk(b, "exp", "aten.exp.default", {Ref(x)}, {F32({4, 8})});
  AddOk(b, "exp2", "aten.exp.default", {Ref(exp)}, {F32({4, 8})});
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(neg)}, {F32({4, 8})});
  b.AddOutput({relu, 0});
  return std::move(b).Build();
}

TEST(DeadCodeTest, OpsThatReachNoOutputAreRemovedAndTheRestKept) {
  auto graph = RemoveDeadCode(GraphWithDeadOps());
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  EXPECT_NE(graph->Find("x"), nullptr);
  EXPECT_NE(graph->Find("neg"), nullptr);
  EXPECT_NE(graph->Find("relu"), nullptr);
  EXPECT_EQ(graph->Find("exp"), nullptr);
  EXPECT_EQ(graph->Find("exp2"), nullptr);
  ASSERT_EQ(graph->outputs().size(), 1u);
  EXPECT_EQ(graph->value(graph->outputs()[0].value).name, "relu");
}

TEST(DeadCodeTest, UnusedInputsStayBecauseTheyAreTheSignature) {
  ir::GraphBuilder b("unused_input");
  ir::ValueId x = AddInputOk(b, "x", {2});
  AddInputOk(b, "y", {2}, 1);
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(x)}, {F32({2})});
  b.AddOutput({relu, 0});
  auto graph = RemoveDeadCode(std::move(b).Build());
  ASSERT_TRUE(graph.ok());
  EXPECT_NE(graph->Find("y"), nullptr);
}

TEST(DeadCodeTest, WhatAMutationWritesBackIsLive) {
  // steps + 1 reaches no output, only the buffer forward() updates: it stays; its sibling goes.
  ir::GraphBuilder b("mutation");
  ir::ValueId x = AddInputOk(b, "x", {4});
  ir::TensorType count = ir::TensorType::Contiguous({}, ir::DType::kInt64).value();
  ir::ValueId steps = b.AddParameter("steps", "m.steps", ir::ParameterKind::kBuffer, count).value();
  ir::ValueId step = AddOk(b, "step", "aten.add.Tensor", {Ref(steps), {int64_t{1}}}, {count});
  AddOk(b, "twice", "aten.mul.Tensor", {Ref(step), {int64_t{2}}}, {count});
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(x)}, {F32({4})});
  b.AddOutput({relu, 0});
  ASSERT_TRUE(b.AddMutation("m.steps", {step, 0}).ok());
  auto graph = RemoveDeadCode(std::move(b).Build());
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  EXPECT_EQ(graph->Find("twice"), nullptr);
  ASSERT_NE(graph->Find("step"), nullptr);
  EXPECT_EQ(graph->mutations(), (std::vector<ir::Mutation>{{"m.steps", graph->Find("step")->ref()}}));
}

TEST(PipelineTest, RunsEveryPassInOrderAndPlansTheLiveGraph) {
  auto result = RunPipeline(GraphWithDeadOps(), PipelineOptions{});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->passes.size(), PassNames().size());
  EXPECT_EQ(result->passes[0].name, "recurrence");
  EXPECT_EQ(result->passes[1].name, "attention");
  EXPECT_EQ(result->passes[2].name, "attention_products");
  EXPECT_EQ(result->passes[3].name, "decompose");
  EXPECT_EQ(result->passes[4].name, "copies");
  EXPECT_EQ(result->passes[5].name, "epilogues");
  EXPECT_EQ(result->passes[6].name, "dead_code");
  EXPECT_TRUE(result->passes[6].ran);
  EXPECT_EQ(result->passes[6].values_before - result->passes[6].values_after, 2);
  EXPECT_EQ(result->passes[7].name, "concatenations");
  ASSERT_EQ(result->plan.groups.size(), 1u);  // neg and relu fused; the dead exps are gone
  EXPECT_EQ(result->plan.groups[0].nodes.size(), 2u);
}

TEST(PipelineTest, TrainingBatchNormReadsItsInputTwiceAndWritesOnlyItsOutput) {
  // Batch statistics from var_mean over each (image, channel) row, merged over the images in a
  // small kernel; then one pointwise pass normalizes x itself: no x - mean of the full shape is
  // materialized between them.
  ir::GraphBuilder b("batch_norm");
  ir::ValueId x = AddInputOk(b, "x", {4, 3, 8, 8});
  std::vector<ir::Argument> args = {Ref(x)};
  for (const char* name : {"weight", "bias", "running_mean", "running_var"}) {
    args.push_back(Ref(AddInputOk(b, name, {3}, static_cast<int64_t>(args.size()))));
  }
  args.insert(args.end(), {ir::Argument{true}, ir::Argument{0.1}, ir::Argument{1e-5}});
  ir::ValueId bn = AddOk(b, "bn", "aten._native_batch_norm_legit_functional.default", args,
                         {F32({4, 3, 8, 8}), F32({3}), F32({3}), F32({3}), F32({3})});
  b.AddOutput({bn, 0});
  auto result = RunPipeline(std::move(b).Build(), PipelineOptions{});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const ir::Graph& graph = result->graph;
  std::vector<FusionGroup::Kind> kinds;
  int full_reads = 0;
  for (const FusionGroup& group : result->plan.groups) {
    if (group.kind == FusionGroup::Kind::kView) continue;
    kinds.push_back(group.kind);
    for (const ir::NodeRef& ref : GroupInputs(graph, group)) full_reads += graph.TypeOf(ref)->numel() == 4 * 3 * 8 * 8;
    for (const ir::NodeRef& ref : GroupOutputs(graph, group)) {
      if (graph.TypeOf(ref)->numel() == 4 * 3 * 8 * 8) {
        EXPECT_EQ(group.kind, FusionGroup::Kind::kPointwise);
      }
    }
  }
  EXPECT_EQ(kinds, (std::vector<FusionGroup::Kind>{FusionGroup::Kind::kReduction, FusionGroup::Kind::kReduction,
                                                   FusionGroup::Kind::kPointwise}));
  EXPECT_EQ(full_reads, 2);
  EXPECT_EQ(graph.value(result->plan.groups[0].nodes.front()).As<ir::OpNode>().op, "aten.var_mean.correction");
}

// Group norm over [2, 8, 4, 4] in 2 groups, then tanh of it plus relu(r). The tanh runs in the
// norm's grouped view and joins its kernel; the add does not (its other operand is relu's, which
// would leave its own kernel), so relu and add stay one pointwise group over x's shape.
TEST(PipelineTest, OpsAfterAGroupNormJoinItsKernelUnlessAnOperandIsComputedByAPointwiseOp) {
  ir::GraphBuilder b("group_norm");
  ir::ValueId x = AddInputOk(b, "x", {2, 8, 4, 4});
  ir::ValueId weight = AddInputOk(b, "weight", {8}, 1);
  ir::ValueId bias = AddInputOk(b, "bias", {8}, 2);
  ir::ValueId r = AddInputOk(b, "r", {2, 8, 4, 4}, 3);
  ir::ValueId gn = AddOk(b, "gn", "aten.native_group_norm.default",
                         {Ref(x), Ref(weight), Ref(bias), {int64_t{2}}, {int64_t{8}}, {int64_t{16}}, {int64_t{2}}, {1e-5}},
                         {F32({2, 8, 4, 4}), F32({2, 2}), F32({2, 2})});
  ir::ValueId tanh = AddOk(b, "tanh", "aten.tanh.default", {ir::Argument(ir::NodeRef{gn, 0})}, {F32({2, 8, 4, 4})});
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(r)}, {F32({2, 8, 4, 4})});
  ir::ValueId add = AddOk(b, "add", "aten.add.Tensor", {Ref(tanh), Ref(relu)}, {F32({2, 8, 4, 4})});
  b.AddOutput({add, 0});
  auto result = RunPipeline(std::move(b).Build(), PipelineOptions{});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const ir::Graph& graph = result->graph;
  std::vector<std::pair<FusionGroup::Kind, std::vector<std::string>>> computed;
  for (const FusionGroup& group : result->plan.groups) {
    if (group.kind == FusionGroup::Kind::kView) continue;
    std::vector<std::string> names;
    for (ir::ValueId id : group.nodes) names.push_back(graph.value(id).name);
    computed.push_back({group.kind, names});
  }
  ASSERT_EQ(computed.size(), 2u);
  EXPECT_EQ(computed[0].first, FusionGroup::Kind::kReduction);
  EXPECT_EQ(computed[0].second.back(), "tanh");
  EXPECT_EQ(graph.TypeOf(graph.Find("tanh")->ref())->shape, (ir::Shape{2, 2, 4, 16}));  // the grouped view
  EXPECT_EQ(computed[1].first, FusionGroup::Kind::kPointwise);
  EXPECT_EQ(computed[1].second, (std::vector<std::string>{"relu", "add"}));
}

TEST(PipelineTest, TrainingBatchNormUpdatesItsRunningStatisticsInItsStatisticsKernel) {
  // The running mean and variance forward() writes back are computed per channel where the batch
  // statistics are merged over the images: no kernel of their own, and x is still read twice.
  ir::GraphBuilder b("batch_norm");
  ir::ValueId x = AddInputOk(b, "x", {4, 3, 8, 8});
  std::vector<ir::Argument> args = {Ref(x)};
  for (const char* name : {"weight", "bias", "running_mean", "running_var"}) {
    auto kind = args.size() < 3 ? ir::ParameterKind::kParameter : ir::ParameterKind::kBuffer;
    args.push_back(Ref(b.AddParameter(name, std::string("bn.") + name, kind, F32({3})).value()));
  }
  args.insert(args.end(), {ir::Argument{true}, ir::Argument{0.1}, ir::Argument{1e-5}});
  ir::ValueId bn = AddOk(b, "bn", "aten._native_batch_norm_legit_functional.default", args,
                         {F32({4, 3, 8, 8}), F32({3}), F32({3}), F32({3}), F32({3})});
  b.AddOutput({bn, 0});
  ASSERT_TRUE(b.AddMutation("bn.running_mean", {bn, 3}).ok());
  ASSERT_TRUE(b.AddMutation("bn.running_var", {bn, 4}).ok());
  auto result = RunPipeline(std::move(b).Build(), PipelineOptions{});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const ir::Graph& graph = result->graph;
  ASSERT_EQ(graph.mutations().size(), 2u);
  std::vector<const FusionGroup*> kernels;
  std::vector<FusionGroup::Kind> kinds;
  int full_reads = 0;
  for (const FusionGroup& group : result->plan.groups) {
    if (group.kind == FusionGroup::Kind::kView) continue;
    kernels.push_back(&group);
    kinds.push_back(group.kind);
    for (const ir::NodeRef& ref : GroupInputs(graph, group)) full_reads += graph.TypeOf(ref)->numel() == 4 * 3 * 8 * 8;
  }
  ASSERT_EQ(kinds, (std::vector<FusionGroup::Kind>{FusionGroup::Kind::kReduction, FusionGroup::Kind::kReduction,
                                                   FusionGroup::Kind::kPointwise}));
  EXPECT_EQ(full_reads, 2);
  // Each new value is a view of an output of the second (merging) statistics kernel.
  std::vector<ir::NodeRef> merged = GroupOutputs(graph, *kernels[1]);
  for (const ir::Mutation& mutation : graph.mutations()) {
    const auto& view = graph.value(mutation.value.value).As<ir::OpNode>();
    EXPECT_EQ(view.op, "aten.view.default") << mutation.target;
    EXPECT_NE(std::find(merged.begin(), merged.end(), view.args[0].As<ir::NodeRef>()), merged.end()) << mutation.target;
  }
}

ir::ValueId AddTypedInput(ir::GraphBuilder& b, const std::string& name, ir::Shape shape, ir::DType dtype, int64_t index) {
  Result<ir::ValueId> id = b.AddInput(name, index, ir::TensorType::Contiguous(std::move(shape), dtype).value());
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return id.ok() ? *id : ir::kNoValue;
}

// The ops of a pipeline result's graph, by name.
std::vector<std::string> Ops(const PipelineResult& result) {
  std::vector<std::string> ops;
  for (const ir::Value& value : result.graph) {
    if (const auto* op = value.TryAs<ir::OpNode>()) ops.push_back(op->op);
  }
  return ops;
}

TEST(PipelineTest, TargetLogProbabilityIsGatheredFromTheLogitsInTheRowKernel) {
  // gather(log_softmax(x), 1, index) = x[index] - max - log(sum(exp(x - max))): one row kernel,
  // and the full log-softmax is never formed.
  ir::GraphBuilder b("nll");
  ir::ValueId x = AddInputOk(b, "x", {4, 16});
  ir::ValueId index = AddTypedInput(b, "index", {4, 1}, ir::DType::kInt64, 1);
  ir::ValueId log_softmax = AddOk(b, "ls", "aten._log_softmax.default", {Ref(x), {int64_t{1}}, {false}}, {F32({4, 16})});
  ir::ValueId picked = AddOk(b, "picked", "aten.gather.default", {Ref(log_softmax), {int64_t{1}}, Ref(index)}, {F32({4, 1})});
  b.AddOutput({picked, 0});
  auto result = RunPipeline(std::move(b).Build(), PipelineOptions{});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->plan.groups.size(), 1u);
  EXPECT_EQ(result->plan.groups[0].kind, FusionGroup::Kind::kReduction);
  for (const ir::NodeRef& ref : GroupOutputs(result->graph, result->plan.groups[0])) {
    EXPECT_EQ(result->graph.TypeOf(ref)->numel(), 4);
  }
  std::vector<std::string> ops = Ops(*result);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "aten.gather.default"), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "aten._log_softmax.default"), 0);
}

TEST(PipelineTest, CountOfTrueIsAFloatSumCastBack) {
  ir::GraphBuilder b("count");
  ir::ValueId keep = AddTypedInput(b, "keep", {64}, ir::DType::kBool, 0);
  ir::ValueId count = AddOk(b, "count", "aten.sum.dim_IntList", {Ref(keep), {ir::IntList{}}},
                            {ir::TensorType::Contiguous({}, ir::DType::kInt64).value()});
  b.AddOutput({count, 0});
  auto result = RunPipeline(std::move(b).Build(), PipelineOptions{});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->plan.groups.size(), 1u);
  EXPECT_EQ(result->plan.groups[0].kind, FusionGroup::Kind::kReduction);
  EXPECT_EQ(Ops(*result), (std::vector<std::string>{"aten._to_copy.default", "aten.sum.dim_IntList", "aten._to_copy.default"}));
  EXPECT_EQ(result->graph.TypeOf(result->graph.outputs()[0])->dtype, ir::DType::kInt64);
}

TEST(PipelineTest, AReturnedCopyOfAComputedResultIsTheResultButACopyOfAnInputStays) {
  // A dropout of p = 0 after the last layer is a clone of its output: returned as it is. A clone
  // of the input, or of a value another output views, would make outputs alias: kept.
  auto clones = [](bool of_input, bool also_returned) {
    ir::GraphBuilder b("clones");
    ir::ValueId x = AddInputOk(b, "x", {4, 8});
    ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(x)}, {F32({4, 8})});
    ir::ValueId view = AddOk(b, "view", "aten.view.default", {Ref(of_input ? x : relu), {ir::IntList{32}}}, {F32({32})});
    ir::ValueId clone = AddOk(b, "clone", "aten.clone.default", {Ref(view)}, {F32({32})});
    b.AddOutput({clone, 0});
    if (also_returned) b.AddOutput({relu, 0});
    auto result = RunPipeline(std::move(b).Build(), PipelineOptions{});
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return Ops(*result);
  };
  std::vector<std::string> dropped = clones(false, false);
  EXPECT_EQ(std::count(dropped.begin(), dropped.end(), "aten.clone.default"), 0);
  std::vector<std::string> of_input = clones(true, false);
  EXPECT_EQ(std::count(of_input.begin(), of_input.end(), "aten.clone.default"), 1);
  std::vector<std::string> aliased = clones(false, true);
  EXPECT_EQ(std::count(aliased.begin(), aliased.end(), "aten.clone.default"), 1);
}

// x * tanh(where(x > T, x, log1p(exp(x)))), mish as captured, with the softplus threshold T.
ir::Graph CapturedMish(int64_t threshold) {
  ir::GraphBuilder b("mish");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId exp = AddOk(b, "exp", "aten.exp.default", {Ref(x)}, {F32({4, 8})});
  ir::ValueId log1p = AddOk(b, "log1p", "aten.log1p.default", {Ref(exp)}, {F32({4, 8})});
  ir::ValueId gt = AddOk(b, "gt", "aten.gt.Scalar", {Ref(x), {threshold}},
                         {ir::TensorType::Contiguous({4, 8}, ir::DType::kBool).value()});
  ir::ValueId where = AddOk(b, "where", "aten.where.self", {Ref(gt), Ref(x), Ref(log1p)}, {F32({4, 8})});
  ir::ValueId tanh = AddOk(b, "tanh", "aten.tanh.default", {Ref(where)}, {F32({4, 8})});
  ir::ValueId mul = AddOk(b, "mul", "aten.mul.Tensor", {Ref(x), Ref(tanh)}, {F32({4, 8})});
  b.AddOutput({mul, 0});
  return std::move(b).Build();
}

TEST(PipelineTest, CapturedMishIsMishAgain) {
  auto result = RunPipeline(CapturedMish(20), PipelineOptions{});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(Ops(*result), (std::vector<std::string>{"aten.mish.default"}));
  // Below 15 the threshold changes tanh's value (tanh(x) is not tanh(softplus(x)) in fp32 there).
  auto near_miss = RunPipeline(CapturedMish(5), PipelineOptions{});
  ASSERT_TRUE(near_miss.ok()) << near_miss.status().ToString();
  std::vector<std::string> ops = Ops(*near_miss);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "aten.mish.default"), 0);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "aten.tanh.default"), 1);
}

TEST(PipelineTest, DisabledPassesDoNotRun) {
  PipelineOptions options;
  options.disabled = {"recurrence", "attention", "attention_products", "decompose", "copies", "epilogues", "dead_code", "concatenations", "fuse"};
  auto result = RunPipeline(GraphWithDeadOps(), options);
  ASSERT_TRUE(result.ok());
  for (const PassRecord& pass : result->passes) EXPECT_FALSE(pass.ran) << pass.name;
  EXPECT_NE(result->graph.Find("exp2"), nullptr);
  EXPECT_EQ(result->plan.groups.size(), 4u);  // one group per op without fusion
}

TEST(PipelineTest, DumpKeepsTheIrAfterEachPass) {
  PipelineOptions options;
  options.dump = true;
  auto result = RunPipeline(GraphWithDeadOps(), options);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->passes[6].name, "dead_code");
  EXPECT_NE(result->passes[6].dump.find("aten.relu.default"), std::string::npos);
  EXPECT_EQ(result->passes[6].dump.find("%exp2"), std::string::npos);
  EXPECT_FALSE(result->passes[8].dump.empty());
}

TEST(PipelineTest, UnknownPassNameIsAUserError) {
  PipelineOptions options;
  options.disabled = {"fuse_everything"};
  auto result = RunPipeline(GraphWithDeadOps(), options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("dead_code"), std::string::npos);
}

}  // namespace
}  // namespace kforge::passes
