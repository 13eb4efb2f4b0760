"""Per-task table of a bench run folder (kforge bench --out DIR): the verdict, whether the forward
replays as a CUDA graph, the GPU time in kernels (profiler), the time per call, eager and
torch.compile timed beside it, and the speedups; markdown on stdout, JSON with --json.

  python3 bench/network_table.py bench/runs/kb3 [--json FILE]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
from typing import Any


def median(timing: dict[str, Any], key: str) -> float | None:
    return (timing.get(key) or {}).get("median")


def row(report: dict[str, Any], name: str) -> dict[str, Any]:
    evaluation = report.get("evaluation", {})
    evidence = evaluation.get("evidence", {}) or {}
    timing = evidence.get("timing", {}) or {}
    kernels = (evidence.get("provenance", {}) or {}).get("kernels", []) or []
    entry = {
        "task": name,
        "verdict": evaluation.get("verdict"),
        "graph_replay": report.get("compile", {}).get("graph_replay"),
        "launches": sum(k.get("calls", 0) for k in kernels) or None,
        "kernels_ms": sum(k.get("time_us", 0.0) for k in kernels) / 1000 if kernels else None,
        "call_ms": median(timing, "candidate_ms"),
        "eager_ms": median(timing, "reference_eager_ms"),
        "compile_ms": median(timing, "reference_compile_ms"),
    }
    for key, base in (("vs_eager", "eager_ms"), ("vs_compile", "compile_ms")):
        entry[key] = entry[base] / entry["call_ms"] if entry["call_ms"] and entry[base] else None
    return entry


def cell(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}{unit}" if unit == "x" else f"{value:.3f}{unit}"
    return str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_folder")
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = []
    for path in sorted(glob.glob(os.path.join(args.run_folder, "**", "report.json"), recursive=True),
                       key=lambda p: (len(p.split(os.sep)), [int(t) if t.isdigit() else t for t in p.replace("_", "/").split("/")])):
        with open(path, encoding="utf-8") as handle:
            rows.append(row(json.load(handle), os.path.relpath(os.path.dirname(path), args.run_folder)))
    print("| task | verdict | graph | launches | GPU time in kernels | time per call | eager | torch.compile | vs eager | vs torch.compile |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['task']} | {r['verdict']} | {cell(r['graph_replay'])} | {cell(r['launches'])} | {cell(r['kernels_ms'], ' ms')} | "
              f"{cell(r['call_ms'], ' ms')} | {cell(r['eager_ms'], ' ms')} | {cell(r['compile_ms'], ' ms')} | "
              f"{cell(r['vs_eager'], 'x')} | {cell(r['vs_compile'], 'x')} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
