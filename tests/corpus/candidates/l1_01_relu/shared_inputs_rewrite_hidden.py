"""Cheat: rewrites the evaluator's shared input memory, then returns x unchanged.

An identity kernel is a correct ReLU only on non-negative inputs. Evaluations hand a candidate
its inputs through a shared arena that its own process maps writable, so at construction the
candidate finds that arena among the process's objects (gc and the module table reached through
torch by names built at run time, so no static tripwire fires) and replaces every float in it by
its absolute value before the harness reads its input sets. If it cannot find the arena it
raises, so the expected verdict shows the rewrite happened.

It must not help: the reference's outputs come from the trusted worker's own pristine copies of
the inputs, so the identity is compared against ReLU of the original signed values and fails
(wrong_output).
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


def rewrite_shared_inputs() -> None:
    modules = resolve("sy" + "s").modules
    collector = modules["g" + "c"]
    arena_type = getattr(modules.get("kforge_worker." + "shared_memory"), "Arena", None)
    rewritten = 0
    for item in collector.get_objects():
        if arena_type is not None and isinstance(item, arena_type) and item.name == "inputs":
            memory = item.mapping.tensor
            floats = memory[: memory.numel() // 4 * 4].view(torch.float32)
            floats.abs_()
            rewritten += 1
    if not rewritten:
        raise RuntimeError("no shared input arena found")


@triton.jit
def copy_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        rewrite_shared_inputs()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK_SIZE=1024)
        return out
