#include "sandbox/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "sandbox/message_channel.h"
#include "sandbox_test_util.h"

namespace kforge {
namespace {

const std::vector<std::string> kMinimalEnvironment = {"PATH=/usr/bin:/bin"};

std::unique_ptr<Subprocess> SpawnOrNull(const SpawnOptions& options) {
  auto process = Subprocess::Spawn(options);
  EXPECT_TRUE(process.ok()) << process.status().ToString();
  return process.ok() ? std::move(process).value() : nullptr;
}

std::unique_ptr<Subprocess> SpawnShell(const std::string& script, SpawnOptions options = {}) {
  options.argv = {"/bin/sh", "-c", script};
  if (options.environment.empty()) options.environment = kMinimalEnvironment;
  return SpawnOrNull(options);
}

// Wait() does not wait for the capture thread, so output is polled for rather than read once.
std::string WaitForOutput(const Subprocess& process, const std::string& needle, double timeout_s = 2) {
  WaitUntil([&] { return process.OutputTail().find(needle) != std::string::npos; }, timeout_s);
  return process.OutputTail();
}

// Gone, or a zombie waiting for whichever ancestor inherited it.
bool ProcessGone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto paren = text.rfind(')');
  if (!stat || paren == std::string::npos || paren + 2 >= text.size()) return true;
  char state = text[paren + 2];
  return state == 'Z' || state == 'X';
}

pid_t ParseFirstLineAsPid(const std::string& text) {
  std::istringstream in(text);
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

struct ExitCase {
  std::string name;
  std::string script;
  bool exited;
  int code;
  std::string description;
};

void PrintTo(const ExitCase& param, std::ostream* out) { *out << param.script; }

class SubprocessExitTest : public ::testing::TestWithParam<ExitCase> {};

TEST_P(SubprocessExitTest, ReportsHowTheChildEnded) {
  auto process = SpawnShell(GetParam().script);
  ASSERT_NE(process, nullptr);
  ExitStatus status = process->Wait();
  EXPECT_EQ(status.exited, GetParam().exited);
  EXPECT_EQ(status.code, GetParam().code);
  EXPECT_EQ(status.ToString().rfind(GetParam().description, 0), 0u) << status.ToString();
  EXPECT_FALSE(process->IsRunning());
  EXPECT_EQ(process->Wait().code, GetParam().code);  // a second Wait returns the same status
}

INSTANTIATE_TEST_SUITE_P(Cases, SubprocessExitTest,
                         ::testing::Values(ExitCase{"Exit0", "exit 0", true, 0, "exited with code 0"},
                                           ExitCase{"Exit3", "exit 3", true, 3, "exited with code 3"},
                                           ExitCase{"Exit255", "exit 255", true, 255, "exited with code 255"},
                                           ExitCase{"Sigkill", "kill -9 $$", false, SIGKILL, "killed by signal 9"},
                                           ExitCase{"Sigterm", "kill -TERM $$", false, SIGTERM,
                                                    "killed by signal 15"}),
                         [](const auto& info) { return info.param.name; });

TEST(ExitStatusTest, ToStringNamesTheSignal) {
  EXPECT_EQ((ExitStatus{true, 2}).ToString(), "exited with code 2");
  EXPECT_EQ((ExitStatus{false, SIGKILL}).ToString(), "killed by signal 9 (Killed)");
}

TEST(SubprocessTest, EmptyArgvIsInvalidArgument) {
  EXPECT_EQ(Subprocess::Spawn(SpawnOptions{}).status().code(), StatusCode::kInvalidArgument);
}

TEST(SubprocessTest, NonexistentProgramExitsWith127) {
  SpawnOptions options;
  options.argv = {"kforge-no-such-program-anywhere"};
  options.environment = kMinimalEnvironment;
  auto process = SpawnOrNull(options);
  ASSERT_NE(process, nullptr);
  ExitStatus status = process->Wait();
  EXPECT_TRUE(status.exited);
  EXPECT_EQ(status.code, 127);
  EXPECT_NE(WaitForOutput(*process, "cannot execute").find("cannot execute"), std::string::npos);
}

TEST(SubprocessTest, CapturesStdoutAndStderr) {
  auto process = SpawnShell("echo to-stdout; echo to-stderr >&2; echo done");
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->Wait().code, 0);
  std::string output = WaitForOutput(*process, "done");
  EXPECT_EQ(output, "to-stdout\nto-stderr\ndone\n");
}

TEST(SubprocessTest, OutputIsBoundedToItsTail) {
  SpawnOptions options;
  options.output_limit_bytes = 1000;
  auto process = SpawnShell("head -c 20000 /dev/zero | tr '\\0' a; printf END", options);
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->Wait().code, 0);
  ASSERT_TRUE(WaitUntil([&] {
    std::string tail = process->OutputTail();
    return tail.size() >= 3 && tail.compare(tail.size() - 3, 3, "END") == 0;
  }, 2));
  EXPECT_EQ(process->OutputTail(), std::string(997, 'a') + "END");
}

