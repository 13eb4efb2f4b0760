"""Confining a candidate's process: own session, private folder, scrubbed environment, resource
limits, and where the machine allows it no network and an unprivileged user. Returns a report
of what was applied and why anything was not."""
from __future__ import annotations

import ctypes
import os
import pwd
import resource
from typing import Any

CLONE_NEWNET = 0x40000000


def _isolate_network() -> str:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWNET) != 0:
            return f"not applied: unshare failed ({os.strerror(ctypes.get_errno())})"
        return "applied"
    except (OSError, AttributeError) as error:
        return f"not applied: {error}"


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


def _limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, hard))


def prepare_private_dir(path: str, user: str | None) -> None:
    """Gives the sandbox user ownership of its private folder (a no-op when not root)."""
    if user and os.geteuid() == 0:
        try:
            entry = pwd.getpwnam(user)
            os.chown(path, entry.pw_uid, entry.pw_gid)
        except (KeyError, OSError):
            pass


def enter_sandbox(private_dir: str, env: dict[str, str], user: str | None, isolate_network: bool,
                  max_file_bytes: int) -> dict[str, Any]:
    os.setsid()
    os.chdir(private_dir)
    os.environ.clear()
    os.environ.update(env)
    os.environ["HOME"] = private_dir
    os.environ["TMPDIR"] = private_dir
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_FSIZE, max_file_bytes)
    _limit(resource.RLIMIT_NOFILE, 4096)
    report: dict[str, Any] = {"private_dir": private_dir, "environment": "scrubbed"}
    is_root = os.geteuid() == 0
    if isolate_network:
        report["network"] = _isolate_network() if is_root else "not applied: needs root"
    else:
        report["network"] = "not requested"
    if user:
        report["user"] = _drop_privileges(user) if is_root else "not applied: kforge is not running as root"
    else:
        report["user"] = "not requested"
    return report
