// The pass pipeline over the IR golden graphs: the IR after each pass and the fusion plan are
// compared with golden/NAME.<pass>.txt (the IR before is tests/compiler/ir/golden/NAME.ir.txt;
// KFORGE_UPDATE_GOLDEN=1 rewrites them); and PlanFusion over small hand-built graphs, one per
// fusion rule.
#include "compiler/passes/fusion_plan.h"

#include <cstdlib>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "compiler/ir/import_graph.h"
#include "compiler/passes/fusion_rules.h"
#include "compiler/passes/pipeline.h"
#include "core/files.h"
#include "golden_files.h"
#include "ir_test_util.h"

namespace kforge::passes {
namespace {

using ir::testing::AddInputOk;
using ir::testing::AddOk;
using ir::testing::F32;
using ir::testing::Ref;
using Kind = FusionGroup::Kind;

bool UpdateGolden() {
  const char* flag = std::getenv("KFORGE_UPDATE_GOLDEN");
  return flag != nullptr && std::string(flag) == "1";
}

TEST(PassGoldenTest, EveryPassOnEveryGoldenGraph) {
  for (const std::filesystem::path& json_path : ir::testing::GoldenGraphs()) {
    Result<ir::Graph> graph = ir::ImportGraphText(ReadFile(json_path).value(), json_path.string());
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    PipelineOptions options;
    options.dump = true;
    Result<PipelineResult> result = RunPipeline(std::move(graph).value(), options);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    for (const PassRecord& record : result->passes) {
      std::filesystem::path golden = std::filesystem::path(KFORGE_PLAN_GOLDEN_DIR) / json_path.stem();
      golden += "." + record.name + ".txt";
      SCOPED_TRACE(golden.filename().string());
      if (UpdateGolden()) {
        ASSERT_TRUE(WriteFile(golden, record.dump).ok());
        continue;
      }
      Result<std::string> expected = ReadFile(golden);
      ASSERT_TRUE(expected.ok()) << "missing " << golden << "; run with KFORGE_UPDATE_GOLDEN=1";
      EXPECT_EQ(record.dump, *expected);
    }
  }
}

std::vector<Kind> Kinds(const FusionPlan& plan) {
  std::vector<Kind> kinds;
  for (const FusionGroup& group : plan.groups) kinds.push_back(group.kind);
  return kinds;
}

std::vector<std::string> Names(const ir::Graph& graph, const FusionGroup& group) {
  std::vector<std::string> names;
  for (ir::ValueId id : group.nodes) names.push_back(graph.value(id).name);
  return names;
}

TEST(FusionPlanTest, ChainOfThreePointwiseOpsIsOneGroup) {
  ir::GraphBuilder b("chain");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId neg = AddOk(b, "neg", "aten.neg.default", {Ref(x)}, {F32({4, 8})});
  ir::ValueId exp = AddOk(b, "exp", "aten.exp.default", {Ref(neg)}, {F32({4, 8})});
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(exp)}, {F32({4, 8})});
  b.AddOutput({relu, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].kind, Kind::kPointwise);
  EXPECT_EQ(Names(graph, plan.groups[0]), (std::vector<std::string>{"neg", "exp", "relu"}));
  EXPECT_EQ(plan.groups[0].name, "neg_exp_relu");
  EXPECT_EQ(GroupOutputs(graph, plan.groups[0]), (std::vector<ir::NodeRef>{{relu, 0}}));
}

TEST(FusionPlanTest, PointwiseAfterMatmulIsItsEpilogue) {
  ir::GraphBuilder b("mm");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId w = AddInputOk(b, "w", {8, 2}, 1);
  ir::ValueId mm = AddOk(b, "mm", "aten.mm.default", {Ref(x), Ref(w)}, {F32({4, 2})});
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(mm)}, {F32({4, 2})});
  b.AddOutput({relu, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].kind, Kind::kMatmul);
  EXPECT_EQ(Names(graph, plan.groups[0]), (std::vector<std::string>{"mm", "relu"}));
  EXPECT_EQ(GroupInputs(graph, plan.groups[0]), (std::vector<ir::NodeRef>{{x, 0}, {w, 0}}));
  EXPECT_EQ(GroupOutputs(graph, plan.groups[0]), (std::vector<ir::NodeRef>{{relu, 0}}));
}

