"""Compiling ahead against compiling at first launch, side by side: for each task, the compiler's
last candidates stored in a workspace (the autotuned one, whose first call measures every tile
configuration, and the one with the measured configurations baked in) run their first call twice,
each time in a fresh process with an empty Triton cache: compiled ahead as the evaluator's harness
does (kforge_worker/compile_ahead.py: every kernel and configuration at once, on a thread pool),
and directly (each kernel compiled as the forward reaches it). The table gives both first calls, their ratio, the later
calls (which compiling ahead must not change) and each one's error against eager.

  python3 bench/compile_ahead_probe.py --workspace RUNS/workspace --out $OUT TASK.py[:autotuned|baked]...
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from typing import Any

from kforge_runs import print_table

HERE = os.path.dirname(os.path.abspath(__file__))


def stored_source(workspace: str, task: str, kind: str) -> str | None:
    """The latest compiler candidate evaluated for `task` (by file name) that autotunes, or not."""
    stem = os.path.splitext(os.path.basename(task))[0]
    with sqlite3.connect(os.path.join(workspace, "kforge.db")) as db:
        rows = db.execute(
            "SELECT c.source FROM evaluations e JOIN candidates c ON c.hash = e.candidate_hash "
            "JOIN tasks t ON t.hash = e.task_hash WHERE (t.name = ? OR t.name LIKE ?) AND c.origin = 'codegen:triton' "
            "ORDER BY e.id DESC", (stem, "%/" + stem)).fetchall()
    for (source,) in rows:
        if ("@triton.autotune" in source) == (kind == "autotuned"):
            return source
    return None


def first_call(task: str, source_path: str, ahead: bool, timeout_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as cache:
        command = [sys.executable, os.path.join(HERE, "first_call_probe.py"), task, source_path, "--json"]
        started = time.perf_counter()
        try:
            done = subprocess.run(command + (["--ahead"] if ahead else []), capture_output=True, text=True,
                                  timeout=timeout_s, env={**os.environ, "TRITON_CACHE_DIR": cache})
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout_s:.0f} s", "wall_s": time.perf_counter() - started}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"error": (done.stderr or done.stdout)[-1500:], "wall_s": time.perf_counter() - started}
    return {**json.loads(lines[-1]), "wall_s": time.perf_counter() - started}


def fmt(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", required=True, help="a bench's or optimize's workspace (its kforge.db)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("tasks", nargs="+", help="TASK.py, or TASK.py:autotuned / TASK.py:baked (default both)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results, rows = [], []
    for spec in args.tasks:
        task, _, only = spec.partition(":")
        for kind in [only] if only else ["autotuned", "baked"]:
            name = f"{os.path.splitext(os.path.basename(task))[0]} ({kind})"
            source = stored_source(args.workspace, task, kind)
            if source is None or "kf_compile_ahead = " not in source:
                rows.append([name, "-", "-", "-", "-", "-", "no stored candidate that compiles ahead"])
                continue
            path = os.path.join(args.out, f"{os.path.splitext(os.path.basename(task))[0]}_{kind}.py")
            with open(path, "w", encoding="utf-8") as file:
                file.write(source)
            runs = {"ahead": first_call(task, path, True, args.timeout),
                    "direct": first_call(task, path, False, args.timeout)}
            results.append({"task": task, "kind": kind, "kernels": source.count("@triton.jit"),
                            "autotuned_kernels": source.count("@triton.autotune"), **runs})
            ahead, direct = runs["ahead"], runs["direct"]
            ratio = direct["first_s"] / ahead["first_s"] if "first_s" in ahead and "first_s" in direct else None
            errors = "; ".join(f"{mode}: {run['error'][-200:]}" for mode, run in runs.items() if "error" in run)
            rows.append([name, source.count("@triton.jit"), fmt(direct.get("first_s")), fmt(ahead.get("first_s")),
                         fmt(ratio), f"{fmt(direct.get('later_ms'), 3)} / {fmt(ahead.get('later_ms'), 3)}",
                         errors or f"{direct.get('max_abs_error', 0):.2g} / {ahead.get('max_abs_error', 0):.2g}"])
    with open(os.path.join(args.out, "compile_ahead_probe.json"), "w", encoding="utf-8") as file:
        json.dump(results, file, indent=1)
    print_table(["task (candidate)", "kernels", "first call, direct s", "first call, ahead s", "direct / ahead",
                 "later ms (direct / ahead)", "max abs error vs eager (direct / ahead)"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
