"""Per-task table of a bench run folder (kforge bench --out DIR): the verdict, whether the forward
replays as a CUDA graph, the GPU time in kernels (profiler), the time per call, eager and
torch.compile timed beside it, and the speedups; markdown on stdout, JSON with --json.

With --base TABLE.json (an earlier --json table of the whole level), the tasks the run folder
lacks keep that table's rows (their "run" says which table), so a level rerun in part gives a
table of the whole level; --base repeats, the first table naming a task giving its row (newest
first: the latest row of each task). --bench BENCH.json (a `kforge bench` summary whose run folder is gone)
adds its tasks' rows where neither has them: timings and verdict, without the profile's columns.
Each row keeps the GPU its report names ("gpu"); rows of several GPUs are listed after the table.
A torch.compile whose graphs came from a compile cache ("compile_cached": a record from before each
timing compiled in caches of its own) is marked "(cached)", and such rows within 5% of kforge are
named after the table, to be timed again.
--summary then prints the level's line as `kforge bench` computes it
(accepted, fast_1 over eager and over torch.compile as shares of all tasks, geometric means over
the accepted ones).

  python3 bench/network_table.py bench/runs/kb3 [--json FILE] [--base TABLE.json ...] [--bench BENCH.json] [--summary]
"""
from __future__ import annotations

import argparse
import glob
import json
import math
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
        "compile_cached": compiled_from_cache(timing.get("reference_compile_cache")),
        "gpu": report.get("gpu"),
    }
    return with_speedups(entry)


def compiled_from_cache(graphs: dict[str, int] | None) -> bool | None:
    """Whether torch.compile's timed program came from the workspace's compile cache, None where the
    report does not say."""
    if not graphs:
        return None
    return graphs.get("hits", 0) > 0 and graphs.get("misses", 0) == 0


def bench_row(task: dict[str, Any]) -> dict[str, Any]:
    """A row from a bench.json task entry: its timings and verdict, no profile."""
    return with_speedups({"task": task["task"].split("/")[-1], "verdict": task.get("verdict"), "graph_replay": None,
                          "launches": None, "kernels_ms": None, "call_ms": task.get("candidate_ms"),
                          "eager_ms": task.get("eager_ms"), "compile_ms": task.get("compile_ms"), "gpu": task.get("gpu")})


def with_speedups(entry: dict[str, Any]) -> dict[str, Any]:
    """The row with its speedups over eager and torch.compile (None where a time is missing)."""
    for key, base in (("vs_eager", "eager_ms"), ("vs_compile", "compile_ms")):
        entry[key] = entry[base] / entry["call_ms"] if entry["call_ms"] and entry[base] else None
    return entry


def task_order(r: dict[str, Any]) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in r["task"].replace("_", "/").split("/")]


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
    parser.add_argument("--base", action="append", default=[],
                        help="an earlier --json table: its rows for the tasks still missing (repeatable, first wins)")
    parser.add_argument("--bench", action="append", default=[], help="a bench.json: its rows for the tasks still missing")
    parser.add_argument("--summary", action="store_true", help="print the level's summary line")
    args = parser.parse_args()
    rows = []
    for path in glob.glob(os.path.join(args.run_folder, "**", "report.json"), recursive=True):  # ordered below
        with open(path, encoding="utf-8") as handle:
            rows.append(dict(row(json.load(handle), os.path.relpath(os.path.dirname(path), args.run_folder)), run=args.run_folder))
    for path in args.bench:
        with open(path, encoding="utf-8") as handle:
            have = {r["task"] for r in rows}
            rows += [dict(r, run=path) for r in map(bench_row, json.load(handle).get("tasks", [])) if r["task"] not in have]
    for path in args.base:
        with open(path, encoding="utf-8") as handle:
            base = json.load(handle)
        have = {r["task"] for r in rows}
        rows += [dict(r, run=r.get("run", path)) for r in base if r["task"] not in have]
    rows.sort(key=task_order)
    print("| task | verdict | graph | launches | GPU time in kernels | time per call | eager | torch.compile | vs eager | vs torch.compile |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['task']} | {r['verdict']} | {cell(r['graph_replay'])} | {cell(r['launches'])} | {cell(r['kernels_ms'], ' ms')} | "
              f"{cell(r['call_ms'], ' ms')} | {cell(r['eager_ms'], ' ms')} | {cell(r['compile_ms'], ' ms')}"
              f"{' (cached)' if r.get('compile_cached') else ''} | "
              f"{cell(r['vs_eager'], 'x')} | {cell(r['vs_compile'], 'x')} |")
    cards = sorted({r.get("gpu") for r in rows if r.get("gpu")})
    if len(cards) > 1:  # a run folder resumed on another card, or a base table of another
        print("rows from several GPUs: " + "; ".join(f"{c}: {', '.join(r['task'] for r in rows if r.get('gpu') == c)}"
                                                      for c in cards))
    # A torch.compile loaded from the cache timed 3-7% slower than a fresh compile on ShuffleNet
    # (bench/RESULTS.md, thirty-fourth session): rows that close deserve a fresh one.
    close = [r["task"] for r in rows if r.get("compile_cached") and r["vs_compile"] and r["vs_compile"] < 1.05]
    if close:
        print("torch.compile from the compile cache within 5% of kforge (time these again): " + ", ".join(close))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)
    if args.summary:
        print(summary(rows))
    return 0


def summary(rows: list[dict[str, Any]]) -> str:
    """The level's line: accepted and fast_1 (vs eager, vs torch.compile) as shares of all tasks,
    geometric means of the speedups and of torch.compile over eager over the accepted timed ones."""
    accepted = [r for r in rows if r["verdict"] == "accepted" and r["vs_eager"] and r["vs_compile"]]
    if not rows or not accepted:
        return "no accepted timed task"

    def geomean(values: list[float]) -> float:
        return math.exp(sum(math.log(v) for v in values) / len(values))

    share = lambda count: f"{100 * count / len(rows):.0f}%"
    return (f"tasks {len(rows)}, accepted {sum(r['verdict'] == 'accepted' for r in rows)} "
            f"({share(sum(r['verdict'] == 'accepted' for r in rows))}), "
            f"fast_1 {share(sum(r['vs_eager'] > 1 for r in accepted))}, "
            f"fast_1 vs torch.compile {share(sum(r['vs_compile'] > 1 for r in accepted))}, "
            f"geomean vs eager {geomean([r['vs_eager'] for r in accepted]):.2f}x, "
            f"torch.compile vs eager {geomean([r['eager_ms'] / r['compile_ms'] for r in accepted]):.2f}x, "
            f"kforge vs torch.compile {geomean([r['vs_compile'] for r in accepted]):.2f}x")


if __name__ == "__main__":
    raise SystemExit(main())
