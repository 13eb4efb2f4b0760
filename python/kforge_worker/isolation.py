"""The kernel's isolation for processes that run untrusted code: user, PID, mount, IPC and network
namespaces (unprivileged user namespaces need no root), a filesystem that is read-only outside
the folders named writable, a process-count bound, and a seccomp filter.

Everything here is a thin use of Linux's own mechanisms through libc: unshare(2), mount(2),
prctl(2), seccomp(2). The seccomp program itself is built by kforge with libseccomp and arrives
as bytes; this module only installs it.

A process enters in two steps:
- `enter_namespaces` right after fork, while the process has one thread: it unshares the
  namespaces, writes its identity maps and forks once more. The parent of that fork becomes the
  keeper (it only waits and relays how its child ended); the child is process 1 of the new PID
  namespace, so when it ends, or the keeper dies, the kernel kills every process the untrusted
  code started, whatever sessions or groups they made.
- `confine_filesystem` in that child: private /tmp and /dev/shm, the writable folders bound
  back, a fresh /proc and every other mount read-only.
- `lock_down` just before the untrusted code runs: no new privileges and the seccomp filter on
  every thread.
"""
from __future__ import annotations

import ctypes
import os
import resource
import signal
import struct
import time
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MS_STRICTATIME = 1 << 24

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
SYS_SECCOMP = 317  # x86_64
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1

# The per-mount flags a remount must keep: a user namespace may not clear them once set.
_LOCKABLE = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
             "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.syscall.restype = ctypes.c_long


class IsolationError(RuntimeError):
    """Isolation could not be set up; the process is as it was."""


class HalfIsolated(RuntimeError):
    """The namespaces were unshared but could not be finished: the process must end."""


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise IsolationError(f"{what}: {os.strerror(code)} (errno {code})")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encode = lambda text: text.encode() if text is not None else None  # noqa: E731
    _check(_libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)),
           f"mount {fstype or source or ''} on {target}")


def prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)),
           f"prctl({option})")


def set_dumpable(dumpable: bool) -> None:
    """A process that is not dumpable cannot be traced, and its /proc files (environment,
    memory) cannot be read by other processes of the same user."""
    prctl(PR_SET_DUMPABLE, 1 if dumpable else 0)


def die_with_parent() -> None:
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def unshare_only(flags: int) -> None:
    """unshare(2) with exactly `flags` (root may take a network namespace without a user one)."""
    _check(_libc.unshare(flags), "unshare")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def unshare(flags: int, full_identity_map: bool = False) -> None:
    """Unshares the namespaces in `flags` (with a new user namespace) and maps this process's
    user and group onto themselves, so files keep their owners. Root may map every id (its files
    stay reachable inside), but gains no capability over the namespaces it left: it can no longer
    trace or read the memory of processes outside."""
    uid, gid = os.geteuid(), os.getegid()
    set_dumpable(True)  # /proc/self/*_map belong to root while the process is not dumpable
    if full_identity_map and uid == 0:
        return _unshare_mapped_by_helper(flags | CLONE_NEWUSER)
    unshare_only(flags | CLONE_NEWUSER)
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
        _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
    except OSError as error:
        raise HalfIsolated(f"writing the identity maps: {error}") from None


def _unshare_mapped_by_helper(flags: int) -> None:
    """A map of more than one's own id must be written from outside the new namespace: a helper
    forked beforehand writes it once this process has unshared."""
    unshared_r, unshared_w = os.pipe()
    mapped_r, mapped_w = os.pipe()
    target = os.getpid()
    helper = os.fork()
    if helper == 0:
        code = 1
        try:
            os.close(unshared_w)
            os.close(mapped_r)
            if os.read(unshared_r, 1) == b"1":
                _write(f"/proc/{target}/uid_map", "0 0 4294967295\n")
                _write(f"/proc/{target}/gid_map", "0 0 4294967295\n")
                os.write(mapped_w, b"1")
                code = 0
        finally:
            os._exit(code)
    os.close(unshared_r)
    os.close(mapped_w)
    failed = _libc.unshare(flags) != 0
    errno_value = ctypes.get_errno()
    os.write(unshared_w, b"0" if failed else b"1")
    os.close(unshared_w)
    done = os.read(mapped_r, 1)
    os.close(mapped_r)
    os.waitpid(helper, 0)
    if failed:
        raise IsolationError(f"unshare: {os.strerror(errno_value)} (errno {errno_value})")
    if done != b"1":
        raise HalfIsolated("the helper could not write the identity maps")


