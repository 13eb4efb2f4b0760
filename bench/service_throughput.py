"""The evaluation service's throughput against the one-shot CLI, on level-1 candidates: the
evaluator corpus's candidates for the level-1 tasks (honest kernels, cheats, crashes, wrong
outputs: the mix a reinforcement-learning loop sends), at the tasks' real sizes.

  one-shot CLI: `kforge eval TASK CANDIDATE` once per candidate, one after another, each a fresh
                process (workers started, torch imported, the reference's timing read back);
  service:      one `kforge serve --eval --gpus G`, the candidates submitted as batches by several
                client threads at once, results long-polled.

Both use a fresh workspace, so each measures every task's reference once. Reports evaluations per
GPU-hour, latency percentiles (submission to result) and per-evaluation service time, and checks
that the verdicts agree with the manifest and between the two paths. Prints a table last and
writes service_throughput.json. Usage:
  python3 bench/service_throughput.py --kforge bundle/kforge --out OUT [--gpus 1 2] [--cli-sample 12]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

from kforge_runs import print_table, run_eval

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(REPO, "tests", "corpus")
sys.path.insert(0, os.path.join(REPO, "python"))

from kforge_client import Client  # noqa: E402


def percentile(values, share):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * (len(ordered) - 1) + 0.5))]


def level1_candidates(timeout_s):
    with open(os.path.join(CORPUS, "manifest.json"), encoding="utf-8") as handle:
        entries = json.load(handle)["candidates"]
    chosen = []
    for entry in entries:
        expected = entry.get("expect_gpu", entry["expect"])
        # A hang costs its timeout whichever path judges it: left out of the throughput.
        if entry["task"].startswith("tasks/level1/") and not expected.startswith("timeout"):
            entry = dict(entry, expected=expected, timeout_s=float(entry.get("timeout_s", timeout_s)))
            with open(os.path.join(CORPUS, entry["path"]), encoding="utf-8") as source:
                entry["source"] = source.read()
            chosen.append(entry)
    return chosen


def one_shot_cli(kforge, entries):
    workspace = tempfile.mkdtemp(prefix="kforge-cli-")
    walls, verdicts = [], {}
    started = time.perf_counter()
    for entry in entries:
        results, wall, stderr = run_eval(kforge, workspace, os.path.join(REPO, entry["task"]),
                                         [os.path.join(CORPUS, entry["path"])],
                                         extra=["--mode", entry.get("mode", "strict"), "--timeout", str(entry["timeout_s"])])
        walls.append(wall)
        verdicts[entry["path"]] = results[0]["verdict"] if results else "(none) " + stderr[-300:]
        print(f"cli  {entry['path']}: {verdicts[entry['path']]} in {wall:.1f} s", flush=True)
    return {"evaluations": len(entries), "wall_s": time.perf_counter() - started, "gpus": 1,
            "latency_s": walls, "verdicts": verdicts}


class Service:
    def __init__(self, kforge, gpus):
        self.workspace = tempfile.mkdtemp(prefix="kforge-service-")
        started = time.perf_counter()
        self.process = subprocess.Popen([kforge, "--workspace", self.workspace, "serve", "--eval", "--port", "0",
                                         "--gpus", str(gpus)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        match = re.match(r"serving (http://127\.0\.0\.1:\d+)/", line)
        if not match:
            raise RuntimeError(line + self.process.stderr.read()[-3000:])
        self.client = Client(match.group(1), timeout_s=600)
        self.client.health()
        self.startup_s = time.perf_counter() - started

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=300)


def through_service(kforge, gpus, entries, clients):
    service = Service(kforge, gpus)
    try:
        hashes = {}
        for entry in entries:
            if entry["task"] not in hashes:
                with open(os.path.join(REPO, entry["task"]), encoding="utf-8") as task:
                    hashes[entry["task"]] = service.client.add_task(task.read(), name=os.path.basename(entry["task"])[:-3])
        results, errors = {}, []

        def client_thread(share):
            try:
                # One batch per (task, mode, timeout) group of this client's share.
                groups = {}
                for entry in share:
                    groups.setdefault((entry["task"], entry.get("mode", "strict"), entry["timeout_s"]), []).append(entry)
                submitted = []
                for (task, mode, timeout_s), group in groups.items():
                    ids = service.client.submit_batch(hashes[task], [e["source"] for e in group], mode=mode,
                                                      timeout_s=timeout_s)
                    submitted += list(zip(group, ids))
                done = service.client.wait([i for _, i in submitted], within_s=3000, evidence=False)
                for (entry, _), result in zip(submitted, done):
                    results[entry["path"]] = result
            except Exception as error:  # noqa: BLE001 - reported after the run
                errors.append(repr(error))

        started = time.perf_counter()
        threads = [threading.Thread(target=client_thread, args=(entries[i::clients],)) for i in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        stats = service.client.queue()
    finally:
        service.stop()
    if errors:
        raise RuntimeError("; ".join(errors))
    for path, result in sorted(results.items()):
        print(f"service[{gpus}] {path}: {result.get('verdict') or result.get('error')} "
              f"(queued {result['queued_s']:.1f} s, ran {result['run_s']:.1f} s)", flush=True)
    return {"evaluations": len(results), "wall_s": wall, "gpus": gpus, "startup_s": service.startup_s,
            "latency_s": [r["queued_s"] + r["run_s"] for r in results.values()],
            "service_s": [r["run_s"] for r in results.values()],
            "verdicts": {path: r.get("verdict") or "error: " + r.get("error", "") for path, r in results.items()},
            "queue": stats}


def agreement(entries, verdicts):
    judged = [e for e in entries if e["path"] in verdicts]
    return sum(verdicts[e["path"]] == e["expected"] for e in judged), len(judged)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kforge", required=True)
    parser.add_argument("--out", default=".")
    parser.add_argument("--gpus", type=int, nargs="+", default=[1])
    parser.add_argument("--cli-sample", type=int, default=12, help="candidates the one-shot CLI judges (every n-th)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    entries = level1_candidates(args.timeout)
    step = max(1, len(entries) // max(1, args.cli_sample))
    sample = entries[::step][:args.cli_sample]
    runs = {}
    for gpus in args.gpus:
        runs[f"service, {gpus} GPU"] = through_service(args.kforge, gpus, entries, args.clients)
    runs["one-shot CLI"] = one_shot_cli(args.kforge, sample)
    rows, summary = [], {}
    for name, run in runs.items():
        hours = run["wall_s"] / 3600
        agree, judged = agreement(entries, run["verdicts"])
        row = {"evaluations": run["evaluations"], "gpus": run["gpus"], "wall_s": run["wall_s"],
               "per_gpu_hour": run["evaluations"] / hours / run["gpus"],
               "latency_p50_s": percentile(run["latency_s"], 0.5), "latency_p90_s": percentile(run["latency_s"], 0.9),
               "latency_p99_s": percentile(run["latency_s"], 0.99),
               "service_p50_s": percentile(run.get("service_s", run["latency_s"]), 0.5),
               "startup_s": run.get("startup_s"), "as_manifest": f"{agree}/{judged}"}
        summary[name] = dict(row, verdicts=run["verdicts"], queue=run.get("queue"))
        rows.append([name, row["evaluations"], f"{row['wall_s']:.0f}", f"{row['per_gpu_hour']:.0f}",
                     f"{row['latency_p50_s']:.1f}", f"{row['latency_p90_s']:.1f}", f"{row['latency_p99_s']:.1f}",
                     f"{row['service_p50_s']:.1f}", "-" if row["startup_s"] is None else f"{row['startup_s']:.0f}",
                     row["as_manifest"]])
    cli = runs["one-shot CLI"]["verdicts"]
    differ = {path: (verdict, runs[name]["verdicts"].get(path)) for name in runs if name != "one-shot CLI"
              for path, verdict in cli.items() if runs[name]["verdicts"].get(path) != verdict}
    summary["cli_vs_service_disagreements"] = differ
    with open(os.path.join(args.out, "service_throughput.json"), "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=1)
    print()
    print_table(["path", "evals", "wall s", "evals/GPU-h", "p50 s", "p90 s", "p99 s", "service p50 s", "startup s",
                 "as manifest"], rows)
    print(f"verdicts where the CLI and the service differ: {len(differ)}" + (f" {differ}" if differ else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
