"""The input sets of one evaluation, made on demand from their seeds instead of kept.

A set is the task's get_inputs() under a seed (`seed0`, `seed1`, ..., `timing`), one of the extra
distributions derived from seed0 (`signed`, `scaled_up`, ...), seed0 with two other elements
swapped (`reswapped`: only a probe, never a call of its own), or seed0 at a second size (its
leading dimension one longer, `resized`). Making a set again gives the same values bit for bit on
the same device, so the trusted worker holds one set at a time however large the task. Not
thread-safe.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch

from .inputs import DISTRIBUTIONS, check_input_values, derive_distribution, move_inputs, seed_everything
from .task_loader import call_task_function


@dataclass(frozen=True)
class SetSpec:
    name: str
    seed: int
    distribution: str  # "task", one of DISTRIBUTIONS, or "resized"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "seed": self.seed, "distribution": self.distribution}


# Sets only ever written into seed0's tensors by a probe. A cache keyed on a few sampled values
# escapes a swap probe only when the swap touches a sampled element (about 2 * samples / elements,
# 0.4% for 8 samples of 4096); two independent swaps leave it the square of that.
PROBE_ONLY_SETS = ("reswapped",)


class InputSets:
    def __init__(self, task: ModuleType, path: str, device: torch.device, seeds: list[int],
                 timing_seed: int | None, distributions: bool):
        self.task, self.path, self.device = task, path, device
        self.specs: dict[str, SetSpec] = {}
        for index, seed in enumerate(seeds):
            self.specs[f"seed{index}"] = SetSpec(f"seed{index}", seed, "task")
        if distributions:
            for index, kind in enumerate(DISTRIBUTIONS):
                self.specs[kind] = SetSpec(kind, (seeds[0] + index + 1) % (1 << 62), kind)
            self.specs["reswapped"] = SetSpec("reswapped", (seeds[0] + len(DISTRIBUTIONS) + 1) % (1 << 62), "swapped")
        if timing_seed is not None:
            self.specs["timing"] = SetSpec("timing", timing_seed, "task")
        self.resized_inputs: list[int] = []  # which inputs grow at the second size (none: no second size)

    def make(self, name: str) -> list:
        spec = self.specs[name]
        if spec.distribution == "task":
            return self._task_inputs(spec.seed)
        if spec.distribution == "resized":
            return grow_leading_dim(self.make("seed0"), self.resized_inputs)
        return derive_distribution(self.make("seed0"), spec.distribution, spec.seed)

    def _task_inputs(self, seed: int) -> list:
        """get_inputs() under `seed`, created directly on the device where it is a GPU (the task's
        factory calls follow the default device), so big inputs cost no host work."""
        seed_everything(seed)
        where = self.device if self.device.type == "cuda" else contextlib.nullcontext()
        with where:
            inputs = call_task_function(self.task, self.path, "get_inputs")
        check_input_values(inputs, f"{self.path}: get_inputs()")
        return move_inputs(inputs, self.device)

    def has_float_inputs(self) -> bool:
        return any(isinstance(v, torch.Tensor) and v.is_floating_point() for v in self.make("seed0"))

    def drop_distributions(self) -> None:
        for kind in DISTRIBUTIONS + PROBE_ONLY_SETS:
            self.specs.pop(kind, None)

    def set_second_size(self, grown: list[int]) -> None:
        self.resized_inputs = grown
        if grown:
            self.specs["resized"] = SetSpec("resized", self.specs["seed0"].seed, "resized")
        else:
            self.specs.pop("resized", None)

    def checked_sets(self) -> list[str]:
        """The sets whose calls are checked whole, in order: seeds first, then distributions."""
        return [name for name, spec in self.specs.items()
                if spec.distribution != "resized" and name != "timing" and name not in PROBE_ONLY_SETS]


def second_size_candidates(inputs: list) -> list[list[int]]:
    """Which inputs to grow for a second size, most natural first: every tensor sharing the first
    tensor input's leading dimension (a batch), then the first tensor input alone."""
    tensors = [i for i, v in enumerate(inputs) if isinstance(v, torch.Tensor) and v.dim() >= 1]
    if not tensors:
        return []
    lead = inputs[tensors[0]].shape[0]
    batch = [i for i in tensors if inputs[i].shape[0] == lead]
    options = [batch]
    if batch != tensors[:1]:
        options.append(tensors[:1])
    return options


def grow_leading_dim(inputs: list, grown: list[int]) -> list:
    """The inputs with the leading dimension of those in `grown` one longer: the extra row repeats
    the first, so any per-row validity of the task's inputs (a distribution, an index range) holds."""
    return [torch.cat([v, v[:1]]) if index in grown else v for index, v in enumerate(inputs)]
