// Imports every golden/*.json graph, prints it and compares with golden/*.ir.txt. Run with
// KFORGE_UPDATE_GOLDEN=1 to rewrite the expected files after an intended format change.
#include "compiler/ir/printer.h"

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "compiler/ir/import_graph.h"
#include "core/files.h"
#include "golden_files.h"
#include "ir_test_util.h"

namespace kforge::ir {
namespace {

bool UpdateGolden() {
  const char* flag = std::getenv("KFORGE_UPDATE_GOLDEN");
  return flag != nullptr && std::string(flag) == "1";
}

TEST(PrinterGoldenTest, EveryGoldenGraphPrintsAsExpected) {
  std::vector<std::filesystem::path> graphs = testing::GoldenGraphs();
  ASSERT_GE(graphs.size(), 4u);
  for (const std::filesystem::path& json_path : graphs) {
    SCOPED_TRACE(json_path.filename().string());
    Result<Graph> graph = ImportGraphText(ReadFile(json_path).value(), json_path.string());
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    std::string printed = PrintGraph(*graph);
    std::filesystem::path golden_path = json_path;
    golden_path.replace_extension(".ir.txt");
    if (UpdateGolden()) {
      ASSERT_TRUE(WriteFile(golden_path, printed).ok());
      continue;
    }
    Result<std::string> expected = ReadFile(golden_path);
    ASSERT_TRUE(expected.ok()) << "missing " << golden_path << "; run with KFORGE_UPDATE_GOLDEN=1 to create it";
    EXPECT_EQ(printed, *expected) << "run with KFORGE_UPDATE_GOLDEN=1 to accept the new text";
  }
}

TEST(PrinterTest, ArgumentsReadLikePython) {
  GraphBuilder builder("t");
  ValueId x = testing::AddInputOk(builder, "x", {2});
  builder.AddOutput(NodeRef{x, 0});
  Graph graph = std::move(builder).Build();
  EXPECT_EQ(PrintArgument(graph, Argument{1.0}), "1.0");
  EXPECT_EQ(PrintArgument(graph, Argument{1e-05}), "1e-05");
  EXPECT_EQ(PrintArgument(graph, Argument{-0.125}), "-0.125");
  EXPECT_EQ(PrintArgument(graph, Argument{-HUGE_VAL}), "-inf");
  EXPECT_EQ(PrintArgument(graph, Argument{int64_t{-3}}), "-3");
  EXPECT_EQ(PrintArgument(graph, Argument{std::string("a\"b")}), "\"a\\\"b\"");
  EXPECT_EQ(PrintArgument(graph, Argument{TensorList{NodeRef{x, 0}, std::nullopt}}), "[%x, None]");
  EXPECT_EQ(PrintArgument(graph, Argument{FloatList{0.5, 2}}), "[0.5, 2.0]");
  EXPECT_EQ(PrintArgument(graph, Argument{DType::kBFloat16}), "bfloat16");
  EXPECT_EQ(PrintRef(graph, NodeRef{x, 1}), "%<dangling #0.1>");
  EXPECT_EQ(PrintRef(graph, NodeRef{4, 0}), "%<dangling #4.0>");
}

}  // namespace
}  // namespace kforge::ir
