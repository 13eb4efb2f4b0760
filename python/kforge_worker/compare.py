"""Comparing a candidate's outputs with the reference's under a tolerance policy.

An element passes when |out - ref| <= rtol * |ref| + atol * scale, where scale is the root mean
square of the reference output: error is judged against the output's own magnitude, so an output
of tiny values cannot pass as zeros, and a zero reference is judged absolutely. NaN or Inf where
the reference is finite fails. Integer and boolean outputs must match exactly.

Where the reference's own fp32 result is inexact (cancellation: x - max(x) of values near 1e6),
the caller may pass its noise, |ref - ref computed in fp64| per element: the allowance then grows
by 2 * noise + spread * rms(noise), so a candidate is not failed for digits the reference itself
lacks. spread = 2 * sqrt(2 ln n) over n elements: another honest fp32 computation (a different
summation order) differs from the reference by noise of the same size, and the largest of n such
differences reaches about sqrt(2 ln n) times their rms, doubled for two independent errors. The
rms and n are taken over the elements that carry noise: elements both computations get exactly
(GELU far below zero, a ReLU's zeros) would otherwise dilute the rms of those that cancel. The
noise comes from the reference alone; a candidate cannot widen it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import torch

from .output_sample import Sampled, positions


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float  # relative to the reference output's root mean square

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Tolerance":
        return Tolerance(rtol=float(data["rtol"]), atol=float(data["atol"]))


def _index_of(flat_index: int, shape: torch.Size) -> list[int]:
    index = []
    for size in reversed(shape):
        index.append(flat_index % size if size else 0)
        flat_index //= max(size, 1)
    return list(reversed(index))


def tolerance_failure(report: dict[str, Any]) -> bool:
    """Failed on values alone: the shape, dtype and finiteness were right."""
    return (not report["passed"] and "tolerance_ratio" in report
            and not report.get("nonfinite_where_reference_finite"))


def compare_tensor(candidate: Any, reference: torch.Tensor, tolerance: Tolerance,
                   noise: torch.Tensor | None = None, keys: torch.Tensor | None = None) -> dict[str, Any]:
    """One output judged against the reference's. A Sampled candidate is judged at its sample's
    positions (drawn from `keys`), against the whole reference's scale."""
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
    where = None
    if sampled:
        if keys is None:
            return {**report, "passed": False, "problem": "a sampled output arrived where the whole output was due"}
        where = positions(keys, reference.numel(), reference.device)
        if values.numel() != where.numel():
            return {**report, "passed": False,
                    "problem": f"the sample holds {values.numel()} values; {where.numel()} were due"}
        report["sampled_elements"] = int(where.numel())
    view = reference.reshape(-1)[where] if sampled else reference
    out = values.to(reference.device).reshape(view.shape)

    def index_of(flat: int) -> list[int]:
        return _index_of(int(where[flat].item()) if where is not None else flat, reference.shape)

    if not reference.is_floating_point() and not reference.is_complex():
        mismatched = (out != view).reshape(-1)
        count = int(mismatched.sum().item())
        report.update(passed=count == 0, mismatched=count, max_abs_error=0.0 if count == 0 else None)
        if count:
            flat = int(mismatched.nonzero()[0].item())
            report.update(worst_index=index_of(flat), reference_value=view.reshape(-1)[flat].item(),
                          candidate_value=out.reshape(-1)[flat].item(),
                          problem=f"{count} of {view.numel()}{' sampled' if sampled else ''} elements differ")
        return report
    if reference.numel() == 0:
        return {**report, "passed": True, "max_abs_error": 0.0, "max_rel_error": 0.0, "tolerance_ratio": 0.0}
    whole = reference.double()
    finite_whole = torch.isfinite(whole)
    scale = whole[finite_whole].pow(2).mean().sqrt().item() if bool(finite_whole.any()) else 0.0
    if scale == 0.0:
        scale = 1.0
    ref = view.double() if sampled else whole
    got = out.double()
    finite = torch.isfinite(ref) if sampled else finite_whole
    bad_nonfinite = finite & ~torch.isfinite(got)
    same_nonfinite = ~finite & ((got == ref) | (torch.isnan(got) & torch.isnan(ref)))
    diff = (got - ref).abs()
    diff = torch.where(finite, diff, torch.where(same_nonfinite, torch.zeros_like(diff), torch.full_like(diff, float("inf"))))
    diff = torch.where(bad_nonfinite, torch.full_like(diff, float("inf")), diff)
    allowed = tolerance.rtol * ref.abs().nan_to_num(0.0, posinf=0.0, neginf=0.0) + tolerance.atol * scale
    if noise is not None:
        noise = noise.to(allowed.device, torch.float64).nan_to_num(0.0, posinf=0.0, neginf=0.0)
        noisy = noise[noise > 0]
        noise_rms = noisy.pow(2).mean().sqrt() if noisy.numel() else noise.new_zeros(())
        spread = max(1.0, 2.0 * math.sqrt(2.0 * math.log(max(noisy.numel(), 2))))
        allowed = allowed + 2.0 * (noise.reshape(-1)[where] if sampled else noise) + spread * noise_rms
        report["reference_noise_rms"] = noise_rms.item()
    ratio = diff / allowed
    worst = int(ratio.reshape(-1).argmax().item())
    worst_ratio = ratio.reshape(-1)[worst].item()
    report.update(
        passed=bool(worst_ratio <= 1.0),
        max_abs_error=diff[finite].max().item() if bool(finite.any()) else 0.0,
        max_rel_error=(diff[finite].max().item() / scale) if bool(finite.any()) else 0.0,
        tolerance_ratio=worst_ratio,
        reference_rms=scale,
        worst_index=index_of(worst),
        reference_value=ref.reshape(-1)[worst].item(),
        candidate_value=got.reshape(-1)[worst].item(),
        nonfinite_where_reference_finite=int(bad_nonfinite.sum().item()),
    )
    if not report["passed"]:
        if report["nonfinite_where_reference_finite"]:
            report["problem"] = (f"{report['nonfinite_where_reference_finite']} NaN/Inf elements where the "
                                 "reference is finite")
        else:
            report["problem"] = (f"error {report['max_abs_error']:.3g} at {report['worst_index']} is "
                                 f"{worst_ratio:.3g}x the tolerance (rtol {tolerance.rtol:g}, "
                                 f"atol {tolerance.atol:g} x output rms {scale:.3g})")
    return report


