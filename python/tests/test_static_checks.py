"""Tests for kforge_worker.static_checks: each tripwire fires where it should, and honest kernels
trip none of them.

Expected findings are written next to the line that should produce them, as a trailing
`# expect: check[, check]` comment (inside CUDA sources: `// # expect: check`).
"""
import dataclasses
import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

from kforge_worker import static_checks  # noqa: E402
from kforge_worker.static_checks import CHECKS, Finding, analyze_candidate  # noqa: E402

# An honest kernel and launcher; a positive case adds one construct to it.
PREFIX = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def _launch(x):
    out = torch.empty_like(x)
    _copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out

'''

SUFFIX = '''

class ModelNew(nn.Module):
    def forward(self, x):
        return _launch(x)
'''


# PREFIX with the finding for a missing ModelNew marked on its first line.
PREFIX_NO_MODEL_NEW = PREFIX.replace("import torch\n", "import torch  # expect: missing_model_new\n", 1)


def candidate(body: str) -> str:
    """PREFIX + body, plus a plain ModelNew unless the body defines one."""
    return PREFIX + body + ("" if "class ModelNew" in body else SUFFIX)


def expected(source: str) -> list[tuple[str, int]]:
    marks = []
    for number, text in enumerate(source.splitlines(), start=1):
        if "# expect:" in text:
            for check in text.split("# expect:", 1)[1].split(","):
                marks.append((check.strip(), number))
    return sorted(marks, key=lambda mark: (mark[1], CHECKS.index(mark[0])))


def found(source: str) -> list[tuple[str, int]]:
    return [(f.check, f.line) for f in analyze_candidate(source)]


# (id, body appended to PREFIX); every check has at least two.
POSITIVE_BODIES = [
    # -- reference_model
    ("subclass_model", '''
class ModelNew(Model):  # expect: reference_model
    def forward(self, x):
        return _launch(x)
'''),
    ("import_from_reference", '''
from reference import Model  # expect: reference_model
'''),
    ("import_task_module", '''
import kbench_task_loader  # expect: reference_model
'''),
    ("from_main_import", '''
from __main__ import get_inputs  # expect: reference_model
'''),
    ("call_model_forward", '''
class ModelNew(nn.Module):
    def forward(self, x):
        return Model.forward(self, x)  # expect: reference_model
'''),
    ("super_of_model", '''
class ModelNew(nn.Module):
    def __init__(self):
        super(Model, self).__init__()  # expect: reference_model
'''),
    ("own_model_used_from_model_new", '''
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Model()  # expect: reference_model

    def forward(self, x):
        return _launch(self.inner(x))
'''),
    ("main_module_lookup", '''
import sys
reference = sys.modules["__main__"].Model  # expect: reference_model, frame_inspection
'''),
    ("getattr_model", '''