TEST(FusionPlanTest, MatmulTakesNoPointwiseProducerIntoItsGroup) {
  // relu(x) feeds the mm: it must run before the mm's kernel, so it stays a group of its own.
  ir::GraphBuilder b("prologue");
  ir::ValueId x = AddInputOk(b, "x", {4, 4});
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(x)}, {F32({4, 4})});
  ir::ValueId mm = AddOk(b, "mm", "aten.mm.default", {Ref(relu), Ref(x)}, {F32({4, 4})});
  ir::ValueId add = AddOk(b, "add", "aten.add.Tensor", {Ref(mm), Ref(relu)}, {F32({4, 4})});
  b.AddOutput({add, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(Names(graph, plan.groups[0]), (std::vector<std::string>{"relu"}));
  EXPECT_EQ(Names(graph, plan.groups[1]), (std::vector<std::string>{"mm", "add"}));
}

TEST(FusionPlanTest, SoftmaxChainIsOneReductionGroup) {
  // amax, sub, exp, sum, div over the rows of x: one kernel.
  ir::GraphBuilder b("softmax");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId max = AddOk(b, "max", "aten.amax.default", {Ref(x), {ir::IntList{1}}, {true}}, {F32({4, 1})});
  ir::ValueId sub = AddOk(b, "sub", "aten.sub.Tensor", {Ref(x), Ref(max)}, {F32({4, 8})});
  ir::ValueId exp = AddOk(b, "exp", "aten.exp.default", {Ref(sub)}, {F32({4, 8})});
  ir::ValueId sum = AddOk(b, "sum", "aten.sum.dim_IntList", {Ref(exp), {ir::IntList{1}}, {true}}, {F32({4, 1})});
  ir::ValueId div = AddOk(b, "div", "aten.div.Tensor", {Ref(exp), Ref(sum)}, {F32({4, 8})});
  b.AddOutput({div, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].kind, Kind::kReduction);
  EXPECT_EQ(plan.groups[0].nodes.size(), 5u);
  EXPECT_EQ(GroupInputs(graph, plan.groups[0]), (std::vector<ir::NodeRef>{{x, 0}}));
}

TEST(FusionPlanTest, FullShapeWorkAfterASplitReductionIsItsOwnGroup) {
  // x / sum(x) over 2^17 elements in one row: the sum is split over many programs, so the
  // division cannot run in its kernels.
  ir::GraphBuilder b("split");
  ir::ValueId x = AddInputOk(b, "x", {1, kMinSplitLength});
  ir::ValueId sum = AddOk(b, "sum", "aten.sum.dim_IntList", {Ref(x), {ir::IntList{0, 1}}, {true}}, {F32({1, 1})});
  ir::ValueId div = AddOk(b, "div", "aten.div.Tensor", {Ref(x), Ref(sum)}, {F32({1, kMinSplitLength})});
  b.AddOutput({div, 0});
  ir::Graph graph = std::move(b).Build();
  EXPECT_EQ(Kinds(PlanFusion(graph)), (std::vector<Kind>{Kind::kReduction, Kind::kPointwise}));
}

TEST(FusionPlanTest, ReductionsOverDifferentDimsAreSeparateGroups) {
  ir::GraphBuilder b("two_spaces");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId rows = AddOk(b, "rows", "aten.sum.dim_IntList", {Ref(x), {ir::IntList{1}}, {false}}, {F32({4})});
  ir::ValueId total = AddOk(b, "total", "aten.sum.dim_IntList", {Ref(rows), {ir::IntList{0}}, {false}}, {F32({})});
  b.AddOutput({total, 0});
  ir::Graph graph = std::move(b).Build();
  EXPECT_EQ(Kinds(PlanFusion(graph)), (std::vector<Kind>{Kind::kReduction, Kind::kReduction}));
}

// sum(x / |x| * y / |y|) over rows: each norm is its own reduction group until the product reads
// both; `rows` rows of `length` elements.
ir::Graph CosineRows(int64_t rows, int64_t length) {
  ir::GraphBuilder b("cosine");
  ir::ValueId x = AddInputOk(b, "x", {rows, length});
  ir::ValueId y = AddInputOk(b, "y", {rows, length}, 1);
  auto normalized = [&](ir::ValueId v, const std::string& name) {
    ir::ValueId sq = AddOk(b, name + "_sq", "aten.mul.Tensor", {Ref(v), Ref(v)}, {F32({rows, length})});
    ir::ValueId sum = AddOk(b, name + "_sum", "aten.sum.dim_IntList", {Ref(sq), {ir::IntList{1}}, {true}}, {F32({rows, 1})});
    ir::ValueId norm = AddOk(b, name + "_norm", "aten.sqrt.default", {Ref(sum)}, {F32({rows, 1})});
    return AddOk(b, name + "_div", "aten.div.Tensor", {Ref(v), Ref(norm)}, {F32({rows, length})});
  };
  ir::ValueId xn = normalized(x, "x");
  ir::ValueId yn = normalized(y, "y");
  ir::ValueId mul = AddOk(b, "mul", "aten.mul.Tensor", {Ref(xn), Ref(yn)}, {F32({rows, length})});
  ir::ValueId dot = AddOk(b, "dot", "aten.sum.dim_IntList", {Ref(mul), {ir::IntList{1}}}, {F32({rows})});
  b.AddOutput({dot, 0});
  return std::move(b).Build();
}

TEST(FusionPlanTest, ReductionGroupsOverTheSameRowsMergeWhereAnOpReadsBoth) {
  // Both norms, both normalized rows and their dot product: one kernel reading x and y once; the
  // normalized rows never leave it.
  ir::Graph graph = CosineRows(8, 64);
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].kind, Kind::kReduction);
  EXPECT_EQ(plan.groups[0].nodes.size(), 10u);
  EXPECT_EQ(GroupInputs(graph, plan.groups[0]).size(), 2u);
}

