"""A minimal Python client for kforge workers, so the worker runtime can be tested without the
C++ orchestrator."""
from __future__ import annotations

import itertools
import os
import subprocess
import sys
from typing import Any

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PYTHON_DIR)

from kforge_worker.protocol import read_message, write_message  # noqa: E402


class WorkerProcess:
    def __init__(self, role: str, device: str = "cpu", env: dict[str, str] | None = None):
        request_read, self.request_write = os.pipe()
        self.response_read, response_write = os.pipe()
        child_env = dict(env or os.environ)
        child_env["PYTHONPATH"] = PYTHON_DIR
        if device == "cpu":
            child_env["TRITON_INTERPRET"] = "1"

        def wire_fds() -> None:
            request_copy, response_copy = os.dup(request_read), os.dup(response_write)
            os.dup2(request_copy, 3)
            os.dup2(response_copy, 4)

        self.process = subprocess.Popen(
            [sys.executable, "-m", "kforge_worker", "--role", role, "--device", device],
            env=child_env, preexec_fn=wire_fds, close_fds=False, stdin=subprocess.DEVNULL)
        os.close(request_read)
        os.close(response_write)
        self.ids = itertools.count(1)

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        request_id = next(self.ids)
        write_message(self.request_write, {"id": request_id, "op": op, **fields})
        reply = read_message(self.response_read)
        assert reply is not None, "worker closed its pipe"
        assert reply["id"] == request_id
        if not reply["ok"]:
            raise RuntimeError(f"{reply['error']['kind']}: {reply['error']['message']}\n{reply['error'].get('traceback', '')}")
        return reply["result"]

    def close(self) -> None:
        os.close(self.request_write)
        self.process.wait(timeout=30)
        os.close(self.response_read)
