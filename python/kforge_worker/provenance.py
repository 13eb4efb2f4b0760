"""Which work in a candidate's forward is the candidate's own.

On a GPU, the torch profiler lists the kernels one forward launches with their device times; a
kernel is authored when its name is one of the candidate's Triton functions or CUDA `__global__`
functions, data movement when it is a copy, fill or memset (a fill with random numbers included:
drawing them computes nothing from the inputs, and a task whose forward draws them, as
torch.randn for an initial state, is matched only by drawing the same ones from torch's
generator), and library compute otherwise. On
the CPU (Triton's interpreter) the same split is made over the ATen operators the forward
dispatches outside kernel launches; times there mean nothing, so counts are reported.
"""
from __future__ import annotations

import re
from types import ModuleType
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

GLOBAL_FUNCTION = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:static\s+)?void\s+(\w+)")
DATA_MOVEMENT_KERNEL = re.compile(
    r"memcpy|memset|fill|copy|CatArray|cat_|unrolled_elementwise_kernel<.*copy|distribution_elementwise_grid_stride_kernel",
    re.I)

# ATen operators that allocate, view, move or fill data (with random numbers too) without
# computing on it. Dropout and bernoulli with a tensor of probabilities compute on their input:
# not here.
DATA_MOVEMENT_OPS = frozenset("""
empty empty_like empty_strided new_empty new_empty_strided new_zeros new_ones new_full zeros zeros_like
ones ones_like full full_like fill fill_ zero_ view _unsafe_view reshape _reshape_alias as_strided t
transpose permute expand expand_as contiguous clone copy copy_ _to_copy to detach alias slice select
unsqueeze squeeze split split_with_sizes chunk unbind flatten unflatten lift_fresh resize_ narrow
set_ view_as stride size numel dim is_contiguous _local_scalar_dense item cat stack arange repeat constant_pad_nd
rand randn rand_like randn_like randint randint_like randperm normal_ uniform_ random_ exponential_
""".split())


def jit_function_name(value: Any) -> str | None:
    """The name of the @triton.jit function `value` is or wraps (an autotuner, a heuristics
    wrapper), or None."""
    seen = 0
    while value is not None and seen < 8:
        kind = type(value).__name__
        if kind in ("JITFunction", "InterpretedFunction"):
            fn = getattr(value, "fn", None)
            return getattr(fn, "__name__", None)
        value = getattr(value, "fn", None)
        seen += 1
    return None


def authored_kernel_names(module: ModuleType, source: str) -> set[str]:
    names = {name for name in (jit_function_name(v) for v in vars(module).values()) if name}
    names.update(GLOBAL_FUNCTION.findall(source))
    return names


def classify_kernel(name: str, authored: set[str]) -> str:
    if any(a and (name == a or name.startswith(a) or f" {a}(" in f" {name}" or f"{a}(" in name or f"{len(a)}{a}" in name)
           for a in authored):
        return "authored"
    if DATA_MOVEMENT_KERNEL.search(name):
        return "data_movement"
    return "library_compute"


def profile_cuda(fn: Callable[[], Any], authored: set[str]) -> dict[str, Any]:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    kernels: dict[str, dict[str, Any]] = {}
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        entry = kernels.setdefault(event.name, {"name": event.name, "calls": 0, "time_us": 0.0,
                                                "class": classify_kernel(event.name, authored)})
        entry["calls"] += 1
        entry["time_us"] += float(getattr(event, "device_time", 0.0) or event.self_device_time_total)
    return _summary(list(kernels.values()), "time_us", meaningful=True)


class _OpRecorder(TorchDispatchMode):
    def __init__(self, inside_kernel: Callable[[], bool]):
        super().__init__()
        self.inside_kernel = inside_kernel
        self.ops: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.inside_kernel():
            name = func.overloadpacket.__name__
            self.ops[name] = self.ops.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


class InterpreterLaunches:
    """Counts Triton interpreter launches and tells whether one is in progress."""

    def __init__(self) -> None:
        self.depth = 0
        self.launches: dict[str, int] = {}
        try:
            from triton.runtime import interpreter
        except ImportError:
            return
        original = interpreter.GridExecutor.__call__
        tracker = self

        def tracked_call(executor, *args, **kwargs):
            name = getattr(getattr(executor, "fn", None), "__name__", "triton_kernel")
            tracker.launches[name] = tracker.launches.get(name, 0) + 1
            tracker.depth += 1
            try:
                return original(executor, *args, **kwargs)
            finally:
                tracker.depth -= 1

        interpreter.GridExecutor.__call__ = tracked_call


def profile_cpu(fn: Callable[[], Any], launches: InterpreterLaunches) -> dict[str, Any]:
    before = dict(launches.launches)
    recorder = _OpRecorder(lambda: launches.depth > 0)
    with recorder:
        fn()
    entries = [{"name": f"aten::{name}", "calls": count,
                "class": "data_movement" if name in DATA_MOVEMENT_OPS else "library_compute"}
               for name, count in recorder.ops.items()]
    for name, count in launches.launches.items():
        calls = count - before.get(name, 0)
        if calls:
            entries.append({"name": name, "calls": calls, "class": "authored"})
    return _summary(entries, "calls", meaningful=False)


def _summary(entries: list[dict[str, Any]], weight: str, meaningful: bool) -> dict[str, Any]:
    totals = {"authored": 0.0, "data_movement": 0.0, "library_compute": 0.0}
    for entry in entries:
        totals[entry["class"]] += entry[weight]
    total = sum(totals.values())
    return {
        "unit": weight,
        "times_meaningful": meaningful,
        "kernels": sorted(entries, key=lambda e: -e[weight]),
        "authored": totals["authored"],
        "data_movement": totals["data_movement"],
        "library_compute": totals["library_compute"],
        "authored_share": (totals["authored"] / total) if total else 0.0,
        "library_compute_names": sorted(e["name"] for e in entries if e["class"] == "library_compute"),
    }
