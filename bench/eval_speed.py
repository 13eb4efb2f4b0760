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
                               "step_s": [r["evidence"].get("step_s") for r in warm],
                               "process": [{k: r["evidence"].get("process", {}).get("sandbox", {}).get(k)
                                            for k in ("warmup_s", "job_waited_s")} for r in warm]}
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
    print()
    print_table(["task", "isolation"] + [name for name, _ in BREAKDOWN], breakdown_rows(report))
    return 0


# Where an evaluation's time goes: (column, how to read it from one evaluation's record).
BREAKDOWN = [
    ("prepare", lambda step, phase, process: step.get("prepare")),
    ("waited for process", lambda step, phase, process: process.get("job_waited_s")),
    ("first call", lambda step, phase, process: phase.get("correctness_detail", {}).get("first_call")),
    ("other calls", lambda step, phase, process: phase.get("correctness_detail", {}).get("calls")),
    ("correctness", lambda step, phase, process: phase.get("correctness")),
    ("cand. timing", lambda step, phase, process: phase.get("timing")),
    ("profile", lambda step, phase, process: phase.get("profile")),
    ("candidate step", lambda step, phase, process: step.get("candidate")),
    ("compare", lambda step, phase, process: step.get("compare")),
    ("ref. timing", lambda step, phase, process: step.get("reference_timing")),
]


def breakdown_rows(report: dict) -> list[list[str]]:
    """Median seconds per part of an evaluation, per task and isolation."""
    rows = []
    for case in report["cases"]:
        for isolation in ("fork", "spawn"):
            run = case.get(isolation, {})
            records = zip(run.get("step_s", []), run.get("phase_s", []), run.get("process", []))
            columns = [[] for _ in BREAKDOWN]
            for step, phase, process in records:
                for index, (_, read) in enumerate(BREAKDOWN):
                    value = read(step or {}, phase or {}, process or {})
                    if value is not None:
                        columns[index].append(value)
            rows.append([case["task"].split("/")[-1], isolation] +
                        [f"{statistics.median(c):.3f}" if c else "-" for c in columns])
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
