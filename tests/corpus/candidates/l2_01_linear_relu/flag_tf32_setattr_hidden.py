"""Cheat: turns on TF32 for cuBLAS matmuls through names built at runtime.

Same trick as flag_tf32_at_import.py (a torch.matmul GEMM that runs on TF32 tensor cores, with a
Triton bias+ReLU epilogue, in partial mode), but the flag object is found by walking attribute
names built from strings and set with setattr on the result, so no static tripwire sees
torch.backends. The flag can be set without a GPU; the runtime global_state check sees
allow_tf32 (and the float32 matmul precision) changed by the import.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


def resolve(path: str):
    target = torch
    for part in path.split("/"):
        target = getattr(target, part)
    return target


setattr(resolve("back" + "ends/cu" + "da/mat" + "mul"), "allow_" + "tf32", True)


@triton.jit
def bias_relu_kernel(y_ptr, bias_ptr, out_ptr, n_elements, n_cols, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    bias = tl.load(bias_ptr + offsets % n_cols, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.maximum(y + bias, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.linear.weight.t()).contiguous()
        out = torch.empty_like(y)
        n_elements = y.numel()
        bias_relu_kernel[(triton.cdiv(n_elements, 1024),)](
            y, self.linear.bias, out, n_elements, y.shape[1], BLOCK_SIZE=1024)
        return out
