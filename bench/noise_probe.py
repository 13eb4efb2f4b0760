"""How far honest fp32 computations of a task's reference stray from its fp64 result: the GPU
fp32 reference (what the evaluator compares against), the same on the CPU, the GPU with
channels-last tensors (other convolution and normalization kernels) and torch.compile's (default
mode). For each, per output and per floating buffer the forward mutates: the largest and the
root-mean-square |fp32 - fp64|, and the evaluator's verdict on it as a candidate against the GPU
reference (kforge_worker.compare at the fp32 tolerance, the reference's fp64 noise considered):
the ratio to the tolerance of its worst output or buffer. An honest computation judged over 1
means the tolerance policy is stricter than fp32 itself on that task.

    PYTHONPATH=python python3 bench/noise_probe.py [--scale S] [--json OUT.json] TASK.py...
"""
from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import sys
import time

import torch

from kforge_worker.compare import Tolerance, compare_outputs

TOLERANCE = Tolerance(rtol=1e-4, atol=1e-4)  # the fp32 policy's


def load(path: str):
    spec = importlib.util.spec_from_file_location("task", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def outputs_and_buffers(model: torch.nn.Module, inputs: list, dtype: torch.dtype, device: str, channels_last: bool,
                        compiled: bool = False):
    model = copy.deepcopy(model).to(device=device, dtype=dtype)
    moved = [x.to(device=device, dtype=dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
             for x in inputs]
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        moved = [x.contiguous(memory_format=torch.channels_last) if isinstance(x, torch.Tensor) and x.dim() == 4 else x
                 for x in moved]
    forward = torch.compile(model) if compiled else model
    with torch.no_grad():
        out = forward(*moved)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    buffers = {name: b for name, b in model.named_buffers() if b.is_floating_point()}
    return [o.double().cpu() for o in outs], {n: b.double().cpu() for n, b in buffers.items()}


def stray(values, exact) -> dict:
    d = (values - exact).abs()
    return {"max": d.max().item(), "rms": d.pow(2).mean().sqrt().item(), "scale": exact.pow(2).mean().sqrt().item()}


def probe(path: str, scale: float, device: str) -> dict:
    task = load(path)
    torch.manual_seed(0)
    model = task.Model(*task.get_init_inputs())
    inputs = [x * scale if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in task.get_inputs()]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    started = time.time()
    exact_out, exact_buf = outputs_and_buffers(model, inputs, torch.float64, device, False)
    result = {"task": path, "scale": scale}
    reference = None
    for name, where, last, compiled in (("gpu", device, False, False), ("cpu", "cpu", False, False),
                                        ("gpu_channels_last", device, True, False), ("torch_compile", device, False, True)):
        t0 = time.time()
        out, buf = outputs_and_buffers(model, inputs, torch.float32, where, last, compiled)
        worst = max(buf, key=lambda n: (buf[n] - exact_buf[n]).abs().max().item()) if buf else None
        result[name] = {"seconds": round(time.time() - t0, 2),
                        "outputs": [stray(o, e) for o, e in zip(out, exact_out)],
                        "worst_buffer": None if worst is None else {"name": worst, **stray(buf[worst], exact_buf[worst])}}
        if reference is None:
            reference = (out, buf)
        else:  # judged as a candidate against the GPU reference, its fp64 noise considered
            ref_out, ref_buf = reference
            names = sorted(buf)
            judged = [compare_outputs([c.float() for c in got], [r.float() for r in want], TOLERANCE,
                                      lambda want=want, exact=exact: [(r - e).abs().float() for r, e in zip(want, exact)])
                      for got, want, exact in ((out, ref_out, exact_out),
                                               ([buf[n] for n in names], [ref_buf[n] for n in names],
                                                [exact_buf[n] for n in names]))]
            ratios = [o.get("tolerance_ratio", float("inf")) for j in judged for o in j["outputs"]]
            result[name]["verdict_ratio"] = max(ratios) if ratios else 0.0
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    result["seconds"] = round(time.time() - started, 2)
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("tasks", nargs="+")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--json")
    parser.add_argument("--device", default="cuda", help="where the reference runs (cpu: to try the probe itself)")
    args = parser.parse_args()
    results = []
    for path in args.tasks:
        try:
            results.append(probe(path, args.scale, args.device))
        except Exception as error:  # one task's failure (memory) does not end the probe
            results.append({"task": path, "error": f"{type(error).__name__}: {error}"})
        print(json.dumps(results[-1]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(f"{'task':34} {'scale':>6} {'which':18} {'out max':>10} {'out rms':>10} {'buf max':>10} {'x tolerance':>12}")
    for r in results:
        for which in ("gpu", "cpu", "gpu_channels_last", "torch_compile"):
            if which not in r:
                continue
            o = r[which]["outputs"][0]
            b = r[which]["worst_buffer"]
            ratio = r[which].get("verdict_ratio")
            print(f"{r['task'].split('/')[-1][:34]:34} {r['scale']:6g} {which:18} {o['max']:10.3g} {o['rms']:10.3g} "
                  f"{(b['max'] if b else 0):10.3g} {'reference' if ratio is None else f'{ratio:.3g}':>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
