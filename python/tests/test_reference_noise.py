"""The reference's own fp32 noise: a candidate that computes an ill-conditioned task more exactly
than the fp32 reference is accepted, and a wrong one is still rejected. End to end through the
real binary on the CPU."""
from __future__ import annotations

import json
import os
import subprocess

import torch

from kforge_worker.compare import Tolerance, compare_outputs, compare_tensor

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """(x * 1e4 + y) - x * 1e4: exactly y, but fp32 loses about 1e-3 of it to cancellation."""

    def forward(self, x, y):
        return (x * 1e4 + y) - x * 1e4


def get_inputs():
    return [torch.randn(64, 256), torch.randn(64, 256)]


def get_init_inputs():
    return []
'''

CANDIDATE = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, y_ptr, out_ptr, n, OFFSET: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, (x * 1e4 - x * 1e4) + y + OFFSET, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), OFFSET=OFFSET_VALUE, BLOCK=1024)
        return out
'''


def evaluate(tmp_path, offset: float, task_text: str = TASK, candidate_text: str = CANDIDATE) -> dict:
    """The verdict of `candidate_text` (its OFFSET_VALUE replaced by `offset`) on `task_text`."""
    task, candidate = tmp_path / "task.py", tmp_path / f"candidate_{len(os.listdir(tmp_path))}.py"
    task.write_text(task_text)
    candidate.write_text(candidate_text.replace("OFFSET_VALUE", repr(offset)))
    done = subprocess.run([BINARY, "-q", "--workspace", str(tmp_path / "ws"), "--device", "cpu", "eval", "--json",
                           "--no-timing", str(task), str(candidate)], capture_output=True, text=True, timeout=600)
    assert done.stdout.strip(), done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_more_exact_candidate_is_accepted_and_a_wrong_one_rejected(tmp_path):
    exact = evaluate(tmp_path, 0.0)
    assert exact["verdict"] == "accepted", exact["message"]
    wrong = evaluate(tmp_path, 0.01)
    assert wrong["verdict"] == "wrong_output", wrong["message"]


def test_noise_widens_the_allowance_only_where_given():
    reference = torch.tensor([1.0, 2.0, 3.0])
    candidate = reference + torch.tensor([0.0, 0.01, 0.0])
    tight = Tolerance(rtol=1e-4, atol=1e-4)
    assert not compare_tensor(candidate, reference, tight)["passed"]
    noise = torch.tensor([0.0, 0.006, 0.0], dtype=torch.float64)
    report = compare_tensor(candidate, reference, tight, noise)
    assert report["passed"] and report["reference_noise_rms"] > 0
    # Noise cannot excuse a NaN where the reference is finite.
    nan = torch.tensor([1.0, float("nan"), 3.0])
    assert not compare_tensor(nan, reference, tight, noise)["passed"]


def test_a_failure_with_noise_says_how_far_the_reference_itself_strays():
    # A chaotic output: the reference is 900 off fp64 at one element, the candidate at another.
    reference = torch.ones(100)
    reference[0] = reference[99] = 1000.0
    candidate = reference.clone()
    candidate[99] = 100.0
    noise = torch.full((100,), 0.01, dtype=torch.float64)
    noise[0] = 900.0
    report = compare_tensor(candidate, reference, Tolerance(rtol=1e-4, atol=1e-4), noise)
    assert not report["passed"]
    assert report["reference_noise_max"] == 900.0
    rms = reference.pow(2).mean().sqrt().item()
    assert f"the reference itself strays from fp64 by up to 900 ({900 / rms:.2g}x the output rms)" in report["problem"]
    # Without noise, nothing is said of it.
    plain = compare_tensor(candidate, reference, Tolerance(rtol=1e-4, atol=1e-4))
    assert "reference_noise_max" not in plain and "strays" not in plain["problem"]


