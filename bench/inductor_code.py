"""Writes the Triton kernels torch.compile generates for tasks, to compare against kforge's own.

Usage (on the GPU machine): python3 bench/inductor_code.py OUT_DIR TASK.py [TASK.py ...]
Each task's inductor output code goes to OUT_DIR/<task>.py, with the eager and compiled medians
of 50 timed calls printed last.
"""
import importlib.util
import pathlib
import sys

import torch
import torch._inductor.config as inductor_config
from torch._inductor.utils import run_and_get_code


def load(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def median_ms(fn, inputs, calls=50):
    for _ in range(5):
        fn(*inputs)
    times = []
    for _ in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*inputs)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    inductor_config.force_disable_caches = True
    for name in sys.argv[2:]:
        path = pathlib.Path(name)
        task = load(path)
        with torch.device("cuda"):
            model = task.Model(*task.get_init_inputs()).cuda()
            inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
        compiled = torch.compile(model)
        with torch.no_grad():
            _, codes = run_and_get_code(compiled, *inputs)
            (out / f"{path.stem}.py").write_text("\n\n# ---- next module ----\n\n".join(codes))
            eager, fast = median_ms(model, inputs), median_ms(compiled, inputs)
        print(f"{path.stem:40s} eager {eager:8.4f} ms  torch.compile {fast:8.4f} ms", flush=True)


if __name__ == "__main__":
    main()
