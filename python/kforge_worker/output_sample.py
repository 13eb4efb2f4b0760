"""Outputs judged on a secret random sample of their elements instead of in full.

The task's own seeds, and the probe that swaps two input elements, are compared element by element.
Every further call on the same shapes (the extra input distributions, the probe that rewrites all
values, the repeated call, the spot-checked timed calls) only has to show a wrong answer that
touches a real share of the output, so for those the
candidate sends the values at K = SAMPLE_COUNT positions drawn fresh per evaluation by the trusted
worker: an output wrong on a fraction f of its elements escapes with probability (1 - f)^K. That
cuts the evaluation's biggest cost, moving whole outputs between processes, from one per call to
four. Positions depend only on an output's element count: keys % numel.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

SAMPLE_COUNT = 1 << 20


def sample_count() -> int:
    """SAMPLE_COUNT, or KFORGE_OUTPUT_SAMPLE_COUNT where tests shrink it to reach tiny outputs."""
    return max(1, int(os.environ.get("KFORGE_OUTPUT_SAMPLE_COUNT", SAMPLE_COUNT)))


@dataclass
class Sampled:
    """A candidate output sent as a sample: its values at the sample positions for its size."""
    values: torch.Tensor
    shape: list[int]  # the whole output's shape

    def numel(self) -> int:
        count = 1
        for size in self.shape:
            count *= size
        return count


def make_keys() -> torch.Tensor:
    """Fresh non-negative int64 keys from the operating system's randomness."""
    generator = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
    return torch.randint(0, 1 << 62, (sample_count(),), generator=generator, dtype=torch.int64)


def positions(keys: torch.Tensor, numel: int, device: torch.device | str) -> torch.Tensor:
    return keys.to(device) % max(numel, 1)


def worth_sampling(tensor: torch.Tensor, keys: torch.Tensor) -> bool:
    return tensor.numel() > keys.numel()


def take(tensor: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """The tensor's values at the sample positions for its size, as a 1-D tensor."""
    return tensor.reshape(-1)[positions(keys, tensor.numel(), tensor.device)]


def wrap_loaded(values: list, described: list[dict[str, Any]]) -> list:
    """Loaded candidate outputs, with the sampled ones wrapped as Sampled."""
    return [Sampled(value, [int(s) for s in meta["sampled_from"]]) if "sampled_from" in meta else value
            for value, meta in zip(values, described)]


def like(values: list, pattern: list, keys: torch.Tensor | None) -> list:
    """`values` (whole tensors) cut down to the sample wherever `pattern` holds a Sampled."""
    if keys is None:
        return values
    return [take(v, keys) if isinstance(p, Sampled) and isinstance(v, torch.Tensor) and v.numel() == p.numel() else v
            for v, p in zip(values, pattern)]


def plain(values: list) -> list:
    """Sampled entries as their value tensors, for comparisons of bits between two calls."""
    return [v.values if isinstance(v, Sampled) else v for v in values]
