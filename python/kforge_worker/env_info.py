"""The environment fingerprint recorded with every evaluation."""
from __future__ import annotations

import platform
import socket
import sys
from typing import Any

import torch
import triton


def fingerprint(device: str) -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "device": device,
        "cuda_available": torch.cuda.is_available(),
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(torch.device(device))
        info.update(
            gpu=props.name,
            cuda=torch.version.cuda,
            compute_capability=f"{props.major}.{props.minor}",
            sm_count=props.multi_processor_count,
            gpu_count=torch.cuda.device_count(),
            memory_bytes=props.total_memory,
            l2_bytes=getattr(props, "L2_cache_size", 0),
            shared_memory_per_block_optin=getattr(props, "shared_memory_per_block_optin", 0),
            shared_memory_per_sm=getattr(props, "shared_memory_per_multiprocessor", 0),
            registers_per_sm=getattr(props, "regs_per_multiprocessor", 0),
            driver=_driver_version(),
        )
    else:
        info.update(gpu=None, cpu=platform.processor() or platform.machine(), cpu_count=torch.get_num_threads())
    info["interpreter"] = device == "cpu"
    info["executable"] = sys.executable
    return info


def _driver_version() -> str | None:
    try:
        import ctypes
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
        nvml.nvmlInit_v2()
        buffer = ctypes.create_string_buffer(96)
        nvml.nvmlSystemGetDriverVersion(buffer, 96)
        return buffer.value.decode()
    except Exception:
        return None