def test_noise_is_asked_for_only_when_values_fail():
    reference = [torch.tensor([1.0, 2.0])]
    calls = []

    def noise():
        calls.append(1)
        return [torch.tensor([0.1, 0.1], dtype=torch.float64)]

    tight = Tolerance(rtol=1e-4, atol=1e-4)
    assert compare_outputs([reference[0].clone()], reference, tight, noise)["passed"] and not calls
    shape_wrong = compare_outputs([torch.zeros(3)], reference, tight, noise)
    assert not shape_wrong["passed"] and not calls
    close = compare_outputs([reference[0] + 0.05], reference, tight, noise)
    assert close["passed"] and calls and close["outputs"][0]["reference_noise_considered"]


def assert_honest_passes_and_tenfold_fails(n: int, active: int, seed: int) -> None:
    """The first `active` of n elements carry the reference's noise (sigma 1e-3 about exact values),
    the rest are exact zeros in any computation. A candidate with independent errors of the same
    size there passes a tolerance the noise dominates; ten times those errors fail."""
    generator = torch.Generator().manual_seed(seed)
    sigma = 1e-3
    exact, reference_error, candidate_error = (torch.zeros(n, dtype=torch.float64) for _ in range(3))
    exact[:active] = torch.randn(active, generator=generator, dtype=torch.float64)
    reference_error[:active] = torch.randn(active, generator=generator, dtype=torch.float64) * sigma
    candidate_error[:active] = torch.randn(active, generator=generator, dtype=torch.float64) * sigma
    reference, noise = exact + reference_error, reference_error.abs()
    tight = Tolerance(rtol=1e-9, atol=1e-9)
    honest = compare_tensor(exact + candidate_error, reference, tight, noise)
    assert honest["passed"], honest["tolerance_ratio"]
    worse = compare_tensor(exact + 10.0 * candidate_error, reference, tight, noise)
    assert not worse["passed"]


def test_an_honest_computation_as_noisy_as_the_reference_passes():
    """Where the reference's noise dominates the tolerance, another honest fp32 computation (a
    different summation order) differs from the reference by two independent errors of that size
    on every element; over a million elements the largest difference is several times their rms.
    It passes; ten times that error fails."""
    assert_honest_passes_and_tenfold_fails(1 << 20, 1 << 20, seed=0)


def test_exact_elements_do_not_dilute_the_noise_of_those_that_cancel():
    """GELU(x - max(x)) of large x: most outputs are exactly zero in any fp32 computation, the few
    near the row maximum cancel and carry the reference's noise. An honest computation as noisy as
    the reference on those elements passes; ten times that error fails."""
    assert_honest_passes_and_tenfold_fails(1 << 20, 1 << 12, seed=1)


BUFFER_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Keeps a running mean of (x * 1e4 + y) - x * 1e4, exactly y's, which fp32 gets to about 1e-4:
    the buffer carries the reference's cancellation noise, the output none."""

    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(256))

    def forward(self, x, y):
        with torch.no_grad():
            self.running.mul_(0.9).add_(0.1 * ((x * 1e4 + y) - x * 1e4).mean(0))
        return x + y


def get_inputs():
    return [torch.randn(64, 256), torch.randn(64, 256)]


def get_init_inputs():
    return []
'''

BUFFER_CANDIDATE = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def update(y_ptr, running_ptr, ROWS: tl.constexpr, COLS: tl.constexpr, OFFSET: tl.constexpr):
    rows, cols = tl.arange(0, ROWS), tl.arange(0, COLS)
    mean = tl.sum(tl.load(y_ptr + rows[:, None] * COLS + cols[None, :]), axis=0) / ROWS
    tl.store(running_ptr + cols, tl.load(running_ptr + cols) * 0.9 + 0.1 * mean + OFFSET)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(256))

    def forward(self, x, y):
        out = torch.empty_like(x)
        add[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
        update[(1,)](y, self.running, ROWS=64, COLS=256, OFFSET=OFFSET_VALUE)
        return out
'''


