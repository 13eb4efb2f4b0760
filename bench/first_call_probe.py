"""Probe: what a generated candidate's first call costs (Triton compile and autotuning) against
its steady-state call, on the task's real inputs. Run it where the candidate is slow to evaluate:
    python3 bench/first_call_probe.py TASK.py MODEL_NEW.py [--ahead] [--json]
Prints the first call, the autotuner's choices (TRITON_PRINT_AUTOTUNING=1 adds its timings) and
the median of later calls. --ahead first compiles the kernels all at once, as the evaluator's
harness does for a candidate that declares kf_compile_ahead (counted in the first call); --json
ends with a JSON line."""
from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from kforge_worker.compile_ahead import compile_ahead  # noqa: E402


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(call) -> float:
    torch.cuda.synchronize()
    started = time.perf_counter()
    call()
    torch.cuda.synchronize()
    return time.perf_counter() - started


def main() -> int:
    flags = set(sys.argv[3:])
    task, candidate = load(sys.argv[1], "task"), load(sys.argv[2], "candidate")
    torch.manual_seed(0)
    with torch.device("cuda"):
        reference = task.Model(*task.get_init_inputs())
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
    model = candidate.ModelNew(*task.get_init_inputs()).cuda()
    model.load_state_dict(reference.state_dict(), strict=True)
    ahead: dict = {}
    with torch.no_grad():
        first = timed(lambda: (ahead.update(compile_ahead(candidate, model, inputs)) if "--ahead" in flags else None,
                               model(*inputs)))
        later = [timed(lambda: model(*inputs)) for _ in range(20)]
        ref = [timed(lambda: reference(*inputs)) for _ in range(20)]
        error = (model(*inputs) - reference(*inputs)).abs().max().item()
    for name in dir(candidate):
        kernel = getattr(candidate, name)
        best = getattr(kernel, "best_config", None)
        if best is not None:
            print(f"{name}: best {best}")
    print(f"first call {first:.2f} s; later median {statistics.median(later) * 1e3:.3f} ms; "
          f"eager median {statistics.median(ref) * 1e3:.3f} ms; max abs error {error:.3g}"
          + (f"; compiled ahead: {ahead}" if ahead else ""))
    if "--json" in flags:
        print(json.dumps({"first_s": first, "later_ms": statistics.median(later) * 1e3,
                          "eager_ms": statistics.median(ref) * 1e3, "max_abs_error": error, "compile_ahead": ahead}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
