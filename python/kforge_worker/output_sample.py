"""Outputs judged on a secret random sample of their elements instead of in full.

The trusted worker looks at the outputs of a few timed calls (and of the profiled call) only
through a sample it takes itself, at the moment the call's outputs are handed over, from
K = SAMPLE_COUNT positions drawn fresh per evaluation from the operating system's randomness:
the candidate's process never learns which positions (nor which calls) are looked at, and an
output wrong on a fraction f of its elements escapes with probability (1 - f)^K. Positions
depend only on an output's element count: keys % numel.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch

SAMPLE_COUNT = 1 << 20


def sample_count() -> int:
    """SAMPLE_COUNT, or KFORGE_OUTPUT_SAMPLE_COUNT where tests shrink it to reach tiny outputs."""
    return max(1, int(os.environ.get("KFORGE_OUTPUT_SAMPLE_COUNT", SAMPLE_COUNT)))


@dataclass
class Sampled:
    """An output seen as its values at `positions` (flat indices into an output of `shape`)."""
    values: torch.Tensor
    shape: list[int]
    positions: torch.Tensor

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


def take(tensor: torch.Tensor, keys: torch.Tensor) -> Sampled | torch.Tensor:
    """The tensor's values at the sample positions for its size (copied out), or the whole tensor
    copied when it is no larger than the sample."""
    if tensor.numel() <= keys.numel():
        return tensor.clone()
    where = positions(keys, tensor.numel(), tensor.device)
    return Sampled(tensor.reshape(-1)[where].clone(), list(tensor.shape), where)
