"""Compiling a generated candidate's kernels all at once before its first call
(kforge_worker/compile_ahead.py): a ModelNew declaring `kf_compile_ahead` has its declared forward
run once by the harness with every kernel's launch replaced by its warm-up, under Triton's
asynchronous compile mode on a thread pool; then what that kernel-less run touched is put back.

There is nothing to compile on the CPU: the scenarios drive the harness's function on a generated
file (the golden `batch_norm_training.py`, kept equal to what the compiler writes by
the codegen tests) with a warm-up that submits a stand-in compile to Triton's real asynchronous
compile mode, and check what the real one relies on: every kernel the forward launches is submitted
with its launch arguments, the compiles run on the pool's threads and are finished when it
returns, no kernel runs, the module's kernels are back in place, the buffers the forward updates
and the random-number state are as they were, and a failing forward or a malformed declaration
changes nothing. The time it saves is measured on the GPU by bench/compile_ahead_probe.py."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GENERATED = os.path.join(REPO, "tests", "compiler", "codegen", "golden", "batch_norm_training.py")

# A fresh interpreter with TRITON_INTERPRET=1 from the start (see test_graph_replay.py).
SCENARIO = r"""
import importlib.util
import sys
import threading
import time

import torch
from triton.runtime import _async_compile

from kforge_worker import compile_ahead

path, scenario = sys.argv[1:3]
spec = importlib.util.spec_from_file_location("generated", path)
generated = importlib.util.module_from_spec(spec)
spec.loader.exec_module(generated)

submitted, compiled_on, finalized = [], set(), []


class Recorded:
    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        def warm_up(*args, **kwargs):
            mode = _async_compile.active_mode.get()
            assert mode is not None, "no asynchronous compile mode is active"
            name = self.kernel.__name__
            submitted.append((name, grid, [type(a).__name__ for a in args], sorted(kwargs)))

            def compile_it():
                time.sleep(0.05)
                compiled_on.add(threading.current_thread().name)
                return name
            return mode.submit((name, len(submitted)), compile_it, finalized.append)
        return warm_up


def run(model, inputs):
    return compile_ahead.compile_ahead(generated, model, inputs, workers=4, warm_up=Recorded,
                                       kernel_types=("InterpretedFunction",))


def make_model():
    torch.manual_seed(0)
    model = generated.ModelNew()
    with torch.no_grad():
        for name, tensor in list(model.named_parameters()) + list(model.named_buffers()):
            tensor.copy_(torch.rand(tensor.shape) if tensor.is_floating_point() else torch.full(tensor.shape, 3))
    return model


def state(model):
    return {name: t.clone() for name, t in model.named_buffers()}


def kernels_in_place():
    return all(vars(generated)[name] is kernel for name, kernel in kernels.items())


kernels = {name: v for name, v in vars(generated).items() if type(v).__name__ == "InterpretedFunction"}
assert kernels
model, twin = make_model(), make_model()
x = torch.randn(2, 4, 16, 16)
before = state(model)
rng = torch.get_rng_state()

if scenario == "compiles":
    forward = model.forward
    def drawing(x):  # the declared forward also draws random numbers, as dropout would
        torch.rand(5)
        return forward(x)
    model.forward = drawing
    report = run(model, [x])
    assert report["outcome"] == "compiled", report
    assert report["kernels"] == len(kernels) and report["compiles"] == len(submitted), report
    assert {name for name, *_ in submitted} == set(kernels), (submitted, set(kernels))
    assert all("Tensor" in types for _, _, types, _ in submitted), submitted
    assert len(finalized) == len(submitted), (finalized, submitted)  # every compile done on return
    assert compiled_on and "MainThread" not in compiled_on, compiled_on
    assert kernels_in_place()
    after = state(model)
    assert all(torch.equal(after[name], before[name]) for name in before), "buffers not put back"
    assert torch.equal(torch.get_rng_state(), rng), "random-number state not restored"
    assert threading.active_count() == 1, threading.enumerate()  # the pool is gone
    # The first real call computes what a model that never compiled ahead computes.
    del model.forward
    assert torch.equal(model(x), twin(x))
    assert all(torch.equal(a, b) for a, b in zip(state(model).values(), state(twin).values()))
elif scenario == "failing":
    report = run(model, [torch.randn(3, 4, 16, 16)])  # a shape the file was not generated for
    assert report["outcome"].startswith("failed: ValueError") and "was generated for x of shape" in report["outcome"], report
    assert kernels_in_place()
    assert all(torch.equal(state(model)[name], before[name]) for name in before)
    for declared in (None, "forward", {"forward": 3}, {"forward": "forward", "restores": "bn.running_mean"}):
        type(model).kf_compile_ahead = declared
        assert run(model, [x])["outcome"] == "not declared", declared
    type(model).kf_compile_ahead = {"forward": "forward", "restores": ("bn.no_such_buffer",)}
    assert run(model, [x])["outcome"] == "declares state the model does not have"
    type(model).kf_compile_ahead = {"forward": "no_such_method", "restores": ()}
    assert run(model, [x])["outcome"] == "nothing to compile"
    assert not submitted and kernels_in_place()
elif scenario == "helpers":
    import os, tempfile
    source = '''
import triton
import triton.language as tl

@triton.jit
def twice(x):
    return x * 2

@triton.jit
def kernel(x_ptr):
    tl.store(x_ptr, twice(tl.load(x_ptr)))

@triton.autotune(configs=[triton.Config({"B": 1})], key=[])
@triton.jit
def tuned(x_ptr, B: tl.constexpr):
    tl.store(x_ptr, twice(tl.load(x_ptr)) + B)
'''
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "helpers.py"), "w") as file:
        file.write(source)
    sys.path.insert(0, folder)
    import helpers
    found = compile_ahead.launched_kernels(vars(helpers), ("InterpretedFunction", "Autotuner"))
    assert sorted(found) == ["kernel", "tuned"], sorted(found)  # twice() is called by both: left in place
print("ok")
"""


@pytest.mark.parametrize("scenario", ["compiles", "failing", "helpers"])
def test_compile_ahead_scenario(scenario):
    done = subprocess.run([sys.executable, "-c", SCENARIO, GENERATED, scenario], capture_output=True, text=True,
                          timeout=600, cwd=os.path.join(REPO, "python"), env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout[-2000:] + done.stderr[-4000:]
