"""Compiles every Triton kernel a generated ModelNew launches, in every configuration it may run
with, and every CUDA C++ kernel (KfCudaKernel) as the GPU would, through NVRTC, for an NVIDIA GPU,
on a machine that has none. The Triton interpreter the CPU tests run
kernels under executes them as Python: it accepts code that Triton's compiler refuses (a
constexpr condition it cannot fold, a dot of an unsupported shape) and knows nothing of shared
memory or grid limits. This runs the model's forward once with every kernel replaced by a recorder
(the launches' arguments, constexprs and grids; tensors no kernel wrote hold whatever they held),
then compiles each recorded launch to a cubin for the target through Triton's own compiler and
ptxas (both ship with the triton wheel; no driver is needed), specialized as a launch specializes
it (16-byte aligned tensors and integers that are multiples of 16 marked divisible by 16, an
integer 1 a constant), and checks what the GPU would refuse
at launch: shared memory beyond the target's limit, grid axes beyond CUDA's.

With --tuning FILE (a JSON list of the CUDA kernels whose tiles kforge's tuner measures, as the
tuner reads them), every tile of each is compiled and checked as well.

Usage: compile_for_gpu.py TASK.py MODEL_NEW.py [--arch 90] [--jobs N] [--tuning FILE]
Prints one line per compile and a summary; exits 1 when any compile or check fails.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import re
import sys
import time
import types
from typing import Any

import torch

# Bytes of shared memory one block may use, by compute capability (sm_90: 227 KiB).
SHARED_LIMIT = {80: 163 * 1024, 86: 99 * 1024, 89: 99 * 1024, 90: 227 * 1024}
GRID_LIMITS = (2**31 - 1, 65535, 65535)
POINTER_TYPES = {
    torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64", torch.int64: "i64",
    torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8", torch.bool: "i1",
}
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Recorder:
    """Stands in for a kernel: `kernel[grid](...)` records the launch and runs nothing."""

    def __init__(self, name: str, kernel: Any, launches: list) -> None:
        self.name, self.kernel, self.launches = name, kernel, launches

    def __getitem__(self, grid: Any):
        return lambda *args, **kwargs: self.launches.append((self.name, self.kernel, grid, args, kwargs))


def python_function(kernel: Any):
    """The Python function under a JITFunction or an Autotuner."""
    while not hasattr(kernel, "__code__"):
        kernel = kernel.fn
    return kernel


def compile_jobs(name: str, kernel: Any, grid: Any, args: tuple, kwargs: dict) -> list[tuple]:
    """(label, function, signature, constexprs, options, grid) for each configuration of a launch
    (a CUDA kernel's: (label, kernel, None, launch arguments, None, grid))."""
    if type(kernel).__name__ == "KfCudaKernel":
        return [(f"{name} [CUDA C++, {kernel.threads} threads a block]", kernel, None, args, None,
                 tuple(grid) + (1,) * (3 - len(grid)))]
    configs = [(dict(c.kwargs), {"num_warps": c.num_warps, "num_stages": c.num_stages}) for c in kernel.configs] \
        if type(kernel).__name__ == "Autotuner" else [({}, {})]
    function = kernel.fn if type(kernel).__name__ == "Autotuner" else kernel
    jobs = []
    for meta, options in configs:
        given = dict(zip(function.arg_names, args))
        given.update({k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS})
        given.update(meta)
        options = {**{k: v for k, v in kwargs.items() if k in LAUNCH_OPTIONS}, **options}
        signature, constexprs, attrs = {}, {}, {}
        for index, param in enumerate(function.params):
            value = given[param.name] if param.name in given else param.default
            if param.is_constexpr or value is None:
                signature[param.name], constexprs[param.name] = "constexpr", value
                continue
            kind, key = specialization(param, value)
            if kind == "constexpr":  # an integer 1, which a launch compiles as a constant
                signature[param.name], constexprs[param.name] = "constexpr", key
                continue
            signature[param.name] = kind
            if key == "D":
                attrs[(index,)] = [["tt.divisibility", 16]]
        label = " ".join(f"{k}={v}" for k, v in sorted({**meta, **constexprs}.items()) if k.isupper()) or "-"
        shape = grid(constexprs) if callable(grid) else grid
        jobs.append((f"{name} [{label} {options}]", function, signature, (constexprs, attrs), options, tuple(shape)))
    return jobs


def specialization(param: Any, value: Any) -> tuple[str, Any]:
    """How a launch specializes an argument (Triton's own rule, as its JIT calls it): its type and
    "D" where a tensor's address or an integer is a multiple of 16 (compiled with that divisibility,
    which decides how wide its loads and stores are), or ("constexpr", 1) for an integer 1."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    if isinstance(value, torch.Tensor) and value.dtype not in POINTER_TYPES:
        raise TypeError(f"a tensor of {value.dtype}")
    return native_specialize_impl(BaseBackend, value, False, not param.do_not_specialize,
                                  not param.do_not_specialize_on_alignment)


def compile_one(job: tuple, arch: int) -> tuple[str, str]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    label, function, signature, constants, options, grid = job
    problems = []
    for axis, (size, limit) in enumerate(zip(grid, GRID_LIMITS)):
        if not 0 <= size <= limit:
            problems.append(f"grid axis {axis} of {size} (at most {limit})")
    if signature is None:
        return label, compile_cuda(function, constants, arch, problems)
    constexprs, attrs = constants
    try:
        compiled = triton.compile(ASTSource(function, signature, constexprs, attrs), target=GPUTarget("cuda", arch, 32),
                                  options=options)
    except Exception as error:  # the compiler's message is the finding
        return label, "FAILED " + " ".join(str(error).split())[:600]
    shared = compiled.metadata.shared
    if shared > SHARED_LIMIT.get(arch, SHARED_LIMIT[90]):
        problems.append(f"{shared} bytes of shared memory (at most {SHARED_LIMIT.get(arch, SHARED_LIMIT[90])})")
    # The global reads 16 bytes wide (vector loads, and cp.async copies into shared memory), which
    # the divisibility decides.
    ptx = compiled.asm["ptx"]
    wide = len(re.findall(r"ld\.global[.\w]*\.v4\.[bf]32", ptx)) + \
        len(re.findall(r"cp\.async\.c[ag]\.shared\.global[^;]*,\s*(?:16|0x10)\s*[,;]", ptx))
    return label, ("FAILED " + "; ".join(problems)) if problems else \
        f"ok (shared {shared} B, {len(attrs)} arguments divisible by 16, {wide} 16-byte global reads)"


def compile_cuda(kernel: Any, args: tuple, arch: int, problems: list[str]) -> str:
    """A KfCudaKernel compiled by NVRTC as torch.cuda._compile_kernel compiles it on the GPU, its
    launch checked against its signature: one tensor argument per parameter."""
    from torch.cuda._utils import _nvrtc_compile

    if not 0 < kernel.threads <= 1024:
        problems.append(f"{kernel.threads} threads a block (at most 1024)")
    if getattr(kernel, "shared", 0) > SHARED_LIMIT.get(arch, SHARED_LIMIT[90]):
        problems.append(f"{kernel.shared} bytes of shared memory (at most {SHARED_LIMIT.get(arch, SHARED_LIMIT[90])})")
    signature = re.search(r"void\s+" + re.escape(kernel.name) + r"\s*\(([^)]*)\)", kernel.source)
    parameters = len(signature.group(1).split(",")) if signature else -1
    if parameters != len(args) or not all(isinstance(x, torch.Tensor) for x in args):
        problems.append(f"launched with {len(args)} arguments for {parameters} parameters")
    try:
        binary, _ = _nvrtc_compile(kernel.source, kernel.name, str(arch))
    except Exception as error:  # NVRTC's log is the finding
        return "FAILED " + " ".join(str(error).split())[:600]
    return ("FAILED " + "; ".join(problems)) if problems else f"ok ({len(binary)} B)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task")
    parser.add_argument("model_new")
    parser.add_argument("--arch", type=int, default=90, help="compute capability, e.g. 90 for Hopper")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tuning", help="the tuner's jobs (JSON): every tile of each is compiled too")
    options = parser.parse_args()

    task = load("task", options.task)
    for key, value in getattr(task, "KFORGE_CPU_SIZES", {}).items():
        setattr(task, key, value)
    generated = load("generated", options.model_new)
    torch.manual_seed(0)
    model_new = generated.ModelNew(*task.get_init_inputs())
    kernels = {name: value for name, value in vars(generated).items()
               if type(value).__name__ in ("JITFunction", "Autotuner", "KfCudaKernel") and hasattr(value, "__getitem__")}
    called = {name for value in kernels.values() if type(value).__name__ != "KfCudaKernel"
              for name in python_function(value).__code__.co_names}
    launched = {name: value for name, value in kernels.items() if name not in called}
    launches: list = []
    vars(generated).update({name: Recorder(name, kernel, launches) for name, kernel in launched.items()})
    try:
        with torch.no_grad():
            model_new(*task.get_inputs())
    except Exception as error:  # values no kernel wrote may stop an ATen op; what ran is recorded
        print(f"forward stopped after {len(launches)} launches: {type(error).__name__}: {error}"[:300])
    if not launches:
        print("no kernel launch recorded")
        return 1

    jobs, seen = [], set()
    for launch in launches:
        for job in compile_jobs(*launch):
            key = (job[0], tuple(sorted((job[2] or {}).items())), job[5])
            if key not in seen:
                seen.add(key)
                jobs.append(job)
    for tuning in json.load(open(options.tuning)) if options.tuning else []:
        operands = tuple(torch.empty(0) for _ in tuning["args"])
        for variant in tuning["variants"]:
            kernel = types.SimpleNamespace(name=tuning["kernel"], source=variant["source"], threads=variant["threads"],
                                           shared=variant["shared_bytes"])
            jobs.append((f"{tuning['kernel']} [CUDA C++ tile {variant['tile']}, for the tuner]", kernel, None, operands, None,
                         tuple(variant["grid"]) + (1,) * (3 - len(variant["grid"]))))
    started = time.perf_counter()
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, options.jobs)) as pool:
        for label, outcome in pool.map(lambda job: compile_one(job, options.arch), jobs):
            failed += outcome.startswith("FAILED")
            print(f"{label}: {outcome}")
    print(f"compiled {len(jobs)} kernel configurations of {len(launched)} kernels for sm_{options.arch} in "
          f"{time.perf_counter() - started:.1f} s: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
