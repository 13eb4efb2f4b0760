#include "compiler/ir/visitor.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "compiler/ir/import_graph.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "core/files.h"
#include "golden_files.h"
#include "ir_test_util.h"

namespace kforge::ir {
namespace {

using testing::AddOk;
using testing::F32;
using testing::Ref;

// Counts the uses of every value; only VisitRef is overridden, the rest recurses by default.
class UseCounter : public GraphVisitor {
 public:
  std::map<std::string, int> uses;

 protected:
  void VisitRef(const NodeRef& ref) override { ++uses[graph().value(ref.value).name]; }
};

// The test pass: drops aten.alias.default nodes, their users reading the aliased value instead.
class RemoveAliases : public GraphRewriter {
 protected:
  Status RewriteOp(const OpNode& node) override {
    if (node.op != "aten.alias.default") return CopyOp(node);
    Replace(node, {Map(node.args[0].As<NodeRef>())});
    return Status::Ok();
  }
};

// x -> alias -> relu -> alias -> (output, and add(alias, x) in a list-free op).
Graph GraphWithAliases() {
  GraphBuilder builder("aliases");
  ValueId x = testing::AddInputOk(builder, "x", {4, 4});
  ValueId alias = AddOk(builder, "alias", "aten.alias.default", {Ref(x)}, {F32({4, 4})});
  ValueId relu = AddOk(builder, "relu", "aten.relu.default", {Ref(alias)}, {F32({4, 4})});
  ValueId alias_1 = AddOk(builder, "alias_1", "aten.alias.default", {Ref(relu)}, {F32({4, 4})});
  ValueId cat = AddOk(builder, "cat", "aten.cat.default", {Argument{TensorList{NodeRef{alias_1, 0}, NodeRef{x, 0}}}},
                      {F32({8, 4})});
  builder.AddOutput(NodeRef{alias_1, 0});
  builder.AddOutput(NodeRef{cat, 0});
  return std::move(builder).Build();
}

// GraphWithAliases whose buffer `state` (f32[4, 4]) forward() sets to alias_1.
Graph GraphWithAMutation() {
  GraphBuilder builder("mutation");
  ValueId x = testing::AddInputOk(builder, "x", {4, 4});
  EXPECT_TRUE(builder.AddParameter("state", "m.state", ParameterKind::kBuffer, F32({4, 4})).ok());
  ValueId alias = AddOk(builder, "alias", "aten.alias.default", {Ref(x)}, {F32({4, 4})});
  ValueId relu = AddOk(builder, "relu", "aten.relu.default", {Ref(alias)}, {F32({4, 4})});
  ValueId alias_1 = AddOk(builder, "alias_1", "aten.alias.default", {Ref(relu)}, {F32({4, 4})});
  builder.AddOutput(NodeRef{relu, 0});
  EXPECT_TRUE(builder.AddMutation("m.state", NodeRef{alias_1, 0}).ok());
  return std::move(builder).Build();
}

TEST(GraphVisitorTest, DefaultsRecurseIntoArgumentsListsAndOutputs) {
  UseCounter counter;
  counter.Visit(GraphWithAliases());
  EXPECT_EQ(counter.uses,
            (std::map<std::string, int>{{"x", 2}, {"alias", 1}, {"relu", 1}, {"alias_1", 2}, {"cat", 1}}));
}

TEST(GraphVisitorTest, AMutationsNewValueIsAUse) {
  UseCounter counter;
  counter.Visit(GraphWithAMutation());
  EXPECT_EQ(counter.uses, (std::map<std::string, int>{{"x", 1}, {"alias", 1}, {"relu", 2}, {"alias_1", 1}}));
}

TEST(GraphRewriterTest, MutationsFollowTheirValuesReplacements) {
  RemoveAliases pass;
  Result<Graph> rewritten = pass.Rewrite(GraphWithAMutation());
  ASSERT_TRUE(rewritten.ok()) << rewritten.status().ToString();
  EXPECT_TRUE(VerifyGraph(*rewritten).ok());
  EXPECT_EQ(PrintGraph(*rewritten),
            "graph mutation\n"
            "  input     %x: f32[4, 4]\n"
            "  buffer    %state: f32[4, 4] = m.state\n"
            "  %relu: f32[4, 4] = aten.relu.default(%x)   # pointwise\n"
            "  mutate    m.state <- %relu\n"
            "  return %relu\n");
}

TEST(GraphRewriterTest, DefaultRewriteCopiesEveryGoldenGraph) {
  for (const auto& path : testing::GoldenGraphs()) {
    Graph graph = ImportGraphText(ReadFile(path).value(), path.string()).value();
    GraphRewriter identity;
    Result<Graph> copy = identity.Rewrite(graph);
    ASSERT_TRUE(copy.ok()) << copy.status().ToString();
    EXPECT_TRUE(VerifyGraph(*copy).ok());
    EXPECT_EQ(PrintGraph(*copy), PrintGraph(graph)) << path;
  }
}

TEST(GraphRewriterTest, RemovingAliasesKeepsTheGraphValid) {
  Graph graph = GraphWithAliases();
  ASSERT_TRUE(VerifyGraph(graph).ok());
  RemoveAliases pass;
  Result<Graph> rewritten = pass.Rewrite(graph);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status().ToString();
  Status verified = VerifyGraph(*rewritten);
  EXPECT_TRUE(verified.ok()) << verified.ToString();
  EXPECT_EQ(PrintGraph(*rewritten),
            "graph aliases\n"
            "  input     %x: f32[4, 4]\n"
            "  %relu: f32[4, 4] = aten.relu.default(%x)          # pointwise\n"
            "  %cat: f32[8, 4] = aten.cat.default([%relu, %x])   # data_movement\n"
            "  return %relu, %cat\n");
}

// A rewriter that forgets to record a replacement leaves dangling references: the verifier,
// which the pass runner runs after every pass, must catch it.
class ForgetfulPass : public GraphRewriter {
 protected:
  Status RewriteOp(const OpNode& node) override {
    return node.op == "aten.alias.default" ? Status::Ok() : CopyOp(node);
  }
};

TEST(GraphRewriterTest, AForgottenReplacementFailsVerification) {
  ForgetfulPass pass;
  Result<Graph> rewritten = pass.Rewrite(GraphWithAliases());
  ASSERT_TRUE(rewritten.ok());
  Status verified = VerifyGraph(*rewritten);
  ASSERT_FALSE(verified.ok());
  EXPECT_NE(verified.message().find("%relu: args[0] refers to value #-1"), std::string::npos) << verified.message();
}

TEST(GraphRewriterTest, AMutationOfADroppedValueFailsVerification) {
  class DropAlias1 : public GraphRewriter {
   protected:
    Status RewriteOp(const OpNode& node) override { return node.name == "alias_1" ? Status::Ok() : CopyOp(node); }
  };
  DropAlias1 pass;
  Result<Graph> rewritten = pass.Rewrite(GraphWithAMutation());
  ASSERT_TRUE(rewritten.ok());
  Status verified = VerifyGraph(*rewritten);
  ASSERT_FALSE(verified.ok());
  EXPECT_NE(verified.message().find("mutation of m.state refers to value #-1"), std::string::npos) << verified.message();
}

}  // namespace
}  // namespace kforge::ir
