"""Side by side, two `kforge bench` runs of the same tasks in one workspace: how each task's
GEMM-shaped kernels got their tile configurations (measured in that run, or from the store) and
what the run cost. Usage: python3 bench/tuning_table.py FIRST/bench.json SECOND/bench.json"""
from __future__ import annotations

import json
import sys


def rows(path: str) -> dict[str, dict]:
    with open(path) as f:
        return {task["task"]: task for task in json.load(f)["tasks"]}


def main() -> None:
    first, second = rows(sys.argv[1]), rows(sys.argv[2])
    print(f"{'task':40s} {'kernels':>7s} | {'measured':>8s} {'tuning_s':>8s} {'speedup':>7s} | "
          f"{'stored':>6s} {'measured':>8s} {'tuning_s':>8s} {'speedup':>7s}")
    for name, a in first.items():
        b = second.get(name, {})
        ta, tb = a.get("tuning") or {}, b.get("tuning") or {}
        print(f"{name:40s} {ta.get('kernels', 0):7d} | {ta.get('measured', 0):8d} {ta.get('tuning_s', 0):8.1f} "
              f"{a.get('speedup_vs_eager') or 0:6.2f}x | {tb.get('from_store', 0):6d} {tb.get('measured', 0):8d} "
              f"{tb.get('tuning_s', 0):8.1f} {b.get('speedup_vs_eager') or 0:6.2f}x")


if __name__ == "__main__":
    main()
