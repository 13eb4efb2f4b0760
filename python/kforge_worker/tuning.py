"""A candidate's @triton.autotune kernels: how they measure their configurations in the
candidate's process, and which configuration each chose.

After the candidate has run, every autotuned kernel's `best_config` holds the configuration its
measurements picked. The evaluator reports them by kernel name, so that a caller can bake them
into the source; they come from the candidate's own process and are only a hint: a baked source
is evaluated again before anyone relies on it.
"""
from __future__ import annotations

import functools
import time
from types import ModuleType
from typing import Any, Callable

# How long the autotuner on the GPU warms up and measures each configuration, in ms (Triton's
# defaults are 25 and 100). A hundred kernels of five configurations each spent most of a network's
# evaluation there; 20 ms of repetitions still time a 0.1 ms kernel 200 times.
BRIEF_WARMUP_MS = 5
BRIEF_REP_MS = 20


def measure_on_the_host() -> None:
    """Triton's autotuner benchmarks through the GPU driver, which the interpreter lacks; on the
    CPU each configuration is run once and timed on the host clock, so autotuned candidates run
    unchanged (which configuration wins there means nothing)."""
    from triton.runtime import autotuner

    def host_benchmark(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> list[float]:
        started = time.perf_counter()
        kernel_call()
        elapsed = (time.perf_counter() - started) * 1e3
        return [elapsed, elapsed, elapsed] if quantiles else elapsed

    autotuner.Autotuner.do_bench = property(lambda self: host_benchmark)


def measure_briefly() -> None:
    """On the GPU, autotuners that bring no benchmark of their own measure each configuration for
    BRIEF_REP_MS after BRIEF_WARMUP_MS (triton.testing.do_bench, the L2 cache flushed as ever)."""
    import triton.testing
    from triton.runtime import autotuner

    brief = functools.partial(triton.testing.do_bench, warmup=BRIEF_WARMUP_MS, rep=BRIEF_REP_MS)
    autotuner.Autotuner.do_bench = property(lambda self: self._do_bench or brief)

from .provenance import jit_function_name

SCALARS = (int, float, bool, str)


def autotune_choices(module: ModuleType) -> dict[str, dict[str, Any]]:
    """{kernel name: {"kwargs": {...}, "num_warps": w, "num_stages": s}} for the module's
    autotuned kernels that have chosen."""
    choices: dict[str, dict[str, Any]] = {}
    for value in list(vars(module).values()):
        if type(value).__name__ != "Autotuner":
            continue
        config = getattr(value, "best_config", None)
        name = jit_function_name(value)
        kwargs = getattr(config, "kwargs", None)
        if name is None or not isinstance(kwargs, dict):
            continue
        if not all(isinstance(k, str) and isinstance(v, SCALARS) for k, v in kwargs.items()):
            continue
        warps, stages = getattr(config, "num_warps", None), getattr(config, "num_stages", None)
        if not isinstance(warps, int) or not isinstance(stages, int):
            continue
        choices[name] = {"kwargs": dict(kwargs), "num_warps": warps, "num_stages": stages}
    return choices
