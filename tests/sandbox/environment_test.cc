#include "sandbox/environment.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "sandbox_test_util.h"

namespace kforge {
namespace {

using Env = std::map<std::string, std::string>;

struct SecretCase {
  std::string name;
  bool secret;
};

void PrintTo(const SecretCase& param, std::ostream* out) { *out << param.name; }

class LooksSecretTest : public ::testing::TestWithParam<SecretCase> {};

TEST_P(LooksSecretTest, Classifies) { EXPECT_EQ(LooksSecret(GetParam().name), GetParam().secret) << GetParam().name; }

INSTANTIATE_TEST_SUITE_P(
    Names, LooksSecretTest,
    ::testing::Values(SecretCase{"OPENAI_API_KEY", true}, SecretCase{"ANTHROPIC_API_KEY", true},
                      SecretCase{"GITHUB_TOKEN", true}, SecretCase{"AWS_SECRET_ACCESS_KEY", true},
                      SecretCase{"AWS_SESSION_TOKEN", true}, SecretCase{"DB_PASSWORD", true},
                      SecretCase{"MYSQL_PASSWD", true}, SecretCase{"GOOGLE_APPLICATION_CREDENTIALS", true},
                      SecretCase{"HF_AUTH", true}, SecretCase{"SESSION_COOKIE", true},
                      SecretCase{"openai_api_key", true}, SecretCase{"TRITON_API_KEY", true},
                      SecretCase{"PATH", false}, SecretCase{"HOME", false}, SecretCase{"CUDA_VISIBLE_DEVICES", false},
                      SecretCase{"TRITON_CACHE_DIR", false}, SecretCase{"TORCH_HOME", false},
                      SecretCase{"LD_LIBRARY_PATH", false}, SecretCase{"LANG", false}),
    [](const auto& info) { return info.param.name; });

TEST(WorkerEnvironmentTest, KeepsTheAllowListAndDropsSecretsAndTheRest) {
  Env parent = {{"PATH", "/usr/bin:/bin"},
                {"HOME", "/home/user"},
                {"LANG", "C.UTF-8"},
                {"CUDA_VISIBLE_DEVICES", "0,1"},
                {"CUDA_MODULE_LOADING", "LAZY"},
                {"TRITON_CACHE_DIR", "/cache/triton"},
                {"TORCH_HOME", "/cache/torch"},
                {"TORCHINDUCTOR_CACHE_DIR", "/cache/inductor"},
                {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"},
                {"NVIDIA_DRIVER_CAPABILITIES", "compute,utility"},
                {"TORCH_EXTRA", "a=b"},
                // Secrets, even under allowed prefixes:
                {"OPENAI_API_KEY", "sk-1"},
                {"ANTHROPIC_API_KEY", "sk-2"},
                {"GITHUB_TOKEN", "ghp"},
                {"AWS_SECRET_ACCESS_KEY", "aws"},
                {"DB_PASSWORD", "hunter2"},
                {"TRITON_API_KEY", "t"},
                {"TORCH_HUB_TOKEN", "t"},
                {"CUDA_AUTH", "t"},
                // Unrelated:
                {"EDITOR", "vim"},
                {"PYTHONPATH", "/elsewhere"},
                {"LD_PRELOAD", "/evil.so"},
                {"KFORGE_PYTHON", "/opt/python"},
                {"SSH_AUTH_SOCK", "/tmp/agent"}};
  std::vector<std::string> expected = {"CUDA_MODULE_LOADING=LAZY",
                                       "CUDA_VISIBLE_DEVICES=0,1",
                                       "HOME=/home/user",
                                       "LANG=C.UTF-8",
                                       "NVIDIA_DRIVER_CAPABILITIES=compute,utility",
                                       "PATH=/usr/bin:/bin",
                                       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                                       "TORCHINDUCTOR_CACHE_DIR=/cache/inductor",
                                       "TORCH_EXTRA=a=b",
                                       "TORCH_HOME=/cache/torch",
                                       "TRITON_CACHE_DIR=/cache/triton"};
  EXPECT_EQ(WorkerEnvironment(parent), expected);
}

TEST(WorkerEnvironmentTest, SuppliesAPathWhenTheParentHasNone) {
  EXPECT_EQ(WorkerEnvironment({{"HOME", "/root"}}),
            (std::vector<std::string>{"HOME=/root", "PATH=/usr/local/bin:/usr/bin:/bin"}));
  EXPECT_EQ(WorkerEnvironment({}), (std::vector<std::string>{"PATH=/usr/local/bin:/usr/bin:/bin"}));
}

const Env kCandidateParent = {{"PATH", "/usr/bin"},
                              {"HOME", "/home/user"},
                              {"XDG_CACHE_HOME", "/home/user/.cache"},
                              {"OPENAI_API_KEY", "sk-1"},
                              {"GITHUB_TOKEN", "ghp"},
                              {"LD_LIBRARY_PATH", "/usr/local/cuda/lib64"},
                              {"CUDA_VISIBLE_DEVICES", "3"},
                              {"TRITON_CACHE_DIR", "/home/user/.triton"},
                              {"TRITON_INTERPRET", "1"},
                              {"TORCH_HOME", "/home/user/.torch"}};

// No shared compile cache reaches a candidate: the sandbox gives each one its own.
TEST(CandidateEnvironmentTest, OnlyWhatKernelsNeedAndNoSharedCache) {
  Env expected = {{"PATH", "/usr/bin"},
                  {"LANG", "C.UTF-8"},
                  {"LD_LIBRARY_PATH", "/usr/local/cuda/lib64"},
                  {"CUDA_VISIBLE_DEVICES", "3"}};
  EXPECT_EQ(CandidateEnvironment(kCandidateParent, "cuda:0"), expected);
}

TEST(CandidateEnvironmentTest, CpuRunsTritonInTheInterpreter) {
  Env env = CandidateEnvironment(kCandidateParent, "cpu");
  EXPECT_EQ(env["TRITON_INTERPRET"], "1");
  EXPECT_EQ(env.count("HOME"), 0u);
  EXPECT_EQ(env.count("OPENAI_API_KEY"), 0u);
  EXPECT_EQ(env.count("TRITON_CACHE_DIR"), 0u);
}

TEST(CandidateEnvironmentTest, DefaultsWhenTheParentIsEmpty) {
  Env expected = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"LANG", "C.UTF-8"}};
  EXPECT_EQ(CandidateEnvironment({}, "cuda:1"), expected);
}

TEST(ProcessEnvironmentTest, ReadsTheProcessEnvironment) {
  ASSERT_EQ(setenv("KFORGE_TEST_PROCESS_ENV", "x=y", 1), 0);
  Env env = ProcessEnvironment();
  unsetenv("KFORGE_TEST_PROCESS_ENV");
  EXPECT_EQ(env["KFORGE_TEST_PROCESS_ENV"], "x=y");
}

// What FindPython returns when neither --python, KFORGE_PYTHON nor KFORGE_HOME decide: the
// system-wide bootstrap venv when running as root and it exists, else python3 (HOME unset).
std::string SystemFallbackPython() {
  const char* system_venv = "/opt/kforge/venv/bin/python";
  return geteuid() == 0 && access(system_venv, X_OK) == 0 ? system_venv : "python3";
}

class FindPythonTest : public TempDirTest {
 protected:
  std::string MakeVenv(const std::string& folder) {
    return Write(folder + "/venv/bin/python", "#!/bin/sh\n", /*executable=*/true).string();
  }
};

TEST_F(FindPythonTest, RequestedWinsOverEverything) {
  MakeVenv("home");
  Env env = {{"KFORGE_PYTHON", "/from/env/python"}, {"KFORGE_HOME", (dir_ / "home").string()}};
  EXPECT_EQ(FindPython("/requested/python", env), "/requested/python");
}

TEST_F(FindPythonTest, KforgePythonWinsOverVenvs) {
  MakeVenv("home");
  Env env = {{"KFORGE_PYTHON", "/from/env/python"}, {"KFORGE_HOME", (dir_ / "home").string()}};
  EXPECT_EQ(FindPython("", env), "/from/env/python");
}

TEST_F(FindPythonTest, EmptyKforgePythonIsIgnored) {
  std::string venv = MakeVenv("home");
  Env env = {{"KFORGE_PYTHON", ""}, {"KFORGE_HOME", (dir_ / "home").string()}};
  EXPECT_EQ(FindPython("", env), venv);
}

TEST_F(FindPythonTest, KforgeHomeVenvWinsOverHomeCache) {
  std::string venv = MakeVenv("kforge_home");
  MakeVenv("user/.cache/kforge");
  Env env = {{"KFORGE_HOME", (dir_ / "kforge_home").string()}, {"HOME", (dir_ / "user").string()}};
  EXPECT_EQ(FindPython("", env), venv);
}

TEST_F(FindPythonTest, VenvThatIsNotExecutableIsSkipped) {
  Write("home/venv/bin/python", "not executable");
  EXPECT_EQ(FindPython("", {{"KFORGE_HOME", (dir_ / "home").string()}}), SystemFallbackPython());
}

TEST_F(FindPythonTest, HomeCacheVenvWhenNothingElseDecides) {
  if (SystemFallbackPython() != "python3") GTEST_SKIP() << "the system venv takes precedence on this machine";
  std::string venv = MakeVenv("user/.cache/kforge");
  EXPECT_EQ(FindPython("", {{"HOME", (dir_ / "user").string()}}), venv);
}

TEST_F(FindPythonTest, FallsBackWhenNothingIsFound) {
  EXPECT_EQ(FindPython("", {}), SystemFallbackPython());
  EXPECT_EQ(FindPython("", {{"KFORGE_HOME", (dir_ / "missing").string()}}), SystemFallbackPython());
}

class FindWorkerPackageDirTest : public TempDirTest {
 protected:
  static std::filesystem::path SourceTreePython() {
    return std::filesystem::weakly_canonical(std::filesystem::path(KFORGE_SOURCE_DIR) / "python");
  }
};

TEST_F(FindWorkerPackageDirTest, HonoursKforgePythonPathWhenItHoldsTheServer) {
  Write("pkg/kforge_worker/server.py", "");
  auto found = FindWorkerPackageDir({{"KFORGE_PYTHONPATH", (dir_ / "pkg").string()}});
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, (dir_ / "pkg").string());
}

TEST_F(FindWorkerPackageDirTest, FallsBackToTheSourceTreeOtherwise) {
  Write("pkg/kforge_worker/__init__.py", "");  // a package, but not the worker's
  for (const Env& env : {Env{}, Env{{"KFORGE_PYTHONPATH", (dir_ / "pkg").string()}},
                         Env{{"KFORGE_PYTHONPATH", (dir_ / "missing").string()}}}) {
    auto found = FindWorkerPackageDir(env);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(std::filesystem::weakly_canonical(*found), SourceTreePython());
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(*found) / "kforge_worker" / "server.py"));
  }
}

}  // namespace
}  // namespace kforge
