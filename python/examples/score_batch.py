"""Scores a batch of candidate kernels for one task with kforge's evaluation service, as a
reinforcement-learning loop would: one reward per candidate.

    kforge serve --eval --port 8765 &
    python python/examples/score_batch.py --url http://127.0.0.1:8765 TASK.py CANDIDATE.py...

Prints one line per candidate (verdict, speedup, reward) and the service's queue statistics.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kforge_client import Client, ServiceError, reward  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task")
    parser.add_argument("candidates", nargs="+")
    parser.add_argument("--url", default="http://127.0.0.1:8765")
    parser.add_argument("--token", default=os.environ.get("KFORGE_SERVICE_TOKEN"), help="bearer token (default: $KFORGE_SERVICE_TOKEN)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=120, help="seconds each candidate's process may run")
    args = parser.parse_args()

    client = Client(args.url, token=args.token)
    try:
        with open(args.task) as task:
            task_hash = client.add_task(task.read(), name=os.path.splitext(os.path.basename(args.task))[0])
        sources = []
        for path in args.candidates:
            with open(path) as candidate:
                sources.append(candidate.read())
        results = client.evaluate(task_hash, sources, evidence=False, seeds=args.seeds, timeout_s=args.timeout)
    except ServiceError as error:
        sys.exit(f"score_batch: {error}")
    for path, result in zip(args.candidates, results):
        verdict = result.get("verdict") or result.get("error")
        speedup = result.get("speedup")
        print(f"{os.path.basename(path):40s} {verdict:36s} "
              f"{'' if speedup is None else f'{speedup:.2f}x':>8s}  reward {reward(result):+.2f}")
    stats = client.queue()
    print(f"service: {stats['done']} done, {stats['evaluations_per_hour']:.0f} evaluations/hour, "
          f"latency p50 {stats['latency_s']['p50']:.1f} s")


if __name__ == "__main__":
    main()
