#include "compiler/ir/partial_capture.h"

#include <string>

#include <gtest/gtest.h>

#include "core/files.h"
#include "golden_files.h"

namespace kforge::ir {
namespace {

// Two submodules (the golden relu and linear_relu graphs), one kept, the task's code.
Json ValidDocument() {
  Json relu = Json::parse(ReadFile(testing::GoldenDir() / "relu.json").value());
  Json linear_relu = Json::parse(ReadFile(testing::GoldenDir() / "linear_relu.json").value());
  return {{"format", kPartialCaptureFormat},
          {"task", "t"},
          {"export_error", "t.py:9: torch.export could not capture the Model (Guard: ...)"},
          {"submodules", {{{"name", "act"}, {"graph", relu}}, {{"name", "layers.0"}, {"graph", linear_relu}}}},
          {"kept", {{{"name", "head"}, {"reason", "not called on the task's inputs"}}}},
          {"forward", {{"source", "class kf_task_Model: pass\n"}, {"class", "kf_task_Model"}}}};
}

TEST(PartialCaptureTest, ImportsEverySubmoduleAndWhatStaysPyTorch) {
  Json document = ValidDocument();
  ASSERT_TRUE(IsPartialCapture(document));
  Result<PartialCapture> capture = ImportPartialCapture(document);
  ASSERT_TRUE(capture.ok()) << capture.status().ToString();
  ASSERT_EQ(capture->submodules.size(), 2u);
  EXPECT_EQ(capture->submodules[1].name, "layers.0");
  EXPECT_EQ(capture->submodules[1].graph.name(), "level2/01_linear_relu");
  ASSERT_EQ(capture->rest.kept.size(), 1u);
  EXPECT_EQ(capture->rest.kept[0].name, "head");
  EXPECT_EQ(capture->rest.export_error, "t.py:9: torch.export could not capture the Model (Guard: ...)");
  EXPECT_EQ(capture->rest.forward_class, "kf_task_Model");
}

TEST(PartialCaptureTest, AWholeGraphIsNotAPartialCapture) {
  EXPECT_FALSE(IsPartialCapture(Json::parse(ReadFile(testing::GoldenDir() / "relu.json").value())));
  EXPECT_FALSE(ImportPartialCapture(Json::parse(ReadFile(testing::GoldenDir() / "relu.json").value())).ok());
}

TEST(PartialCaptureTest, MalformedInputNamesWhatIsWrong) {
  struct Case {
    const char* what;
    void (*spoil)(Json&);
    const char* message;
  };
  const Case cases[] = {
      {"no error", [](Json& d) { d.erase("export_error"); }, "\"export_error\" must be a string"},
      {"bad name", [](Json& d) { d["submodules"][0]["name"] = "layers..0"; }, "is not a submodule's qualified name"},
      {"bad graph", [](Json& d) { d["submodules"][1]["graph"]["nodes"][0]["op"] = 3; }, "submodule layers.0"},
      {"bad kept", [](Json& d) { d["kept"][0].erase("reason"); }, "\"reason\" must be a string"},
      {"no forward", [](Json& d) { d.erase("forward"); }, "\"source\" must be a string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Json document = ValidDocument();
    c.spoil(document);
    Result<PartialCapture> capture = ImportPartialCapture(document);
    ASSERT_FALSE(capture.ok());
    EXPECT_EQ(capture.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(capture.status().message().find(c.message), std::string::npos) << capture.status().message();
  }
}

}  // namespace
}  // namespace kforge::ir
