"""Tensors between processes as raw files: one file of contiguous bytes per tensor plus a small
JSON description (shape, dtype). The bytes are copied straight between the device and a shared
file mapping, with no pickling: loading cannot run code, and a large tensor costs one copy each
way instead of a serialization pass. Non-tensor values (numbers, None) travel in the description."""
from __future__ import annotations

import os
from typing import Any

import torch

_DTYPES = {str(d).replace("torch.", ""): d for d in (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
    torch.int32, torch.int64, torch.bool, torch.complex64)}


def save_tensor(folder: str, name: str, tensor: torch.Tensor) -> dict[str, Any]:
    dtype = str(tensor.dtype).replace("torch.", "")
    if dtype not in _DTYPES:
        raise ValueError(f"unsupported dtype {tensor.dtype}")
    path = os.path.join(folder, name)
    nbytes = tensor.numel() * tensor.element_size()
    meta = {"file": name, "shape": list(tensor.shape), "dtype": dtype}
    if nbytes == 0:
        open(path, "wb").close()
        return meta
    mapped = torch.from_file(path, shared=True, size=nbytes, dtype=torch.uint8)
    flat = tensor.detach().contiguous().reshape(-1)
    mapped.view(tensor.dtype).copy_(flat)
    del mapped
    os.chmod(path, 0o644)
    return meta


def load_tensor(folder: str, meta: dict[str, Any], device: torch.device | str = "cpu") -> torch.Tensor:
    dtype = _DTYPES[meta["dtype"]]
    shape = [int(s) for s in meta["shape"]]
    count = 1
    for size in shape:
        count *= size
    if count == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    path = os.path.join(folder, os.path.basename(meta["file"]))
    element = torch.empty(0, dtype=dtype).element_size()
    if os.path.getsize(path) != count * element:
        raise ValueError(f"{meta['file']} holds {os.path.getsize(path)} bytes; {shape} {meta['dtype']} needs {count * element}")
    mapped = torch.from_file(path, shared=False, size=count * element, dtype=torch.uint8)
    return mapped.view(dtype).reshape(shape).to(device, copy=True)


def save_values(folder: str, stem: str, values: list) -> list[dict[str, Any]]:
    """A list of tensors and plain values as files named <stem>_<index>.bin plus descriptions."""
    described = []
    for index, value in enumerate(values):
        if isinstance(value, torch.Tensor):
            described.append(save_tensor(folder, f"{stem}_{index}.bin", value))
        elif value is None or isinstance(value, (bool, int, float)):
            described.append({"value": value})
        else:
            raise ValueError(f"cannot pass a {type(value).__name__} between processes")
    return described


def load_values(folder: str, described: list[dict[str, Any]], device: torch.device | str = "cpu") -> list:
    return [load_tensor(folder, meta, device) if "file" in meta else meta.get("value") for meta in described]
