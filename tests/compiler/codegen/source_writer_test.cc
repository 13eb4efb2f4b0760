#include "compiler/codegen/source_writer.h"

#include <gtest/gtest.h>

namespace kforge::codegen {
namespace {

TEST(SourceWriterTest, OpenCloseAndScopesIndent) {
  SourceWriter out;
  out.Open("def f(x):");
  out.Line("y = x");
  {
    out.Line("if y:");
    auto scope = out.Indent();
    out.Line("y = 1");
    out.Blank();
  }
  out.Line("return y");
  out.Close();
  EXPECT_EQ(out.depth(), 0);
  EXPECT_EQ(out.text(), "def f(x):\n    y = x\n    if y:\n        y = 1\n\n    return y\n");
}

TEST(SourceWriterTest, LinesReindentsABlock) {
  SourceWriter out(2);
  out.Open("class A:");
  out.Lines("def f():\n  pass\n");
  out.Close();
  EXPECT_EQ(out.text(), "class A:\n  def f():\n    pass\n");
}

}  // namespace
}  // namespace kforge::codegen
