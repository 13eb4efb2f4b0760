// FindCausalBand over masks built from aranges the way eager code and SDPA's decomposition write
// them, one case per comparison, and masks that are not bands.
#include "compiler/passes/causal_mask.h"

#include <string>

#include <gtest/gtest.h>

#include "ir_test_util.h"

namespace kforge::passes {
namespace {

using ir::testing::AddOk;
using ir::testing::Ref;

ir::TensorType Typed(ir::Shape shape, ir::DType dtype) { return ir::TensorType::Contiguous(std::move(shape), dtype).value(); }

// Query positions i as a [T, 1] column and key positions j as a [1, T] row, both from aranges.
struct Positions {
  ir::GraphBuilder builder{"causal"};
  ir::ValueId i = ir::kNoValue, j = ir::kNoValue;

  Positions() {
    ir::ValueId rows = AddOk(builder, "rows", "aten.arange.default", {ir::Argument{int64_t{8}}}, {Typed({8}, ir::DType::kInt64)});
    ir::ValueId cols = AddOk(builder, "cols", "aten.arange.default", {ir::Argument{int64_t{8}}}, {Typed({8}, ir::DType::kInt64)});
    i = AddOk(builder, "i", "aten.unsqueeze.default", {Ref(rows), ir::Argument{int64_t{-1}}}, {Typed({8, 1}, ir::DType::kInt64)});
    j = AddOk(builder, "j", "aten.unsqueeze.default", {Ref(cols), ir::Argument{int64_t{0}}}, {Typed({1, 8}, ir::DType::kInt64)});
  }

  ir::ValueId Int(const std::string& name, const char* op, ir::ValueId a, ir::ValueId b) {
    return AddOk(builder, name, op, {Ref(a), Ref(b)}, {Typed({8, 8}, ir::DType::kInt64)});
  }
  ir::ValueId Bool(const std::string& name, const char* op, std::vector<ir::Argument> args) {
    return AddOk(builder, name, op, std::move(args), {Typed({8, 8}, ir::DType::kBool)});
  }
};

std::optional<CausalBand> BandOf(Positions& p, ir::ValueId mask) {
  p.builder.AddOutput({mask, 0});
  ir::Graph graph = std::move(p.builder).Build();
  return FindCausalBand(graph, {mask, 0});
}

TEST(CausalMaskTest, KeyMinusQueryAtMostZeroIsTheLowerTriangle) {
  Positions p;
  ir::ValueId diff = p.Int("diff", "aten.sub.Tensor", p.j, p.i);
  ir::ValueId mask = p.Bool("mask", "aten.le.Scalar", {Ref(diff), ir::Argument{int64_t{0}}});
  EXPECT_EQ(BandOf(p, mask), (CausalBand{0, true}));
}

TEST(CausalMaskTest, ComparisonsOfPositionsNormalizeToAnOffset) {
  struct Case {
    const char* op;
    bool query_first;
    CausalBand band;
  } cases[] = {
      {"aten.ge.Tensor", true, {0, true}},    // i >= j
      {"aten.gt.Tensor", false, {0, false}},  // j > i: the complement of j - i <= 0
      {"aten.lt.Tensor", false, {-1, true}},  // j < i
      {"aten.le.Tensor", false, {0, true}},   // j <= i
  };
  for (const Case& c : cases) {
    Positions p;
    ir::ValueId a = c.query_first ? p.i : p.j, b = c.query_first ? p.j : p.i;
    ir::ValueId mask = p.Bool("mask", c.op, {Ref(a), Ref(b)});
    EXPECT_EQ(BandOf(p, mask), c.band) << c.op;
  }
}

TEST(CausalMaskTest, SdpaFormWithAnAllTrueTensorAndNegation) {
  Positions p;
  ir::ValueId diff = p.Int("diff", "aten.sub.Tensor", p.j, p.i);
  ir::ValueId shifted = p.Bool("within", "aten.lt.Scalar", {Ref(diff), ir::Argument{int64_t{3}}});
  ir::ValueId ones = p.Bool("ones", "aten.full.default", {ir::Argument{ir::IntList{8, 8}}, ir::Argument{true}});
  ir::ValueId both = p.Bool("both", "aten.logical_and.default", {Ref(shifted), Ref(ones)});
  ir::ValueId mask = p.Bool("mask", "aten.logical_not.default", {Ref(both)});
  EXPECT_EQ(BandOf(p, mask), (CausalBand{2, false}));
}

TEST(CausalMaskTest, OtherMasksAreNotBands) {
  Positions p;
  ir::ValueId sum = p.Int("sum", "aten.add.Tensor", p.j, p.i);
  ir::ValueId mask = p.Bool("mask", "aten.le.Scalar", {Ref(sum), ir::Argument{int64_t{4}}});
  EXPECT_EQ(BandOf(p, mask), std::nullopt);
}

}  // namespace
}  // namespace kforge::passes