def test_buffers_get_the_reference_noise_too(tmp_path):
    """A running statistic the fp32 reference computes through cancellation: a candidate that
    computes it exactly is accepted (its buffer differs from the reference's by the reference's
    own noise), one that is off by more is not."""
    exact = evaluate(tmp_path, 0.0, BUFFER_TASK, BUFFER_CANDIDATE)
    assert exact["verdict"] == "accepted", exact["message"]
    wrong = evaluate(tmp_path, 0.001, BUFFER_TASK, BUFFER_CANDIDATE)
    assert wrong["verdict"] == "wrong_output" and "running" in wrong["message"], wrong["message"]


class Counter(torch.nn.Module):
    """Counts its calls in a buffer its output reads, beside a cancellation fp32 gets to ~1e-3."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x, y):
        with torch.no_grad():
            self.count.add_(1.0)
        return ((x * 1e4 + y) - x * 1e4) + self.count


def test_the_fp64_copy_reads_the_state_the_reference_read():
    """The fp64 copy that measures the reference's noise starts from the buffers the reference
    started from (and goes through the same calls): an fp64 copy left at another count would call
    a whole count of difference noise, and a candidate off by that much would pass."""
    from kforge_worker.reference import ReferenceWorker, Session

    torch.manual_seed(0)
    model = Counter()
    worker = ReferenceWorker("cpu")
    session = Session("counter.py", torch.device("cpu"), "fp32", model, sets=None)
    x, y = torch.randn(64, 256), torch.randn(64, 256)
    at_start = [model.count.clone()]
    for _ in range(3):
        model(x, y)
    before = [model.count.clone()]
    out = model(x, y)
    first = worker._noise(session, ["count"], [x, y], [out], (before, list, None))
    assert first is not None and first.buffers is None
    assert 0 < first.outputs[0].max().item() < 0.1  # the cancellation's noise, not a count
    again = worker._noise(session, ["count"], [x, y], [out], (at_start, lambda: [[x, y]] * 3, [model.count.clone()]))
    assert 0 < again.outputs[0].max().item() < 0.1
    assert again.buffers[0].item() == 0.0  # four calls counted on both sides
    stale = worker._noise(session, ["count"], [x, y], [out], (at_start, list, None))
    assert stale.outputs[0].max().item() >= 2.9  # started three calls behind: what the sync prevents


def test_a_model_with_4d_tensors_gets_the_channels_last_layouts_noise_too():
    """Where the model has 4-D tensors, the reference in channels-last layout (other convolution
    and batch-norm kernels, fp32 all the same) is a second honest computation: the noise of each
    output and buffer is the larger of the two computations' distances from fp64."""
    from kforge_worker.reference import ReferenceWorker, Session

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3), torch.nn.BatchNorm2d(16), torch.nn.ReLU())
    worker = ReferenceWorker("cpu")
    session = Session("conv.py", torch.device("cpu"), "fp32", model, sets=None)
    x = torch.randn(4, 8, 12, 12) * 3 + 1
    names = ["1.running_mean", "1.running_var"]
    start = [model.get_buffer(n).clone() for n in names]
    with torch.no_grad():
        out = model(x)
    after = [model.get_buffer(n).clone() for n in names]
    noise = worker._noise(session, names, [x], [out], (start, list, after))
    exact, other = session.model64, session.model_channels_last
    assert other is not None
    for n, name in enumerate(names):
        gap = (other.get_buffer(name).double() - exact.get_buffer(name)).abs().float()
        own = (after[n].double() - exact.get_buffer(name)).abs().float()
        assert torch.equal(noise.buffers[n], torch.maximum(own, gap))
    with torch.no_grad():
        exact_out = exact(x.double())
        other_out = other(x.contiguous(memory_format=torch.channels_last))
    assert torch.all(noise.outputs[0] >= (other_out.double() - exact_out).abs().float())
    assert torch.all(noise.outputs[0] >= (out.double() - exact_out).abs().float())

    flat = torch.nn.Linear(8, 4)  # no 4-D tensor: no second layout
    session = Session("linear.py", torch.device("cpu"), "fp32", flat, sets=None)
    y = torch.randn(5, 8)
    with torch.no_grad():
        worker._noise(session, [], [y], [flat(y)], ([], list, None))
    assert session.model_channels_last is None


