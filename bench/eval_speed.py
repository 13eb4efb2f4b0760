"""Benchmark: how long one evaluation takes end to end once the candidate's kernels are compiled,
with candidates forked from a warm parent (kforge's default) against a fresh interpreter per
candidate, measured side by side in one run; and how stable the timing of one candidate is
across repeated evaluations. Prints a table and writes eval_speed.json."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile

from kforge_runs import print_table, run_eval

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = [
    ("tasks/level1/01_relu.py", "tests/corpus/candidates/l1_01_relu/honest_relu.py"),
    ("tasks/level1/03_softmax.py", "tests/corpus/candidates/l1_03_softmax/honest_softmax_rowwise.py"),
    ("tasks/level1/04_layer_norm.py", "tests/corpus/candidates/l1_04_layer_norm/honest_layer_norm.py"),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kforge", required=True)
    parser.add_argument("--out", default=".")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    workspace = tempfile.mkdtemp(prefix="kforge-bench-")
    report: dict = {"cases": []}
    rows = []
    for task, candidate in CASES:
        task_path, candidate_path = os.path.join(REPO, task), os.path.join(REPO, candidate)
        if not os.path.exists(candidate_path):
            continue
        case: dict = {"task": task, "candidate": candidate}
        for isolation in ("fork", "spawn"):
            # The first evaluation compiles the kernels into the shared cache; it is not counted.
            results, wall, stderr = run_eval(args.kforge, workspace, task_path, [candidate_path] * (args.repeats + 1),
                                             global_flags=["--device", args.device, "--isolation", isolation])
            if len(results) != args.repeats + 1:
                print(f"{task} {isolation}: kforge failed\n{stderr[-3000:]}")
                case[isolation] = {"error": stderr[-3000:]}
                continue
            warm = results[1:]
            for r in results:
                if r["verdict"] != "accepted":
                    print(f"{task} {isolation}: {r['verdict']}: {r['message'][:500]}")
            durations = [r["duration_s"] for r in warm]
            medians = [r["candidate_ms"]["median"] for r in warm if "candidate_ms" in r]
            case[isolation] = {"verdicts": [r["verdict"] for r in results], "durations_s": durations,
                               "median_s": statistics.median(durations), "candidate_medians_ms": medians,
                               "process_wall_s": wall,
                               "phase_s": [r["evidence"].get("process", {}).get("phase_s") for r in warm],
                               "timing": [{k: v for k, v in r["evidence"].get("timing", {}).items()
                                           if k not in ("candidate_samples_ms", "reference_samples_ms")} for r in warm],
                               "step_s": [r["evidence"].get("step_s") for r in warm]}
        fork, spawn = case.get("fork", {}), case.get("spawn", {})
        if "median_s" in fork and "median_s" in spawn:
            medians = fork["candidate_medians_ms"]
            spread = (max(medians) / min(medians) - 1) if medians else float("nan")
            case["spawn_over_fork"] = spawn["median_s"] / fork["median_s"]
            case["timing_spread"] = spread
            rows.append([task, f"{fork['median_s']:.2f}", f"{spawn['median_s']:.2f}", f"{case['spawn_over_fork']:.2f}x",
                         f"{statistics.median(medians):.4f}" if medians else "-", f"{100 * spread:.2f}%",
                         ",".join(sorted(set(fork["verdicts"])))])
        report["cases"].append(case)
    with open(os.path.join(args.out, "eval_speed.json"), "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1)
    print_table(["task", "eval s (fork)", "eval s (fresh interp.)", "ratio", "cand. ms", "spread over evals", "verdicts"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
