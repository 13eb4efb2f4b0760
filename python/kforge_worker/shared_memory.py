"""Tensors shared between the trusted worker and a candidate's process without files.

An arena is one block of memory that both processes map: on a GPU, memory from the CUDA driver's
virtual memory API exported as a file descriptor; on the CPU, a memfd. The trusted worker
creates the arenas of an evaluation (the inputs it gives, room for the outputs it gets back) and
hands their descriptors over a Unix socket to the zygote, which passes them to the candidate's
process with its job. A tensor then moves between the processes as one device copy instead of a
trip through the file system, which for large tensors was most of an evaluation's time.

Descriptions name an arena and a byte range. Whatever a candidate's process describes is
untrusted: `Arena.view` checks the range and dtype before anything is read.
"""
from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import socket
import threading
from typing import Any, Callable, Iterator

import torch

ALIGNMENT = 512

_DTYPES = {str(d).replace("torch.", ""): d for d in (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
    torch.int32, torch.int64, torch.bool, torch.complex64)}


def aligned(nbytes: int) -> int:
    return (nbytes + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def dtype_named(name: str) -> torch.dtype:
    if name not in _DTYPES:
        raise ValueError(f"unsupported dtype {name!r}")
    return _DTYPES[name]


def dtype_name(dtype: torch.dtype) -> str:
    name = str(dtype).replace("torch.", "")
    dtype_named(name)
    return name


def as_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's values as a flat uint8 tensor (contiguous; empty for an empty tensor)."""
    if not tensor.numel():
        return torch.empty(0, dtype=torch.uint8, device=tensor.device)
    return tensor.detach().contiguous().reshape(-1).view(torch.uint8)


def described_nbytes(shape: list[int], dtype: torch.dtype) -> int:
    """Bytes a dense tensor of `shape` and `dtype` holds."""
    count = 1
    for size in shape:
        count *= size
    return count * torch.empty(0, dtype=dtype).element_size()


def arena_bytes(values: list) -> int:
    """Room the tensors among `values` take in an arena, each range aligned."""
    return sum(aligned(v.numel() * v.element_size()) for v in values if isinstance(v, torch.Tensor))


# -- the CUDA driver's virtual memory API, through ctypes -----------------------------------------
class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_ALLOCATION_PINNED = 1
_HANDLE_POSIX_FD = 1
_LOCATION_DEVICE = 1
_ACCESS_READ_WRITE = 3


class _Driver:
    """The few driver calls an arena needs; each failure raises with the call's name and code."""

    _instance: "_Driver | None" = None

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        u64, size = ctypes.c_uint64, ctypes.c_size_t
        signatures = {
            "cuMemGetAllocationGranularity": [ctypes.POINTER(size), ctypes.POINTER(_AllocationProp), ctypes.c_int],
            "cuMemCreate": [ctypes.POINTER(u64), size, ctypes.POINTER(_AllocationProp), u64],
            "cuMemAddressReserve": [ctypes.POINTER(u64), size, size, u64, u64],
            "cuMemMap": [u64, size, size, u64, u64],
            "cuMemSetAccess": [u64, size, ctypes.POINTER(_AccessDesc), size],
            "cuMemExportToShareableHandle": [ctypes.c_void_p, u64, ctypes.c_int, u64],
            "cuMemImportFromShareableHandle": [ctypes.POINTER(u64), ctypes.c_void_p, ctypes.c_int],
            "cuMemUnmap": [u64, size],
            "cuMemRelease": [u64],
            "cuMemAddressFree": [u64, size],
        }
        for name, arguments in signatures.items():
            function = getattr(self.lib, name)
            function.argtypes = arguments
            function.restype = ctypes.c_int

    @classmethod
    def get(cls) -> "_Driver":
        if cls._instance is None:
            cls._instance = _Driver()
        return cls._instance

    def call(self, name: str, *arguments: Any) -> None:
        code = getattr(self.lib, name)(*arguments)
        if code != 0:
            raise OSError(f"{name} failed with CUDA error {code}")


def _prop(device_index: int) -> _AllocationProp:
    prop = _AllocationProp()
    prop.type = _ALLOCATION_PINNED
    prop.requestedHandleTypes = _HANDLE_POSIX_FD
    prop.location = _Location(_LOCATION_DEVICE, device_index)
    return prop


class _CudaArray:
    """A device address range torch can wrap through the CUDA array interface."""

    def __init__(self, pointer: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (pointer, False),
                                         "version": 3, "strides": None}


class _CudaMapping:
    """Device memory mapped into this process from a generic allocation handle."""

    def __init__(self, device: torch.device, handle: int, nbytes: int):
        self.driver = _Driver.get()
        self.handle, self.nbytes = handle, nbytes
        index = device.index if device.index is not None else torch.cuda.current_device()
        pointer = ctypes.c_uint64()
        self.driver.call("cuMemAddressReserve", ctypes.byref(pointer), nbytes, 0, 0, 0)
        self.pointer = pointer.value
        try:
            self.driver.call("cuMemMap", self.pointer, nbytes, 0, handle, 0)
            access = _AccessDesc(_Location(_LOCATION_DEVICE, index), _ACCESS_READ_WRITE)
            self.driver.call("cuMemSetAccess", self.pointer, nbytes, ctypes.byref(access), 1)
        except OSError:
            self.driver.call("cuMemAddressFree", self.pointer, nbytes)
            raise
        self.tensor = torch.as_tensor(_CudaArray(self.pointer, nbytes), device=device)

    def close(self) -> None:
        if self.pointer:
            torch.cuda.synchronize()
            self.tensor = None
            self.driver.call("cuMemUnmap", self.pointer, self.nbytes)
            self.driver.call("cuMemAddressFree", self.pointer, self.nbytes)
            self.driver.call("cuMemRelease", self.handle)
            self.pointer = 0


def _cuda_create(device: torch.device, nbytes: int) -> tuple[_CudaMapping, int, int]:
    driver = _Driver.get()
    torch.cuda.init()
    index = device.index if device.index is not None else torch.cuda.current_device()
    prop = _prop(index)
    granularity = ctypes.c_size_t()
    driver.call("cuMemGetAllocationGranularity", ctypes.byref(granularity), ctypes.byref(prop), 0)
    size = -(-nbytes // granularity.value) * granularity.value
    handle = ctypes.c_uint64()
    driver.call("cuMemCreate", ctypes.byref(handle), size, ctypes.byref(prop), 0)
    try:
        descriptor = ctypes.c_int(-1)
        driver.call("cuMemExportToShareableHandle", ctypes.byref(descriptor), handle.value, _HANDLE_POSIX_FD, 0)
        mapping = _CudaMapping(device, handle.value, size)
    except OSError:
        driver.call("cuMemRelease", handle.value)
        raise
    return mapping, descriptor.value, size


def _cuda_open(device: torch.device, descriptor: int, nbytes: int) -> _CudaMapping:
    driver = _Driver.get()
    handle = ctypes.c_uint64()
    driver.call("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(descriptor), _HANDLE_POSIX_FD)
    try:
        return _CudaMapping(device, handle.value, nbytes)
    except OSError:
        driver.call("cuMemRelease", handle.value)
        raise


class _HostMapping:
    """A memfd mapped into this process."""

    def __init__(self, descriptor: int, nbytes: int):
        self.memory = mmap.mmap(descriptor, nbytes)
        self.tensor = torch.frombuffer(self.memory, dtype=torch.uint8)

    def close(self) -> None:
        self.tensor = None  # the mapping goes when the last view of it does


class Arena:
    """One shared block of memory: tensors are byte ranges in it, handed out in order."""

    def __init__(self, name: str, device: torch.device, mapping: Any, descriptor: int, nbytes: int):
        self.name, self.device, self.mapping, self.descriptor, self.nbytes = name, device, mapping, descriptor, nbytes
        self.used = 0

    @staticmethod
    def create(name: str, device: torch.device, nbytes: int) -> "Arena":
        nbytes = max(aligned(nbytes), ALIGNMENT)
        if device.type == "cuda":
            mapping, descriptor, size = _cuda_create(device, nbytes)
            return Arena(name, device, mapping, descriptor, size)
        descriptor = os.memfd_create(f"kforge-{name}", os.MFD_CLOEXEC)
        os.ftruncate(descriptor, nbytes)
        return Arena(name, device, _HostMapping(descriptor, nbytes), descriptor, nbytes)

    @staticmethod
    def open(name: str, device: torch.device, descriptor: int, nbytes: int) -> "Arena":
        """Maps an arena another process created, from the descriptor it sent."""
        if device.type == "cuda":
            mapping = _cuda_open(device, descriptor, nbytes)
            os.close(descriptor)
            return Arena(name, device, mapping, -1, nbytes)
        if os.fstat(descriptor).st_size < nbytes:
            raise ValueError(f"shared arena {name} is smaller than announced")
        return Arena(name, device, _HostMapping(descriptor, nbytes), descriptor, nbytes)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "bytes": self.nbytes}

    def room_for(self, nbytes: int) -> bool:
        return self.used + aligned(nbytes) <= self.nbytes

    def rewind(self, offset: int) -> None:
        """Frees every range from `offset` on, to be handed out again (a reused slot)."""
        self.used = offset

    def put(self, tensor: torch.Tensor) -> dict[str, Any]:
        """Copies `tensor` into the next free range; returns its description."""
        raw = as_bytes(tensor)
        nbytes = raw.numel()
        if not self.room_for(nbytes):
            raise MemoryError(f"shared arena {self.name} is full")
        offset = self.used
        if nbytes:
            self.mapping.tensor[offset:offset + nbytes].copy_(raw, non_blocking=True)
        self.used += aligned(nbytes)
        return {"arena": self.name, "offset": offset, "shape": list(tensor.shape), "dtype": dtype_name(tensor.dtype)}

    def view(self, meta: dict[str, Any]) -> torch.Tensor:
        """The tensor a description names, as a view into the arena (checked: a description from
        another process may be anything)."""
        dtype = dtype_named(str(meta.get("dtype")))
        shape = [int(s) for s in meta.get("shape", [])]
        offset = int(meta.get("offset", -1))
        if any(s < 0 for s in shape) or offset < 0 or offset % ALIGNMENT:
            raise ValueError(f"malformed shared tensor description {meta}")
        nbytes = described_nbytes(shape, dtype)
        if offset + nbytes > self.nbytes:
            raise ValueError(f"shared tensor description {meta} lies outside arena {self.name}")
        return self.mapping.tensor[offset:offset + nbytes].view(dtype).reshape(shape)

    def synchronize(self) -> None:
        """Waits until every copy into the arena has landed, before another process reads it."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def close(self) -> None:
        self.mapping.close()
        if self.descriptor >= 0:
            os.close(self.descriptor)
            self.descriptor = -1


def put_values(arena: Arena, values: list) -> list[dict[str, Any]]:
    """A list of tensors and plain values as descriptions: tensors copied into `arena`, numbers
    (and None) in the description itself."""
    described = []
    for value in values:
        if isinstance(value, torch.Tensor):
            described.append(arena.put(value))
        elif value is None or isinstance(value, (bool, int, float)):
            described.append({"value": value})
        else:
            raise ValueError(f"cannot pass a {type(value).__name__} between processes")
    return described


def view_values(arena: Arena, described: list[dict[str, Any]]) -> list:
    """The values `put_values` described, tensors as views of the arena (checked)."""
    if not isinstance(described, list) or not all(isinstance(meta, dict) for meta in described):
        raise ValueError("malformed description of shared values")
    return [arena.view(meta) if "arena" in meta else meta.get("value") for meta in described]


# -- handing descriptors over ---------------------------------------------------------------------
@contextlib.contextmanager
def _socket_address(path: str) -> Iterator[str]:
    """`path` as a Unix socket address: itself, or where it is longer than an address may be (108
    bytes with the NUL: a deep workspace), the same file reached through a descriptor of its
    folder (/proc/self/fd/N/name), held while the address is in use."""
    if len(os.fsencode(path)) < 100:
        yield path
        return
    folder = os.open(os.path.dirname(path) or ".", os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{folder}/{os.path.basename(path)}"
    finally:
        os.close(folder)


class DescriptorOffer:
    """Serves a set of descriptors once, on a Unix socket only this user can reach, to a peer
    running as the same user (the zygote), then closes the socket and calls `served`."""

    def __init__(self, folder: str, descriptors: list[int], timeout_s: float = 600.0,
                 served: Callable[[], None] = lambda: None):
        self.path = os.path.join(folder, "arenas.sock")
        self.descriptors = descriptors
        self.served = served
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with _socket_address(self.path) as address:
            self.listener.bind(address)
        os.chmod(self.path, 0o600)
        self.listener.listen(1)
        self.listener.settimeout(timeout_s)
        self.thread = threading.Thread(target=self._serve, name="kforge-arena-offer", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            connection, _ = self.listener.accept()
        except OSError:
            return
        finally:
            self._close_listener()
        with connection:
            credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            uid = int.from_bytes(credentials[4:8], "little")
            if uid == os.geteuid():
                socket.send_fds(connection, [b"A"], self.descriptors)
                self.served()

    def _close_listener(self) -> None:
        self.listener.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def close(self) -> None:
        self._close_listener()


def fetch_descriptors(path: str, count: int, timeout_s: float = 30.0) -> list[int]:
    """The descriptors a DescriptorOffer serves at `path`."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(timeout_s)
        with _socket_address(path) as address:
            connection.connect(address)
        _, descriptors, _, _ = socket.recv_fds(connection, 1, count)
    if len(descriptors) != count:
        for descriptor in descriptors:
            os.close(descriptor)
        raise OSError(f"expected {count} shared arena descriptors, got {len(descriptors)}")
    return descriptors


def send_descriptors(channel: int, descriptors: list[int]) -> None:
    """Passes descriptors to the process at the other end of a Unix socket pair."""
    with socket.socket(fileno=os.dup(channel)) as sock:
        socket.send_fds(sock, [b"A"], descriptors)


def receive_descriptors(channel: int, count: int) -> list[int]:
    with socket.socket(fileno=os.dup(channel)) as sock:
        _, descriptors, _, _ = socket.recv_fds(sock, 1, count)
    if len(descriptors) != count:
        raise OSError(f"expected {count} shared arena descriptors, got {len(descriptors)}")
    return descriptors
