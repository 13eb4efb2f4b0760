// Helpers shared by the sandbox tests: a fixture owning a private temporary folder, polling with
// a deadline, and SIGPIPE ignored for a scope (so that a test of a broken pipe fails instead of
// killing the test binary).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "core/files.h"

namespace kforge {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir(std::filesystem::temp_directory_path(), "kforge_sandbox_test_");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = std::filesystem::canonical(*dir);
  }
  void TearDown() override { RemoveTreeQuietly(dir_); }

  // Writes dir_/relative (creating its folders) and returns its path.
  std::filesystem::path Write(const std::string& relative, const std::string& contents, bool executable = false) {
    std::filesystem::path path = dir_ / relative;
    std::filesystem::create_directories(path.parent_path());
    Status written = WriteFile(path, contents);
    EXPECT_TRUE(written.ok()) << written.ToString();
    if (executable) chmod(path.c_str(), 0755);
    return path;
  }

  std::filesystem::path dir_;
};

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Polls `done` every few milliseconds until it holds or `timeout_s` has passed; whether it held.
inline bool WaitUntil(const std::function<bool()>& done, double timeout_s) {
  auto start = std::chrono::steady_clock::now();
  while (!done()) {
    if (SecondsSince(start) > timeout_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

class ScopedIgnoreSigpipe {
 public:
  ScopedIgnoreSigpipe() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &previous_);
  }
  ~ScopedIgnoreSigpipe() { sigaction(SIGPIPE, &previous_, nullptr); }
  ScopedIgnoreSigpipe(const ScopedIgnoreSigpipe&) = delete;
  ScopedIgnoreSigpipe& operator=(const ScopedIgnoreSigpipe&) = delete;

 private:
  struct sigaction previous_ {};
};

}  // namespace kforge
