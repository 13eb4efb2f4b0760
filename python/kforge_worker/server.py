"""A worker process's request loop: read a request from fd 3, answer on fd 4.

Roles: `trusted` (tasks, references, comparisons, static checks), `zygote` (forks candidate
children) and `tuner` (times the tiles of the compiler's CUDA kernels: cuda_tuner.py). Each
request is {"id", "op", ...}; each answer {"id", "ok", "result"} or
{"id", "ok": false, "error": {"kind": "user"|"internal", "message", "traceback"}}.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Any, Callable

REQUEST_FD, RESPONSE_FD = 3, 4


def _trusted_handlers(device: str) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
    import torch

    from . import capture, env_info, module_names
    from .reference import ReferenceWorker

    worker = ReferenceWorker(device)

    def static_check(request: dict[str, Any]) -> dict[str, Any]:
        from . import static_checks

        with open(request["candidate_path"], encoding="utf-8", errors="replace") as handle:
            source = handle.read()
        try:
            findings = static_checks.analyze_candidate(source, request["candidate_path"])
        except SyntaxError as error:
            return {"syntax_error": {"line": error.lineno, "message": error.msg}, "findings": []}
        except (RecursionError, MemoryError, ValueError) as error:  # too deep or NUL bytes: Python cannot compile it either
            return {"syntax_error": {"line": 0, "message": f"the source cannot be parsed ({type(error).__name__})"},
                    "findings": []}
        return {"findings": [{"check": f.check, "line": f.line, "message": f.message} for f in findings]}

    return {
        "hello": lambda request: {**env_info.fingerprint(device), "confinement": CONFINEMENT},
        "capture": lambda request: capture.capture(request, torch.device(device)),
        "warm_capture": lambda request: capture.warm_up(torch.device(device)),
        "static_check": static_check,
        "prefix_names": lambda request: {"source": module_names.prefix_module_names(request["source"], request["prefix"])},
        "prepare": worker.prepare,
        "compare": worker.compare,
        "time_reference": worker.time_reference,
        "release": worker.release,
    }


def _zygote_handlers(device: str) -> tuple[dict[str, Callable[[dict[str, Any]], dict[str, Any]]], Callable[[], None]]:
    from .zygote import Zygote

    zygote = Zygote(device)
    return {
        "hello": lambda request: {"role": "zygote", "device": device},
        "configure": zygote.configure,
        "run_candidate": zygote.run_candidate,
    }, zygote.ensure_spare


def _tuner_handlers(device: str) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
    import torch

    from . import cuda_tuner

    return {
        "hello": lambda request: {"role": "tuner", "device": device},
        "tune_cuda": lambda request: cuda_tuner.tune(request, torch.device(device)),
    }


def serve(role: str, device: str) -> int:
    from .errors import UserError
    from .protocol import read_message, write_message

    after_reply: Callable[[], None] = lambda: None
    if role == "trusted":
        handlers = _trusted_handlers(device)
    elif role == "tuner":
        handlers = _tuner_handlers(device)
    else:
        handlers, after_reply = _zygote_handlers(device)
    while True:
        request = read_message(REQUEST_FD)
        if request is None:
            return 0
        request_id = request.get("id")
        handler = handlers.get(str(request.get("op")))
        try:
            if handler is None:
                raise KeyError(f"unknown op {request.get('op')!r} for a {role} worker")
            reply = {"id": request_id, "ok": True, "result": handler(request)}
        except UserError as error:
            reply = {"id": request_id, "ok": False, "error": {"kind": "user", "message": str(error)}}
        except Exception as error:
            reply = {"id": request_id, "ok": False, "error": {
                "kind": "internal", "message": f"{type(error).__name__}: {error}",
                "traceback": traceback.format_exc()[-6000:]}}
        write_message(RESPONSE_FD, reply)
        after_reply()


CONFINEMENT: dict[str, Any] = {}


def _watch_parent() -> None:
    """A worker outside a PID namespace of its own ends when kforge does, even while it is busy:
    a thread notices the new parent and takes the worker's process group down."""
    import signal
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, name="kforge-parent-watch", daemon=True).start()


def confine(role: str) -> dict[str, Any]:
    """Before anything starts a thread. Neither worker may be traced or have its memory read by
    other processes of its user (the candidates among them). The trusted worker imports task
    files, some written by a model, so it also gets PID and network namespaces (it sees no other
    process and no network) and a filesystem read-only outside the workspace's caches and kforge's
    scratch folder (the store included); in a user namespace
    of its own even root loses its power over processes outside (kforge's environment included)."""
    from . import isolation

    report: dict[str, Any] = {}
    if role == "trusted":
        try:
            # The process that returns is process 1 of its own PID namespace; the one that
            # started stays behind as its keeper (kforge waits on and signals that one).
            isolation.enter_namespaces({REQUEST_FD, RESPONSE_FD}, full_identity_map=True, parent_is_one_thread=False)
            # /tmp stays visible (task files may live there) but read-only: its temporary files go
            # to TMPDIR in kforge's scratch folder.
            writable = [p for p in os.environ.get("KFORGE_WRITABLE", "").split(":") if p]
            report["filesystem"] = isolation.confine_filesystem(writable, private_tmp=False)
            report["namespaces"] = "user, pid, mount, ipc, network"
        except (isolation.IsolationError, OSError) as error:
            report["namespaces"] = f"not applied: {error}"
            _watch_parent()
    else:
        _watch_parent()
    try:
        isolation.set_dumpable(False)
        report["dumpable"] = False
    except isolation.IsolationError as error:
        report["dumpable"] = f"could not be cleared: {error}"
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description="kforge worker (started by kforge; speaks on fds 3 and 4)")
    parser.add_argument("--role", choices=("trusted", "zygote", "tuner"), required=True)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    CONFINEMENT.update(confine(args.role))
    import torch  # noqa: F401  (warm import: the reason a worker exists)
    import triton  # noqa: F401
    return serve(args.role, args.device)


if __name__ == "__main__":
    sys.exit(main())
