"""Running the kforge binary from the benchmarks: one process per group of candidates, JSON
lines back."""
from __future__ import annotations

import json
import subprocess
import time
from typing import Any


def run_eval(kforge: str, workspace: str, task: str, candidates: list[str], extra: list[str] | None = None,
             global_flags: list[str] | None = None, timeout_s: float = 1800) -> tuple[list[dict[str, Any]], float, str]:
    """Evaluates candidates against a task in one kforge process; returns the evaluations,
    the wall time of the whole process and its stderr."""
    command = [kforge, "--quiet", "--workspace", workspace, *(global_flags or []), "eval", "--json",
               *(extra or []), task, *candidates]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    wall = time.perf_counter() - started
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return results, wall, done.stderr


def print_table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(c) for c in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    text = "\n".join(lines)
    print(text, flush=True)
    return text
