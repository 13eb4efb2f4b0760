"""Compiling a candidate's Triton kernels all at once, before its first call, where it allows it.

Triton compiles a kernel at its first launch, and an autotuned kernel once for each configuration
it measures, one compile after another: minutes for a network of a hundred kernels, most of an
evaluation. A ModelNew that declares

    kf_compile_ahead = {"forward": "kf_forward", "restores": ("bn.running_mean", ...)}

says that its method `forward` launches its kernels and may run once with every launch replaced
by a compile, on tensors no kernel wrote (the compiler declares it only where every op left to
PyTorch is safe on such values), and names the parameters and buffers that method updates in
place. Before the first call, on the GPU, the harness runs that method so, with each of the
candidate module's kernels (not the @triton.jit helpers kernels call) replaced by its warm-up
(which compiles without launching; an autotuned kernel compiles every configuration), under
Triton's asynchronous compile mode on a thread pool, and waits for the compiles. The first call then finds its kernels compiled, for the
same arguments and so the same specializations. Afterwards the module's kernels, the listed state
and the random-number state are as they were; whatever goes wrong leaves the compiling to the
first call. It saves time and changes nothing any check sees: every call the evaluator judges
comes after it.
"""
from __future__ import annotations

import concurrent.futures
import os
import time
from types import ModuleType
from typing import Any

import torch

KERNEL_TYPES = ("JITFunction", "Autotuner", "KfCudaKernel")


class WarmUp:
    """Stands in for a kernel during the run: `kernel[grid](...)` compiles it without launching."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    def __getitem__(self, grid: Any) -> Any:
        return lambda *args, **kwargs: self.kernel.warmup(*args, grid=grid, **kwargs)


def declaration(model: Any) -> tuple[str, tuple[str, ...]] | None:
    """(forward method name, state names to restore) when the model allows compiling ahead."""
    declared = getattr(type(model), "kf_compile_ahead", None)
    if not isinstance(declared, dict):
        return None
    forward, restores = declared.get("forward"), declared.get("restores", ())
    if not isinstance(forward, str) or not isinstance(restores, (tuple, list)) or \
            not all(isinstance(name, str) for name in restores):
        return None
    return forward, tuple(restores)


def launched_kernels(namespace: dict[str, Any], kernel_types: tuple[str, ...] = KERNEL_TYPES) -> dict[str, Any]:
    """The module's kernels, by name, less the ones a kernel calls (@triton.jit helpers): those
    stay in place, since Triton reads them from the module when it compiles their callers."""
    kernels = {name: value for name, value in list(namespace.items()) if type(value).__name__ in kernel_types}
    called: set[str] = set()
    for kernel in kernels.values():
        function = kernel
        while not hasattr(function, "__code__") and hasattr(function, "fn"):
            function = function.fn
        codes = [getattr(function, "__code__", None)]
        while codes:
            code = codes.pop()
            if code is not None:
                called.update(code.co_names)
                codes.extend(const for const in code.co_consts if hasattr(const, "co_names"))
    return {name: value for name, value in kernels.items() if name not in called}


def compile_ahead(module: ModuleType, model: Any, inputs: list, workers: int | None = None,
                  warm_up: type = WarmUp, kernel_types: tuple[str, ...] = KERNEL_TYPES) -> dict[str, Any]:
    """Runs the declared forward with the module's kernels compiling instead of launching; returns
    what happened ({"outcome", "kernels", "compiles", "seconds"}) for the evidence."""
    started = time.perf_counter()
    declared = declaration(model)
    if declared is None:
        return {"outcome": "not declared"}
    forward = getattr(model, declared[0], None)
    namespace = vars(module)
    kernels = launched_kernels(namespace, kernel_types)
    if not callable(forward) or not kernels:
        return {"outcome": "nothing to compile"}
    from triton.runtime._async_compile import AsyncCompileMode

    named = dict(model.named_parameters())
    named.update(model.named_buffers())
    if any(name not in named for name in declared[1]):
        return {"outcome": "declares state the model does not have"}
    saved = [(named[name], named[name].detach().clone()) for name in declared[1]]
    devices = sorted({x.device for x in inputs if isinstance(x, torch.Tensor) and x.is_cuda}, key=str)
    mode = None
    failure: BaseException | None = None
    with torch.random.fork_rng(devices=devices), torch.no_grad(), \
            concurrent.futures.ThreadPoolExecutor(workers or max(1, min(16, len(os.sched_getaffinity(0))))) as pool:
        try:
            with AsyncCompileMode(pool, ignore_errors=True) as mode:
                namespace.update({name: warm_up(kernel) for name, kernel in kernels.items()})
                try:
                    forward(*inputs)
                finally:
                    namespace.update(kernels)
        except Exception as error:  # the first call compiles what is left
            failure = error
        for target, value in saved:
            target.copy_(value)
    compiles = len(mode.future_kernels) if mode is not None else 0
    outcome = "compiled" if failure is None else f"failed: {type(failure).__name__}: {str(failure)[:200]}"
    return {"outcome": outcome, "kernels": len(kernels), "compiles": compiles, "seconds": time.perf_counter() - started}
