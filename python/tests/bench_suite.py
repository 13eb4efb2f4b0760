"""A tiny bench suite for the tests of parallel and Slurm benches, and how to read a bench's verdicts.

Two tasks that compile to accepted kernels on the CPU in seconds and one (a sort) that strict mode
rejects at once, so that equal verdicts mean more than "everything passed"."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.abspath(os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge")))
TASKS = ("level1/01_relu", "level1/21_hardtanh", "level1/31_sort_rows")


def make_tiny_suite(folder) -> str:
    suite = os.path.join(str(folder), "suite")
    os.makedirs(os.path.join(suite, "level1"), exist_ok=True)
    for task in ("01_relu.py", "21_hardtanh.py"):
        shutil.copy(os.path.join(REPO, "tasks", "level1", task), os.path.join(suite, "level1", task))
    shutil.copy(os.path.join(REPO, "python", "tests", "tasks", "sort_rows.py"),
                os.path.join(suite, "level1", "31_sort_rows.py"))
    return suite


def bench(suite: str, out, *extra: str, workspace=None, env=None, cwd=None,
          timeout: float = 600) -> subprocess.CompletedProcess:
    command = [BINARY, "--device", "cpu"]
    if workspace is not None:
        command += ["--workspace", str(workspace)]
    command += ["bench", suite, "--out", str(out), "--no-compile-baseline", *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def verdicts(out) -> dict[str, str]:
    """Each task's verdict as the folder's bench.json says."""
    with open(os.path.join(str(out), "bench.json"), encoding="utf-8") as handle:
        summary = json.load(handle)
    return {row["task"]: row["verdict"] for row in summary["tasks"]}
