"""Runs a generated ModelNew's forward on the CPU, its Triton kernels under Triton's interpreter and
its CUDA C++ kernels (KfCudaKernel) recorded, not run, then checks each CUDA attention launch that
reads a bias: the tile flags its bias kernel wrote beside the bias must be 1.0 for each 32 x 32 tile
of the bias's last two dims that holds a value other than -inf, and 0.0 for each that holds none
(the attention kernel skips the key blocks of such tiles). Values after the first CUDA launch are
whatever torch.empty held; the bias kernels run before it, on the reference model's parameters and
buffers and the task's inputs.

Usage: attention_bias_tiles.py TASK.py MODEL_NEW.py
Prints each attention's flags, one row of tiles a line, and exits 1 when any is wrong or none was
checked.
"""
from __future__ import annotations

import os
import sys

os.environ["TRITON_INTERPRET"] = "1"

import importlib.util  # noqa: E402

import torch  # noqa: E402


def load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expected_flags(bias: torch.Tensor) -> torch.Tensor:
    rows, cols = bias.shape[-2], bias.shape[-1]
    lead = bias.reshape(-1, rows, cols)
    padded = torch.full((lead.shape[0], (rows + 31) // 32 * 32, (cols + 31) // 32 * 32), float("-inf"))
    padded[:, :rows, :cols] = lead
    tiles = padded.reshape(lead.shape[0], (rows + 31) // 32, 32, (cols + 31) // 32, 32)
    return (tiles != float("-inf")).any(dim=4).any(dim=2).float()


def main() -> int:
    task = load("task", sys.argv[1])
    for key, value in getattr(task, "KFORGE_CPU_SIZES", {}).items():
        setattr(task, key, value)
    generated = load("generated", sys.argv[2])
    torch.manual_seed(0)
    model = task.Model(*task.get_init_inputs())
    model_new = generated.ModelNew(*task.get_init_inputs())
    model_new.load_state_dict(model.state_dict(), strict=True)  # the model's buffers: a mask, a table
    launches = []

    class Recorder:
        def __init__(self, name):
            self.name = name

        def __getitem__(self, grid):
            return lambda *args: launches.append((self.name, args))

    for name, value in list(vars(generated).items()):
        if type(value).__name__ == "KfCudaKernel":
            setattr(generated, name, Recorder(name))
    with torch.no_grad():
        try:
            model_new(*task.get_inputs())
        except Exception as error:  # a value no kernel wrote may stop an ATen op; what ran is recorded
            print(f"forward stopped after {len(launches)} CUDA launches: {type(error).__name__}: {error}"[:300])
    checked = wrong = 0
    for name, args in launches:
        if not name.startswith("attention_") or len(args) != 6:  # q, k, v, bias, tile flags, output
            continue
        bias, flags = args[3], args[4]
        expected = expected_flags(bias)
        checked += 1
        same = flags.shape == expected.shape and torch.equal(flags, expected)
        wrong += not same
        print(f"{name}: bias {list(bias.shape)}, flags {list(flags.shape)}: {'ok' if same else 'WRONG'}")
        for row in flags.reshape(-1, flags.shape[-1]).tolist():
            print("  " + " ".join(f"{x:g}" for x in row))
        if not same:
            print("expected:\n" + str(expected))
    print(f"{checked} attention bias(es) checked, {wrong} wrong")
    return 0 if checked and not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
