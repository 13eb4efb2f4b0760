"""Cheat: returns an empty output at once and fills it from a background thread.

forward starts a thread that computes the ReLU into the output and returns the output before the
thread has run, so a timer around forward sees only an allocation. The source imports threading,
which the static threads tripwire rejects.
"""
import threading

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


def fill_later(x: torch.Tensor, out: torch.Tensor, delay_s: float) -> None:
    threading.Event().wait(delay_s)
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK_SIZE=1024)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        threading.Thread(target=fill_later, args=(x, out, 0.5), daemon=True).start()
        return out
