"""Comparing a candidate's outputs with the reference's under a tolerance policy.

An element passes when |out - ref| <= rtol * |ref| + atol * scale, where scale is the root mean
square of the reference output: error is judged against the output's own magnitude, so an output
of tiny values cannot pass as zeros, and a zero reference is judged absolutely. NaN or Inf where
the reference is finite fails. Integer and boolean outputs must match exactly.

Where the reference's own fp32 result is inexact (cancellation: x - max(x) of values near 1e6),
the caller may pass its noise, |ref - ref computed in fp64| per element (reference.py: for a model
with 4-D tensors, the larger of that and the same distance of the reference run in channels-last
layout, another honest fp32 computation; for the buffers a forward mutates, both taken through
the same calls as the reference): the allowance then grows
by 2 * noise + spread * rms(noise), so a candidate is not failed for digits the reference itself
lacks. spread = 2 * sqrt(2 ln n) over n elements: another honest fp32 computation (a different
summation order) differs from the reference by noise of the same size, and the largest of n such
differences reaches about sqrt(2 ln n) times their rms, doubled for two independent errors. The
rms and n are taken over the elements that carry noise: elements both computations get exactly
(GELU far below zero, a ReLU's zeros) would otherwise dilute the rms of those that cancel. The
noise comes from the reference alone; a candidate cannot widen it.

Everything is computed in chunks of CHUNK_ELEMENTS on the tensors' device, so judging a
several-gigabyte output needs a few hundred megabytes beside it, not several copies of it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from .output_sample import Sampled

CHUNK_ELEMENTS = 1 << 24


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float  # relative to the reference output's root mean square

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Tolerance":
        return Tolerance(rtol=float(data["rtol"]), atol=float(data["atol"]))


@dataclass
class Noise:
    """The reference's own rounding noise on one call, |fp32 - fp64| per output and per buffer its
    forward mutates (None where unknown: not floating point, another shape, buffers not asked)."""
    outputs: list[torch.Tensor | None]
    buffers: list[torch.Tensor | None] | None = None


def rounding_noise(fp32: torch.Tensor, fp64: Any) -> torch.Tensor | None:
    """|fp32 - fp64| per element, for a floating fp32 value and an fp64 one of its shape."""
    if not (isinstance(fp64, torch.Tensor) and fp32.is_floating_point() and fp64.shape == fp32.shape):
        return None
    return (fp32.double() - fp64.double()).abs().float()


def _index_of(flat_index: int, shape: torch.Size | list[int]) -> list[int]:
    index = []
    for size in reversed(list(shape)):
        index.append(flat_index % size if size else 0)
        flat_index //= max(size, 1)
    return list(reversed(index))


def _spans(count: int) -> Iterator[tuple[int, int]]:
    for start in range(0, count, CHUNK_ELEMENTS):
        yield start, min(count, start + CHUNK_ELEMENTS)


def tolerance_failure(report: dict[str, Any]) -> bool:
    """Failed on values alone: the shape, dtype and finiteness were right."""
    return (not report["passed"] and "tolerance_ratio" in report
            and not report.get("nonfinite_where_reference_finite"))


def reference_scale(reference: torch.Tensor) -> float:
    """The root mean square of the reference's finite values (1 when there are none or all are 0)."""
    flat = reference.reshape(-1)
    squares = torch.zeros((), dtype=torch.float64, device=flat.device)
    finite = torch.zeros((), dtype=torch.int64, device=flat.device)
    for start, end in _spans(flat.numel()):
        chunk = flat[start:end].double()
        ok = torch.isfinite(chunk)
        squares += torch.where(ok, chunk, 0.0).pow(2).sum()
        finite += ok.sum()
    count = int(finite.item())
    scale = math.sqrt(squares.item() / count) if count else 0.0
    return scale if scale > 0.0 else 1.0


def noise_level(noise: torch.Tensor) -> tuple[float, int]:
    """(rms, count) of the reference noise over the elements that carry any."""
    flat = noise.reshape(-1)
    squares = torch.zeros((), dtype=torch.float64, device=flat.device)
    noisy = torch.zeros((), dtype=torch.int64, device=flat.device)
    for start, end in _spans(flat.numel()):
        chunk = flat[start:end].double().nan_to_num(0.0, posinf=0.0, neginf=0.0)
        squares += chunk.pow(2).sum()
        noisy += (chunk > 0).sum()
    count = int(noisy.item())
    return (math.sqrt(squares.item() / count) if count else 0.0), count


