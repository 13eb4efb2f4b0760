#include "sandbox/syscall_filter.h"

#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/hash.h"

namespace kforge {
namespace {

// Installs `program` in a forked child, runs `probe` there and returns its exit code.
template <typename Probe>
int InFilteredChild(const std::string& program, Probe probe) {
  pid_t pid = fork();
  if (pid == 0) {
    sock_fprog fprog{static_cast<unsigned short>(program.size() / sizeof(sock_filter)),
                     reinterpret_cast<sock_filter*>(const_cast<char*>(program.data()))};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(90);
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) _exit(91);
    _exit(probe());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(SyscallFilterTest, IsWholeBpfInstructions) {
  auto program = BuildSyscallFilter({});
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  EXPECT_GT(program->size(), 0u);
  EXPECT_EQ(program->size() % sizeof(sock_filter), 0u);
}

TEST(SyscallFilterTest, DeniesIpSocketsAndTracingButNotUnixSockets) {
  auto program = BuildSyscallFilter({});
  ASSERT_TRUE(program.ok());
  EXPECT_EQ(InFilteredChild(*program, [] { return socket(AF_INET, SOCK_STREAM, 0) < 0 && errno == EAFNOSUPPORT ? 0 : 1; }), 0);
  EXPECT_EQ(InFilteredChild(*program, [] { return socket(AF_UNIX, SOCK_STREAM, 0) >= 0 ? 0 : 1; }), 0);
  EXPECT_EQ(InFilteredChild(*program, [] { return ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) < 0 && errno == EPERM ? 0 : 1; }), 0);
  EXPECT_EQ(InFilteredChild(*program, [] { return unshare(CLONE_NEWUSER) < 0 && errno == EPERM ? 0 : 1; }), 0);
}

TEST(SyscallFilterTest, ExecOnlyWhereTheDeviceNeedsCompilers) {
  auto exec_true = [] {
    pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/true", "true", static_cast<char*>(nullptr));
      _exit(errno == EPERM ? 3 : 4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 5;
  };
  auto denied = BuildSyscallFilter({.allow_exec = false});
  auto allowed = BuildSyscallFilter({.allow_exec = true});
  ASSERT_TRUE(denied.ok() && allowed.ok());
  EXPECT_EQ(InFilteredChild(*denied, exec_true), 3);
  EXPECT_EQ(InFilteredChild(*allowed, exec_true), 0);
}

TEST(SyscallFilterTest, ThreadsStillStart) {
  auto program = BuildSyscallFilter({});
  ASSERT_TRUE(program.ok());
  // fork() goes through clone(2) without namespace flags: allowed.
  EXPECT_EQ(InFilteredChild(*program, [] {
    pid_t pid = fork();
    if (pid == 0) _exit(7);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 7 ? 0 : 1;
  }), 0);
}

TEST(HexBytesTest, TwoLowercaseDigitsPerByte) {
  EXPECT_EQ(HexBytes(std::string("\x00\x7f\xff", 3)), "007fff");
}

}  // namespace
}  // namespace kforge
