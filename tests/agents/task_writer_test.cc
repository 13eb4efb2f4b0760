#include "agents/task_writer.h"

#include <gtest/gtest.h>

#include "fakes.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

const char* kSoftmaxTask = R"(Here it is.

```python
import torch
import torch.nn as nn

batch_size = 4096
dim = 8192
KFORGE_CPU_SIZES = {"batch_size": 8, "dim": 64}


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
```
)";

class TaskWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto library = PromptLibrary::Load(fs::path(KFORGE_SOURCE_DIR) / "prompts");
    ASSERT_TRUE(library.ok()) << library.status().ToString();
    prompts_.emplace(std::move(library).value());
  }
  std::optional<PromptLibrary> prompts_;
  ScriptedProvider provider_;
};

TEST_F(TaskWriterTest, ALoadingTaskIsReturnedAtOnce) {
  provider_.Then(OkReply(kSoftmaxTask));
  int checked = 0;
  auto task = WriteTaskFromDescription("row-wise softmax over 4096x8192 fp32", *prompts_, provider_,
                                       [&](const std::string& source) {
                                         ++checked;
                                         EXPECT_NE(source.find("class Model"), std::string::npos);
                                         return Status::Ok();
                                       });
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->attempts, 1);
  EXPECT_EQ(checked, 1);
  EXPECT_NE(task->source.find("torch.softmax(x, dim=1)"), std::string::npos);
  EXPECT_NE(provider_.UserText(0).find("row-wise softmax over 4096x8192 fp32"), std::string::npos);
}

TEST_F(TaskWriterTest, ProblemsGoBackToTheModelUntilTheTaskLoads) {
  provider_.Then(OkReply("I think a softmax is exp(x) / sum(exp(x))."));  // no program
  provider_.Then(OkReply("```python\nclass Model(nn.Module):\n    pass\n```\n"));  // no get_inputs
  provider_.Then(OkReply(kSoftmaxTask));
  provider_.Then(OkReply(kSoftmaxTask));
  int checks = 0;
  auto task = WriteTaskFromDescription("softmax", *prompts_, provider_, [&](const std::string&) {
    return ++checks == 1 ? Status::InvalidArgument("get_inputs() raised NameError: name 'dim' is not defined")
                         : Status::Ok();
  }, 4);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->attempts, 4);
  EXPECT_NE(provider_.UserText(1).find("no fenced Python code block"), std::string::npos);
  EXPECT_NE(provider_.UserText(2).find("does not define `get_inputs()` and `get_init_inputs()`"), std::string::npos);
  EXPECT_NE(provider_.UserText(3).find("name 'dim' is not defined"), std::string::npos);
  EXPECT_NE(provider_.UserText(3).find("batch_size = 4096"), std::string::npos);  // the version that failed
}

TEST_F(TaskWriterTest, GivingUpNamesTheLastProblem) {
  provider_.Then(OkReply(kSoftmaxTask));
  provider_.Then(OkReply(kSoftmaxTask));
  auto task = WriteTaskFromDescription("softmax", *prompts_, provider_,
                                       [](const std::string&) { return Status::InvalidArgument("Model() needs 2 arguments"); }, 2);
  ASSERT_FALSE(task.ok());
  EXPECT_EQ(task.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(task.status().message().find("after 2 attempt(s): Model() needs 2 arguments"), std::string::npos);
}

TEST_F(TaskWriterTest, AnUnreachableModelIsUnavailable) {
  provider_.Then(FailedCompletion(CallOutcome::kAuthError, "401: bad key"));
  auto task = WriteTaskFromDescription("softmax", *prompts_, provider_, [](const std::string&) { return Status::Ok(); }, 1);
  ASSERT_FALSE(task.ok());
  EXPECT_EQ(task.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(task.status().message().find("401: bad key"), std::string::npos);
}

TEST(TaskNameTest, WordsInLowerCase) {
  EXPECT_EQ(TaskNameFor("Row-wise softmax over 4096x8192 fp32"), "row_wise_softmax_over_4096x8192_fp32");
  EXPECT_EQ(TaskNameFor("  !!"), "task_");
  EXPECT_EQ(TaskNameFor("2-layer MLP"), "task_2_layer_mlp");
  EXPECT_LE(TaskNameFor(std::string(200, 'a')).size(), 48u);
}

}  // namespace
}  // namespace kforge
