#include "agents/prompt_library.h"

#include <gtest/gtest.h>

#include "core/files.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

TEST(FillTemplate, ReplacesPlaceholdersVerbatim) {
  auto filled = FillTemplate("Task {{task}}: {{source}}!", {{"task", "relu"}, {"source", "f'{{x}}' {{task}}"}}, "t");
  ASSERT_TRUE(filled.ok()) << filled.status().ToString();
  // A value is never scanned again, so braces in a task's source survive as written.
  EXPECT_EQ(*filled, "Task relu: f'{{x}}' {{task}}!");
}

TEST(FillTemplate, MissingValueIsAnErrorNamingIt) {
  auto filled = FillTemplate("{{task}} and {{feedback}}", {{"task", "relu"}}, "prompt template 'repair'");
  ASSERT_FALSE(filled.ok());
  EXPECT_EQ(filled.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(filled.status().message().find("prompt template 'repair'"), std::string::npos);
  EXPECT_NE(filled.status().message().find("{{feedback}}"), std::string::npos) << filled.status().message();
}

TEST(FillTemplate, PlaceholdersInsideAnOmittedSectionStillNeedValues) {
  auto filled = FillTemplate("a{{#extra}}{{detail}}{{/extra}}", {{"extra", ""}}, "t");
  ASSERT_FALSE(filled.ok());
  EXPECT_NE(filled.status().message().find("{{detail}}"), std::string::npos);
}

TEST(FillTemplate, SectionsAppearOnlyWithAValue) {
  const std::string text = "head\n{{#hint}}\nHint: {{hint}}\n{{/hint}}\ntail\n";
  EXPECT_EQ(*FillTemplate(text, {{"hint", "use tl.dot"}}, "t"), "head\nHint: use tl.dot\ntail\n");
  EXPECT_EQ(*FillTemplate(text, {{"hint", ""}}, "t"), "head\ntail\n");
}

TEST(FillTemplate, InlineSectionsAndNesting) {
  const std::string text = "[{{#a}}A{{#b}}B{{b}}{{/b}}{{/a}}]";
  EXPECT_EQ(*FillTemplate(text, {{"a", "1"}, {"b", "2"}}, "t"), "[AB2]");
  EXPECT_EQ(*FillTemplate(text, {{"a", "1"}, {"b", ""}}, "t"), "[A]");
  EXPECT_EQ(*FillTemplate(text, {{"a", ""}, {"b", "2"}}, "t"), "[]");
}

TEST(FillTemplate, MalformedSectionsAreErrors) {
  EXPECT_FALSE(FillTemplate("{{#a}} never closed", {{"a", "x"}}, "t").ok());
  EXPECT_FALSE(FillTemplate("stray {{/a}}", {{"a", "x"}}, "t").ok());
}

TEST(FillTemplate, BracesThatAreNotPlaceholdersStayText) {
  auto filled = FillTemplate("d = {{'a': 1}} and {{ spaced }} and {{", {}, "t");
  ASSERT_TRUE(filled.ok()) << filled.status().ToString();
  EXPECT_EQ(*filled, "d = {{'a': 1}} and {{ spaced }} and {{");
}

class PromptFolderTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = *MakeTempDir(fs::temp_directory_path(), "kforge-prompts-test-"); }
  void TearDown() override { RemoveTreeQuietly(root_); }
  void Write(const std::string& relative, const std::string& text) {
    fs::create_directories((root_ / relative).parent_path());
    ASSERT_TRUE(WriteFile(root_ / relative, text).ok());
  }
  fs::path root_;
};

TEST_F(PromptFolderTest, LoadsMarkdownByRelativeNameAndOverridesFromAUserFolder) {
  Write("base/system.md", "You write kernels for {{target}}.");
  Write("base/write.md", "Write {{task}}.");
  Write("base/knowledge/softmax.md", "softmax example");
  Write("base/notes.txt", "not a template");
  Write("mine/write.md", "Please write {{task}} carefully.");
  Write("mine/knowledge/extra.md", "my example");

  auto library = PromptLibrary::Load(root_ / "base", root_ / "mine");
  ASSERT_TRUE(library.ok()) << library.status().ToString();
  EXPECT_TRUE(library->Has("system"));
  EXPECT_FALSE(library->Has("notes"));
  EXPECT_EQ(*library->Render("write", {{"task", "relu"}}), "Please write relu carefully.");
  EXPECT_EQ(*library->Render("system", {{"target", "H200"}}), "You write kernels for H200.");
  EXPECT_EQ(library->NamesUnder("knowledge/"), (std::vector<std::string>{"knowledge/extra", "knowledge/softmax"}));
}

TEST_F(PromptFolderTest, MissingTemplateOrFolderIsNamed) {
  Write("base/system.md", "x");
  auto library = PromptLibrary::Load(root_ / "base");
  ASSERT_TRUE(library.ok());
  auto missing = library->Render("speedup", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("'speedup'"), std::string::npos);

  auto no_folder = PromptLibrary::Load(root_ / "base", root_ / "nowhere");
  ASSERT_FALSE(no_folder.ok());
  EXPECT_EQ(no_folder.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_folder.status().message().find("nowhere"), std::string::npos);
}

TEST_F(PromptFolderTest, PromptDirComesFromTheEnvironmentFirst) {
  Write("custom/system.md", "x");
  auto found = FindPromptDir({{"KFORGE_PROMPTS", (root_ / "custom").string()}});
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(fs::canonical(*found), fs::canonical(root_ / "custom"));
  // Without it, the source tree's prompts/ is found.
  auto fallback = FindPromptDir({{"KFORGE_PROMPTS", (root_ / "missing").string()}});
  ASSERT_TRUE(fallback.ok()) << fallback.status().ToString();
  EXPECT_TRUE(fs::exists(*fallback / "system.md"));
}

}  // namespace
}  // namespace kforge