TEST(SubprocessTest, StdinIsDevNull) {
  auto process = SpawnShell("readlink /proc/self/fd/0; cat; echo after-cat");
  ASSERT_NE(process, nullptr);
  EXPECT_TRUE(WaitUntil([&] { return !process->IsRunning(); }, 30)) << "cat waited for input: a cat reading from /dev/null ends at once, one waiting for input never does";
  EXPECT_EQ(WaitForOutput(*process, "after-cat"), "/dev/null\nafter-cat\n");
}

TEST(SubprocessTest, EnvironmentIsExactlyWhatWasGiven) {
  ASSERT_EQ(setenv("KFORGE_TEST_PARENT_ONLY", "leaked", 1), 0);
  SpawnOptions options;
  options.argv = {"/usr/bin/env"};
  options.environment = {"PATH=/usr/bin:/bin", "KFORGE_TEST_GIVEN=a=b c", "EMPTY="};
  auto process = SpawnOrNull(options);
  unsetenv("KFORGE_TEST_PARENT_ONLY");
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->Wait().code, 0);
  std::string output = WaitForOutput(*process, "EMPTY=\n");
  std::set<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) lines.insert(line);
  EXPECT_EQ(lines, (std::set<std::string>{"PATH=/usr/bin:/bin", "KFORGE_TEST_GIVEN=a=b c", "EMPTY="}));
}

TEST(SubprocessTest, VariablePresentOrAbsentAsGiven) {
  SpawnOptions options;
  options.environment = {"PATH=/usr/bin:/bin", "KFORGE_PRESENT=1"};
  auto process = SpawnShell("echo \"present=${KFORGE_PRESENT-unset} absent=${HOME-unset}\"", options);
  ASSERT_NE(process, nullptr);
  process->Wait();
  EXPECT_EQ(WaitForOutput(*process, "absent="), "present=1 absent=unset\n");
}

class SubprocessDirTest : public TempDirTest {};

TEST_F(SubprocessDirTest, WorkingDirIsHonoured) {
  SpawnOptions options;
  options.working_dir = dir_;
  auto process = SpawnShell("pwd -P", options);
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->Wait().code, 0);
  EXPECT_EQ(WaitForOutput(*process, "\n"), dir_.string() + "\n");
}

TEST_F(SubprocessDirTest, MissingWorkingDirExitsWith126) {
  SpawnOptions options;
  options.working_dir = dir_ / "missing";
  auto process = SpawnShell("echo should-not-run", options);
  ASSERT_NE(process, nullptr);
  ExitStatus status = process->Wait();
  EXPECT_TRUE(status.exited);
  EXPECT_EQ(status.code, 126);
}

TEST(SubprocessTest, KillGroupKillsGrandchildren) {
  auto process = SpawnShell("sleep 100 & echo $!; wait");
  ASSERT_NE(process, nullptr);
  std::string output = WaitForOutput(*process, "\n");
  pid_t grandchild = ParseFirstLineAsPid(output);
  ASSERT_GT(grandchild, 0) << output;
  EXPECT_FALSE(ProcessGone(grandchild));
  EXPECT_TRUE(process->IsRunning());

  process->KillGroup();
  ExitStatus status = process->Wait();
  EXPECT_FALSE(status.exited);
  EXPECT_EQ(status.code, SIGKILL);
  EXPECT_TRUE(WaitUntil([&] { return ProcessGone(grandchild); }, 2)) << "grandchild " << grandchild << " survived";
}