TEST(FusionPlanTest, SplitReductionGroupsDoNotMerge) {
  // One very long row: each reduction is split over many programs, whose kernels compute nothing of
  // the full shape after it, so the normalized rows cannot be formed there.
  ir::Graph graph = CosineRows(1, kMinSplitLength);
  FusionPlan plan = PlanFusion(graph);
  EXPECT_GT(plan.groups.size(), 1u);
  for (const FusionGroup& group : plan.groups) EXPECT_LT(group.nodes.size(), 10u);
}

ir::ValueId AddIndexInput(ir::GraphBuilder& b, const std::string& name, ir::Shape shape, int64_t index) {
  Result<ir::ValueId> id = b.AddInput(name, index, ir::TensorType::Contiguous(std::move(shape), ir::DType::kInt64).value());
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return id.ok() ? *id : ir::kNoValue;
}

TEST(FusionPlanTest, RowGatherJoinsTheReductionOverItsRows) {
  // x[row, index[row]] - max(x[row]): the gather is one load per row in the row kernel.
  ir::GraphBuilder b("row_gather");
  ir::ValueId x = AddInputOk(b, "x", {4, 16});
  ir::ValueId index = AddIndexInput(b, "index", {4, 1}, 1);
  ir::ValueId max = AddOk(b, "max", "aten.amax.default", {Ref(x), {ir::IntList{1}}, {true}}, {F32({4, 1})});
  ir::ValueId picked = AddOk(b, "picked", "aten.gather.default", {Ref(x), {int64_t{1}}, Ref(index)}, {F32({4, 1})});
  ir::ValueId sub = AddOk(b, "sub", "aten.sub.Tensor", {Ref(picked), Ref(max)}, {F32({4, 1})});
  b.AddOutput({sub, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].kind, Kind::kReduction);
  EXPECT_EQ(Names(graph, plan.groups[0]), (std::vector<std::string>{"max", "picked", "sub"}));
}

TEST(FusionPlanTest, GatherOfAnotherShapeOrFromASplitRowStaysALibraryCall) {
  ir::GraphBuilder b("gathers");
  ir::ValueId x = AddInputOk(b, "x", {4, 16});
  ir::ValueId two = AddIndexInput(b, "two", {4, 2}, 1);
  ir::ValueId y = AddInputOk(b, "y", {1, kMinSplitLength}, 2);
  ir::ValueId one = AddIndexInput(b, "one", {1, 1}, 3);
  ir::ValueId pairs = AddOk(b, "pairs", "aten.gather.default", {Ref(x), {int64_t{1}}, Ref(two)}, {F32({4, 2})});
  ir::ValueId far = AddOk(b, "far", "aten.gather.default", {Ref(y), {int64_t{1}}, Ref(one)}, {F32({1, 1})});
  b.AddOutput({pairs, 0});
  b.AddOutput({far, 0});
  ir::Graph graph = std::move(b).Build();
  EXPECT_EQ(Kinds(PlanFusion(graph)), (std::vector<Kind>{Kind::kLibrary, Kind::kLibrary}));
}

