"""The one timing method, shared by references and candidates.

Every timed call gets fresh inputs (the float inputs' rows rotated by a new shift, so values
memoised from an earlier call do not match) and a cold L2 (a buffer twice its size is written
between calls). On a GPU each call is bracketed by CUDA events on the current stream, and a short
spin kernel queued before the start event keeps the GPU busy while the host launches the call,
so the time is the GPU's and not the host's launch latency (which jitters by tens of
microseconds from one process to the next); the spin is sized from the launch time seen in
warm-up and capped at MAX_BACKLOG_MS, so at most that much host work can hide behind it. After the
end event the whole device is synchronized and the extra wait is recorded, so work hidden on
other streams shows up as late work; a host clock brackets the same interval, and an event time
longer than the host time means the events were tampered with. The clocks and events are the
ones captured when this module was imported, before any candidate code ran.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from .inputs import is_float_tensor, roll_rows_into

PERF_COUNTER = time.perf_counter
EVENT_CLASS = torch.cuda.Event
SYNCHRONIZE = torch.cuda.synchronize
SLEEP = torch.cuda._sleep
MAX_BACKLOG_MS = 0.2


@dataclass(frozen=True)
class TimingConfig:
    warmup_calls: int = 3
    warmup_ms: float = 100.0
    max_warmup_ms: float = 1000.0
    max_warmup_calls: int = 5000
    min_calls: int = 10
    max_calls: int = 100
    budget_ms: float = 200.0

    @staticmethod
    def from_json(data: dict[str, Any] | None) -> "TimingConfig":
        data = data or {}
        fields = TimingConfig.__dataclass_fields__
        return TimingConfig(**{k: type(getattr(TimingConfig, k))(v) for k, v in data.items() if k in fields})


class LocalHandOff:
    """The reference's stand-in for a candidate's hand-over: each timed call's outputs are copied
    into a buffer of this process, so that both loops do the same work between their calls and
    the time a candidate's process spends there can be compared with the reference's."""

    def __init__(self, device: torch.device):
        self.device = device
        self.buffers: list[torch.Tensor] = []

    def __call__(self, index: int, shift: int, output: Any) -> None:
        flat = [t for t in (output if isinstance(output, (list, tuple)) else [output]) if isinstance(t, torch.Tensor)]
        if len(self.buffers) != len(flat):
            self.buffers = [torch.empty_like(t) for t in flat]
        for buffer, tensor in zip(self.buffers, flat):
            buffer.copy_(tensor)
        if self.device.type == "cuda":
            SYNCHRONIZE()


def _flush_buffer(device: torch.device) -> torch.Tensor | None:
    if device.type != "cuda":
        return None
    l2_bytes = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 64 << 20) or (64 << 20)
    return torch.empty(2 * l2_bytes // 4, dtype=torch.float32, device=device)


class FreshInputs:
    """Working copies of a base input set, refreshed with a new row rotation before each call."""

    def __init__(self, base: list):
        self.base = [v.contiguous() if isinstance(v, torch.Tensor) else v for v in base]
        self.work = [v.clone() if is_float_tensor(v) else v for v in self.base]

    def refresh(self, shift: int) -> list:
        for source, destination in zip(self.base, self.work):
            if is_float_tensor(source) and source.numel() > 0:
                roll_rows_into(destination, source, shift)
        return self.work


def _spin_cycles_per_ms() -> float:
    """How many cycles of the spin kernel make a millisecond on this GPU at its current clock."""
    start, end = EVENT_CLASS(enable_timing=True), EVENT_CLASS(enable_timing=True)
    cycles = 1_000_000
    SLEEP(cycles // 10)  # the first launch loads the kernel
    start.record()
    SLEEP(cycles)
    end.record()
    end.synchronize()
    return cycles / max(start.elapsed_time(end), 1e-3)


def _time_one_cuda(fn: Callable[..., Any], args: list, flush: torch.Tensor | None,
                   backlog_cycles: int) -> tuple[Any, float, float, float, float]:
    """One call: (output, device ms, host ms from launch to the end event, ms the device was still
    busy after the end event, host ms spent launching)."""
    start, end = EVENT_CLASS(enable_timing=True), EVENT_CLASS(enable_timing=True)
    if flush is not None:
        flush.zero_()
    if backlog_cycles > 0:
        SLEEP(backlog_cycles)
    start.record()
    host_start = PERF_COUNTER()
    output = fn(*args)
    launched = PERF_COUNTER()
    end.record()
    end.synchronize()
    joined = PERF_COUNTER()
    SYNCHRONIZE()
    host_end = PERF_COUNTER()
    return (output, start.elapsed_time(end), (joined - host_start) * 1e3, (host_end - joined) * 1e3,
            (launched - host_start) * 1e3)


def _time_one_host(fn: Callable[..., Any], args: list) -> tuple[Any, float, float, float, float]:
    host_start = PERF_COUNTER()
    output = fn(*args)
    elapsed = (PERF_COUNTER() - host_start) * 1e3
    return output, elapsed, elapsed, 0.0, elapsed


def _warmed_up(times: list[float], elapsed_ms: float, config: TimingConfig) -> bool:
    """Warm-up ends once it has run for warmup_ms and the per-call time has settled (the GPU's
    clocks ramp up over tens to hundreds of milliseconds: timing earlier measures the ramp), or
    when max_warmup_ms or max_warmup_calls is spent."""
    if len(times) < config.warmup_calls:
        return False
    if elapsed_ms >= config.max_warmup_ms or len(times) >= config.max_warmup_calls:
        return True
    if elapsed_ms < config.warmup_ms:
        return False
    if len(times) < 10:
        return True
    recent, before = statistics.median(times[-5:]), statistics.median(times[-10:-5])
    return abs(recent - before) <= 0.03 * before


def time_calls(fn: Callable[..., Any], base_inputs: list, device: torch.device, config: TimingConfig,
               hand_off: Callable[[int, int, Any], None] | None = None,
               seed_for_shift: Callable[[int], int] | None = None) -> dict[str, Any]:
    """Warms up, then times calls of `fn` on fresh inputs. `hand_off(call, shift, output)`
    receives the outputs of every timed call as it ends (outside the timed interval), for the
    trusted worker to check the ones it secretly chose. With `seed_for_shift`, the global RNG is
    seeded before each call (outside the timed interval) with the seed of its inputs' shift, for
    a forward that draws random numbers."""
    fresh = FreshInputs(base_inputs)
    flush = _flush_buffer(device)
    on_gpu = device.type == "cuda"
    cycles_per_ms = _spin_cycles_per_ms() if on_gpu else 0.0
    backlog_cycles = 0

    def call(shift: int) -> tuple[Any, float, float, float, float]:
        args = fresh.refresh(shift)
        if seed_for_shift is not None:
            torch.manual_seed(seed_for_shift(shift))
        with torch.no_grad():
            return _time_one_cuda(fn, args, flush, backlog_cycles) if on_gpu else _time_one_host(fn, args)

    shift = 0
    warm_times: list[float] = []
    launch_times: list[float] = []
    warm_started = PERF_COUNTER()
    while not _warmed_up(warm_times, (PERF_COUNTER() - warm_started) * 1e3, config):
        shift += 1
        _, device_ms, _, _, launch_ms = call(shift)
        warm_times.append(device_ms)
        launch_times.append(launch_ms)
    if on_gpu:
        # Twice the usual launch time covers its jitter; never more than the cap.
        backlog_ms = min(2.0 * statistics.median(launch_times[-10:]), MAX_BACKLOG_MS)
        backlog_cycles = int(backlog_ms * cycles_per_ms)
    estimate = max(statistics.median(warm_times), 1e-3)
    count = int(min(config.max_calls, max(config.min_calls, config.budget_ms / estimate)))
    samples, host, late, launch, iterations = [], [], [], [], []
    for index in range(count):
        shift += 1
        started = PERF_COUNTER()
        output, device_ms, host_ms, late_ms, launch_ms = call(shift)
        samples.append(device_ms)
        host.append(host_ms)
        late.append(late_ms)
        launch.append(launch_ms)
        if hand_off is not None:
            hand_off(index, shift, output)
        del output
        iterations.append((PERF_COUNTER() - started) * 1e3)
    return {
        "method": "cuda_events" if on_gpu else "host_clock",
        "meaningful": on_gpu,
        "samples_ms": samples,
        "host_ms": host,
        "late_ms": late,
        "launch_ms": launch,
        "iteration_ms": iterations,  # whole iterations: fresh inputs, flush, the call, the hand-over
        "backlog_ms": backlog_cycles / cycles_per_ms if cycles_per_ms else 0.0,
        "warmup_ms": warm_times,
        "l2_flush_bytes": 0 if flush is None else flush.numel() * 4,
    }