TEST(SubprocessTest, DestructorKillsDescendantsThatOutliveTheChild) {
  auto process = SpawnShell("sleep 100 & echo $!");
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->Wait().code, 0);
  pid_t grandchild = ParseFirstLineAsPid(WaitForOutput(*process, "\n"));
  ASSERT_GT(grandchild, 0);
  EXPECT_FALSE(ProcessGone(grandchild));
  process.reset();
  EXPECT_TRUE(WaitUntil([&] { return ProcessGone(grandchild); }, 2)) << "grandchild " << grandchild << " survived";
}

TEST(SubprocessTest, DestructorKillsARunningChild) {
  auto process = SpawnShell("echo started; sleep 100");
  ASSERT_NE(process, nullptr);
  WaitForOutput(*process, "started");
  pid_t child = process->pid();
  auto start = std::chrono::steady_clock::now();
  process.reset();
  EXPECT_LT(SecondsSince(start), 2);
  EXPECT_TRUE(ProcessGone(child));
}

TEST(SubprocessTest, ChildLeadsItsOwnProcessGroup) {
  auto process = SpawnShell("sleep 100");
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(getpgid(process->pid()), process->pid());
  EXPECT_NE(getpgid(process->pid()), getpgrp());
}

constexpr char kFdProbe[] =
    "for fd in 3 4 5; do if test -e /proc/self/fd/$fd; then echo \"fd$fd open\"; fi; done; echo end";

TEST(SubprocessTest, NoExtraDescriptorsWithoutChannel) {
  auto process = SpawnShell(kFdProbe);
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->request_fd(), -1);
  EXPECT_EQ(process->response_fd(), -1);
  process->Wait();
  EXPECT_EQ(WaitForOutput(*process, "end"), "end\n");
}

TEST(SubprocessTest, ChannelOnDescriptors3And4) {
  SpawnOptions options;
  options.with_channel = true;
  auto process = SpawnShell(kFdProbe, options);
  ASSERT_NE(process, nullptr);
  EXPECT_GE(process->request_fd(), 0);
  EXPECT_GE(process->response_fd(), 0);
  process->Wait();
  EXPECT_EQ(WaitForOutput(*process, "end"), "fd3 open\nfd4 open\nend\n");
}

TEST(SubprocessTest, ParentDescriptorsWithoutCloexecDoNotLeak) {
  int leaky = fcntl(1, F_DUPFD, 40);  // no FD_CLOEXEC
  ASSERT_GE(leaky, 40);
  auto process = SpawnShell("test -e /proc/self/fd/" + std::to_string(leaky) + " && echo leaked; echo end");
  close(leaky);
  ASSERT_NE(process, nullptr);
  process->Wait();
  EXPECT_EQ(WaitForOutput(*process, "end"), "end\n");
}

TEST(SubprocessTest, ChannelCarriesFramesBothWays) {
  // The child copies exactly one frame from fd 3 to fd 4: {"x":1} is 7 bytes after the header.
  SpawnOptions options;
  options.with_channel = true;
  auto process = SpawnShell("head -c 11 <&3 >&4", options);
  ASSERT_NE(process, nullptr);
  MessageChannel channel(process->request_fd(), process->response_fd());
  ASSERT_TRUE(channel.Send(Json{{"x", 1}}).ok());
  auto reply = channel.Receive(2);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(*reply, (Json{{"x", 1}}));
  EXPECT_EQ(process->Wait().code, 0);
  EXPECT_EQ(channel.Receive(2).status().code(), StatusCode::kUnavailable);
}

