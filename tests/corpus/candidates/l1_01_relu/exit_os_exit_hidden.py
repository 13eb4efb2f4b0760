"""Cheat: ends the process with status 0 through os._exit, reached by a string-built name.

os._exit skips every Python handler (no SystemExit to catch, no finally blocks), so a harness
that only trusts its exit status sees a fast, clean exit. The os module is taken from torch's
namespace (torch.os) and _exit looked up by names built at run time, so the source only calls
getattr on torch and no static tripwire fires. The process dies without writing a result, which
the evaluator reports as crashed.
"""
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


def resolve(path: str):
    target = torch
    for part in path.split("/"):
        target = getattr(target, part)
    return target


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x.contiguous(), out, x.numel(), BLOCK_SIZE=1024)
        getattr(resolve("o" + "s"), "_e" + "xit")(0)
        return out
