#include "agents/decomposition.h"

#include <gtest/gtest.h>

#include "ir_test_util.h"

namespace kforge {
namespace {

using ir::testing::AddInputOk;
using ir::testing::AddOk;
using ir::testing::F32;
using ir::testing::Ref;

// relu(relu(x @ w) @ w): two matmul groups, each an mm with a ReLU epilogue on 4x4 operands, so
// both compute the same thing on the same shapes.
ir::Graph TwoEqualMatmuls() {
  ir::GraphBuilder b("two_mm");
  ir::ValueId x = AddInputOk(b, "x", {4, 4});
  ir::ValueId w = AddInputOk(b, "w", {4, 4}, 1);
  ir::ValueId mm1 = AddOk(b, "mm1", "aten.mm.default", {Ref(x), Ref(w)}, {F32({4, 4})});
  ir::ValueId relu1 = AddOk(b, "relu1", "aten.relu.default", {Ref(mm1)}, {F32({4, 4})});
  ir::ValueId mm2 = AddOk(b, "mm2", "aten.mm.default", {Ref(relu1), Ref(w)}, {F32({4, 4})});
  ir::ValueId relu2 = AddOk(b, "relu2", "aten.relu.default", {Ref(mm2)}, {F32({4, 4})});
  b.AddOutput({relu2, 0});
  return std::move(b).Build();
}

TEST(DecompositionTest, GroupsComputingTheSameThingShareOnePart) {
  ir::Graph graph = TwoEqualMatmuls();
  passes::FusionPlan plan = passes::PlanFusion(graph);
  ASSERT_EQ(plan.groups.size(), 2u);
  auto parts = DecomposePlan(graph, plan);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].GroupNames(), (std::vector<std::string>{plan.groups[0].name, plan.groups[1].name}));
  const std::string& source = (*parts)[0].task().source;
  EXPECT_NE(source.find("def forward(self, in0, in1):"), std::string::npos) << source;
  EXPECT_NE(source.find("v0 = torch.ops.aten.mm.default(in0, in1)"), std::string::npos) << source;
  EXPECT_NE(source.find("v1 = torch.ops.aten.relu.default(v0)"), std::string::npos) << source;
  EXPECT_NE(source.find("return [torch.randn((4, 4), dtype=torch.float32), torch.randn((4, 4), dtype=torch.float32)]"),
            std::string::npos) << source;
}

TEST(DecompositionTest, RouterSendsSmallGraphsWholeAndLargerOnesToDecomposition) {
  passes::FusionPlan plan;
  plan.groups = {{passes::FusionGroup::Kind::kMatmul, {}, "a"}, {passes::FusionGroup::Kind::kView, {}, "v"},
                 {passes::FusionGroup::Kind::kReduction, {}, "b"}};
  EXPECT_EQ(ChooseRoute(plan), Route::kWholeProgram);
  plan.groups.push_back({passes::FusionGroup::Kind::kPointwise, {}, "c"});
  EXPECT_EQ(ChooseRoute(plan), Route::kDecomposition);
  passes::FusionPlan library;
  library.groups = {{passes::FusionGroup::Kind::kLibrary, {}, "gather"}};
  EXPECT_EQ(ChooseRoute(library), Route::kDecomposition);  // what the compiler could not do, a model may
}

TEST(DecompositionTest, CompositionCallsTheVerifiedProgramInEveryGroupOfItsPart) {
  ir::Graph graph = TwoEqualMatmuls();
  passes::FusionPlan plan = passes::PlanFusion(graph);
  auto parts = DecomposePlan(graph, plan);
  ASSERT_TRUE(parts.ok());
  std::vector<std::string> prefixes;
  auto rename = [&](const std::string& source, const std::string& prefix) -> Result<std::string> {
    prefixes.push_back(prefix);
    return "class " + prefix + "ModelNew:\n    pass\n";
  };
  std::map<std::string, std::string> accepted = {{(*parts)[0].task().signature, "class ModelNew: ..."}};
  auto composed = ComposeModelNew(graph, plan, *parts, accepted, {}, rename);
  ASSERT_TRUE(composed.ok()) << composed.status().ToString();
  EXPECT_EQ(prefixes, (std::vector<std::string>{"kf_part0_"}));  // one copy for both groups
  EXPECT_NE(composed->find("self.kf_" + plan.groups[0].name + " = kf_part0_ModelNew()"), std::string::npos) << *composed;
  EXPECT_NE(composed->find("self.kf_" + plan.groups[1].name + " = kf_part0_ModelNew()"), std::string::npos);
  EXPECT_NE(composed->find("= self.kf_" + plan.groups[1].name + "(relu1.contiguous(), w.contiguous())"), std::string::npos)
      << *composed;
  EXPECT_EQ(composed->find("@triton.jit"), std::string::npos);  // no generated kernel left

  auto nothing = ComposeModelNew(graph, plan, *parts, {}, {}, rename);
  EXPECT_EQ(nothing.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kforge