import importlib
task_module = importlib.import_module("kernelbench.level1")
model_class = getattr(task_module, "Model")  # expect: reference_model
'''),
    ("task_input_generators", '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.example = get_inputs()  # expect: reference_model
'''),
    ("model_from_globals", '''
reference_class = globals()["Model"]  # expect: reference_model
'''),
    # -- fallback_handler
    ("except_exception_torch_call", '''
class ModelNew(nn.Module):
    def forward(self, x):
        try:
            return _launch(x)
        except Exception:
            return torch.relu(x)  # expect: fallback_handler
'''),
    ("bare_except_functional", '''
import torch.nn.functional as F


class ModelNew(nn.Module):
    def forward(self, x):
        try:
            out = _launch(x)
        except:
            out = F.softmax(x, dim=-1)  # expect: fallback_handler
        return out
'''),
    ("tensor_method_in_handler", '''
class ModelNew(nn.Module):
    def forward(self, a, b):
        try:
            return _launch(a)
        except (RuntimeError, ValueError) as error:
            print(error)
            return a.matmul(b)  # expect: fallback_handler
'''),
    ("super_forward_in_handler", '''
class ModelNew(nn.Module):
    def forward(self, x):
        try:
            return _launch(x)
        except BaseException:
            return super().forward(x)  # expect: fallback_handler
'''),
    ("matmul_operator_in_handler", '''
class ModelNew(nn.Module):
    def forward(self, x):
        try:
            return _launch(x)
        except triton.runtime.errors.OutOfResources:
            return x @ self.weight  # expect: fallback_handler
'''),
    ("held_module_called_in_handler", '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(64, 64)

    def forward(self, x):
        try:
            return _launch(x)
        except Exception:
            return self.linear(x)  # expect: fallback_handler
'''),
    ("fallback_through_torch_only_helper", '''
def _reference_path(x):
    return torch.softmax(x, dim=-1)


class ModelNew(nn.Module):
    def forward(self, x):
        try:
            return _launch(x)
        except Exception:
            return _reference_path(x)  # expect: fallback_handler
'''),
    ("finally_returns_torch", '''
class ModelNew(nn.Module):
    def forward(self, x):
        try:
            out = _launch(x)
        finally:
            return torch.relu(x)  # expect: fallback_handler
'''),
    # -- process_exit
    ("sys_exit", '''
import sys


class ModelNew(nn.Module):
    def forward(self, x):
        sys.exit(0)  # expect: process_exit
'''),
    ("os_exit_and_kill", '''
import os
os._exit(0)  # expect: process_exit
os.kill(os.getppid(), 9)  # expect: process_exit
'''),
    ("signal_module", '''
import signal  # expect: process_exit
signal.signal(signal.SIGALRM, lambda *_: None)  # expect: process_exit
'''),
    ("builtin_exit_and_atexit", '''
import atexit  # expect: process_exit
atexit.register(print)  # expect: process_exit
quit()  # expect: process_exit
'''),
    ("raise_system_exit", '''
class ModelNew(nn.Module):
    def forward(self, x):
        raise SystemExit(0)  # expect: process_exit
'''),
    # -- frame_inspection
    ("inspect_frames", '''
import inspect  # expect: frame_inspection
caller = inspect.currentframe().f_back  # expect: frame_inspection
'''),
    ("sys_getframe", '''
import sys
outer = sys._getframe(2).f_locals  # expect: frame_inspection
'''),
    ("gc_objects", '''
import gc  # expect: frame_inspection
tensors = [o for o in gc.get_objects() if torch.is_tensor(o)]  # expect: frame_inspection
'''),
    ("ctypes_and_builtins", '''
import ctypes  # expect: frame_inspection
real_open = __builtins__["open"]  # expect: frame_inspection
'''),
    ("traceback_stack", '''
import traceback
stack = traceback.extract_stack()  # expect: frame_inspection
'''),
    ("getattr_getframe_and_eval", '''
import sys
frame = getattr(sys, "_getframe")(1)  # expect: frame_inspection
value = eval("1 + 1")  # expect: frame_inspection
module = __import__(chr(111) + chr(115))  # expect: frame_inspection
'''),
    ("computed_attribute_and_module_dict", '''
import os
run = getattr(os, "sys" + "tem")  # expect: frame_inspection
relu = torch.__dict__["relu"]  # expect: frame_inspection
'''),
    # -- monkeypatch
    ("patch_torch_function", '''
def fast_matmul(a, b):
    return _launch(a)


torch.matmul = fast_matmul  # expect: monkeypatch
'''),
    ("patch_tensor_dunder", '''
torch.Tensor.__matmul__ = lambda a, b: _launch(a)  # expect: monkeypatch
'''),
    ("patch_functional_alias_and_delete", '''
import torch.nn.functional as F
F.gelu = _launch  # expect: monkeypatch
del torch.nn.functional.silu  # expect: monkeypatch
'''),
    ("setattr_on_module", '''
setattr(torch, "mm", lambda a, b: _launch(a))  # expect: monkeypatch
'''),
    ("augassign_and_dynamic_import", '''
import math
math.pi += 1  # expect: monkeypatch
_t = __import__("torch")
_t.allclose = lambda *args, **kwargs: True  # expect: monkeypatch
'''),
    ("tensor_subclass_and_class_swap", '''
class Liar(torch.Tensor):  # expect: monkeypatch
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        out = _launch(x)
        out.__class__ = Liar  # expect: monkeypatch
        return out
'''),
    ("aten_override", '''
aten_lib = torch.library.Library("aten", "IMPL")  # expect: monkeypatch
'''),
    ("torch_function_mode", '''
class Spy(torch.overrides.TorchFunctionMode):  # expect: monkeypatch
    def __torch_function__(self, func, types, args=(), kwargs=None):  # expect: monkeypatch
        return func(*args, **(kwargs or {}))
'''),
    # -- global_state
    ("tf32_flags", '''
torch.backends.cuda.matmul.allow_tf32 = True  # expect: global_state
torch.backends.cudnn.benchmark = True  # expect: global_state
'''),
    ("precision_and_seed_calls", '''
import numpy as np
torch.set_float32_matmul_precision("high")  # expect: global_state
torch.manual_seed(0)  # expect: global_state
np.random.seed(0)  # expect: global_state
'''),
    ("grad_switch_statement", '''
class ModelNew(nn.Module):
    def forward(self, x):
        torch.set_grad_enabled(False)  # expect: global_state
        return _launch(x)
'''),
    ("setattr_backends_and_enable_call", '''
setattr(torch.backends.cudnn, "allow_tf32", True)  # expect: global_state
torch.backends.cuda.enable_flash_sdp(False)  # expect: global_state
torch.cuda.set_device(1)  # expect: global_state
'''),
    # -- threads
    ("threading_import", '''
import threading  # expect: threads
from concurrent.futures import ThreadPoolExecutor  # expect: threads
'''),
    ("side_stream", '''
class ModelNew(nn.Module):
    def forward(self, x):
        side = torch.cuda.Stream()  # expect: threads
        with torch.cuda.stream(side):  # expect: threads
            return _launch(x)
'''),
    ("cuda_graph_on_side_stream", '''
class ModelNew(nn.Module):
    def forward(self, x):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=torch.cuda.Stream()):  # expect: threads
            out = _launch(x)
        graph.replay()
        return out
