"""An evaluation's memory: what the task needs, measured, against what the machine has free.

An evaluation streams (evaluation_session.py): the trusted worker keeps its model and one call's
reference outputs; a candidate reads each call's inputs as views of one shared input slot and
hands its outputs back through one shared output slot; comparisons go chunk by chunk. With P the
parameters and buffers, I one input set, O one call's outputs and S the reference forward's
transient peak, all measured on the task itself, the peak is about

    trusted worker   P + I + max(I, O + S)   (seed0 and a set derived from it, or a set and
                                              its reference outputs)
    shared arenas    P + I + O        (the state, the input slot, the output slot)
    candidate        P + I + 2·O + S  (timing's rotating copy of the inputs, its outputs and the
                                       previous call's, and a transient like the reference's)

so a task eager PyTorch can run twice side by side gets a real verdict on any device that holds
about one more copy of its state, inputs and outputs. A task that cannot fit is refused with the
numbers before any candidate runs. Thread-safe: plain data and pure functions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from . import isolation

GIB = 1 << 30
# Held back from the candidate for the CUDA contexts of the waiting spare processes and the
# allocators' rounding.
DEVICE_RESERVE_BYTES = 2 * GIB
HOST_RESERVE_BYTES = GIB // 2


@dataclass(frozen=True)
class Footprint:
    """One call of the task's reference, measured."""
    parameter_bytes: int
    input_bytes: int   # the larger of the task's inputs and the second size's
    output_bytes: int  # likewise for outputs, plus the buffers the forward mutates
    transient_bytes: int  # the forward's peak beyond its inputs, outputs and parameters

    def to_json(self) -> dict[str, int]:
        return {"parameter_bytes": self.parameter_bytes, "input_bytes": self.input_bytes,
                "output_bytes": self.output_bytes, "transient_bytes": self.transient_bytes}


@dataclass(frozen=True)
class MemoryPlan:
    footprint: Footprint
    free_bytes: int      # free on the device when the evaluation was planned
    total_bytes: int
    trusted_bytes: int   # the trusted worker's peak
    arena_bytes: int     # the shared arenas
    candidate_bytes: int  # what a candidate like the reference needs
    candidate_limit_bytes: int  # the most the candidate's allocator may take

    @property
    def needed_bytes(self) -> int:
        return self.trusted_bytes + self.arena_bytes + self.candidate_bytes

    @property
    def fits(self) -> bool:
        return self.needed_bytes <= self.free_bytes

    def to_json(self) -> dict[str, Any]:
        return {**self.footprint.to_json(), "free_bytes": self.free_bytes, "total_bytes": self.total_bytes,
                "trusted_bytes": self.trusted_bytes, "arena_bytes": self.arena_bytes,
                "candidate_bytes": self.candidate_bytes, "needed_bytes": self.needed_bytes,
                "candidate_limit_bytes": self.candidate_limit_bytes, "fits": self.fits}

    def refusal(self, device_type: str) -> str:
        memory = "device memory" if device_type == "cuda" else "host memory"
        return (f"the task needs about {self.needed_bytes / GIB:.1f} GiB of {memory} to be judged "
                f"(state {self.footprint.parameter_bytes / GIB:.2f}, inputs {self.footprint.input_bytes / GIB:.2f}, "
                f"outputs {self.footprint.output_bytes / GIB:.2f}, reference transient "
                f"{self.footprint.transient_bytes / GIB:.2f} GiB, held by the trusted worker, the shared slots and "
                f"the candidate at once); {self.free_bytes / GIB:.1f} GiB are free")


def plan_evaluation(footprint: Footprint, free_bytes: int, total_bytes: int, reserve_bytes: int) -> MemoryPlan:
    """The plan for an evaluation whose trusted worker already holds the reference's state (which
    `free_bytes` excludes)."""
    p, i, o, s = (footprint.parameter_bytes, footprint.input_bytes, footprint.output_bytes,
                  footprint.transient_bytes)
    trusted = i + max(i, o + s)  # seed0 and a set derived from it, or a set and its reference call
    arenas = p + i + o
    candidate = p + i + 2 * o + s
    # The candidate may take what is free beyond the trusted worker's needs, the arenas and a reserve,
    # but never less than a candidate like the reference needs.
    limit = max(candidate, free_bytes - trusted - arenas - reserve_bytes)
    return MemoryPlan(footprint, free_bytes, total_bytes, trusted, arenas, candidate + reserve_bytes, limit)


def free_memory(device: torch.device) -> tuple[int, int]:
    """(free, total) bytes: the device's, or the host's available memory on the CPU."""
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        return int(free), int(total)
    return _host_memory()


def reserve_for(device: torch.device) -> int:
    return DEVICE_RESERVE_BYTES if device.type == "cuda" else HOST_RESERVE_BYTES


def _host_memory() -> tuple[int, int]:
    fields: dict[str, int] = {}
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                name, _, rest = line.partition(":")
                fields[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return 0, 0
    return fields.get("MemAvailable", 0), fields.get("MemTotal", 0)


class PeakMeter:
    """The device memory a block of work allocates at its peak beyond what was allocated before
    it (0 on the CPU, where the reference's transient is not measured)."""

    def __init__(self, device: torch.device):
        self.device = device
        self.peak_bytes = 0

    def __enter__(self) -> "PeakMeter":
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self.before = torch.cuda.memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self.peak_bytes = max(0, torch.cuda.max_memory_allocated(self.device) - self.before)


def process_memory(device: torch.device) -> dict[str, int]:
    """This process's memory now: resident host bytes, and on a GPU the allocator's bytes."""
    report = {"rss_bytes": rss_bytes()}
    if device.type == "cuda":
        report["allocated_bytes"] = int(torch.cuda.memory_allocated(device))
        report["reserved_bytes"] = int(torch.cuda.memory_reserved(device))
    return report


def release_cached(device: torch.device) -> None:
    """Gives the device the blocks this process's allocator caches but no tensor uses."""
    if device.type == "cuda":
        torch.cuda.empty_cache()


def start_reserved_peak(device: torch.device) -> None:
    """Starts measuring this process's peak of device memory held by its allocator."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def reserved_peak(device: torch.device) -> int:
    """The most device memory this process's allocator held since start_reserved_peak (0 on the CPU)."""
    return int(torch.cuda.max_memory_reserved(device)) if device.type == "cuda" else 0


def rss_bytes(pid: int | str = "self") -> int:
    """A process's resident memory in bytes (0 when it cannot be read: the process is gone)."""
    try:
        return int(isolation.status_fields(pid, ("VmRSS",)).get("VmRSS", "0 kB").split()[0]) * 1024
    except (ValueError, IndexError):
        return 0