RANDOM_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """The cancellation above plus noise drawn inside forward: exactly y + h."""

    def forward(self, x, y):
        h = torch.randn_like(x)
        return (x * 1e4 + y) - x * 1e4 + h


def get_inputs():
    return [torch.randn(64, 256), torch.randn(64, 256)]


def get_init_inputs():
    return []
'''

RANDOM_CANDIDATE = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, y_ptr, h_ptr, out_ptr, n, OFFSET: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    h = tl.load(h_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, (x * 1e4 - x * 1e4) + y + h + OFFSET, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        h = torch.randn_like(x)
        out = torch.empty_like(x)
        kernel[(triton.cdiv(x.numel(), 1024),)](x, y, h, out, x.numel(), OFFSET=OFFSET_VALUE, BLOCK=1024)
        return out
'''


def test_a_forward_that_draws_random_numbers_gets_the_noise_of_the_same_draws(tmp_path):
    """The fp64 copy of a forward that draws random numbers draws the same ones (in fp32, from the
    call's seed): a candidate more exact than the fp32 reference is accepted, a wrong one is not."""
    exact = evaluate(tmp_path, 0.0, RANDOM_TASK, RANDOM_CANDIDATE)
    assert exact["verdict"] == "accepted", exact["message"]
    assert exact["evidence"]["correctness"]["random_forward"] is True
    wrong = evaluate(tmp_path, 0.01, RANDOM_TASK, RANDOM_CANDIDATE)
    assert wrong["verdict"] == "wrong_output", wrong["message"]


class DrawsInFp64(torch.nn.Module):
    """Draws its noise in fp64 on purpose: the fp64 copy cannot draw what it draws in fp32."""

    def forward(self, x):
        return x + torch.randn(x.shape, dtype=torch.float64).float()


def test_the_noise_of_a_random_forward_counts_only_where_the_draws_are_the_same():
    from kforge_worker.random_draws import Draws
    from kforge_worker.reference import ReferenceWorker, Session

    torch.manual_seed(0)
    worker = ReferenceWorker("cpu")
    task = {}
    exec(compile(RANDOM_TASK, "random_task.py", "exec"), task)
    model = task["Model"]()
    session = Session("random.py", torch.device("cpu"), "fp32", model, sets=None)
    x, y = torch.randn(64, 256), torch.randn(64, 256)
    with Draws(7):
        out = model(x, y)
    noise = worker._noise(session, [], [x, y], [out], ([], list, None), seed=7)
    assert noise is not None and 0 < noise.outputs[0].max().item() < 0.1  # the cancellation, not the draws
    with Draws(7):  # what narrowing prevents: fp64 draws are other numbers
        other = session.model64(x.double(), y.double())
    assert (other - out.double()).abs().max().item() > 1.0
    assert worker._noise(session, [], [x, y], [out], ([], list, None), seed=8) is None  # not the call's seed

    fixed = DrawsInFp64()
    session = Session("fixed.py", torch.device("cpu"), "fp32", fixed, sets=None)
    with Draws(7):
        out = fixed(x)
    assert worker._noise(session, [], [x], [out], ([], list, None), seed=7) is None
    session = Session("counter.py", torch.device("cpu"), "fp32", Counter(), sets=None)
    with Draws(7):
        out = session.model(x, y)
    assert worker._noise(session, ["count"], [x, y], [out], ([session.model.count.clone()], list, None), seed=7) is None
