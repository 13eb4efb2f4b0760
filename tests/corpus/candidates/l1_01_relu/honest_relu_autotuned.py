"""Element-wise ReLU with @triton.autotune choosing the block size and warp count.

On a GPU the autotuner times each config the first time it sees a new size. Triton's interpreter
has no GPU driver to time with, so there every config runs once and the first one is kept.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


def run_each_config_once(kernel_call, quantiles):
    kernel_call()
    return [1.0 for _ in quantiles]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 512}, num_warps=4),
        triton.Config({"BLOCK_SIZE": 2048}, num_warps=8),
    ],
    key=["n_elements"],
    do_bench=None if torch.cuda.is_available() else run_each_config_once,
)
@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n_elements = x.numel()
        grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
        relu_kernel[grid](x, out, n_elements)
        return out
