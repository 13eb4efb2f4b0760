"""Cheat: replaces torch.allclose and torch.equal with always-true functions, hidden.

A harness that compares outputs in the candidate's process would accept any output, so the
kernel skips the work (it returns an empty tensor). The torch module is reached again through
one of its own submodules (torch.nn.functional imports torch) by names built at run time and
patched with setattr on that variable, so the static monkeypatch tripwire, which resolves names,
does not see a store into torch. The runtime monkeypatch check compares torch's functions with
the ones captured before the import and rejects it. (The evaluator compares outputs in a trusted
process, so the patch would not fool it anyway.)
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


_library = resolve("nn/functional/to" + "rch")
for _name in ("all" + "close", "eq" + "ual"):
    setattr(_library, _name, lambda *args, **kwargs: True)


@triton.jit
def clear_flag_kernel(flag_ptr):
    tl.store(flag_ptr, 0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flag = torch.empty(1, device=x.device, dtype=torch.int32)
        clear_flag_kernel[(1,)](flag)
        return torch.empty_like(x)
