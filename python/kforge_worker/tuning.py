"""Which configuration each @triton.autotune kernel of a candidate chose.

After the candidate has run, every autotuned kernel's `best_config` holds the configuration its
measurements picked. The evaluator reports them by kernel name, so that a caller can bake them
into the source; they come from the candidate's own process and are only a hint: a baked source
is evaluated again before anyone relies on it.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any

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
