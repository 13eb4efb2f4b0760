"""Graph replay against direct launches, side by side: each task is compiled twice in one
workspace, with `--graph-replay never` and `--graph-replay always` (the second reuses the first's
stored eager and torch.compile timings and tile configurations, so only the forward differs), and
the evaluator times both. The table gives, per task, the launches of a forward, the GPU time of
its kernels (profiler), the time per call of each form, their ratio, and eager and torch.compile.
This is the data behind GraphReplay's "auto" rule (src/compiler/codegen/graph_replay.cc).

  python3 bench/graph_probe.py --kforge bundle/kforge --out $OUT TASK.py...
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from typing import Any

from kforge_runs import print_table
from network_table import row


def optimize(kforge: str, workspace: str, task: str, out: str, replay: str, timeout_s: float) -> dict[str, Any]:
    command = [kforge, "--quiet", "--workspace", workspace, "optimize", "--json", "--graph-replay", replay,
               "--out", out, task]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"verdict": "probe_timeout", "wall_s": time.perf_counter() - started}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"verdict": "no_report", "stderr": done.stderr[-2000:], "wall_s": time.perf_counter() - started}
    return {**row(json.loads(lines[-1]), os.path.basename(task)), "wall_s": time.perf_counter() - started}


def fmt(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kforge", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--workspace", default="/tmp/kforge-graph-probe")
    parser.add_argument("--timeout", type=float, default=400)
    parser.add_argument("tasks", nargs="+")
    args = parser.parse_args()
    results, rows = [], []
    for task in args.tasks:
        name = os.path.splitext(os.path.basename(task))[0]
        runs = {replay: optimize(args.kforge, args.workspace, task, os.path.join(args.out, "graph_probe", replay), replay,
                                 args.timeout)
                for replay in ("never", "always")}
        results.append({"task": task, **runs})
        never, always = runs["never"], runs["always"]
        ratio = never["call_ms"] / always["call_ms"] if never.get("call_ms") and always.get("call_ms") else None
        rows.append([name, fmt(never.get("launches")), fmt(never.get("kernels_ms")), fmt(never.get("call_ms")),
                     fmt(always.get("call_ms")), fmt(ratio, 2), fmt(never.get("eager_ms")),
                     fmt(never.get("compile_ms")), f"{never.get('verdict')}/{always.get('verdict')}"])
        with open(os.path.join(args.out, "graph_probe.json"), "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=1)
    print_table(["task", "launches", "kernels ms", "direct ms", "graph ms", "direct/graph", "eager ms", "compile ms",
                 "verdicts"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
