// PlanFusion over the IR golden graphs (compared with golden/*.plan.txt; KFORGE_UPDATE_GOLDEN=1
// rewrites them) and over small hand-built graphs, one per fusion rule.
#include "compiler/passes/fusion_plan.h"

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "compiler/ir/import_graph.h"
#include "compiler/passes/fusion_rules.h"
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

TEST(FusionPlanGoldenTest, EveryGoldenGraphPlansAsExpected) {
  for (const std::filesystem::path& json_path : ir::testing::GoldenGraphs()) {
    SCOPED_TRACE(json_path.filename().string());
    Result<ir::Graph> graph = ir::ImportGraphText(ReadFile(json_path).value(), json_path.string());
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    std::string printed = PrintFusionPlan(*graph, PlanFusion(*graph));
    std::filesystem::path golden = std::filesystem::path(KFORGE_PLAN_GOLDEN_DIR) / json_path.stem();
    golden += ".plan.txt";
    if (UpdateGolden()) {
      ASSERT_TRUE(WriteFile(golden, printed).ok());
      continue;
    }
    Result<std::string> expected = ReadFile(golden);
    ASSERT_TRUE(expected.ok()) << "missing " << golden << "; run with KFORGE_UPDATE_GOLDEN=1";
    EXPECT_EQ(printed, *expected);
  }
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

TEST(FusionPlanTest, PointwiseAfterMatmulIsLibraryThenPointwise) {
  ir::GraphBuilder b("mm");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId w = AddInputOk(b, "w", {8, 2}, 1);
  ir::ValueId mm = AddOk(b, "mm", "aten.mm.default", {Ref(x), Ref(w)}, {F32({4, 2})});
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(mm)}, {F32({4, 2})});
  b.AddOutput({relu, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(plan.groups[0].kind, Kind::kLibrary);
  EXPECT_EQ(plan.groups[1].kind, Kind::kPointwise);
  EXPECT_EQ(GroupInputs(graph, plan.groups[1]), (std::vector<ir::NodeRef>{{mm, 0}}));
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

TEST(FusionPlanTest, BroadcastInputFusesButDifferentShapeProducerDoesNot) {
  ir::GraphBuilder b("broadcast");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId bias = AddInputOk(b, "bias", {8}, 1);
  ir::ValueId neg = AddOk(b, "neg", "aten.neg.default", {Ref(bias)}, {F32({8})});
  ir::ValueId add = AddOk(b, "add", "aten.add.Tensor", {Ref(x), Ref(neg)}, {F32({4, 8})});
  ir::ValueId relu = AddOk(b, "relu", "aten.relu.default", {Ref(add)}, {F32({4, 8})});
  b.AddOutput({relu, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(Names(graph, plan.groups[0]), (std::vector<std::string>{"neg"}));
  EXPECT_EQ(Names(graph, plan.groups[1]), (std::vector<std::string>{"add", "relu"}));
}

TEST(FusionPlanTest, NoMergeThroughALibraryOpThatWouldMakeACycle) {
  // exp -> mm -> add(exp, mm): fusing add into exp's group would need mm both before and after it.
  ir::GraphBuilder b("cycle");
  ir::ValueId x = AddInputOk(b, "x", {4, 8});
  ir::ValueId exp = AddOk(b, "exp", "aten.exp.default", {Ref(x)}, {F32({4, 8})});
  ir::ValueId mm = AddOk(b, "mm", "aten.mm.default", {Ref(exp), Ref(x)}, {F32({4, 8})});
  ir::ValueId add = AddOk(b, "add", "aten.add.Tensor", {Ref(exp), Ref(mm)}, {F32({4, 8})});
  b.AddOutput({add, 0});
  ir::Graph graph = std::move(b).Build();
  FusionPlan plan = PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 3u);
  EXPECT_EQ(Names(graph, plan.groups[0]), (std::vector<std::string>{"exp"}));
  EXPECT_EQ(Names(graph, plan.groups[1]), (std::vector<std::string>{"mm"}));
  EXPECT_EQ(Names(graph, plan.groups[2]), (std::vector<std::string>{"add"}));
}

TEST(FusionRulesTest, BroadcastsTo) {
  EXPECT_TRUE(BroadcastsTo({8}, {4, 8}));
  EXPECT_TRUE(BroadcastsTo({4, 1}, {4, 8}));
  EXPECT_TRUE(BroadcastsTo({}, {4, 8}));
  EXPECT_FALSE(BroadcastsTo({4}, {4, 8}));
  EXPECT_FALSE(BroadcastsTo({2, 4, 8}, {4, 8}));
}

}  // namespace
}  // namespace kforge::passes
