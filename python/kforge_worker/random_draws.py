"""The same random numbers for the fp64 copy of a forward that draws them.

A forward that draws random numbers (torch.randn for an initial state, dropout) is seeded alike on
both sides of a comparison, but its fp64 copy (reference.py's rounding noise) would draw them in
fp64, other numbers: the difference from the fp32 reference would then not be rounding noise.
`Draws(narrow=True)` runs every random op of the fp64 call as the fp32 reference ran it (its fp64
tensors and dtype arguments narrowed to fp32, its results widened back), so from the same seed it
draws the same numbers. Each mode records the random ops it saw (op, shapes, dtypes as run) and the
RNG state after the call: the fp64 call's noise is trusted only where its record equals the fp32
call's, so a random op drawn otherwise (another dtype on purpose, another shape) cannot pass its
different numbers off as rounding noise.
"""
from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

from .inputs import rng_states, same_states


def _narrowed(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.dtype == torch.float64:
        return value.float()
    return torch.float32 if value is torch.float64 else value


def _widened(value: Any) -> Any:
    return value.double() if isinstance(value, torch.Tensor) and value.dtype == torch.float32 else value


def _signature(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), str(value.dtype))
    if isinstance(value, (tuple, list)):
        return tuple(_signature(item) for item in value)
    return None


class Draws(TorchDispatchMode):
    """Seeds the global RNG with `seed` and records the random ops of the calls inside it; with
    `narrow`, runs them in fp32 (see the module's docstring). `record` is the list of (op, the
    shapes and dtypes of its tensor arguments as run); `states_after` the RNG state on leaving."""

    def __init__(self, seed: int, narrow: bool = False):
        super().__init__()
        self.seed, self.narrow = seed, narrow
        self.record: list[tuple[str, Any]] = []
        self.states_after: list[torch.Tensor] = []

    def __enter__(self) -> "Draws":
        torch.manual_seed(self.seed)
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        self.states_after = rng_states()

    def matches(self, other: "Draws") -> bool:
        """Whether both calls drew the same numbers: the same seed, the same random ops on the
        same shapes and dtypes, and the same RNG state after."""
        return (self.seed == other.seed and self.record == other.record
                and same_states(self.states_after, other.states_after))

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if torch.Tag.nondeterministic_seeded not in func.tags:
            return func(*args, **kwargs)
        if not self.narrow:
            self.record.append((str(func), _signature(list(args) + list(kwargs.values()))))
            return func(*args, **kwargs)
        run_args, run_kwargs = tree_map(_narrowed, args), tree_map(_narrowed, kwargs)
        self.record.append((str(func), _signature(list(run_args) + list(run_kwargs.values()))))
        result = func(*run_args, **run_kwargs)
        written = self._write_back(func, args, kwargs, run_args, run_kwargs)
        if written is not None:
            return written
        return tree_map(_widened, result)

    @staticmethod
    def _write_back(func: Any, args: tuple, kwargs: dict, run_args: tuple, run_kwargs: dict) -> Any:
        """For an op that writes its arguments (bernoulli_, normal_, an out= variant): the fp32
        values copied into the fp64 tensors it was given, and the first one returned; None for
        an op that only returns new tensors."""
        written = []
        for index, argument in enumerate(func._schema.arguments):
            if argument.alias_info is None or not argument.alias_info.is_write:
                continue
            if argument.kwarg_only or index >= len(args):
                original, run = kwargs.get(argument.name), run_kwargs.get(argument.name)
            else:
                original, run = args[index], run_args[index]
            if isinstance(original, torch.Tensor) and isinstance(run, torch.Tensor):
                if run is not original:
                    original.copy_(run)
                written.append(original)
        if not written:
            return None
        return written[0] if len(written) == 1 else tuple(written)