'''),
    ("graphed_callables", '''
from torch.cuda import make_graphed_callables  # expect: threads
'''),
    # -- subprocess
    ("subprocess_run", '''
import subprocess  # expect: subprocess
subprocess.run(["nvidia-smi"])  # expect: subprocess
'''),
    ("os_system_and_rmtree", '''
import os
import shutil
os.system("nvidia-smi")  # expect: subprocess
shutil.rmtree("/tmp/kforge")  # expect: subprocess
os.execv("/bin/sh", ["sh"])  # expect: subprocess
'''),
    ("network", '''
import urllib.request  # expect: subprocess
import socket  # expect: subprocess
'''),
    # -- timer
    ("time_module", '''
import time  # expect: timer


class ModelNew(nn.Module):
    def forward(self, x):
        start = time.perf_counter()  # expect: timer
        return _launch(x)
'''),
    ("cuda_events", '''
class ModelNew(nn.Module):
    def forward(self, x):
        start = torch.cuda.Event(enable_timing=True)  # expect: timer
        out = _launch(x)
        self.last_ms = start.elapsed_time(self.stop)  # expect: timer
        return out
'''),
    ("bench_and_profiler", '''
from triton.testing import do_bench  # expect: timer
with torch.profiler.profile() as prof:  # expect: timer
    pass
'''),
    ("ptx_globaltimer", '''
@triton.jit
def _stamp(out_ptr):
    t = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)  # expect: timer
    tl.store(out_ptr, t)
'''),
    # -- file_io
    ("open_for_write", '''
with open("/tmp/leak.bin", "wb") as sink:  # expect: file_io
    sink.write(b"x")
'''),
    ("open_for_read_and_torch_load", '''
expected_text = open("expected.txt").read()  # expect: file_io
cached = torch.load("expected_output.pt")  # expect: file_io
'''),
    ("save_pickle_numpy", '''