def compare_outputs(candidate: list, reference: list[torch.Tensor], tolerance: Tolerance,
                    noise: Callable[[], list | None] | None = None, keys: torch.Tensor | None = None) -> dict[str, Any]:
    """Per-output reports and an overall `passed`. `noise`, called only when an output fails on
    values alone, gives the reference's fp32 noise per output (None where unknown); those outputs
    are judged again with it."""
    if len(candidate) != len(reference):
        return {"passed": False, "outputs": [],
                "problem": f"forward returned {len(candidate)} outputs; the reference returns {len(reference)}"}
    reports = [compare_tensor(c, r, tolerance, keys=keys) for c, r in zip(candidate, reference)]
    if noise is not None and any(tolerance_failure(r) for r in reports):
        levels = noise()
        for index, report in enumerate(reports):
            if levels is not None and tolerance_failure(report) and levels[index] is not None:
                reports[index] = compare_tensor(candidate[index], reference[index], tolerance, levels[index], keys)
                reports[index]["reference_noise_considered"] = True
    return {"passed": all(r["passed"] for r in reports), "outputs": reports}


def bitwise_equal(a: list, b: list) -> bool:
    """Same length, shapes, dtypes and values (NaNs in the same places count as equal)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
            return False
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        x = x.to(y.device)
        if x.is_floating_point():
            if not torch.allclose(x, y, rtol=0.0, atol=0.0, equal_nan=True):
                return False
        elif not torch.equal(x, y):
            return False
    return True
