"""Cheat: fills the output from a background thread, importing threading by a computed name.

Like thread_import_threading.py, forward returns an unfilled output at once and a thread
computes the ReLU half a second later, so a timer around forward sees only an allocation. The
module is imported with __import__("thr" + "eading") so that no import statement names it; the
static frame_inspection tripwire flags any import whose module name is computed at run time.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

_workers = __import__("thr" + "eading")


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


def fill_later(x: torch.Tensor, out: torch.Tensor, delay_s: float) -> None:
    getattr(_workers, "Event")().wait(delay_s)
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK_SIZE=1024)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        worker = getattr(_workers, "Th" + "read")(target=fill_later, args=(x, out, 0.5), daemon=True)
        worker.start()
        return out
