// The seccomp filter every candidate process runs under, built with libseccomp and handed to the
// worker runtime as a BPF program (the runtime installs it on every thread just before the
// untrusted code runs). Allowed by default; denied with EPERM: tracing and reading other
// processes, mounting, new namespaces, kernel modules and keyrings, sockets other than Unix ones,
// and, where the device needs no compiler, executing any program.
#pragma once

#include <string>

#include "core/status.h"

namespace kforge {

struct SyscallPolicy {
  // Triton runs ptxas and a C compiler, and load_inline runs nvcc and ninja, on a GPU; the
  // interpreter on a CPU runs none.
  bool allow_exec = false;
};

// The filter as raw BPF bytes for this machine's architecture.
Result<std::string> BuildSyscallFilter(const SyscallPolicy& policy);

}  // namespace kforge
