"""Snapshots of process-wide state a candidate must leave alone.

`GlobalState` covers torch's precision and execution flags; `Identities` covers the functions the
evaluator relies on (clocks, events, comparison and copy primitives). Both are captured before
the candidate is imported and compared after each step; a difference names what changed.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

import torch
import torch.nn.functional


def _global_state_readers() -> dict[str, Callable[[], Any]]:
    readers: dict[str, Callable[[], Any]] = {
        "torch.backends.cuda.matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
            lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
            lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "torch.backends.cudnn.allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
        "torch.backends.cudnn.benchmark": lambda: torch.backends.cudnn.benchmark,
        "torch.backends.cudnn.deterministic": lambda: torch.backends.cudnn.deterministic,
        "torch.backends.cudnn.enabled": lambda: torch.backends.cudnn.enabled,
        "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision,
        "torch.get_default_dtype()": torch.get_default_dtype,
        "torch.get_num_threads()": torch.get_num_threads,
        "torch.are_deterministic_algorithms_enabled()": torch.are_deterministic_algorithms_enabled,
        "torch.is_grad_enabled()": torch.is_grad_enabled,
        "torch.is_inference_mode_enabled()": torch.is_inference_mode_enabled,
        "torch.initial_seed()": torch.initial_seed,
        "torch.is_autocast_enabled()": lambda: torch.is_autocast_enabled("cuda") or torch.is_autocast_enabled("cpu"),
    }
    if hasattr(torch, "get_default_device"):
        readers["torch.get_default_device()"] = lambda: str(torch.get_default_device())
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        readers["torch.cuda.current_stream()"] = lambda: torch.cuda.current_stream().cuda_stream
        readers["torch.cuda.current_device()"] = torch.cuda.current_device
    return readers


class GlobalState:
    def __init__(self) -> None:
        self._readers = _global_state_readers()
        self._values = {name: self._read(reader) for name, reader in self._readers.items()}

    @staticmethod
    def _read(reader: Callable[[], Any]) -> Any:
        try:
            return repr(reader())
        except Exception as error:  # a reader that fails is itself a state to compare
            return f"<error {type(error).__name__}>"

    def reseeded(self, seed: int) -> None:
        """The harness seeded the global RNG (a forward that draws random numbers): the seed it set
        is the expected one from now on; any other seed is still a change."""
        self._values["torch.initial_seed()"] = repr(seed)

    def changes(self) -> list[str]:
        changed = []
        for name, reader in self._readers.items():
            now = self._read(reader)
            if now != self._values[name]:
                changed.append(f"{name} changed from {self._values[name]} to {now}")
        return changed


TIMER_NAMES = ("time.perf_counter", "time.perf_counter_ns", "time.time", "time.monotonic",
               "torch.cuda.Event", "torch.cuda.Event.record", "torch.cuda.Event.elapsed_time",
               "torch.cuda.Event.synchronize", "torch.cuda.synchronize")


def _identity_targets() -> dict[str, Callable[[], Any]]:
    return {
        "time.perf_counter": lambda: time.perf_counter,
        "time.perf_counter_ns": lambda: time.perf_counter_ns,
        "time.time": lambda: time.time,
        "time.monotonic": lambda: time.monotonic,
        "torch.cuda.Event": lambda: torch.cuda.Event,
        "torch.cuda.Event.record": lambda: torch.cuda.Event.record,
        "torch.cuda.Event.elapsed_time": lambda: torch.cuda.Event.elapsed_time,
        "torch.cuda.Event.synchronize": lambda: torch.cuda.Event.synchronize,
        "torch.cuda.synchronize": lambda: torch.cuda.synchronize,
        "torch.save": lambda: torch.save,
        "torch.load": lambda: torch.load,
        "torch.equal": lambda: torch.equal,
        "torch.allclose": lambda: torch.allclose,
        "torch.Tensor.clone": lambda: torch.Tensor.clone,
        "torch.Tensor.copy_": lambda: torch.Tensor.copy_,
        "torch.Tensor.data_ptr": lambda: torch.Tensor.data_ptr,
        "torch.Tensor.untyped_storage": lambda: torch.Tensor.untyped_storage,
        "torch.Tensor.__eq__": lambda: torch.Tensor.__eq__,
        "torch.Tensor.to": lambda: torch.Tensor.to,
        "torch.Tensor.cpu": lambda: torch.Tensor.cpu,
        "torch.nn.Module.__call__": lambda: torch.nn.Module.__call__,
        "torch.nn.Module._call_impl": lambda: torch.nn.Module._call_impl,
        "torch.nn.Module.load_state_dict": lambda: torch.nn.Module.load_state_dict,
        "torch.matmul": lambda: torch.matmul,
        "torch.nn.functional.linear": lambda: torch.nn.functional.linear,
        "threading.active_count": lambda: threading.active_count,
        "threading.Thread.start": lambda: threading.Thread.start,
    }


class Identities:
    def __init__(self) -> None:
        self._targets = _identity_targets()
        self._objects = {name: get() for name, get in self._targets.items()}

    def replaced(self) -> list[str]:
        changed = []
        for name, get in self._targets.items():
            try:
                now = get()
            except Exception:
                now = None
            if now is not self._objects[name]:
                changed.append(name)
        return changed
