"""What each static tripwire check forbids: its message, and the Python dotted names, CUDA C++
identifiers and headers, and PTX registers that fire it. Immutable tables plus rule_for(), the
first-match lookup of a resolved Python name; no other logic lives here.
"""
from __future__ import annotations

from typing import Optional


# check -> (what the flagged construct does, why that is not allowed).
MESSAGES: dict[str, tuple[str, str]] = {
    "reference_model": ("refers to the reference model or the task",
                        "A candidate must compute the result itself; it never sees the reference "
                        "`Model` or the task file."),
    "fallback_handler": ("computes with PyTorch inside an exception handler",
                         "A handler must re-raise (or retry your own kernel), never fall back to "
                         "PyTorch: a failing kernel has to fail visibly."),
    "process_exit": ("can end or signal the process",
                     "`forward` must return its output; exiting, killing or signalling the "
                     "worker is not allowed."),
    "frame_inspection": ("inspects frames, modules or builtins, or runs dynamically built code",
                         "That reaches state outside the candidate or hides code from review; "
                         "kernels have no need for it."),
    "monkeypatch": ("changes code or attributes the candidate does not own",
                    "That alters what the evaluator or the reference computes; keep state on "
                    "`self` or on your own classes."),
    "global_state": ("changes process-wide torch or RNG state",
                     "Precision flags, RNG state, default dtype/device, the current stream and "
                     "thread counts must stay as the evaluator set them."),
    "threads": ("runs work on another thread, process or stream",
                "Work off the current stream and thread can escape the timer; launch kernels on "
                "the current stream from the calling thread (a CUDA graph replayed there is "
                "fine)."),
    "subprocess": ("starts a process or opens a network connection",
                   "Candidates may not run other programs or talk to the network."),
    "timer": ("reads a clock, timer or profiler",
              "A kernel has no business measuring time; timing is the evaluator's job."),
    "file_io": ("reads or writes files",
                "Outputs must be computed, not loaded, and a candidate may not touch the "
                "filesystem."),
}

BUILTIN_NAMES = frozenset({
    "open", "exit", "quit", "eval", "exec", "compile", "__import__", "getattr", "setattr",
    "delattr", "hasattr", "vars", "globals", "locals", "type", "object", "super",
})


def _rules(check: str, *patterns: str) -> tuple[tuple[str, str], ...]:
    return tuple((pattern, check) for pattern in patterns)


# Dotted paths (after resolving imports and aliases; "<builtin>." for unshadowed builtins) that
# fire a check when imported or referenced. First match wins; a trailing "*" is a raw prefix.
_RULES: tuple[tuple[str, str], ...] = (
    *_rules("process_exit", "sys.exit", "os._exit", "os.abort", "os.kill", "os.killpg", "signal",
            "atexit", "_thread.interrupt_main", "<builtin>.exit", "<builtin>.quit"),
    *_rules("global_state", "torch.set_float32_matmul_precision", "torch.set_default_dtype",
            "torch.set_default_device", "torch.set_default_tensor_type", "torch.set_num_threads",
            "torch.set_num_interop_threads", "torch.use_deterministic_algorithms",
            "torch.set_deterministic_debug_mode", "torch.set_flush_denormal",
            "torch.set_anomaly_enabled", "torch.autograd.set_detect_anomaly", "torch.manual_seed",
            "torch.seed", "torch.set_rng_state", "torch.random.manual_seed", "torch.random.seed",
            "torch.random.set_rng_state", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
            "torch.cuda.seed", "torch.cuda.seed_all", "torch.cuda.set_rng_state",
            "torch.cuda.set_rng_state_all", "torch.cuda.set_stream", "torch.cuda.set_device",
            "torch.cuda.set_per_process_memory_fraction", "torch.cuda.set_sync_debug_mode",
            "torch.cuda.memory.change_current_allocator", "torch._C._set_*",
            "torch._C._cuda_set*", "random.seed",
            "random.setstate", "numpy.random.seed", "numpy.random.set_state"),
    *_rules("frame_inspection", "inspect", "gc", "ctypes", "_ctypes", "cffi", "builtins",
            "__builtin__", "runpy", "imp", "importlib.reload", "importlib.util",
            "importlib.machinery", "importlib.abc", "importlib.__import__", "sys._getframe",
            "sys._current_frames", "sys.settrace", "sys.setprofile", "sys.modules",
            "sys.addaudithook", "traceback.extract_stack", "traceback.walk_stack",
            "traceback.walk_tb", "traceback.format_stack", "traceback.print_stack",
            "traceback.StackSummary", "<builtin>.eval", "<builtin>.exec", "<builtin>.compile",
            # The CUDA driver and NVRTC as raw ctypes handles (torch.cuda._compile_kernel uses
            # them on the candidate's behalf; the kernels it builds launch on the current stream).
            "torch.cuda._utils"),
    *_rules("monkeypatch", "torch.overrides", "torch.utils._python_dispatch"),
    *_rules("threads", "threading", "_thread", "concurrent", "multiprocessing", "asyncio",
            "torch.multiprocessing", "torch.cuda.Stream", "torch.cuda.stream",
            "torch.cuda.streams", "torch.cuda.StreamContext", "torch.cuda.ExternalStream",
            "torch.Stream", "torch.cuda.make_graphed_callables",
            "torch.cuda.graphs.make_graphed_callables",
            "torch.jit.fork", "torch.jit._fork", "torch.futures"),
    *_rules("subprocess", "subprocess", "pty", "socket", "socketserver", "ssl", "urllib",
            "urllib3", "http", "requests", "httpx", "aiohttp", "ftplib", "smtplib", "telnetlib",
            "xmlrpc", "webbrowser", "pexpect", "os.system", "os.popen", "os.spawn*", "os.exec*",
            "os.fork", "os.forkpty", "os.posix_spawn*", "os.register_at_fork", "shutil.rmtree",
            "torch.hub"),
    *_rules("timer", "time", "timeit", "cProfile", "resource", "os.times", "datetime.datetime.now",
            "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today",
            "torch.cuda.Event", "torch.Event", "triton.testing", "torch.utils.benchmark",
            "torch.profiler", "torch.autograd.profiler", "torch.cuda.profiler"),
    *_rules("file_io", "<builtin>.open", "io.open", "io.open_code", "io.FileIO", "os.open",
            "os.fdopen", "codecs.open", "mmap",
            "os.remove", "os.unlink", "os.rename", "os.renames", "os.replace", "os.chmod",
            "os.chown", "os.utime", "os.rmdir", "os.removedirs", "os.truncate", "os.symlink",
            "os.link", "os.read", "os.write", "os.listdir", "os.scandir", "os.walk", "glob",
            "shutil.copy*", "shutil.move", "shutil.chown", "shutil.make_archive",
            "shutil.unpack_archive", "torch.save", "torch.load", "torch.jit.save",
            "torch.jit.load", "torch.from_file", "torch.UntypedStorage.from_file", "numpy.save",
            "numpy.savez", "numpy.savez_compressed", "numpy.savetxt", "numpy.load",
            "numpy.loadtxt", "numpy.genfromtxt", "numpy.fromfile", "numpy.memmap", "pickle.load",
            "pickle.loads", "pickle.dump", "pickle.Unpickler", "marshal.load", "marshal.loads",
            "shelve", "dill", "joblib", "safetensors", "h5py"),
)

