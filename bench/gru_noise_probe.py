"""Whether an honest fp32 GRU passes the fp32 policy against a KernelBench GRU task's reference on
its inputs scaled up (the evaluator's `scaled_up` set: inputs times 1000): the task's reference in
fp32 and fp64 on the CPU, and the same layers computed step by step in fp32 with each recurrent
product summed in two halves along K (another summation order, as any GPU kernel has), judged as a
candidate by the evaluator's own comparison (kforge_worker.compare: the fp32 tolerance widened by
the reference's fp64 noise). A ratio over 1 means the policy is stricter than fp32 itself there.

    PYTHONPATH=python python3 bench/gru_noise_probe.py TASK.py [--seeds 0 1 2] [--scale 1000] [--json OUT]
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys

import torch

from kforge_worker.compare import compare_outputs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from noise_probe import TOLERANCE, load  # noqa: E402  (the fp32 policy's tolerance; a task file as a module)


def stepwise_gru(gru: torch.nn.GRU, x: torch.Tensor, h0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(output, h_n) of a time-major GRU (one or two directions), one step at a time in fp32, each
    recurrent product summed over the two halves of the hidden size."""
    hidden = gru.hidden_size
    half = hidden // 2
    directions = 2 if gru.bidirectional else 1
    h_n = []
    sequence = x
    for layer in range(gru.num_layers):
        outputs = []
        for direction in range(directions):
            suffix = f"l{layer}" + ("_reverse" if direction else "")
            w_ih, w_hh = getattr(gru, f"weight_ih_{suffix}"), getattr(gru, f"weight_hh_{suffix}")
            b_ih, b_hh = getattr(gru, f"bias_ih_{suffix}"), getattr(gru, f"bias_hh_{suffix}")
            gates_in = sequence @ w_ih.T + b_ih
            h = h0[layer * directions + direction]
            steps = range(sequence.shape[0] - 1, -1, -1) if direction else range(sequence.shape[0])
            states = [None] * sequence.shape[0]
            for step in steps:
                gates_h = (h[:, :half] @ w_hh.T[:half] + h[:, half:] @ w_hh.T[half:]) + b_hh
                gi = gates_in[step]
                r = torch.sigmoid(gi[:, :hidden] + gates_h[:, :hidden])
                z = torch.sigmoid(gi[:, hidden:2 * hidden] + gates_h[:, hidden:2 * hidden])
                n = torch.tanh(gi[:, 2 * hidden:] + r * gates_h[:, 2 * hidden:])
                h = (1 - z) * n + z * h
                states[step] = h
            outputs.append(torch.stack(states))
            h_n.append(h)
        sequence = torch.cat(outputs, dim=-1)
    return sequence, torch.stack(h_n)


def probe(path: str, seed: int, scale: float) -> dict:
    task = load(path)
    torch.manual_seed(seed)
    model = task.Model(*task.get_init_inputs())
    gru = model.gru
    if gru.batch_first or not gru.bias:
        raise SystemExit(f"{path}: only a time-major GRU with biases is probed")
    x, h0 = [v * scale for v in task.get_inputs()]
    with torch.no_grad():
        reference = model(x, h0)
        exact = copy.deepcopy(model).double()(x.double(), h0.double())
        output, h_n = stepwise_gru(gru, x, h0)
    honest = h_n if reference.shape == h_n.shape else output  # what the task's forward returns
    noise = lambda: [(reference.double() - exact).abs().float()]
    judged = compare_outputs([honest], [reference], TOLERANCE, noise)["outputs"][0]
    stray = (reference.double() - exact).abs()
    return {"task": path, "seed": seed, "scale": scale,
            "reference_rms": reference.pow(2).mean().sqrt().item(),
            "reference_vs_fp64_max": stray.max().item(),
            "honest_vs_reference_max": (honest - reference).abs().max().item(),
            "honest_tolerance_ratio": judged.get("tolerance_ratio")}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("task")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--scale", type=float, default=1000.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    results = [probe(args.task, seed, args.scale) for seed in args.seeds]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(f"{'seed':>4} {'ref rms':>9} {'ref - fp64 max':>15} {'honest - ref max':>17} {'x tolerance':>12}")
    for r in results:
        print(f"{r['seed']:4} {r['reference_rms']:9.3g} {r['reference_vs_fp64_max']:15.3g} {r['honest_vs_reference_max']:17.3g} "
              f"{r['honest_tolerance_ratio']:12.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