import pickle
import numpy as np
torch.save(torch.zeros(1), "out.pt")  # expect: file_io
table = pickle.loads(b"")  # expect: file_io
ref = np.load("ref.npy")  # expect: file_io
'''),
    ("pathlib_and_os", '''
import os
from pathlib import Path
Path("out.txt").write_text("x")  # expect: file_io
os.remove("out.txt")  # expect: file_io
'''),
    # -- CUDA C++ sources
    ("cuda_source_side_stream_and_exit", '''
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <thread>  // # expect: threads
torch::Tensor run(torch::Tensor x) {
    cudaStream_t side;
    cudaStreamCreate(&side);  // # expect: threads
    if (!x.is_cuda()) exit(1);  // # expect: process_exit
    return x;
}
"""
ext = load_inline(name="side", cpp_sources="", cuda_sources=CUDA_SRC, functions=["run"])
'''),
    ("cuda_source_clock_file_python", '''
from torch.utils.cpp_extension import load_inline

CUDA_SRC = """
#include <torch/extension.h>
__global__ void k(long long* t) { t[0] = clock64(); }  // # expect: timer
torch::Tensor run(torch::Tensor x) {
    std::ofstream dump("/tmp/x.bin");  // # expect: file_io
    auto torch_mod = py::module_::import("torch");  // # expect: frame_inspection
    return x;
}
"""
ext = load_inline(name="clock", cpp_sources="", cuda_sources=CUDA_SRC, functions=["run"])
'''),
]

# Full sources, for the checks about the file as a whole (reported at line 1).
POSITIVE_FILES = [
    ("no_kernel_plain_torch", '''import torch  # expect: no_kernel
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
'''),
    ("no_kernel_triton_helpers_only", '''import torch  # expect: no_kernel
import torch.nn as nn
import triton


@torch.jit.script
def scaled(x: torch.Tensor) -> torch.Tensor:
    return x * 2.0


class ModelNew(nn.Module):
    def forward(self, x):
        blocks = triton.cdiv(x.numel(), 1024)
        return scaled(x)
'''),
    ("missing_model_new_misnamed", PREFIX_NO_MODEL_NEW + '''

class ModelNewFast(nn.Module):
    def forward(self, x):
        return _launch(x)
'''),
    ("missing_model_new_in_function", PREFIX_NO_MODEL_NEW + '''

def build():
    class ModelNew(nn.Module):
        def forward(self, x):
            return _launch(x)
    return ModelNew
'''),
    ("empty_file", "# expect: no_kernel, missing_model_new\n"),
]

CASES = [(name, candidate(body)) for name, body in POSITIVE_BODIES] + POSITIVE_FILES


@pytest.mark.parametrize("source", [source for _, source in CASES], ids=[name for name, _ in CASES])
def test_tripwire_fires_at_marked_lines(source):
    assert found(source) == expected(source)


def test_every_check_has_at_least_two_positive_cases():
    counts = {check: 0 for check in CHECKS}
    for _, source in CASES:
        for check in {check for check, _ in expected(source)}:
            counts[check] += 1
    assert all(count >= 2 for count in counts.values()), counts


# Constructs near a tripwire that honest code uses: no findings.
NEGATIVE_BODIES = [
    ("own_model_class_unused", '''
class Model(nn.Module):
    """Kept for documentation only."""
'''),
    ("import_error_handler_may_use_torch", '''
try:
    from triton.language.extra.cuda import libdevice
except ImportError:
    libdevice = None
    _fallback_eps = torch.finfo(torch.float32).eps
'''),
    ("handler_allocates_and_reraises", '''
_scratch = {}


def scratch(n, device):
    try:
        return _scratch[(n, device)]
    except KeyError:
        buffer = torch.empty(n, device=device)
        _scratch[(n, device)] = buffer
        return buffer


def checked(x):
    try:
        return _launch(x)
    except Exception as error:
        torch.cuda.synchronize()
        raise RuntimeError(f"kernel failed for {tuple(x.shape)}: {torch.cuda.get_device_name()}") from error
'''),
    ("handler_logs_and_retries", '''
import logging
import warnings

logger = logging.getLogger(__name__)


def launch_with_retry(x):
    for block in (1024, 256):
        try:
            out = torch.empty_like(x)
            _copy_kernel[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), BLOCK=block)
            return out
        except triton.runtime.errors.OutOfResources as error:
            logger.log(logging.INFO, "retrying with a smaller block: %s", error)
            warnings.warn("smaller block")
    raise RuntimeError("no block size fits")
'''),
    ("grad_context_managers_and_env", '''
import os
os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"
os.environ.setdefault("TRITON_CACHE_DIR", "/tmp/triton")
torch.set_printoptions(precision=4)
tf32_allowed = torch.backends.cuda.matmul.allow_tf32


class ModelNew(nn.Module):
    cache = {}

    def forward(self, x):
        ModelNew.cache["last"] = x.shape
        with torch.no_grad(), torch.set_grad_enabled(False):
            return _launch(x)
'''),
    ("retry_handler_calls_kernel_helper", '''
class ModelNew(nn.Module):
    def _launch_small(self, x):
        x = x.contiguous().view(-1)
        out = torch.empty_like(x)
        _copy_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), BLOCK=128)
        return out

    def forward(self, x):
        try:
            return _launch(x)
        except triton.runtime.errors.OutOfResources:
            return self._launch_small(x)
        finally:
            torch.cuda.nvtx.range_pop()
'''),
    ("computed_torch_attribute_and_own_custom_op", '''
DTYPE_NAME = "float16"
half = getattr(torch, DTYPE_NAME)


@torch.library.custom_op("kforge::copy", mutates_args=())
def kforge_copy(x: torch.Tensor) -> torch.Tensor:
    return _launch(x)


def launch_via_op(x):
    try:
        return torch.ops.kforge.copy(x)
    except RuntimeError:
        return kforge_copy(x)
'''),
    ("cuda_graph_replayed_on_the_current_stream", '''
class ModelNew(nn.Module):
    def forward(self, x):
        graph = torch.cuda.CUDAGraph()
        static = x.clone()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            out = _launch(static)
        static.copy_(x)
        graph.replay()
        return out.clone()
'''),
    ("strings_that_only_look_suspicious", '''
HELP = "call exit(1) to stop; open( the file; time.perf_counter is forbidden"
CPP_DECL = "torch::Tensor run(torch::Tensor x);  // never calls exit(0) or clock64"
'''),
]


@pytest.mark.parametrize("body", [body for _, body in NEGATIVE_BODIES],
                         ids=[name for name, _ in NEGATIVE_BODIES])
def test_near_misses_do_not_fire(body):
    assert found(candidate(body)) == []


# -- realistic honest candidates: no findings at all

HONEST_RELU_AUTOTUNE = '''"""ReLU with an autotuned block size."""
import math
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

try:
    from triton.language.extra.cuda import libdevice  # noqa: F401
except ImportError:
    libdevice = None

DEBUG = os.environ.get("KFORGE_DEBUG", "0") == "1"
CONFIGS = [triton.Config({"BLOCK_SIZE": 2 ** p}, num_warps=4 if p < 11 else 8) for p in range(9, 13)]


@triton.autotune(configs=CONFIGS, key=["n_elements"])
@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_cuda:
            raise ValueError("ModelNew expects a CUDA tensor")
        x = x.contiguous()
        assert x.is_contiguous()
        out = torch.empty_like(x)
        n_elements = x.numel()
        if n_elements == 0:
            return out
        grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
        relu_kernel[grid](x, out, n_elements)
        if DEBUG:
            print("relu blocks", math.ceil(n_elements / 512), torch.cuda.current_stream())
        return out
'''

HONEST_PERSISTENT_MATMUL = '''"""Persistent fp32 matmul: one program per SM walks its share of the output tiles."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

