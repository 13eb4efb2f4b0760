"""The evaluator's corpus on a GPU at the tasks' real sizes, GPU-only candidates included: each
candidate's verdict against the manifest's expectation. Prints a table and writes corpus_gpu.json."""
from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from collections import defaultdict

from kforge_runs import print_table, run_eval

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(REPO, "tests", "corpus")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kforge", required=True)
    parser.add_argument("--out", default=".")
    parser.add_argument("--timeout", default="60")
    parser.add_argument("--only", default="", help="regular expression: run only entries whose path or task matches")
    args = parser.parse_args()
    with open(os.path.join(CORPUS, "manifest.json"), encoding="utf-8") as handle:
        entries = json.load(handle)["candidates"]
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for entry in entries:
        if args.only and not re.search(args.only, entry["path"] + " " + entry["task"]):
            continue
        groups[(entry["task"], entry.get("mode", "strict"), str(entry.get("timeout_s", args.timeout)))].append(entry)
    workspace = tempfile.mkdtemp(prefix="kforge-corpus-")
    rows, records, mismatches = [], [], 0
    for (task, mode, timeout), group in groups.items():
        results, _, stderr = run_eval(args.kforge, workspace, os.path.join(REPO, task),
                                      [os.path.join(CORPUS, e["path"]) for e in group],
                                      extra=["--mode", mode, "--timeout", timeout, "--memory-limit", "16"])
        if len(results) != len(group):
            print(f"{task} [{mode}]: kforge stopped early\n{stderr[-2000:]}")
        for entry, result in zip(group, results + [None] * (len(group) - len(results))):
            got = result["verdict"] if result else "(no result)"
            expected = entry.get("expect_gpu", entry["expect"])
            ok = got == expected
            mismatches += not ok
            speed = result.get("speedup", {}).get("speedup") if result else None
            rows.append([os.path.basename(entry["path"]), mode, expected, got, "ok" if ok else "MISMATCH",
                         f"{speed:.2f}x" if speed else "-"])
            records.append({"entry": entry, "verdict": got, "ok": ok,
                            "message": result["message"] if result else stderr[-2000:],
                            "speedup": result.get("speedup") if result else None,
                            "roofline": result["evidence"].get("roofline") if result else None,
                            "duration_s": result.get("duration_s") if result else None})
            print(f"{entry['path']} [{mode}]: expected {expected}, got {got} {'' if ok else '  MISMATCH'}", flush=True)
        with open(os.path.join(args.out, "corpus_gpu.json"), "w", encoding="utf-8") as handle:
            json.dump(records, handle, indent=1)
    with open(os.path.join(args.out, "corpus_gpu.json"), "w", encoding="utf-8") as handle:
        json.dump(records, handle, indent=1)
    print_table(["candidate", "mode", "expected", "got", "", "speedup"], rows)
    print(f"{len(records) - mismatches} of {len(records)} verdicts as expected")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
