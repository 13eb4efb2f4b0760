#include "llm/command_provider.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "core/files.h"

namespace kforge {
namespace {

class CommandProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir(std::filesystem::temp_directory_path(), "kforge_llm_command_test_");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = *dir;
  }
  void TearDown() override { RemoveTreeQuietly(dir_); }

  Completion Run(const std::string& command, std::map<std::string, std::string> environment = {},
                 double timeout_s = 10) {
    CommandOptions options;
    options.command = command;
    options.environment = std::move(environment);
    options.environment.emplace("PATH", "/usr/bin:/bin");
    options.timeout_s = timeout_s;
    options.temp_parent = dir_;
    CommandProvider provider(options);
    CompletionRequest request;
    request.messages = {{Role::kSystem, "be brief"}, {Role::kUser, "write a kernel"}};
    return provider.Complete(request);
  }

  std::filesystem::path dir_;
};

TEST_F(CommandProviderTest, ReadsThePromptOnStdinAndRepliesOnStdout) {
  Completion completion = Run("tr a-z A-Z");
  ASSERT_TRUE(completion.ok()) << completion.error;
  EXPECT_EQ(completion.text, "## SYSTEM\n\nBE BRIEF\n\n## USER\n\nWRITE A KERNEL\n");
  EXPECT_EQ(completion.attempts, 1);
  EXPECT_FALSE(completion.cost_known);
}

TEST_F(CommandProviderTest, ShellSyntaxWorksAndTheTemporaryFolderIsRemoved) {
  Completion completion = Run("grep -c '^## ' | sed 's/^/headers: /'");
  ASSERT_TRUE(completion.ok()) << completion.error;
  EXPECT_EQ(completion.text, "headers: 2\n");
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

TEST_F(CommandProviderTest, NonzeroExitIsCommandFailedWithTheEndOfStderr) {
  Completion completion = Run("echo partial; echo 'model not loaded' >&2; exit 3");
  EXPECT_EQ(completion.outcome, CallOutcome::kCommandFailed);
  EXPECT_NE(completion.error.find("exited with code 3"), std::string::npos) << completion.error;
  EXPECT_NE(completion.error.find("model not loaded"), std::string::npos) << completion.error;
  EXPECT_EQ(completion.text, "");
}

TEST_F(CommandProviderTest, MissingProgramIsCommandFailed) {
  Completion completion = Run("no-such-program-kforge");
  EXPECT_EQ(completion.outcome, CallOutcome::kCommandFailed);
  EXPECT_NE(completion.error.find("not found"), std::string::npos) << completion.error;
}

TEST_F(CommandProviderTest, EmptyOutputIsAnEmptyReply) {
  Completion completion = Run("cat > /dev/null");
  EXPECT_EQ(completion.outcome, CallOutcome::kEmptyReply);
  EXPECT_NE(completion.error.find("printed nothing"), std::string::npos);
}

// Gone, or a zombie waiting for whichever ancestor inherited it.
bool ProcessGone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto paren = text.rfind(')');
  if (!stat || paren == std::string::npos || paren + 2 >= text.size()) return true;
  return text[paren + 2] == 'Z' || text[paren + 2] == 'X';
}

TEST_F(CommandProviderTest, TimeoutKillsTheWholeProcessGroup) {
  std::filesystem::path pid_file = dir_ / "child.pid";
  auto start = std::chrono::steady_clock::now();
  Completion completion = Run("sleep 5 & echo $! > " + pid_file.string() + "; sleep 5", {}, 0.5);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(completion.outcome, CallOutcome::kTimeout);
  EXPECT_NE(completion.error.find("0.5 s"), std::string::npos) << completion.error;
  EXPECT_LT(elapsed, 2.0);
  auto pid_text = ReadFile(pid_file);
  ASSERT_TRUE(pid_text.ok());
  pid_t background = std::stoi(*pid_text);
  for (int i = 0; i < 100 && !ProcessGone(background); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(ProcessGone(background));
}

TEST_F(CommandProviderTest, SecretsNeverReachTheChild) {
  Completion completion = Run("env", {{"OPENAI_API_KEY", "sk-1"},
                                      {"ANTHROPIC_API_KEY", "sk-2"},
                                      {"HF_TOKEN", "hf-3"},
                                      {"MY_SECRET_VALUE", "s-4"},
                                      {"KFORGE_VISIBLE", "yes"}});
  ASSERT_TRUE(completion.ok()) << completion.error;
  EXPECT_NE(completion.text.find("KFORGE_VISIBLE=yes"), std::string::npos) << completion.text;
  for (const char* secret : {"sk-1", "sk-2", "hf-3", "s-4", "API_KEY", "TOKEN", "SECRET"}) {
    EXPECT_EQ(completion.text.find(secret), std::string::npos) << secret;
  }
}

}  // namespace
}  // namespace kforge
