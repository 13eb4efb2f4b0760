#include "agents/code_extraction.h"

#include <gtest/gtest.h>

#include <ostream>

namespace kforge {
namespace {

constexpr const char* kProgram = "import torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n";

struct ExtractionCase {
  const char* name;
  std::string reply;
  std::optional<ExtractionFailure> failure;
  std::string source;  // expected on success
};

void PrintTo(const ExtractionCase& c, std::ostream* out) { *out << c.name; }

class ExtractionTest : public ::testing::TestWithParam<ExtractionCase> {};

TEST_P(ExtractionTest, FindsTheProgramOrSaysWhyNot) {
  const ExtractionCase& c = GetParam();
  Extraction extraction = ExtractCandidate(c.reply);
  EXPECT_EQ(extraction.failure, c.failure);
  EXPECT_EQ(extraction.source, c.source);
  EXPECT_EQ(extraction.message.empty(), !c.failure.has_value()) << extraction.message;
}

INSTANTIATE_TEST_SUITE_P(
    Replies, ExtractionTest,
    ::testing::Values(
        ExtractionCase{"python_fence", std::string("Plan: one kernel.\n\n```python\n") + kProgram + "```\n", std::nullopt, kProgram},
        ExtractionCase{"py_fence", std::string("```py\n") + kProgram + "```", std::nullopt, kProgram},
        ExtractionCase{"bare_fence", std::string("```\n") + kProgram + "```\n", std::nullopt, kProgram},
        ExtractionCase{"python3_fence_with_trailing_space", std::string("```python3 \n") + kProgram + "```  \n",
                       std::nullopt, kProgram},
        ExtractionCase{"prefers_the_block_with_model_new",
                       std::string("```python\nimport torch\nx = 1\n```\n\n```python\n") + kProgram +
                           "```\n\n```python\nprint('usage')\n```\n",
                       std::nullopt, kProgram},
        ExtractionCase{"last_of_several_model_news",
                       "```python\nclass ModelNew:\n    first = 1\n```\nBetter:\n```python\nclass ModelNew:\n    second = 2\n```\n",
                       std::nullopt, "class ModelNew:\n    second = 2\n"},
        ExtractionCase{"ignores_other_languages",
                       std::string("```cuda\nclass ModelNew {};\n```\n```python\n") + kProgram + "```\n", std::nullopt,
                       kProgram},
        ExtractionCase{"complete_block_before_a_cut_off_one",
                       std::string("```python\n") + kProgram + "```\nAnd a variant:\n```python\nimport tor", std::nullopt,
                       kProgram},
        ExtractionCase{"no_block", "I would fuse the softmax into one kernel. class ModelNew is simple.",
                       ExtractionFailure::kNoCodeBlock, ""},
        ExtractionCase{"only_a_shell_block", "```bash\npip install triton\n```\n", ExtractionFailure::kNoCodeBlock, ""},
        ExtractionCase{"block_without_model_new", "```python\n@triton.jit\ndef kernel(x_ptr):\n    pass\n```\n",
                       ExtractionFailure::kNoModelNew, ""},
        ExtractionCase{"model_new_only_in_a_comment", "```python\n# class ModelNew goes here\n    class ModelNew:\n```\n",
                       ExtractionFailure::kNoModelNew, ""},
        ExtractionCase{"unterminated_fence", "Here it is:\n```python\nimport torch\n\nclass ModelNew(torch.nn.Module):\n    def forw",
                       ExtractionFailure::kUnterminatedFence, ""}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ExtractionMessages, AreWrittenForTheModel) {
  Extraction none = ExtractCandidate("No code today.");
  EXPECT_NE(none.message.find("no fenced Python code block"), std::string::npos) << none.message;
  EXPECT_NE(none.message.find("```python"), std::string::npos);

  Extraction fragment = ExtractCandidate("```python\nx = 1\n```\n```python\ny = 2\n```\n");
  EXPECT_EQ(fragment.blocks, 2);
  EXPECT_NE(fragment.message.find("2 Python code block(s) but none defines `class ModelNew`"), std::string::npos)
      << fragment.message;

  Extraction cut = ExtractCandidate("Plan.\n\n```python\nimport torch\n");
  EXPECT_NE(cut.message.find("opened at line 3 was never closed"), std::string::npos) << cut.message;
}

TEST(ExtractionNames, AreStable) {
  EXPECT_STREQ(ToString(ExtractionFailure::kNoCodeBlock), "no_code_block");
  EXPECT_STREQ(ToString(ExtractionFailure::kNoModelNew), "no_model_new");
  EXPECT_STREQ(ToString(ExtractionFailure::kUnterminatedFence), "unterminated_fence");
}

TEST(DefinesModelNew, NeedsATopLevelClass) {
  EXPECT_TRUE(DefinesModelNew("class ModelNew(nn.Module):\n"));
  EXPECT_TRUE(DefinesModelNew("import x\nclass ModelNew:\n"));
  EXPECT_FALSE(DefinesModelNew("class ModelNewer(nn.Module):\n"));
  EXPECT_FALSE(DefinesModelNew("  class ModelNew:\n"));
  EXPECT_FALSE(DefinesModelNew("x = 'class ModelNew'\n"));
}

}  // namespace
}  // namespace kforge