NUM_SMS = torch.cuda.get_device_properties("cuda").multi_processor_count if torch.cuda.is_available() else 4


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    group_id = tile_id // (GROUP_M * num_pid_n)
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % (GROUP_M * num_pid_n)) // group_size_m
    return pid_m, pid_n


@triton.jit
def _load_tile(ptr, rows, cols, stride_r, stride_c, n_rows, n_cols):
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    return tl.load(ptr + rows[:, None] * stride_r + cols[None, :] * stride_c, mask=mask, other=0.0)


@triton.jit
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                             stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
    start = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    for tile_id in tl.range(start, num_pid_m * num_pid_n, NUM_PROGRAMS):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            ks = k0 + tl.arange(0, BLOCK_K)
            a = _load_tile(a_ptr, rows, ks, stride_am, stride_ak, M, K)
            b = _load_tile(b_ptr, ks, cols, stride_bk, stride_bn, K, N)
            acc = tl.dot(a, b, acc, input_precision="ieee")
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        A = A.contiguous()
        B = B.contiguous()
        M, K = A.shape
        _, N = B.shape
        C = torch.empty((M, N), device=A.device, dtype=torch.float32)
        tiles = triton.cdiv(M, 128) * triton.cdiv(N, 128)
        programs = max(1, min(NUM_SMS, tiles))
        persistent_matmul_kernel[(programs,)](
            A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
            C.stride(0), C.stride(1), BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8,
            NUM_PROGRAMS=programs, num_warps=8, num_stages=3)
        return C.view(M, N)
