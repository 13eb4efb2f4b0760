"""Comparing a candidate's outputs with the reference's under a tolerance policy.

An element passes when |out - ref| <= rtol * |ref| + atol * scale, where scale is the root mean
square of the reference output: error is judged against the output's own magnitude, so an output
of tiny values cannot pass as zeros, and a zero reference is judged absolutely. NaN or Inf where
the reference is finite fails. Integer and boolean outputs must match exactly.

Where the reference's own fp32 result is inexact (cancellation: x - max(x) of values near 1e6),
the caller may pass its noise, |ref - ref computed in fp64| per element: the allowance then grows
by 2 * noise + rms(noise), so a candidate is not failed for digits the reference itself lacks. The
noise comes from the reference alone; a candidate cannot widen it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch


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
                   noise: torch.Tensor | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {"shape": list(reference.shape), "dtype": str(reference.dtype).replace("torch.", "")}
    if not isinstance(candidate, torch.Tensor):
        return {**report, "passed": False, "problem": f"output is a {type(candidate).__name__}, not a tensor"}
    if tuple(candidate.shape) != tuple(reference.shape):
        return {**report, "passed": False,
                "problem": f"shape {list(candidate.shape)} differs from the reference's {list(reference.shape)}"}
    if candidate.dtype != reference.dtype:
        return {**report, "passed": False,
                "problem": f"dtype {str(candidate.dtype).replace('torch.', '')} differs from the reference's {report['dtype']}"}
    out = candidate.to(reference.device)
    if not reference.is_floating_point() and not reference.is_complex():
        mismatched = (out != reference).reshape(-1)
        count = int(mismatched.sum().item())
        report.update(passed=count == 0, mismatched=count, max_abs_error=0.0 if count == 0 else None)
        if count:
            flat = int(mismatched.nonzero()[0].item())
            report.update(worst_index=_index_of(flat, reference.shape),
                          reference_value=reference.reshape(-1)[flat].item(),
                          candidate_value=out.reshape(-1)[flat].item(),
                          problem=f"{count} of {reference.numel()} elements differ")
        return report
    ref = reference.double()
    got = out.double()
    if ref.numel() == 0:
        return {**report, "passed": True, "max_abs_error": 0.0, "max_rel_error": 0.0, "tolerance_ratio": 0.0}
    finite = torch.isfinite(ref)
    scale = ref[finite].pow(2).mean().sqrt().item() if bool(finite.any()) else 0.0
    if scale == 0.0:
        scale = 1.0
    bad_nonfinite = finite & ~torch.isfinite(got)
    same_nonfinite = ~finite & ((got == ref) | (torch.isnan(got) & torch.isnan(ref)))
    diff = (got - ref).abs()
    diff = torch.where(finite, diff, torch.where(same_nonfinite, torch.zeros_like(diff), torch.full_like(diff, float("inf"))))
    diff = torch.where(bad_nonfinite, torch.full_like(diff, float("inf")), diff)
    allowed = tolerance.rtol * ref.abs().nan_to_num(0.0, posinf=0.0, neginf=0.0) + tolerance.atol * scale
    if noise is not None:
        noise = noise.to(allowed.device, torch.float64).nan_to_num(0.0, posinf=0.0, neginf=0.0)
        allowed = allowed + 2.0 * noise + noise.pow(2).mean().sqrt()
        report["reference_noise_rms"] = noise.pow(2).mean().sqrt().item()
    ratio = diff / allowed
    worst = int(ratio.reshape(-1).argmax().item())
    worst_ratio = ratio.reshape(-1)[worst].item()
    report.update(
        passed=bool(worst_ratio <= 1.0),
        max_abs_error=diff[finite].max().item() if bool(finite.any()) else 0.0,
        max_rel_error=(diff[finite].max().item() / scale) if bool(finite.any()) else 0.0,
        tolerance_ratio=worst_ratio,
        reference_rms=scale,
        worst_index=_index_of(worst, reference.shape),
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
