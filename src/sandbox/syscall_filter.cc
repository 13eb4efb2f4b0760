#include "sandbox/syscall_filter.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace kforge {
namespace {

// Denied outright: each would let a process see or change what lies outside its sandbox.
const char* const kDenied[] = {
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "fsopen", "fsmount", "fsconfig",
    "move_mount", "open_tree", "mount_setattr",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "add_key", "request_key", "keyctl", "bpf", "userfaultfd",
    "open_by_handle_at", "name_to_handle_at", "iopl", "ioperm", "quotactl", "syslog",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
    "lookup_dcookie", "vhangup", "personality",
};

// Namespace flags a clone(2) may not carry.
constexpr uint64_t kNamespaceFlags[] = {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWIPC,
                                        CLONE_NEWUTS, CLONE_NEWCGROUP};

struct ContextDeleter {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};

Status Failed(const char* what, int rc) {
  return Status::Internal(std::string("building the seccomp filter: ") + what + ": " + std::strerror(-rc));
}

}  // namespace

Result<std::string> BuildSyscallFilter(const SyscallPolicy& policy) {
  std::unique_ptr<void, ContextDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return Status::Internal("building the seccomp filter: seccomp_init failed");
  const uint32_t deny = SCMP_ACT_ERRNO(EPERM);
  for (const char* name : kDenied) {
    int number = seccomp_syscall_resolve_name(name);
    if (number == __NR_SCMP_ERROR) continue;  // not on this architecture
    if (int rc = seccomp_rule_add(ctx.get(), deny, number, 0); rc < 0) return Failed(name, rc);
  }
  // Sockets: Unix ones only (the runtime's own channels); no IP, netlink or raw packets.
  if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                                SCMP_A0(SCMP_CMP_NE, AF_UNIX));
      rc < 0) {
    return Failed("socket", rc);
  }
  // clone3 hides its flags in memory a filter cannot read: make libc fall back to clone(2).
  if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0); rc < 0) {
    return Failed("clone3", rc);
  }
  for (uint64_t flag : kNamespaceFlags) {
    if (int rc = seccomp_rule_add(ctx.get(), deny, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)); rc < 0) {
      return Failed("clone", rc);
    }
  }
  if (!policy.allow_exec) {
    for (int number : {SCMP_SYS(execve), SCMP_SYS(execveat)}) {
      if (int rc = seccomp_rule_add(ctx.get(), deny, number, 0); rc < 0) return Failed("execve", rc);
    }
  }
  int fd = memfd_create("kforge-seccomp", MFD_CLOEXEC);
  if (fd < 0) return Status::IoError(std::string("memfd_create: ") + std::strerror(errno));
  std::string program;
  if (int rc = seccomp_export_bpf(ctx.get(), fd); rc < 0) {
    close(fd);
    return Failed("export", rc);
  }
  off_t size = lseek(fd, 0, SEEK_END);
  program.resize(size > 0 ? static_cast<size_t>(size) : 0);
  ssize_t got = pread(fd, program.data(), program.size(), 0);
  close(fd);
  if (got != static_cast<ssize_t>(program.size())) return Status::IoError("reading back the seccomp program");
  return program;
}

}  // namespace kforge
