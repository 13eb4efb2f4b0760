"""Work done before a candidate arrives, so that its first call pays only for loading its own
kernels: Triton's one-off start-up (hashing its own library, finding the driver, loading the
launcher) and the lazy loading of the torch kernels the harness itself uses."""
from __future__ import annotations

import torch
import triton
import triton.language as tl


def before_fork() -> None:
    """In the zygote, before any child is forked and without touching CUDA: Triton hashes its
    own ~400 MB library once per process to key its cache (lru-cached, so every child forked
    afterwards inherits the result instead of spending most of a second on it)."""
    from triton.runtime.cache import triton_key

    triton_key()


@triton.jit
def _increment(pointer):
    tl.store(pointer, tl.load(pointer) + 1)


def after_cuda(device: str) -> None:
    """In a spare child once its CUDA context exists: one Triton launch and the harness's own
    operations (clone, fill, copy, bitwise comparisons) on a tiny tensor."""
    value = torch.zeros(1, device=device)
    _increment[(1,)](value)
    other = value.clone()
    other.fill_(2.0)
    torch.allclose(value, other, rtol=0.0, atol=0.0, equal_nan=True)
    torch.equal(value, other)
    value.copy_(other)
    torch.cuda.synchronize()