TEST(FusionPlanTest, SmallProducerOnlyOneOpReadsIsAbsorbedIntoItsKernel) {
  // (x - mean) * rsqrt(var + eps) per channel: the per-channel rsqrt is recomputed in x's kernel
  // rather than launched on its own.
  ir::GraphBuilder b("absorb");
  ir::ValueId x = AddInputOk(b, "x", {2, 3, 4, 4});
  ir::ValueId var = AddInputOk(b, "var", {3, 1, 1}, 1);
  ir::ValueId shifted = AddOk(b, "shifted", "aten.add.Tensor", {Ref(var), {1e-5}}, {F32({3, 1, 1})});
  ir::ValueId rstd = AddOk(b, "rstd", "aten.rsqrt.default", {Ref(shifted)}, {F32({3, 1, 1})});
  ir::ValueId normed = AddOk(b, "normed", "aten.mul.Tensor", {Ref(x), Ref(rstd)}, {F32({2, 3, 4, 4})});
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(normed)}, {F32({2, 3, 4, 4})});
  b.AddOutput({relu, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].kind, Kind::kPointwise);
  EXPECT_EQ(Names(graph, plan.groups[0]), (std::vector<std::string>{"shifted", "rstd", "normed", "relu"}));
  EXPECT_EQ(GroupInputs(graph, plan.groups[0]), (std::vector<ir::NodeRef>{{var, 0}, {x, 0}}));
}

