"""Confining a candidate's process. The kernel does the holding (isolation.py): own user, PID,
mount, IPC and network namespaces, a filesystem read-only outside the private folder, a bound on
the number of processes, and a seccomp filter installed just before the candidate's code runs.
The process also gets its own session, a scrubbed environment, a private compile cache and
resource limits. Returns a report of what was applied and why anything was not."""
from __future__ import annotations

import dataclasses
import os
import pwd
import resource
import sys
from dataclasses import dataclass
from typing import Any

from . import isolation

# Processes a candidate may add to those its user already runs: enough for compilers, bounded
# against a fork bomb.
EXTRA_PROCESSES = 256


@dataclass
class SandboxConfig:
    root: str
    env: dict[str, str]
    user: str | None
    max_file_bytes: int
    isolation: str = "fork"  # "fork": warm forked spares; "spawn": a fresh interpreter per candidate
    gpu_memory_fraction: float = 0.75
    seccomp_bpf_hex: str = ""  # the syscall filter kforge built with libseccomp
    allow_unisolated: bool = False  # --unsafe-no-isolation: run candidates where namespaces are missing
    namespaces: bool = True  # decided at configure time from what the machine allows
    max_processes: int = 512  # the candidate's whole process tree
    readable: list[str] = dataclasses.field(default_factory=list)  # folders it reads beside the system

    @staticmethod
    def from_json(data: dict[str, Any]) -> "SandboxConfig":
        return SandboxConfig(root=data["root"], env={str(k): str(v) for k, v in data.get("env", {}).items()},
                             user=data.get("user") or None,
                             max_file_bytes=int(data.get("max_file_bytes", 16 << 30)),
                             isolation=str(data.get("isolation", "fork")),
                             gpu_memory_fraction=float(data.get("gpu_memory_fraction", 0.75)),
                             seccomp_bpf_hex=str(data.get("seccomp_bpf_hex", "")),
                             allow_unisolated=bool(data.get("allow_unisolated", False)),
                             namespaces=bool(data.get("namespaces", True)),
                             max_processes=int(data.get("max_processes", 512)),
                             readable=[str(path) for path in data.get("readable", [])])


def _drop_privileges(user: str) -> str:
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return f"not applied: no user {user!r}"
    try:
        os.setgroups([])
        os.setresgid(entry.pw_gid, entry.pw_gid, entry.pw_gid)
        os.setresuid(entry.pw_uid, entry.pw_uid, entry.pw_uid)
    except OSError as error:
        return f"not applied: {error}"
    return f"applied (uid {entry.pw_uid})"


def _isolate_network_only() -> str:
    """Without user namespaces, root can still take the network away."""
    if os.geteuid() != 0:
        return "not applied: no user namespaces and not root"
    try:
        isolation.unshare_only(isolation.CLONE_NEWNET)
    except isolation.IsolationError as error:
        return f"not applied: {error}"
    return "applied"


def prepare_private_dir(path: str, user: str | None) -> None:
    """Gives the sandbox user ownership of its private folder (a no-op when not root)."""
    if user and os.geteuid() == 0:
        try:
            entry = pwd.getpwnam(user)
            os.chown(path, entry.pw_uid, entry.pw_gid)
        except (KeyError, OSError):
            pass


def compile_cache_env(private_dir: str) -> dict[str, str]:
    """The candidate's compile caches live in its own folder: no evaluation can plant a kernel
    or a launcher in another's cache."""
    return {"TRITON_CACHE_DIR": os.path.join(private_dir, "cache", "triton"),
            "TORCH_EXTENSIONS_DIR": os.path.join(private_dir, "cache", "torch_extensions")}


def enter_sandbox(private_dir: str, config: SandboxConfig, child_only_fds: set[int]) -> dict[str, Any]:
    """Called in the freshly forked candidate process while it has one thread. With `namespaces`
    the process that returns is process 1 of a new PID namespace (the caller's process stays
    behind as its keeper, see isolation.enter_namespaces)."""
    user = config.user
    os.setsid()
    report: dict[str, Any] = {"private_dir": private_dir, "environment": "scrubbed"}
    if user and os.geteuid() == 0:
        report["user"] = _drop_privileges(user)
    else:
        report["user"] = "not requested" if not user else "kforge is not running as root: the candidate runs as its user"
    uid = os.geteuid()
    if config.namespaces:
        # The interpreter and its packages stay reachable when they live where the candidate
        # gets a private /tmp or /dev/shm (a checkout or a venv under /tmp).
        hidden = ("/tmp/", "/dev/shm/")
        readable = config.readable + [path for path in sys.path + [sys.prefix, sys.base_prefix]
                               if path and path.startswith(hidden) and os.path.isdir(path)]
        isolation.enter_namespaces(child_only_fds)
        report["namespaces"] = "user, pid, mount, ipc, network"
        report["network"] = "applied (own network namespace: no interfaces but loopback)"
        report["filesystem"] = isolation.confine_filesystem([private_dir], readable)
    else:
        report["namespaces"] = "not applied (unsafe: --unsafe-no-isolation)"
        report["network"] = _isolate_network_only()
        report["filesystem"] = "not confined"
    os.chdir(private_dir)
    os.environ.clear()
    os.environ.update(config.env)
    os.environ.update(compile_cache_env(private_dir))
    os.environ["HOME"] = private_dir
    os.environ["TMPDIR"] = private_dir
    for path in compile_cache_env(private_dir).values():
        os.makedirs(path, exist_ok=True)
    isolation.limit(resource.RLIMIT_CORE, 0)
    isolation.limit(resource.RLIMIT_FSIZE, config.max_file_bytes)
    isolation.limit(resource.RLIMIT_NOFILE, 4096)
    processes = isolation.processes_of(uid) + EXTRA_PROCESSES
    isolation.limit(resource.RLIMIT_NPROC, processes)
    report["process_limit"] = processes
    report["tree_bound"] = (f"{isolation.cgroups()}: the zygote bounds the process tree's memory and size; "
                            "rlimits bound each process")
    return report