def enter_namespaces(keep_fds: set[int], full_identity_map: bool = False, parent_is_one_thread: bool = True) -> None:
    """Unshares user, mount, IPC, network and PID namespaces and forks: the caller returns as
    process 1 of the new PID namespace. The process that forked stays behind as the keeper and
    never returns: it waits for its child and ends the same way, so whoever waits on it sees how
    the untrusted process ended. Must run while the process has one thread.

    `parent_is_one_thread`: the parent forked this process from a thread that lives as long as it
    does (the zygote's), so the keeper may die with that thread (PR_SET_PDEATHSIG follows the
    thread, not the process). Otherwise (kforge starts workers from any thread) the keeper only
    watches for its parent process to end."""
    unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWPID, full_identity_map)
    parent = os.getppid()
    child = os.fork()
    if child == 0:
        die_with_parent()  # the keeper is outside this PID namespace, so getppid() says 0
        return
    for fd in keep_fds:  # the job's socket belongs to the child alone
        try:
            os.close(fd)
        except OSError:
            pass
    _keep(child, parent, parent_is_one_thread)


def _keep(child: int, parent: int, die_with_parent_thread: bool) -> None:
    """The keeper's whole life: it relays how its child ended, and when its own parent dies (a
    kforge killed, even while its child spins in a call) it kills the child, and with it the
    whole PID namespace."""
    if die_with_parent_thread:
        try:
            die_with_parent()
        except IsolationError:
            pass
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    while True:
        try:
            done, status = os.waitpid(child, os.WNOHANG)
        except ChildProcessError:
            os._exit(70)
        if done:
            break
        if os.getppid() != parent:
            os.kill(child, signal.SIGKILL)
        time.sleep(0.2)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


def _mounts() -> list[tuple[str, set[str]]]:
    """(mount point, per-mount options) from /proc/self/mountinfo, in mount order."""
    mounts = []
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")  # octal escapes such as \040
            mounts.append((point, set(fields[5].split(","))))
    return mounts


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def confine_filesystem(writable: list[str], readable: list[str] | None = None, private_tmp: bool = True,
                       tmp_bytes: int = 1 << 30) -> dict[str, Any]:
    """In a new mount namespace (with its user namespace's capabilities): makes the filesystem
    read-only except `writable`, gives the process an empty /tmp and /dev/shm of its own (where
    `readable` folders are bound back, read-only, if they lived there), and a /proc that shows
    only its PID namespace. Returns what was done and what could not be."""
    report: dict[str, Any] = {}
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    writable = [os.path.realpath(path) for path in writable if path and os.path.isdir(path)]
    readable = [os.path.realpath(path) for path in readable or [] if path and os.path.isdir(path)]
    held = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in writable + readable}  # reachable once hidden
    fresh: list[str] = []
    if private_tmp:
        for target in ("/tmp", "/dev/shm"):
            if os.path.isdir(target):
                _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmp_bytes},mode=1777")
                fresh.append(target)
    for path, fd in held.items():
        os.makedirs(path, exist_ok=True)  # inside a fresh tmpfs when the folder lived under it
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        report["proc"] = "own PID namespace only"
    except IsolationError as error:
        report["proc"] = f"host /proc kept ({error})"
    keep = set(writable) | set(fresh) | {"/proc"}
    failed = []
    read_only = 0
    for point, options in _mounts():
        if point in keep or _inside(point, "/proc") or any(_inside(point, w) for w in writable):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for name, bit in _LOCKABLE.items():
            if name in options:
                flags |= bit
        try:
            _mount(None, point, None, flags)
            read_only += 1
        except IsolationError as error:
            failed.append(f"{point}: {error}")
    report["read_only_mounts"] = read_only
    report["writable"] = writable + fresh
    if failed:
        report["not_read_only"] = failed[:10]
    return report