TEST(FusionPlanTest, AnArangeIsNotAbsorbedIntoALargerSpace) {
  // arange(8) == index: in the [4, 8] kernel the flat index is not the arange's value.
  ir::GraphBuilder b("arange");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId arange = AddOk(b, "arange", "aten.arange.default", {{int64_t{8}}},
                             {ir::TensorType::Contiguous({8}, ir::DType::kInt64).value()});
  ir::ValueId scaled = AddOk(b, "scaled", "aten.mul.Tensor", {Ref(x), Ref(arange)}, {F32({4, 8})});
  b.AddOutput({scaled, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(Names(graph, plan.groups[0]), (std::vector<std::string>{"arange"}));
}

TEST(FusionPlanTest, IntermediateThatIsAGraphOutputStaysInTheGroupAndIsExported) {
  ir::GraphBuilder b("export");
  ir::ValueId x = AddInputOk(b, "x", {16});
  ir::ValueId exp = AddOk(b, "exp", "aten.exp.default", {Ref(x)}, {F32({16})});
  ir::ValueId neg = AddOk(b, "neg", "aten.neg.default", {Ref(exp)}, {F32({16})});
  b.AddOutput({neg, 0});
  b.AddOutput({exp, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(GroupOutputs(graph, plan.groups[0]), (std::vector<ir::NodeRef>{{exp, 0}, {neg, 0}}));
}

TEST(FusionPlanTest, AMutationsNewValueIsExportedLikeAGraphOutput) {
  // rsqrt(var + eps) per channel, which forward() also writes back to a buffer: it must be
  // materialized, so it is not absorbed (recomputed) into x's kernel.
  ir::GraphBuilder b("mutation");
  ir::ValueId x = AddInputOk(b, "x", {2, 3, 4, 4});
  ir::ValueId var = AddInputOk(b, "var", {3, 1, 1}, 1);
  ASSERT_TRUE(b.AddParameter("saved", "m.saved", ir::ParameterKind::kBuffer, F32({3, 1, 1})).ok());
  ir::ValueId shifted = AddOk(b, "shifted", "aten.add.Tensor", {Ref(var), {1e-5}}, {F32({3, 1, 1})});
  ir::ValueId rstd = AddOk(b, "rstd", "aten.rsqrt.default", {Ref(shifted)}, {F32({3, 1, 1})});
  ir::ValueId normed = AddOk(b, "normed", "aten.mul.Tensor", {Ref(x), Ref(rstd)}, {F32({2, 3, 4, 4})});
  b.AddOutput({normed, 0});
  ASSERT_TRUE(b.AddMutation("m.saved", {rstd, 0}).ok());
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(Names(graph, plan.groups[0]), (std::vector<std::string>{"shifted", "rstd"}));
  EXPECT_EQ(GroupOutputs(graph, plan.groups[0]), (std::vector<ir::NodeRef>{{rstd, 0}}));
  EXPECT_EQ(Names(graph, plan.groups[1]), (std::vector<std::string>{"normed"}));
}

TEST(FusionPlanTest, DiamondIsOneGroup) {
  ir::GraphBuilder b("diamond");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId exp = AddOk(b, "exp", "aten.exp.default", {Ref(x)}, {F32({4, 8})});
  ir::ValueId neg = AddOk(b, "neg", "aten.neg.default", {Ref(exp)}, {F32({4, 8})});
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(exp)}, {F32({4, 8})});
  ir::ValueId add = AddOk(b, "add", "aten.add.Tensor", {Ref(neg), Ref(relu)}, {F32({4, 8})});
  b.AddOutput({add, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].nodes.size(), 4u);
  EXPECT_EQ(GroupInputs(graph, plan.groups[0]), (std::vector<ir::NodeRef>{{x, 0}}));
}

TEST(FusionPlanTest, BroadcastInputFusesButADifferentShapeProducerReadElsewhereDoesNot) {
  // neg also leaves the graph: it must be stored, so it keeps its own kernel.
  ir::GraphBuilder b("broadcast");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId bias = AddInputOk(b, "bias", {8}, 1);
  ir::ValueId neg = AddOk(b, "neg", "aten.neg.default", {Ref(bias)}, {F32({8})});
  ir::ValueId add = AddOk(b, "add", "aten.add.Tensor", {Ref(x), Ref(neg)}, {F32({4, 8})});
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(add)}, {F32({4, 8})});
  b.AddOutput({relu, 0});
  b.AddOutput({neg, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(Names(graph, plan.groups[0]), (std::vector<std::string>{"neg"}));
  EXPECT_EQ(Names(graph, plan.groups[1]), (std::vector<std::string>{"add", "relu"}));
}

TEST(FusionPlanTest, NoMergeThroughALibraryOpThatWouldMakeACycle) {
  // exp -> roll -> add(exp, roll): fusing add into exp's group would need roll both before and after it.
  ir::GraphBuilder b("cycle");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId exp = AddOk(b, "exp", "aten.exp.default", {Ref(x)}, {F32({4, 8})});
  ir::ValueId mm = AddOk(b, "mm", "aten.roll.default", {Ref(exp), {ir::IntList{1}}}, {F32({4, 8})});
  ir::ValueId add = AddOk(b, "add", "aten.add.Tensor", {Ref(exp), Ref(mm)}, {F32({4, 8})});
  b.AddOutput({add, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 3u);
  EXPECT_EQ(Names(graph, plan.groups[0]), (std::vector<std::string>{"exp"}));
  EXPECT_EQ(Names(graph, plan.groups[1]), (std::vector<std::string>{"mm"}));
  EXPECT_EQ(Names(graph, plan.groups[2]), (std::vector<std::string>{"add"}));
}

TEST(FusionPlanTest, AFlipTakesItsConsumersButNoProducerOrReduction) {
  // exp -> flip -> add(exp, flip) -> sum: add cannot join exp's group (a cycle through the flip),
  // so it joins the flip's, which reads exp from memory; the sum starts its own group, and so
  // does neg, which reads the flip and another pointwise group's value.
  ir::GraphBuilder b("flip");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId exp = AddOk(b, "exp", "aten.exp.default", {Ref(x)}, {F32({4, 8})});
  ir::ValueId flip = AddOk(b, "flip", "aten.flip.default", {Ref(exp), {ir::IntList{1}}}, {F32({4, 8})});
  ir::ValueId add = AddOk(b, "add", "aten.add.Tensor", {Ref(exp), Ref(flip)}, {F32({4, 8})});
  ir::ValueId sum = AddOk(b, "sum", "aten.sum.dim_IntList", {Ref(add), {ir::IntList{1}}}, {F32({4})});
  ir::ValueId abs = AddOk(b, "abs", "aten.abs.default", {Ref(x)}, {F32({4, 8})});
  ir::ValueId neg = AddOk(b, "neg", "aten.sub.Tensor", {Ref(flip), Ref(abs)}, {F32({4, 8})});
  b.AddOutput({sum, 0});
  b.AddOutput({neg, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 4u);
  EXPECT_EQ(Names(graph, plan.groups[0]), (std::vector<std::string>{"exp"}));
  EXPECT_EQ(Names(graph, plan.groups[1]), (std::vector<std::string>{"flip", "add"}));
  EXPECT_EQ(Names(graph, plan.groups[2]), (std::vector<std::string>{"sum"}));
  EXPECT_EQ(Names(graph, plan.groups[3]), (std::vector<std::string>{"abs", "neg"}));
}

// A training batch norm's num_batches_tracked + 1, one per batch norm: the one-element groups
// that read nothing computed are one launch, ahead of the rest; a one-element op that reads a
// computed value (the sum's) keeps its own group, after it.
TEST(FusionPlanTest, OneElementGroupsOfUncomputedInputsAreOneGroupFirst) {
  ir::GraphBuilder b("counters");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  std::vector<ir::ValueId> counters;
  for (const char* name : {"bn1", "bn2", "bn3"}) {
    Result<ir::ValueId> buffer = b.AddParameter(std::string(name) + "_tracked", std::string(name) + ".num_batches_tracked",
                                                ir::ParameterKind::kBuffer, *ir::TensorType::Contiguous({}, ir::DType::kInt64));
    ASSERT_TRUE(buffer.ok()) << buffer.status().ToString();
    counters.push_back(*buffer);
  }
  ir::TensorType count = *ir::TensorType::Contiguous({}, ir::DType::kInt64);
  ir::ValueId add1 = AddOk(b, "add1", "aten.add.Tensor", {Ref(counters[0]), {int64_t{1}}}, {count});
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(x)}, {F32({4, 8})});
  ir::ValueId add2 = AddOk(b, "add2", "aten.add.Tensor", {Ref(counters[1]), {int64_t{1}}}, {count});
  ir::ValueId sum = AddOk(b, "sum", "aten.sum.default", {Ref(relu)}, {F32({})});
  ir::ValueId scaled = AddOk(b, "scaled", "aten.mul.Tensor", {Ref(sum), {2.0}}, {F32({})});
  ir::ValueId add3 = AddOk(b, "add3", "aten.add.Tensor", {Ref(counters[2]), {int64_t{1}}}, {count});
  for (ir::ValueId out : {add1, add2, scaled, add3}) b.AddOutput({out, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_GE(plan.groups.size(), 3u);
  EXPECT_EQ(plan.groups[0].kind, Kind::kPointwise);
  EXPECT_EQ(Names(graph, plan.groups[0]), (std::vector<std::string>{"add1", "add2", "add3"}));
  for (size_t g = 1; g < plan.groups.size(); ++g) {
    for (ir::ValueId id : plan.groups[g].nodes) EXPECT_NE(graph.value(id).name.rfind("add", 0), 0u) << plan.groups[g].name;
  }
}

TEST(FusionRulesTest, BroadcastsTo) {
  EXPECT_TRUE(BroadcastsTo({8}, {4, 8}));
  EXPECT_TRUE(BroadcastsTo({4, 1}, {4, 8}));
  EXPECT_TRUE(BroadcastsTo({}, {4, 8}));
  EXPECT_FALSE(BroadcastsTo({4}, {4, 8}));
  EXPECT_FALSE(BroadcastsTo({2, 4, 8}, {4, 8}));
}

// var_mean(x, [1], correction=c) over rows of `length`, as the decomposition of a norm emits it.
std::optional<ReductionSpace> VarMeanSpace(int64_t length, ir::Argument correction) {
  ir::GraphBuilder b("var_mean");
  ir::ValueId x = AddInputOk(b, "x", {4, length});
  Result<ir::ValueId> id = b.AddOp("stats", "aten.var_mean.correction", {Ref(x), {ir::IntList{1}}},
                                   {{"correction", std::move(correction)}, {"keepdim", {true}}}, {F32({4, 1}), F32({4, 1})});
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  ir::Graph graph = std::move(b).Build();
  return FusableReductionSpace(graph, graph.value(*id));
}

TEST(FusionRulesTest, VarMeanIsAReductionOverRowsLongerThanItsCorrection) {
  auto space = VarMeanSpace(8, ir::Argument{int64_t{0}});
  ASSERT_TRUE(space.has_value());
  EXPECT_EQ(space->dims, (std::vector<int64_t>{1}));
  EXPECT_TRUE(VarMeanSpace(2, ir::Argument{int64_t{1}}).has_value());
  EXPECT_FALSE(VarMeanSpace(1, ir::Argument{int64_t{1}}).has_value());
  EXPECT_FALSE(VarMeanSpace(1, ir::Argument{ir::NoneArg{}}).has_value());
}

}  // namespace
}  // namespace kforge::passes