'''

HONEST_SOFTMAX_SCRATCH = '''"""Two-pass online softmax with a per-row scratch buffer cached per shape."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_stats_kernel(x_ptr, stats_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        new_m = tl.maximum(m, x)
        s = s * tl.where(new_m == -float("inf"), 0.0, tl.exp(m - new_m)) + tl.where(new_m == -float("inf"), 0.0, tl.exp(x - new_m))
        m = new_m
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.where(m == -float("inf"), 0.0, tl.exp(m - row_max)), axis=0)
    tl.store(stats_ptr + 2 * row, row_max)
    tl.store(stats_ptr + 2 * row + 1, row_sum)


@triton.jit
def normalize_kernel(x_ptr, out_ptr, stats_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    row_max = tl.load(stats_ptr + 2 * row)
    row_sum = tl.load(stats_ptr + 2 * row + 1)
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride + cols, tl.exp(x - row_max) / row_sum, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim
        self._scratch = {}

    def _stats_buffer(self, rows: int, device: torch.device) -> torch.Tensor:
        key = (rows, str(device))
        try:
            return self._scratch[key]
        except KeyError:
            buffer = torch.empty(2 * rows, device=device, dtype=torch.float32)
            self._scratch[key] = buffer
            return buffer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2d = x.contiguous().view(-1, x.shape[-1])
        rows, cols = x2d.shape
        out = torch.empty_like(x2d)
        stats = self._stats_buffer(rows, x.device)
        block = min(triton.next_power_of_2(cols), 1024)
        row_stats_kernel[(rows,)](x2d, stats, cols, x2d.stride(0), BLOCK=block)
        normalize_kernel[(rows, triton.cdiv(cols, block))](x2d, out, stats, cols, x2d.stride(0), BLOCK=block)
        return out.view(x.shape)
'''

HONEST_CUDA_INLINE = '''"""GELU (tanh approximation) as a CUDA C++ kernel built with load_inline."""
import os

import torch
import torch.nn as nn

try:
    from torch.utils.cpp_extension import load_inline
except ImportError as error:  # pragma: no cover - torch always ships cpp_extension
    raise ImportError("kforge needs torch.utils.cpp_extension") from error

os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")

CPP_SOURCE = "torch::Tensor gelu_forward(torch::Tensor x);"

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

// One thread per element; a grid-stride loop covers any size. Errors go through TORCH_CHECK,
// never exit(), so the caller sees an exception.
__device__ __forceinline__ float gelu(float v) {
    const float k = 0.7978845608028654f;
    return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

__global__ void gelu_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        out[i] = gelu(x[i]);
    }
}

torch::Tensor gelu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "gelu_forward: expected a CUDA tensor, not exit(1)");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "gelu_forward: expected float32");
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    const int64_t n = input.numel();
    if (n == 0) return out;
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535);
    gelu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<float>(), out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

try:
    _ext = load_inline(name="kforge_gelu", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                       functions=["gelu_forward"], extra_cuda_cflags=["-O3"], verbose=False)
except Exception as error:
    raise RuntimeError(f"building the GELU extension failed: {error}") from error


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.gelu_forward(x)
'''

HONEST_LINEAR_PARAMETERS = '''"""Linear + bias + ReLU fused in one Triton kernel; nn.Linear only holds the parameters."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(x_ptr, w_ptr, b_ptr, s_ptr, out_ptr, M, N, K,
                       stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + ks[None, :] * stride_xk,
                    mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + cols[None, :] * stride_wn + ks[:, None] * stride_wk,
                    mask=(cols[None, :] < N) & (ks[:, None] < K), other=0.0)
        acc = tl.dot(x, w, acc, input_precision="ieee")
    bias = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    scale = tl.load(s_ptr)
    acc = tl.maximum((acc + bias[None, :]) * scale, 0.0)
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on, acc,
             mask=(rows[:, None] < M) & (cols[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = torch.nn.Parameter(torch.empty(1))
        with torch.no_grad():
            self.scale.fill_(1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.linear.weight, self.linear.bias
        M, K = x.shape
        N = weight.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        linear_relu_kernel[grid](x, weight, bias, self.scale, out, M, N, K,
                                 x.stride(0), x.stride(1), weight.stride(0), weight.stride(1),
                                 out.stride(0), out.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        return out
'''

HONEST_LAYERNORM_DATACLASS = '''"""LayerNorm over the last dimension with a dataclass launch config and a cached config picker."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Tuple

import torch
import torch.nn as nn
import triton
import triton.language as tl


@dataclass(frozen=True)
class LaunchConfig:
    block: int
    num_warps: int

    @property
    def grid_limit(self) -> int:
        return 65535


@functools.lru_cache(maxsize=64)
def pick_config(n_cols: int) -> LaunchConfig:
    block = triton.next_power_of_2(n_cols)
    return LaunchConfig(block=block, num_warps=min(max(block // 256, 1), 16))


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * stride + cols, diff * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: Tuple[int, ...], eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_cols = math.prod(self.weight.shape)
        x2d = x.contiguous().view(-1, n_cols)
        out = torch.empty_like(x2d)
        config = pick_config(n_cols)
        layer_norm_kernel[(x2d.shape[0],)](x2d, self.weight, self.bias, out, n_cols, x2d.stride(0),
                                           self.eps, BLOCK=config.block, num_warps=config.num_warps)
        return out.view_as(x)
'''

HONEST_WITH_SELF_TEST = '''"""Sigmoid kernel with a self-test block that only runs when the file is executed directly."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sigmoid_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 1.0 / (1.0 + tl.exp(-x)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        sigmoid_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out


if __name__ == "__main__":
    import time

    torch.manual_seed(0)
    x = torch.randn(4096, 4096, device="cuda")
    start = time.perf_counter()
    y = ModelNew()(x)
    torch.cuda.synchronize()
    print("ms", (time.perf_counter() - start) * 1e3)
    print("max err", (y - torch.sigmoid(x)).abs().max().item())
'''

HONEST_CANDIDATES = {
    "triton_relu_autotune": HONEST_RELU_AUTOTUNE,
    "triton_persistent_matmul": HONEST_PERSISTENT_MATMUL,
    "triton_softmax_scratch": HONEST_SOFTMAX_SCRATCH,
    "cuda_inline_gelu": HONEST_CUDA_INLINE,
    "linear_parameters_triton": HONEST_LINEAR_PARAMETERS,
    "layernorm_dataclass_lru_cache": HONEST_LAYERNORM_DATACLASS,
    "self_test_main_block": HONEST_WITH_SELF_TEST,
}


@pytest.mark.parametrize("source", HONEST_CANDIDATES.values(), ids=HONEST_CANDIDATES.keys())
def test_honest_candidate_has_no_findings(source):
    assert analyze_candidate(source) == []


CORPUS_HONEST = sorted((REPO / "tests" / "corpus" / "candidates").glob("*/honest_*.py"))


@pytest.mark.skipif(not CORPUS_HONEST, reason="no honest candidates in tests/corpus")
@pytest.mark.parametrize("path", CORPUS_HONEST,
                         ids=[p.parent.name + "/" + p.stem for p in CORPUS_HONEST])
def test_corpus_honest_candidate_has_no_findings(path):
    assert analyze_candidate(path.read_text(), str(path)) == []


# -- the main guard is skipped only when it cannot run on import

MAIN_GUARD = 'if __name__ == "__main__":'


def test_main_guard_is_checked_when_name_is_reassigned():
    source = HONEST_WITH_SELF_TEST.replace(MAIN_GUARD, '__name__ = "__main__"\n' + MAIN_GUARD)
    checks = {check for check, _ in found(source)}
    assert {"timer", "global_state"} <= checks


def test_main_guard_with_extra_condition_is_checked():
    source = HONEST_WITH_SELF_TEST.replace(MAIN_GUARD, 'if __name__ == "__main__" or True:')
    checks = {check for check, _ in found(source)}
    assert {"timer", "global_state"} <= checks


# -- the contract

def test_checks_are_named_in_order():
    assert CHECKS == ("reference_model", "fallback_handler", "process_exit", "frame_inspection",
                      "monkeypatch", "global_state", "threads", "subprocess", "timer", "file_io",
                      "no_kernel", "missing_model_new")


def test_syntax_error_propagates_unchanged():
    with pytest.raises(SyntaxError) as raised:
        analyze_candidate("class ModelNew(:\n    pass\n", "cand.py")
    assert raised.value.filename == "cand.py"
    assert raised.value.lineno == 1


@pytest.mark.parametrize("source", [source for _, source in CASES], ids=[name for name, _ in CASES])
def test_findings_are_sorted_named_and_explained(source):
    findings = analyze_candidate(source)
    assert findings == sorted(findings, key=lambda f: (f.line, CHECKS.index(f.check)))
    for finding in findings:
        assert finding.check in CHECKS
        assert finding.line >= 1
        assert finding.message.strip()
        assert finding.message.rstrip().endswith(".")


def test_finding_is_frozen():
    finding = Finding("timer", 3, "`time` reads a clock.")
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.line = 4  # type: ignore[misc]


def test_message_names_the_construct_and_the_reason():
    [finding] = analyze_candidate(candidate("import os\nos.system('ls')\n"))
    assert finding.check == "subprocess"
    assert "`os.system`" in finding.message
    assert "network" in finding.message


def test_one_finding_per_check_and_line():
    source = candidate("import time\nt = time.time() + time.perf_counter()\n")
    assert found(source) == [("timer", PREFIX.count("\n") + 1), ("timer", PREFIX.count("\n") + 2)]


def test_module_has_no_mutable_global_state():
    mutable = [name for name, value in vars(static_checks).items()
               if not name.startswith("__") and isinstance(value, (list, set))]
    assert mutable == []


# -- partial mode: a candidate carries the task's own code, its Model under another name

KERNELBENCH_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super(Model, self).__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        if x.mean() > 0:
            x = x * 2.0
        return self.norm(x)


features = 64


def get_inputs():
    return [torch.randn(8, features)]


def get_init_inputs():
    return [features]
'''


def test_a_partial_candidate_carrying_the_task_code_under_another_name_has_no_findings():
    from kforge_worker.forward_source import forward_source

    source = PREFIX + forward_source(KERNELBENCH_TASK, None) + '''

class ModelNew(kf_task_Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_module("norm", nn.Identity())
'''
    assert analyze_candidate(source) == []
    # The same code under the reference's own names would be refused.
    assert "reference_model" in {f.check for f in analyze_candidate(PREFIX + KERNELBENCH_TASK)}