FRAME_ATTRS = frozenset({
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "tb_frame", "gi_frame", "cr_frame",
    "ag_frame", "__globals__", "__subclasses__", "__builtins__",
})
IDENTITY_ATTRS = frozenset({
    "__class__", "__code__", "__dict__", "__globals__", "__bases__", "__defaults__",
    "__kwdefaults__", "__torch_function__", "__torch_dispatch__",
})
OPEN_FUNCTIONS = frozenset({
    "<builtin>.open", "builtins.open", "io.open", "os.open", "os.fdopen", "codecs.open",
})
GRAD_SWITCHES = frozenset({
    "torch.set_grad_enabled", "torch.autograd.set_grad_enabled",
    "torch.autograd.grad_mode.set_grad_enabled",
})
PATH_METHODS = frozenset({
    "write_text", "write_bytes", "read_text", "read_bytes", "touch", "unlink", "rename", "tofile",
})
TENSOR_SUBCLASS_BASES = frozenset({"torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase"})
TORCH_HOOKS = frozenset({"__torch_function__", "__torch_dispatch__"})
INTERCEPTS = "intercepts torch operations, including the evaluator's own"
TASK_FUNCTIONS = frozenset({"get_inputs", "get_init_inputs"})

# Tensor methods that compute a result; called in an except handler they are a fallback.
TENSOR_METHODS = frozenset({
    "matmul", "mm", "bmm", "mv", "addmm", "addmv", "baddbmm", "einsum", "conv1d", "conv2d",
    "conv3d", "linear", "softmax", "log_softmax", "layer_norm", "group_norm", "batch_norm", "sum",
    "mean", "var", "std", "prod", "norm", "cumsum", "cumprod", "relu", "relu_", "sigmoid", "tanh",
    "gelu", "silu", "exp", "log", "log1p", "sqrt", "rsqrt", "pow", "abs", "clamp", "clamp_min",
    "clamp_max", "max", "min", "amax", "amin", "argmax", "argmin", "mul", "div", "sub", "lerp",
    "where", "masked_fill", "matrix_power", "topk",
})
# torch calls that allocate or query and compute nothing, so a retry handler may use them.
NON_COMPUTE_TORCH = frozenset({
    "torch.cuda.synchronize", "torch.cuda.empty_cache", "torch.cuda.current_stream",
    "torch.cuda.current_device", "torch.cuda.device_count", "torch.cuda.is_available",
    "torch.cuda.get_device_properties", "torch.cuda.get_device_name",
    "torch.cuda.get_device_capability", "torch.cuda.mem_get_info", "torch.empty",
    "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like", "torch.device",
    "torch.finfo", "torch.iinfo", "torch.is_tensor", "torch.Size", "torch.get_default_dtype",
    "torch.is_floating_point",
})

