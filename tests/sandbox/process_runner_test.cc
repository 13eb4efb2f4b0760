#include "sandbox/process_runner.h"

#include <gtest/gtest.h>

#include <chrono>

namespace kforge {
namespace {

TEST(ProcessRunnerTest, ReturnsWhatTheToolPrintedAndHowItEnded) {
  auto runner = MakeSubprocessRunner({"PATH=/usr/bin:/bin"}, 10);
  auto ran = runner->Run({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(ran.ok()) << ran.status().ToString();
  EXPECT_FALSE(ran->ok());
  EXPECT_EQ(ran->status.code, 3);
  EXPECT_EQ(ran->output, "out\nerr\n");
  auto fine = runner->Run({"true"});
  ASSERT_TRUE(fine.ok());
  EXPECT_TRUE(fine->ok());
}

TEST(ProcessRunnerTest, AMissingToolIsNotFound) {
  auto runner = MakeSubprocessRunner({"PATH=/usr/bin:/bin"}, 10);
  EXPECT_EQ(runner->Run({"kforge-no-such-tool"}).status().code(), StatusCode::kNotFound);
}

TEST(ProcessRunnerTest, AToolThatRunsTooLongIsStopped) {
  auto runner = MakeSubprocessRunner({"PATH=/usr/bin:/bin"}, 0.3);
  const auto start = std::chrono::steady_clock::now();
  auto ran = runner->Run({"sleep", "30"});
  EXPECT_EQ(ran.status().code(), StatusCode::kTimeout);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
}

}  // namespace
}  // namespace kforge