// Regression: SpawnOptions says argv[0] is looked up on the *child's* PATH, but execvpe searches
// the PATH of the calling (parent) process, so a program reachable only through the given PATH
// is not found (exit 127).
TEST_F(SubprocessDirTest, ProgramIsLookedUpOnTheChildsPath) {
  Write("bin/kforge_path_probe", "#!/bin/sh\necho found-on-child-path\n", /*executable=*/true);
  SpawnOptions options;
  options.argv = {"kforge_path_probe"};
  options.environment = {"PATH=" + (dir_ / "bin").string() + ":/usr/bin:/bin"};
  auto process = SpawnOrNull(options);
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->Wait().code, 0);
  EXPECT_EQ(WaitForOutput(*process, "found"), "found-on-child-path\n");
}

TEST_F(SubprocessDirTest, OutputFileTakesStdoutAndStderrAppended) {
  const auto log = Write("worker.log", "earlier\n");
  SpawnOptions options;
  options.output_file = log;
  auto process = SpawnShell("echo to-stdout; echo to-stderr >&2", options);
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->Wait().code, 0);
  EXPECT_TRUE(process->WaitForOutputEnd(1));
  EXPECT_EQ(process->OutputTail(), "");
  EXPECT_EQ(*ReadFile(log), "earlier\nto-stdout\nto-stderr\n");
}

TEST_F(SubprocessDirTest, AnOutputFileThatCannotBeOpenedIsAnIoError) {
  SpawnOptions options;
  options.argv = {"/bin/true"};
  options.output_file = dir_ / "missing" / "worker.log";
  EXPECT_EQ(Subprocess::Spawn(options).status().code(), StatusCode::kIoError);
}

TEST(SubprocessTest, CpusPinTheChild) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int last = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) last = cpu;
  }
  SpawnOptions options;
  options.cpus = {last};
  auto process = SpawnShell("grep Cpus_allowed_list /proc/self/status", options);
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->Wait().code, 0);
  EXPECT_EQ(WaitForOutput(*process, "\n"), "Cpus_allowed_list:\t" + std::to_string(last) + "\n");
  options.cpus = {CPU_SETSIZE};
  options.argv = {"/bin/true"};
  EXPECT_EQ(Subprocess::Spawn(options).status().code(), StatusCode::kInvalidArgument);
}

TEST(SubprocessTest, ChildStartsWithNoSignalBlocked) {
  sigset_t blocked, previous;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGINT);
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  auto process = SpawnShell("grep SigBlk /proc/self/status");
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->Wait().code, 0);
  EXPECT_EQ(WaitForOutput(*process, "\n"), "SigBlk:\t0000000000000000\n");
}

TEST(SubprocessTest, DieWithParentEndsTheChildWithTheThreadThatSpawnedIt) {
  pid_t child = -1;
  std::thread spawner([&] {
    SpawnOptions options;
    options.argv = {"/bin/sleep", "100"};
    options.environment = kMinimalEnvironment;
    options.output_file = "/dev/null";
    options.die_with_parent = true;
    auto process = Subprocess::Spawn(options);
    ASSERT_TRUE(process.ok());
    child = (*process)->pid();
    // Exec'd: past the prctl that ties it to this thread.
    ASSERT_TRUE(WaitUntil([&] {
      auto command = ReadFile("/proc/" + std::to_string(child) + "/cmdline");
      return command.ok() && command->find("sleep") != std::string::npos;
    }, 2));
    std::move(process).value().release();  // never killed by its destructor: only its parent's end can do it
  });
  spawner.join();
  ASSERT_GT(child, 0);
  EXPECT_TRUE(WaitUntil([&] { return ProcessGone(child); }, 2)) << "the child outlived the thread that spawned it";
  waitpid(child, nullptr, 0);
}

TEST(FindProgramTest, LooksOnThePathGiven) {
  auto found = FindProgram("sh", {"PATH=/nonexistent:/bin"});
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, "/bin/sh");
  EXPECT_EQ(FindProgram("kforge-no-such-program", {"PATH=/bin"}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*FindProgram("/bin/sh", {}), "/bin/sh");
  EXPECT_EQ(FindProgram("/nonexistent/sh", {}).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kforge
