"""Records attempts to write outside the folders a candidate may write to, through Python's audit
hooks (which code cannot remove once added). A write that the sandbox user's permissions refuse
is still an attempt: a candidate that tries to change the task, its inputs or the evaluator's
files is cheating whether or not it succeeds."""
from __future__ import annotations

import os
import sys
from typing import Any

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
CHANGING_EVENTS = frozenset({"os.remove", "os.rename", "os.rmdir", "os.chmod", "os.chown", "os.truncate", "os.utime",
                             "os.link", "os.symlink", "os.mkdir", "shutil.rmtree", "shutil.move", "shutil.copyfile"})


class FileWatch:
    def __init__(self, allowed_roots: list[str]):
        self.allowed = [os.path.realpath(root) for root in allowed_roots if root]
        self.attempts: list[str] = []
        self.active = False
        sys.addaudithook(self._hook)

    def _allowed(self, path: Any) -> bool:
        if isinstance(path, int) or path is None:
            return True
        resolved = os.path.realpath(os.fsdecode(path))
        return resolved == os.devnull or any(resolved == root or resolved.startswith(root + os.sep) for root in self.allowed)

    def _hook(self, event: str, args: tuple) -> None:
        if not self.active:
            return
        try:
            if event == "open":
                path, mode, flags = (list(args) + [None, None, None])[:3]
                writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                    isinstance(flags, int) and bool(flags & WRITE_FLAGS))
            elif event in CHANGING_EVENTS:
                path, writing = args[0] if args else None, True
            else:
                return
            if writing and not self._allowed(path) and len(self.attempts) < 20:
                self.attempts.append(f"{event} {os.fsdecode(path)}")
        except Exception:  # an audit hook must never break the program it watches
            return