def cgroups() -> str:
    """What the machine offers for bounding a process tree with cgroups (reported; the bound
    itself is the zygote's walk of the tree and the rlimits, which hold everywhere)."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return "unknown"
    unified = [line.split(":", 2)[2] for line in lines if line.startswith("0::")]
    if not os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        return "cgroup v1 (no delegated v2 tree)"
    if unified and os.access("/sys/fs/cgroup" + unified[0], os.W_OK):
        return "cgroup v2, delegated (not used)"
    return "cgroup v2, not delegated"


def limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, hard))


def processes_of(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                pass
    return count


def lock_down(seccomp_program: bytes | None) -> str:
    """No new privileges, then the seccomp filter on every thread of the process (threads the
    CUDA driver started included). Returns how the filter went."""
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if not seccomp_program:
        return "not applied: kforge sent no filter"
    if len(seccomp_program) % 8:
        raise IsolationError("the seccomp program is not a whole number of BPF instructions")
    program = ctypes.create_string_buffer(seccomp_program, len(seccomp_program))
    fprog = struct.pack("HxxxxxxQ", len(seccomp_program) // 8, ctypes.addressof(program))
    buffer = ctypes.create_string_buffer(fprog, len(fprog))
    result = _libc.syscall(ctypes.c_long(SYS_SECCOMP), ctypes.c_long(SECCOMP_SET_MODE_FILTER),
                           ctypes.c_long(SECCOMP_FILTER_FLAG_TSYNC), buffer)
    if result != 0:
        code = ctypes.get_errno()
        if result > 0:
            raise IsolationError(f"seccomp: thread {result} could not take the filter")
        raise IsolationError(f"seccomp: {os.strerror(code)} (errno {code})")
    return "applied"


def probe() -> dict[str, Any]:
    """What this machine allows, found by trying it in a throw-away child: the namespaces and
    the read-only filesystem. {"namespaces": bool, "why": str}."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        message = "ok"
        try:
            enter_namespaces(set())
            confine_filesystem([])
        except BaseException as error:  # noqa: BLE001 - reported, whatever it is
            message = f"{type(error).__name__}: {error}"
        try:
            os.write(write_fd, message.encode()[:4000])
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []
    while True:
        chunk = os.read(read_fd, 4096)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_fd)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    message = b"".join(chunks).decode(errors="replace")
    if message == "ok":
        return {"namespaces": True, "why": "user, PID, mount, IPC and network namespaces; read-only filesystem"}
    if not message:
        message = "the probe ended without a word"
    return {"namespaces": False, "why": message}


def namespaces_of(pid: int | str) -> dict[str, int]:
    found = {}
    for name in ("user", "pid", "mnt", "net", "ipc"):
        try:
            found[name] = os.stat(f"/proc/{pid}/ns/{name}").st_ino
        except OSError:
            pass
    return found


def status_fields(pid: int | str, names: tuple[str, ...]) -> dict[str, str]:
    """The named fields of /proc/PID/status, as text (those it lacks, or all when it is gone, are
    left out)."""
    fields = {}
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key in names:
                    fields[key] = value.strip()
    except OSError:
        pass
    return fields


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid`, through /proc/PID/task/TID/children. Orphans of a PID
    namespace's processes are adopted by its process 1, so they stay in this tree."""
    found: list[int] = []
    pending = [pid]
    while pending and len(found) < 100000:
        current = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", encoding="utf-8") as handle:
                    children = [int(c) for c in handle.read().split()]
            except (OSError, ValueError):
                continue
            found.extend(children)
            pending.extend(children)
    return found


def proportional_bytes(pid: int) -> int:
    """A process's proportional set size: pages shared with other processes count by share, so
    the sum over a process tree forked from one warm parent is its real footprint."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0

