"""Cheat by omission: training-mode BatchNorm2d with the right output and stale running statistics.

The forward normalizes with the batch statistics exactly as nn.BatchNorm2d does, but never writes
running_mean, running_var or num_batches_tracked, which the reference's forward updates: a model
switched to eval() afterwards would normalize with its initial statistics. The evaluator compares
the buffers the reference's forward mutates after every checked call: wrong_output.

What it computes:

1. One program per channel computes the batch mean and the biased variance over (N, H, W) in
   fp32 (mean first, then the centred sum of squares) and updates the running statistics in
   place ... except that it does not.
2. One pass normalizes with the batch statistics and applies the affine weight and bias.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def channel_stats_kernel(x_ptr, mean_ptr, rstd_ptr, running_mean_ptr, running_var_ptr, batches_ptr, n_images, channels,
                         plane, eps, momentum, BLOCK_SIZE: tl.constexpr):
    channel = tl.program_id(0)
    count = n_images * plane
    total = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for image in range(0, n_images):
        base = (image * channels + channel).to(tl.int64) * plane
        for start in range(0, plane, BLOCK_SIZE):
            offsets = start + tl.arange(0, BLOCK_SIZE)
            total += tl.load(x_ptr + base + offsets, mask=offsets < plane, other=0.0)
    mean = tl.sum(total, axis=0) / count
    squares = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for image in range(0, n_images):
        base = (image * channels + channel).to(tl.int64) * plane
        for start in range(0, plane, BLOCK_SIZE):
            offsets = start + tl.arange(0, BLOCK_SIZE)
            mask = offsets < plane
            centred = tl.where(mask, tl.load(x_ptr + base + offsets, mask=mask, other=0.0) - mean, 0.0)
            squares += centred * centred
    variance = tl.sum(squares, axis=0) / count
    tl.store(mean_ptr + channel, mean)
    tl.store(rstd_ptr + channel, 1.0 / tl.sqrt(variance + eps))


@triton.jit
def normalize_kernel(x_ptr, out_ptr, mean_ptr, rstd_ptr, weight_ptr, bias_ptr, n_elements, channels, plane,
                     BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    channel = (offsets // plane) % channels
    x = tl.load(x_ptr + offsets, mask=mask)
    scale = tl.load(rstd_ptr + channel, mask=mask) * tl.load(weight_ptr + channel, mask=mask)
    shifted = x - tl.load(mean_ptr + channel, mask=mask)
    tl.store(out_ptr + offsets, shifted * scale + tl.load(bias_ptr + channel, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_images, channels, height, width = x.shape
        plane = height * width
        mean = torch.empty(channels, device=x.device, dtype=torch.float32)
        rstd = torch.empty_like(mean)
        channel_stats_kernel[(channels,)](x, mean, rstd, self.bn.running_mean, self.bn.running_var,
                                          self.bn.num_batches_tracked, n_images, channels, plane, self.bn.eps,
                                          self.bn.momentum, BLOCK_SIZE=1024)
        out = torch.empty_like(x)
        normalize_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, mean, rstd, self.bn.weight, self.bn.bias, x.numel(),
                                                          channels, plane, BLOCK_SIZE=1024)
        return out
