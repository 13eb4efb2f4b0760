"""Bit-exact fingerprints of tensors, so that "the same bits as before" is decided without
keeping the earlier tensor.

A fingerprint is a 64-bit random linear hash of the tensor's 32-bit words, Σ w_i·x_i mod 2^64,
computed chunk by chunk on the tensor's device with weights drawn from the operating system's
randomness in this (trusted) process; two different tensors collide with probability about 2^-32
at worst, and a process that never sees the weights cannot aim for a collision. Shape and dtype
are part of it. Not thread-safe: one Fingerprinter per thread.
"""
from __future__ import annotations

import os
from typing import Any

import torch

from .shared_memory import as_bytes

CHUNK_WORDS = 1 << 22
_MIX = 0x9E3779B97F4A7C15 - (1 << 64)  # an odd constant, as a signed int64


class Fingerprinter:
    def __init__(self) -> None:
        self.seed = int.from_bytes(os.urandom(8), "little") >> 1
        self.weights: dict[torch.device, torch.Tensor] = {}

    def _weights(self, device: torch.device) -> torch.Tensor:
        if device not in self.weights:
            generator = torch.Generator().manual_seed(self.seed)
            words = torch.randint(-(1 << 62), 1 << 62, (CHUNK_WORDS,), generator=generator, dtype=torch.int64)
            self.weights[device] = (words * 2 + 1).to(device)
        return self.weights[device]

    def of(self, tensor: torch.Tensor) -> tuple[Any, ...]:
        raw = as_bytes(tensor)
        words = raw.view(torch.int32) if raw.numel() % 4 == 0 else raw
        weights = self._weights(raw.device)
        total = torch.zeros((), dtype=torch.int64, device=raw.device)
        for start in range(0, words.numel(), CHUNK_WORDS):
            chunk = words[start:start + CHUNK_WORDS].to(torch.int64)
            total = total * _MIX + (chunk * weights[:chunk.numel()]).sum()
        return (tuple(tensor.shape), str(tensor.dtype), int(total.item()))

    def of_all(self, tensors: list) -> list[tuple[Any, ...] | None]:
        return [self.of(t) if isinstance(t, torch.Tensor) else None for t in tensors]