class _Worst:
    """The largest ratio seen so far and where, kept on the device until the end."""

    def __init__(self, device: torch.device):
        self.ratios: list[torch.Tensor] = []
        self.indices: list[torch.Tensor] = []
        self.max_abs: list[torch.Tensor] = []
        self.bad_nonfinite = torch.zeros((), dtype=torch.int64, device=device)

    def add(self, ratio: torch.Tensor, abs_error: torch.Tensor, offset: int) -> None:
        position = ratio.argmax()
        self.ratios.append(ratio[position])
        self.indices.append(position + offset)
        self.max_abs.append(abs_error.max())

    def result(self) -> tuple[float, int, float, int]:
        ratios = torch.stack(self.ratios)
        best = int(ratios.argmax().item())
        return (ratios[best].item(), int(self.indices[best].item()), torch.stack(self.max_abs).max().item(),
                int(self.bad_nonfinite.item()))


_MAX_PATTERN_LINES = 1 << 22  # rows or columns tracked one by one; beyond, only their range


class _Pattern:
    """Where the elements beyond the tolerance are, over the output viewed as rows x columns (the
    last dimension is the columns): how many, and which rows and columns hold any."""

    def __init__(self, shape: list[int], device: torch.device):
        self.columns = shape[-1] if shape else 1
        self.rows = max(1, math.prod(shape) // max(self.columns, 1)) if shape else 1
        self.bad = torch.zeros((), dtype=torch.int64, device=device)
        self.bad_rows = torch.zeros(self.rows, dtype=torch.bool, device=device) if self.rows <= _MAX_PATTERN_LINES else None
        self.bad_columns = (torch.zeros(self.columns, dtype=torch.bool, device=device)
                            if self.columns <= _MAX_PATTERN_LINES else None)

    def add(self, bad: torch.Tensor, positions: torch.Tensor) -> None:
        self.bad += bad.sum()
        where = positions[bad]
        if self.bad_rows is not None:
            self.bad_rows[where // self.columns] = True
        if self.bad_columns is not None:
            self.bad_columns[where % self.columns] = True

    @staticmethod
    def _lines(marks: torch.Tensor | None, total: int, name: str) -> dict[str, Any] | None:
        if marks is None or total <= 1:
            return None
        indices = marks.nonzero().flatten()
        if indices.numel() == 0:
            return None
        first, last, count = int(indices[0].item()), int(indices[-1].item()), int(indices.numel())
        lines = {"count": count, "of": total, "first": first, "last": last}
        if count == total:
            lines["words"] = f"every {name}"
        elif count == 1:
            lines["words"] = f"{name} {first} only"
        elif count == last - first + 1 and last == total - 1:
            lines["words"] = f"every {name} from {first} on (the tail), and no other"
        elif count == last - first + 1:
            lines["words"] = f"{name}s {first} to {last} only"
        else:
            lines["words"] = f"{count} of {total} {name}s, from {first} to {last}"
        return lines

    def result(self, checked: int) -> dict[str, Any]:
        pattern: dict[str, Any] = {"bad_elements": int(self.bad.item()), "checked_elements": checked}
        for key, marks, total, name in (("rows", self.bad_rows, self.rows, "row"),
                                        ("columns", self.bad_columns, self.columns, "column")):
            lines = self._lines(marks, total, name)
            if lines is not None:
                pattern[key] = lines
        return pattern


def _judge_floats(got_of: Callable[[int, int], torch.Tensor], ref_of: Callable[[int, int], torch.Tensor],
                  count: int, scale: float, tolerance: Tolerance,
                  noise_of: Callable[[int, int], torch.Tensor] | None, noise_rms: float, spread: float,
                  device: torch.device, pattern: _Pattern | None = None,
                  position_of: Callable[[int, int], torch.Tensor] | None = None
                  ) -> tuple[float, int, float, int, float, float]:
    """(worst ratio, its flat position, max abs error, NaN/Inf where the reference is finite,
    the reference and candidate values there) over `count` elements given chunk by chunk; the
    elements beyond the tolerance go into `pattern` at `position_of(start, end)`."""
    worst = _Worst(device)
    for start, end in _spans(count):
        ref = ref_of(start, end).double()
        got = got_of(start, end).to(device).double()
        finite = torch.isfinite(ref)
        bad_nonfinite = finite & ~torch.isfinite(got)
        same_nonfinite = ~finite & ((got == ref) | (torch.isnan(got) & torch.isnan(ref)))
        diff = (got - ref).abs()
        diff = torch.where(finite & ~bad_nonfinite, diff,
                           torch.where(same_nonfinite, 0.0, float("inf")))
        allowed = tolerance.rtol * ref.abs().nan_to_num(0.0, posinf=0.0, neginf=0.0) + tolerance.atol * scale
        if noise_of is not None:
            noise = noise_of(start, end).to(device).double().nan_to_num(0.0, posinf=0.0, neginf=0.0)
            allowed = allowed + 2.0 * noise + spread * noise_rms
        ratio = diff / allowed
        worst.add(ratio, torch.where(finite & ~bad_nonfinite, diff, 0.0), start)
        worst.bad_nonfinite += bad_nonfinite.sum()
        if pattern is not None:
            pattern.add(ratio > 1.0, position_of(start, end))
    ratio, where, max_abs, bad = worst.result()
    return ratio, where, max_abs, bad, ref_of(where, where + 1).double().item(), \
        got_of(where, where + 1).double().item()


def compare_tensor(candidate: Any, reference: torch.Tensor, tolerance: Tolerance,
                   noise: torch.Tensor | None = None) -> dict[str, Any]:
    """One output judged against the reference's. A Sampled candidate is judged at its positions,
    against the whole reference's scale."""
    report: dict[str, Any] = {"shape": list(reference.shape), "dtype": str(reference.dtype).replace("torch.", "")}
    sampled = isinstance(candidate, Sampled)
    values = candidate.values if sampled else candidate
    if not isinstance(values, torch.Tensor):
        return {**report, "passed": False, "problem": f"output is a {type(candidate).__name__}, not a tensor"}
    shape = candidate.shape if sampled else list(values.shape)
    if tuple(shape) != tuple(reference.shape):
        return {**report, "passed": False,
                "problem": f"shape {list(shape)} differs from the reference's {list(reference.shape)}"}
    if values.dtype != reference.dtype:
        return {**report, "passed": False,
                "problem": f"dtype {str(values.dtype).replace('torch.', '')} differs from the reference's {report['dtype']}"}
    if values.is_meta:
        return {**report, "passed": False, "problem": "the output was not handed over"}
    flat_ref = reference.reshape(-1)
    flat_got = values.reshape(-1)
    if sampled:
        where = candidate.positions.to(reference.device)
        if flat_got.numel() != where.numel():
            return {**report, "passed": False,
                    "problem": f"the sample holds {flat_got.numel()} values; {where.numel()} were due"}
        report["sampled_elements"] = int(where.numel())
        count = where.numel()

        def ref_of(start: int, end: int) -> torch.Tensor:
            return flat_ref[where[start:end]]

        def index_of(flat: int) -> list[int]:
            return _index_of(int(where[flat].item()), reference.shape)
    else:
        count = flat_ref.numel()

        def ref_of(start: int, end: int) -> torch.Tensor:
            return flat_ref[start:end]

        def index_of(flat: int) -> list[int]:
            return _index_of(flat, reference.shape)

    def got_of(start: int, end: int) -> torch.Tensor:
        return flat_got[start:end].to(reference.device)

    if not reference.is_floating_point() and not reference.is_complex():
        return _judge_exact(report, got_of, ref_of, count, index_of, sampled, reference.device)
    if count == 0:
        return {**report, "passed": True, "max_abs_error": 0.0, "max_rel_error": 0.0, "tolerance_ratio": 0.0}
    scale = reference_scale(reference)
    noise_of, noise_rms, spread = None, 0.0, 0.0
    if noise is not None:
        flat_noise = noise.reshape(-1)
        noise_rms, noisy = noise_level(noise)
        spread = max(1.0, 2.0 * math.sqrt(2.0 * math.log(max(noisy, 2))))
        noise_of = (lambda s, e: flat_noise[where[s:e]]) if sampled else (lambda s, e: flat_noise[s:e])
        report["reference_noise_rms"] = noise_rms
    ratio, worst, max_abs, bad_nonfinite, reference_value, candidate_value = _judge_floats(
        got_of, ref_of, count, scale, tolerance, noise_of, noise_rms, spread, reference.device)
    report.update(
        passed=bool(ratio <= 1.0),
        max_abs_error=max_abs,
        max_rel_error=max_abs / scale,
        tolerance_ratio=ratio,
        reference_rms=scale,
        worst_index=index_of(worst),
        reference_value=reference_value,
        candidate_value=candidate_value,
        nonfinite_where_reference_finite=bad_nonfinite,
    )
    if not report["passed"]:
        # A second pass, only for a failing output: where the bad elements are.
        pattern = _Pattern(list(reference.shape), reference.device)
        if sampled:
            position_of = lambda s, e: where[s:e]  # noqa: E731
        else:
            position_of = lambda s, e: torch.arange(s, e, device=reference.device)  # noqa: E731
        _judge_floats(got_of, ref_of, count, scale, tolerance, noise_of, noise_rms, spread, reference.device,
                      pattern, position_of)
        report["pattern"] = pattern.result(count)
        if bad_nonfinite:
            report["problem"] = f"{bad_nonfinite} NaN/Inf elements where the reference is finite"
        else:
            report["problem"] = (f"error {max_abs:.3g} at {report['worst_index']} is {ratio:.3g}x the tolerance "
                                 f"(rtol {tolerance.rtol:g}, atol {tolerance.atol:g} x output rms {scale:.3g})")
            if noise is not None:
                # How far the reference itself is from fp64: where that reaches the output's own
                # size, the output is ill-conditioned on these inputs (a chaotic recurrence), and
                # honest fp32 computations disagree about as much as this one does.
                noise_max = float(noise.max().item()) if noise.numel() else 0.0
                report["reference_noise_max"] = noise_max
                report["problem"] += (f"; the reference itself strays from fp64 by up to {noise_max:.3g} "
                                      f"({noise_max / scale:.2g}x the output rms)")
    return report


def _judge_exact(report: dict[str, Any], got_of: Callable[[int, int], torch.Tensor],
                 ref_of: Callable[[int, int], torch.Tensor], count: int, index_of: Callable[[int], list[int]],
                 sampled: bool, device: torch.device) -> dict[str, Any]:
    mismatched = torch.zeros((), dtype=torch.int64, device=device)
    first = None
    for start, end in _spans(count):
        differ = (got_of(start, end) != ref_of(start, end))
        mismatched += differ.sum()
        if first is None and bool(differ.any()):
            first = start + int(differ.nonzero()[0].item())
    total = int(mismatched.item())
    report.update(passed=total == 0, mismatched=total, max_abs_error=0.0 if total == 0 else None)
    if first is not None:
        report.update(worst_index=index_of(first), reference_value=ref_of(first, first + 1).item(),
                      candidate_value=got_of(first, first + 1).item(),
                      problem=f"{total} of {count}{' sampled' if sampled else ''} elements differ")
    return report


def compare_outputs(candidate: list, reference: list[torch.Tensor], tolerance: Tolerance,
                    noise: Callable[[], list | None] | None = None) -> dict[str, Any]:
    """Per-output reports and an overall `passed`. `noise`, called only when an output fails on
    values alone, gives the reference's fp32 noise per output (None where unknown); those outputs
    are judged again with it."""
    if len(candidate) != len(reference):
        return {"passed": False, "outputs": [],
                "problem": f"forward returned {len(candidate)} outputs; the reference returns {len(reference)}"}
    reports = [compare_tensor(c, r, tolerance) for c, r in zip(candidate, reference)]
    if noise is not None and any(tolerance_failure(r) for r in reports):
        levels = noise()
        for index, report in enumerate(reports):
            if levels is not None and tolerance_failure(report) and levels[index] is not None:
                reports[index] = compare_tensor(candidate[index], reference[index], tolerance, levels[index])
                reports[index]["reference_noise_considered"] = True
    return {"passed": all(r["passed"] for r in reports), "outputs": reports}