NON_COMPUTE_TORCH_PREFIXES = ("torch.cuda.nvtx.",)
# Modules whose attributes may not be looked up by a computed name.
SENSITIVE_ROOTS = frozenset({
    "<builtin>", "builtins", "os", "sys", "io", "importlib", "shutil", "pathlib", "signal",
    "subprocess", "socket", "threading", "_thread", "multiprocessing", "asyncio", "time", "gc",
    "inspect", "ctypes", "pickle", "atexit", "codecs", "traceback",
})

JIT_DECORATORS = frozenset({"triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit",
                            "numba.cuda.jit"})
KERNEL_BUILDERS = frozenset({
    "torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load", "triton.jit",
    "torch.cuda.jiterator._create_jit_fn", "torch.cuda.jiterator._create_multi_output_jit_fn",
    "torch.cuda._compile_kernel",
    "cupy.RawKernel", "cupy.RawModule", "cupy.ElementwiseKernel", "cupy.ReductionKernel",
})

# CUDA C++ inside string constants. Qualified names fire on any use (prefix on "::").
CPP_MARKERS = ("#include", "__global__", "__device__", "PYBIND11_MODULE", "TORCH_LIBRARY",
               "torch::Tensor", "at::Tensor")
CPP_QUALIFIED: tuple[tuple[str, str], ...] = (
    *_rules("process_exit", "std::exit", "std::abort", "std::quick_exit", "std::_Exit",
            "std::terminate", "std::signal", "std::raise"),
    *_rules("threads", "std::thread", "std::jthread", "std::async", "std::this_thread"),
    *_rules("subprocess", "std::system"),
    *_rules("timer", "std::chrono", "std::clock", "std::time"),
    *_rules("file_io", "std::ofstream", "std::ifstream", "std::fstream", "std::filesystem",
            "std::fopen", "std::remove", "std::rename", "torch::save", "torch::load",
            "torch::pickle_load", "torch::pickle_save", "torch::jit::load"),
    *_rules("frame_inspection", "py::module::import", "py::module_::import",
            "pybind11::module::import", "pybind11::module_::import", "py::exec", "py::eval",
            "py::eval_file", "py::globals", "pybind11::exec", "pybind11::eval",
            "pybind11::globals"),
)
# Unqualified identifiers that fire on any use.
CPP_ANY: dict[str, str] = {
    **dict((name, "threads") for name in (
        "pthread_create", "cudaStreamCreate", "cudaStreamCreateWithFlags",
        "cudaStreamCreateWithPriority", "getStreamFromPool", "getStreamFromExternal",
        "cudaGraphCreate", "cudaGraphInstantiate", "cudaGraphLaunch", "cudaStreamBeginCapture",
        "cudaStreamEndCapture", "CUDAGraph", "cudaLaunchHostFunc", "cudaStreamAddCallback")),
    **dict((name, "timer") for name in (
        "clock64", "clock_gettime", "gettimeofday", "cudaEventElapsedTime", "cudaEventRecord",
        "cudaEventCreate", "cudaEventCreateWithFlags")),
    **dict((name, "subprocess") for name in ("popen", "execve", "execvp", "posix_spawn")),
    **dict((name, "file_io") for name in (
        "fopen", "freopen", "fwrite", "fread", "ofstream", "ifstream", "fstream")),
    **dict((name, "frame_inspection") for name in (
        "dlopen", "dlsym", "PyEval_GetFrame", "PyEval_GetGlobals", "PyEval_GetLocals",
        "PyEval_GetBuiltins", "PyImport_ImportModule", "PyImport_Import", "PyImport_AddModule",
        "PyRun_SimpleString", "PyRun_String", "PyThreadState_GetFrame", "PyFrame_GetBack",
        "PySys_GetObject")),
}
# Unqualified (or std::) identifiers that fire only when called as free functions.
CPP_CALLS: dict[str, str] = {
    **dict((name, "process_exit") for name in (
        "exit", "_exit", "_Exit", "quick_exit", "abort", "terminate", "atexit", "at_quick_exit",
        "kill", "killpg", "raise", "signal", "sigaction")),
    **dict((name, "subprocess") for name in (
        "system", "fork", "vfork", "execl", "execlp", "execle", "execv", "socket")),
    **dict((name, "timer") for name in ("clock", "time")),
    **dict((name, "file_io") for name in ("open", "creat", "remove", "unlink", "rename", "mmap")),
}
CPP_INCLUDES: dict[str, str] = {
    "thread": "threads", "future": "threads", "pthread.h": "threads", "chrono": "timer",
    "fstream": "file_io", "filesystem": "file_io", "csignal": "process_exit",
    "signal.h": "process_exit", "sys/socket.h": "subprocess", "spawn.h": "subprocess",
    "dlfcn.h": "frame_inspection", "pybind11/embed.h": "frame_inspection",
}
PTX_TIMERS = ("globaltimer", "%clock")


def _matches(dotted: str, pattern: str) -> bool:
    if pattern.endswith("*"):
        return dotted.startswith(pattern[:-1])
    return dotted == pattern or dotted.startswith(pattern + ".")


def rule_for(dotted: str) -> Optional[str]:
    return next((check for pattern, check in _RULES if _matches(dotted, pattern)), None)
