#!/usr/bin/env python3
"""The table of bench/gpu_checks.sh strategies: for each strategy's `kforge optimize --llm` output
folder, what its search spent and where it ended, from report.json and the rounds' files.

  python3 bench/strategy_table.py --json OUT.json FOLDER...   (FOLDER: the --out of one strategy)

Tokens are estimated from the characters of the prompts sent and the replies received (4 per
token): the replayed replies carry no usage."""
from __future__ import annotations

import argparse
import glob
import json
import os


def chars(paths: list[str]) -> int:
    return sum(len(open(path, errors="replace").read()) for path in paths)


def row(folder: str) -> dict:
    strategy = os.path.basename(folder.rstrip("/"))
    reports = glob.glob(os.path.join(folder, "*", "report.json"))
    if not reports:
        return {"strategy": strategy, "error": "no report.json (the run did not finish)"}
    report = json.load(open(reports[0]))
    llm = report.get("llm", {})
    pool = llm.get("pool", {})
    attempts = pool.get("attempts", [])
    stage = os.path.join(os.path.dirname(reports[0]), "llm")
    prompts = glob.glob(os.path.join(stage, "writer*", "round*", "prompt.md"))
    replies = glob.glob(os.path.join(stage, "writer*", "round*", "reply.md"))
    bound = [p for p in prompts if "What bounds the kernels" in open(p, errors="replace").read()]
    evaluators = llm.get("evaluators", {})
    seconds = pool.get("seconds") or 0
    best = (pool.get("best") or {})
    evaluation = report.get("evaluation", {})
    timing = (evaluation.get("evidence") or {}).get("timing", {}) if isinstance(evaluation, dict) else {}
    kinds: dict[str, int] = {}
    for attempt in attempts:
        kinds[attempt.get("prompt", "?")] = kinds.get(attempt.get("prompt", "?"), 0) + 1
    return {
        "strategy": strategy,
        "calls": llm.get("usage", {}).get("calls"),
        "prompts_by_kind": kinds,
        "judged": sum(1 for a in attempts if a.get("outcome") == "judged"),
        "accepted": sum(1 for a in attempts if a.get("verdict") == "accepted"),
        "prompt_chars": chars(prompts),
        "reply_chars": chars(replies),
        "estimated_tokens": (chars(prompts) + chars(replies)) // 4,
        "device_s": evaluators.get("device_seconds"),
        "stage_s": seconds,
        "evaluator_busy": (evaluators.get("device_seconds") or 0) / seconds if seconds else None,
        "best_llm_speedup_vs_eager": best.get("speedup"),
        "best_from": f"writer {best.get('writer')}, round {best.get('round')}" if best else None,
        "source": report.get("source"),
        "final_vs_eager": (evaluation.get("speedup") or {}).get("speedup") if isinstance(evaluation, dict) else None,
        "final_vs_compile": (timing.get("speedup_vs_compile") or {}).get("speedup"),
        "final_ms": (evaluation.get("candidate_ms") or {}).get("median") if isinstance(evaluation, dict) else None,
        "eager_ms": (evaluation.get("reference_ms") or {}).get("median") if isinstance(evaluation, dict) else None,
        "compile_ms": (timing.get("reference_compile_ms") or {}).get("median"),
        "search": pool.get("search"),
        "speedup_prompts_saying_what_bounds": len(bound),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    rows = [row(folder) for folder in args.folders]
    with open(args.json, "w") as out:
        json.dump(rows, out, indent=1)
    print(f"{'strategy':<8} {'calls':>5} {'judged':>6} {'acc':>4} {'~tokens':>8} {'device s':>9} {'stage s':>8} "
          f"{'busy':>5} {'best LLM':>9} {'final/eager':>11} {'final/compile':>13} {'bound':>5}")
    for r in rows:
        if "error" in r:
            print(f"{r['strategy']:<8} {r['error']}")
            continue
        def num(value, fmt):
            return format(value, fmt) if isinstance(value, (int, float)) else "-"
        print(f"{r['strategy']:<8} {num(r['calls'], 'd'):>5} {r['judged']:>6} {r['accepted']:>4} {r['estimated_tokens']:>8} "
              f"{num(r['device_s'], '.1f'):>9} {num(r['stage_s'], '.1f'):>8} {num(r['evaluator_busy'], '.2f'):>5} "
              f"{num(r['best_llm_speedup_vs_eager'], '.3f'):>9} {num(r['final_vs_eager'], '.3f'):>11} "
              f"{num(r['final_vs_compile'], '.3f'):>13} {r['speedup_prompts_saying_what_bounds']:>5}")


if __name__ == "__main__":
    main()
