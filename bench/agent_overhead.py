"""Benchmark: what the LLM stage's orchestration costs per attempt, and whether parallel kernel
writers keep the device's evaluation pool (depth 1) busy while the model thinks. The "model" is
a command that waits LATENCY seconds and replies with a candidate the evaluator rejects, so every
round is a full evaluation and a repair; 1 and N writers run side by side on the same task.
Prints a table and writes agent_overhead.json. Runs anywhere (the CPU evaluator on a machine
without a GPU):
    python3 bench/agent_overhead.py --kforge build/kforge [--device cpu] [--latency 2] [--writers 4]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

from kforge_runs import print_table

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASK = os.path.join(REPO, "tasks", "level1", "01_relu.py")
REJECTED = os.path.join(REPO, "tests", "corpus", "candidates", "l1_01_relu", "memo_data_ptr.py")


def evaluation_seconds(round_folder: str) -> float:
    with open(os.path.join(round_folder, "verdict.json"), encoding="utf-8") as handle:
        evaluation = json.load(handle).get("evaluation") or {}
    return float(evaluation.get("duration_s", 0.0))


def run_stage(kforge: str, device: str, writers: int, rounds: int, latency: float, folder: str) -> dict:
    model = f"command:sleep {latency}; {os.path.join(REPO, 'bench', 'fenced_reply.sh')} {REJECTED}"
    command = [kforge, "--quiet", "--workspace", os.path.join(folder, "ws"), "--device", device, "optimize", "--json",
               "--no-compile-baseline", "--out", os.path.join(folder, f"out{writers}"), "--llm", model,
               "--workers", str(writers), "--rounds", str(rounds), TASK]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - started
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"kforge failed:\n{done.stderr[-3000:]}")
    pool = json.loads(lines[-1])["llm"]["pool"]
    attempts = pool["attempts"]
    # Time in the writer beyond the model's reply and the judge (queueing for it included).
    overhead = [a["seconds"] - a["llm_s"] - a["judge_s"] for a in attempts]
    # The evaluator's own time per evaluation, from the verdict each round kept.
    judge = sum(evaluation_seconds(a["folder"]) for a in attempts)
    return {"writers": writers, "attempts": len(attempts), "stage_s": pool["seconds"], "process_s": wall,
            "judge_s": judge, "judge_busy": judge / pool["seconds"] if pool["seconds"] else 0.0,
            "overhead_median_ms": statistics.median(overhead) * 1e3, "overhead_max_ms": max(overhead) * 1e3,
            "verdicts": sorted({a["verdict"] for a in attempts})}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kforge", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--latency", type=float, default=2.0, help="seconds the stand-in model takes per reply")
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="kforge-agents-")
    results = [run_stage(args.kforge, args.device, n, args.rounds, args.latency, folder) for n in (1, args.writers)]
    rows = [[r["writers"], r["attempts"], f"{r['stage_s']:.1f}", f"{r['judge_s']:.1f}", f"{100 * r['judge_busy']:.0f}%",
             f"{r['overhead_median_ms']:.1f}", f"{r['overhead_max_ms']:.1f}", ",".join(r["verdicts"])] for r in results]
    print_table(["writers", "attempts", "stage s", "evaluating s", "evaluator busy", "overhead ms (median)",
                 "overhead ms (max)", "verdicts"], rows)
    with open(os.path.join(args.out, "agent_overhead.json"), "w", encoding="utf-8") as handle:
        json.dump({"device": args.device, "latency_s": args.latency, "rounds": args.rounds, "runs": results}, handle, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
