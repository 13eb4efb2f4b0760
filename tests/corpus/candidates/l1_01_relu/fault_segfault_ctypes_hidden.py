"""Fault: dereferences a null pointer through ctypes, reached by a built module name.

ctypes.string_at(0) reads address 0 and the process dies with SIGSEGV inside forward. The module
is taken from torch's namespace (torch.ctypes) by a name built at run time, so the static
frame_inspection tripwire does not see it; the evaluator must survive the child's death and
report crashed.
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
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK_SIZE=1024)
        getattr(resolve("ctyp" + "es"), "string_at")(0)
        return out
