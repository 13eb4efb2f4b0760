"""Static tripwire checks on an untrusted candidate's source text.

analyze_candidate() parses a candidate with `ast` (it never imports or runs it) and returns the
constructs an honest kernel never needs, at most one Finding per check and line, sorted by line.
CUDA C++ and PTX held in string constants are scanned too. These are tripwires, not the defence
(the runtime checks are), so they aim at no false positives on honest kernel code. Pure function,
no global state; a SyntaxError from ast.parse propagates unchanged.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Iterable, Iterator, Optional


@dataclass(frozen=True)
class Finding:
    """One tripwire hit: the check's name, the 1-based line, and a message one can act on."""

    check: str
    line: int
    message: str


CHECKS: tuple[str, ...] = (
    "reference_model", "fallback_handler", "process_exit", "frame_inspection", "monkeypatch",
    "global_state", "threads", "subprocess", "timer", "file_io", "no_kernel", "missing_model_new",
)

# check -> (what the flagged construct does, why that is not allowed).
_MESSAGES: dict[str, tuple[str, str]] = {
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
    "threads": ("runs work on another thread, process, stream or CUDA graph",
                "Work off the current stream and thread can escape the timer; launch kernels on "
                "the current stream from the calling thread."),
    "subprocess": ("starts a process or opens a network connection",
                   "Candidates may not run other programs or talk to the network."),
    "timer": ("reads a clock, timer or profiler",
              "A kernel has no business measuring time; timing is the evaluator's job."),
    "file_io": ("reads or writes files",
                "Outputs must be computed, not loaded, and a candidate may not touch the "
                "filesystem."),
}

_BUILTIN_NAMES = frozenset({
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
            "traceback.StackSummary", "<builtin>.eval", "<builtin>.exec", "<builtin>.compile"),
    *_rules("monkeypatch", "torch.overrides", "torch.utils._python_dispatch"),
    *_rules("threads", "threading", "_thread", "concurrent", "multiprocessing", "asyncio",
            "torch.multiprocessing", "torch.cuda.Stream", "torch.cuda.stream",
            "torch.cuda.streams", "torch.cuda.StreamContext", "torch.cuda.ExternalStream",
            "torch.Stream", "torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.graphs",
            "torch.cuda.make_graphed_callables", "torch.cuda.graph_pool_handle",
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

_FRAME_ATTRS = frozenset({
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "tb_frame", "gi_frame", "cr_frame",
    "ag_frame", "__globals__", "__subclasses__", "__builtins__",
})
_IDENTITY_ATTRS = frozenset({
    "__class__", "__code__", "__dict__", "__globals__", "__bases__", "__defaults__",
    "__kwdefaults__", "__torch_function__", "__torch_dispatch__",
})
_OPEN_FUNCTIONS = frozenset({
    "<builtin>.open", "builtins.open", "io.open", "os.open", "os.fdopen", "codecs.open",
})
_GRAD_SWITCHES = frozenset({
    "torch.set_grad_enabled", "torch.autograd.set_grad_enabled",
    "torch.autograd.grad_mode.set_grad_enabled",
})
_PATH_METHODS = frozenset({
    "write_text", "write_bytes", "read_text", "read_bytes", "touch", "unlink", "rename", "tofile",
})
_TENSOR_SUBCLASS_BASES = frozenset({"torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase"})
_TORCH_HOOKS = frozenset({"__torch_function__", "__torch_dispatch__"})
_INTERCEPTS = "intercepts torch operations, including the evaluator's own"
_TASK_FUNCTIONS = frozenset({"get_inputs", "get_init_inputs"})

# Tensor methods that compute a result; called in an except handler they are a fallback.
_TENSOR_METHODS = frozenset({
    "matmul", "mm", "bmm", "mv", "addmm", "addmv", "baddbmm", "einsum", "conv1d", "conv2d",
    "conv3d", "linear", "softmax", "log_softmax", "layer_norm", "group_norm", "batch_norm", "sum",
    "mean", "var", "std", "prod", "norm", "cumsum", "cumprod", "relu", "relu_", "sigmoid", "tanh",
    "gelu", "silu", "exp", "log", "log1p", "sqrt", "rsqrt", "pow", "abs", "clamp", "clamp_min",
    "clamp_max", "max", "min", "amax", "amin", "argmax", "argmin", "mul", "div", "sub", "lerp",
    "where", "masked_fill", "matrix_power", "topk",
})
# torch calls that allocate or query and compute nothing, so a retry handler may use them.
_NON_COMPUTE_TORCH = frozenset({
    "torch.cuda.synchronize", "torch.cuda.empty_cache", "torch.cuda.current_stream",
    "torch.cuda.current_device", "torch.cuda.device_count", "torch.cuda.is_available",
    "torch.cuda.get_device_properties", "torch.cuda.get_device_name",
    "torch.cuda.get_device_capability", "torch.cuda.mem_get_info", "torch.empty",
    "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like", "torch.device",
    "torch.finfo", "torch.iinfo", "torch.is_tensor", "torch.Size", "torch.get_default_dtype",
    "torch.is_floating_point",
})

_NON_COMPUTE_TORCH_PREFIXES = ("torch.cuda.nvtx.",)
# Modules whose attributes may not be looked up by a computed name.
_SENSITIVE_ROOTS = frozenset({
    "<builtin>", "builtins", "os", "sys", "io", "importlib", "shutil", "pathlib", "signal",
    "subprocess", "socket", "threading", "_thread", "multiprocessing", "asyncio", "time", "gc",
    "inspect", "ctypes", "pickle", "atexit", "codecs", "traceback",
})

_JIT_DECORATORS = frozenset({"triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit",
                             "numba.cuda.jit"})
_KERNEL_BUILDERS = frozenset({
    "torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load", "triton.jit",
    "torch.cuda.jiterator._create_jit_fn", "torch.cuda.jiterator._create_multi_output_jit_fn",
    "cupy.RawKernel", "cupy.RawModule", "cupy.ElementwiseKernel", "cupy.ReductionKernel",
})

# CUDA C++ inside string constants. Qualified names fire on any use (prefix on "::").
_CPP_MARKERS = ("#include", "__global__", "__device__", "PYBIND11_MODULE", "TORCH_LIBRARY",
                "torch::Tensor", "at::Tensor")
_CPP_QUALIFIED: tuple[tuple[str, str], ...] = (
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
_CPP_ANY: dict[str, str] = {
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
_CPP_CALLS: dict[str, str] = {
    **dict((name, "process_exit") for name in (
        "exit", "_exit", "_Exit", "quick_exit", "abort", "terminate", "atexit", "at_quick_exit",
        "kill", "killpg", "raise", "signal", "sigaction")),
    **dict((name, "subprocess") for name in (
        "system", "fork", "vfork", "execl", "execlp", "execle", "execv", "socket")),
    **dict((name, "timer") for name in ("clock", "time")),
    **dict((name, "file_io") for name in ("open", "creat", "remove", "unlink", "rename", "mmap")),
}
_CPP_INCLUDES: dict[str, str] = {
    "thread": "threads", "future": "threads", "pthread.h": "threads", "chrono": "timer",
    "fstream": "file_io", "filesystem": "file_io", "csignal": "process_exit",
    "signal.h": "process_exit", "sys/socket.h": "subprocess", "spawn.h": "subprocess",
    "dlfcn.h": "frame_inspection", "pybind11/embed.h": "frame_inspection",
}
_PTX_TIMERS = ("globaltimer", "%clock")


def analyze_candidate(source: str, filename: str = "<candidate>") -> list[Finding]:
    """All findings, sorted by line.

    Raises SyntaxError (unchanged, from ast.parse) when the source does not parse.
    """
    tree = ast.parse(source, filename)
    context = _Context.build(tree)
    findings: list[Finding] = []
    # Specific checks come before the generic reference scan so their messages win the dedupe.
    for check in (_check_structure, _check_classes, _check_handlers, _check_raises, _check_calls,
                  _check_stores, _check_imports, _check_references, _check_strings):
        findings.extend(check(context))
    return _dedupe_and_sort(findings)


def _finding(check: str, line: int, subject: str, detail: Optional[str] = None) -> Finding:
    found, why = _MESSAGES[check]
    return Finding(check, line, f"`{subject}` {detail or found}. {why}")


def _dedupe_and_sort(findings: Iterable[Finding]) -> list[Finding]:
    seen: set[tuple[str, int]] = set()
    unique: list[Finding] = []
    for finding in findings:
        if (finding.check, finding.line) not in seen:
            seen.add((finding.check, finding.line))
            unique.append(finding)
    return sorted(unique, key=lambda f: (f.line, CHECKS.index(f.check)))


def _matches(dotted: str, pattern: str) -> bool:
    if pattern.endswith("*"):
        return dotted.startswith(pattern[:-1])
    return dotted == pattern or dotted.startswith(pattern + ".")


def _rule_for(dotted: str) -> Optional[str]:
    return next((check for pattern, check in _RULES if _matches(dotted, pattern)), None)


def _const_str(node: Optional[ast.AST]) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


# ---------------------------------------------------------------------------- name resolution

class _Names:
    """Resolves Name/Attribute chains to the dotted path they refer to, through imports, simple
    aliases (`f = os.system`), getattr with a constant name and constant-string dynamic imports."""

    def __init__(self, tree: ast.Module) -> None:
        self.imports: dict[str, str] = {}
        self.aliases: dict[str, str] = {}
        self.bound: set[str] = set()
        self.star_modules: list[str] = []
        for node in ast.walk(tree):
            self._collect(node)
        for _ in range(3):  # aliases of aliases
            self._collect_aliases(tree)

    def _collect(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                self.imports[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            prefix = module if module.endswith(".") else module + "."
            for alias in node.names:
                if alias.name == "*":
                    self.star_modules.append(module)
                else:
                    self.imports[alias.asname or alias.name] = prefix + alias.name
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            self.bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.bound.add(node.name)
        elif isinstance(node, ast.arg):
            self.bound.add(node.arg)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            self.bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            self.bound.add(node.rest)

    def _collect_aliases(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id not in self.imports):
                target = self.qualify(node.value)
                if target is not None:
                    self.aliases[node.targets[0].id] = target

    def qualify_name(self, name: str) -> Optional[str]:
        if name in self.imports:
            return self.imports[name]
        if name in self.aliases:
            return self.aliases[name]
        if name in self.bound:
            return None
        if name in _BUILTIN_NAMES:
            return f"<builtin>.{name}"
        return f"{self.star_modules[-1]}.{name}" if self.star_modules else None

    def qualify(self, node: ast.AST) -> Optional[str]:
        """The dotted path `node` refers to, or None when it is not rooted in an import/builtin."""
        attrs: list[str] = []
        while True:
            if isinstance(node, ast.Attribute):
                attrs.append(node.attr)
                node = node.value
            elif self.is_getattr(node):
                attrs.append(_const_str(node.args[1]) or "")
                node = node.args[0]
            else:
                break
        if isinstance(node, ast.Name):
            root = self.qualify_name(node.id)
        elif isinstance(node, ast.Call):
            root = self.dynamic_import(node)
        else:
            root = None
        return ".".join([root, *reversed(attrs)]) if root else None

    def is_getattr(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and self.qualify_name(node.func.id) == "<builtin>.getattr"
                and len(node.args) >= 2 and _const_str(node.args[1]) is not None)

    def dynamic_import(self, call: ast.Call) -> Optional[str]:
        """The module named by `__import__("m")` / `importlib.import_module("m")`, else None."""
        func = self.plain_dotted(call.func)
        if func not in ("<builtin>.__import__", "importlib.import_module") or not call.args:
            return None
        module = _const_str(call.args[0])
        if module is None:
            return None
        has_fromlist = len(call.args) >= 4 or any(k.arg == "fromlist" for k in call.keywords)
        return module if func.startswith("importlib") or has_fromlist else module.split(".")[0]

    def plain_dotted(self, node: ast.AST) -> Optional[str]:
        """qualify() for pure Name/Attribute chains only (never recurses into calls)."""
        attrs: list[str] = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        root = self.qualify_name(node.id) if isinstance(node, ast.Name) else None
        return ".".join([root, *reversed(attrs)]) if root else None


@dataclass
class _Context:
    tree: ast.Module
    nodes: list[ast.AST]  # every node that can run, in source order (no dead main-guard bodies)
    parents: dict[ast.AST, ast.AST]
    names: _Names
    torch_modules: frozenset[str]  # self.<attr> names assigned a torch.nn module instance
    torch_only_helpers: frozenset[str] = frozenset()  # functions computing with torch, no kernel

    @staticmethod
    def build(tree: ast.Module) -> _Context:
        names = _Names(tree)
        nodes = _live_nodes(tree)
        parents = {child: parent for parent in ast.walk(tree)
                   for child in ast.iter_child_nodes(parent)}
        context = _Context(tree, nodes, parents, names, _torch_module_attrs(nodes, names))
        return replace(context, torch_only_helpers=_torch_only_helpers(context))


def _torch_module_attrs(nodes: list[ast.AST], names: _Names) -> frozenset[str]:
    attrs: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            constructor = names.qualify(node.value.func) or ""
            if constructor.startswith("torch.nn.") and ".Parameter" not in constructor:
                attrs.update(target.attr for target in node.targets
                             if isinstance(target, ast.Attribute)
                             and isinstance(target.value, ast.Name) and target.value.id == "self")
    return frozenset(attrs)


def _torch_only_helpers(ctx: _Context) -> frozenset[str]:
    """Names of the candidate's functions and methods that compute with PyTorch and neither
    launch a kernel nor call another of the candidate's functions (every definition of a name)."""
    functions = [n for n in ctx.nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    defined = {function.name for function in functions}
    handles = _kernel_handles(ctx)
    verdicts: dict[str, bool] = {}
    for function in functions:
        computes = any(True for stmt in function.body for _ in _torch_compute(stmt, ctx, False))
        delegates = any(_delegates(node, defined, handles, ctx) for node in ast.walk(function))
        verdicts[function.name] = verdicts.get(function.name, True) and computes and not delegates
    return frozenset(name for name, torch_only in verdicts.items() if torch_only)


def _kernel_handles(ctx: _Context) -> set[str]:
    """Names (or self attributes) bound to a load_inline/cpp_extension.load result."""
    handles: set[str] = set()
    for node in ctx.nodes:
        if isinstance(node, ast.Assign) and _defines_kernel(node.value, ctx.names):
            for target in node.targets:
                if isinstance(target, (ast.Name, ast.Attribute)):
                    handles.add(target.id if isinstance(target, ast.Name) else target.attr)
    return handles


def _delegates(node: ast.AST, defined: set[str], handles: set[str], ctx: _Context) -> bool:
    """Whether `node` launches a kernel, calls a compiled extension (`handles`) or calls one of
    the candidate's own functions (`defined`)."""
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Subscript):  # kernel[grid](...)
        return True
    if _is_own_op(ctx.names.qualify(node.func) or "") or _helper_name(node.func) in defined:
        return True
    func = node.func
    while isinstance(func, ast.Attribute):
        if func.attr in handles:
            return True
        func = func.value
    return isinstance(func, ast.Name) and func.id in handles


def _is_own_op(target: str) -> bool:
    """A torch.ops call into a namespace other than ATen's: the candidate's own custom op."""
    return target.startswith("torch.ops.") and not target.startswith(
        ("torch.ops.aten.", "torch.ops.prims."))


def _is_main_guard(node: ast.AST) -> bool:
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides)
            and any(_const_str(side) == "__main__" for side in sides))


def _main_guard_is_dead(tree: ast.Module) -> bool:
    """True when nothing in the file can make `__name__ == "__main__"` hold on import."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and (
                node.id in ("globals", "vars", "locals", "setattr", "exec", "eval", "compile",
                            "__import__", "__builtins__")
                or (node.id == "__name__" and not isinstance(node.ctx, ast.Load))):
            return False
        if isinstance(node, ast.Attribute) and node.attr in ("__dict__", "modules", "f_globals",
                                                             "__setattr__", "import_module"):
            return False
        if "__name__" in (_const_str(node) or ""):
            return False
        if (isinstance(node, ast.arg) and node.arg == "__name__") or (
                isinstance(node, ast.keyword) and node.arg == "__name__") or (
                isinstance(node, ast.alias) and "__name__" in (node.name, node.asname)):
            return False
    return True


def _live_nodes(tree: ast.Module) -> list[ast.AST]:
    """All nodes in source order, without the bodies of `if __name__ == "__main__":` blocks when
    those cannot run on import (the evaluator never imports a candidate as __main__)."""
    skip_main = _main_guard_is_dead(tree)
    nodes: list[ast.AST] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        children = list(ast.iter_child_nodes(node))
        if skip_main and _is_main_guard(node):
            children = [node.test, *node.orelse]  # type: ignore[attr-defined]
        stack.extend(reversed(children))
    return nodes


def _last_name(node: ast.AST) -> Optional[str]:
    """`c` for `a.b.c`, `c` for `c`, else None."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _line(node: ast.AST) -> int:
    return getattr(node, "lineno", 1)


# ---------------------------------------------------------------------------- checks

def _check_structure(ctx: _Context) -> Iterator[Finding]:
    if not any(_defines_kernel(node, ctx.names) for node in ctx.nodes):
        yield Finding("no_kernel", 1, "The file defines no kernel: no @triton.jit function and no "
                      "load_inline/cpp_extension.load call. ModelNew must launch a kernel the "
                      "candidate wrote, not only call PyTorch.")
    if not any(_defines_model_new(node, ctx.parents) for node in ctx.nodes):
        yield Finding("missing_model_new", 1, "No top-level `class ModelNew` found. The evaluator "
                      "instantiates ModelNew as the drop-in replacement for the reference Model.")


def _defines_kernel(node: ast.AST, names: _Names) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return any(names.qualify(d.func if isinstance(d, ast.Call) else d) in _JIT_DECORATORS
                   for d in node.decorator_list)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id == "load_inline":
            return True
        return names.qualify(node.func) in _KERNEL_BUILDERS
    return False


def _defines_model_new(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    if isinstance(node, ast.ClassDef):
        named = node.name == "ModelNew"
    elif isinstance(node, ast.Assign):
        named = any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in node.targets)
    else:
        return False
    scope = parents.get(node)
    while scope is not None and not isinstance(scope, ast.Module):
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return False
        scope = parents.get(scope)
    return named


def _check_classes(ctx: _Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                if node.name == "ModelNew" and _last_name(base) == "Model":
                    yield _finding("reference_model", _line(base), "class ModelNew(Model)",
                                   "subclasses the reference model")
                if ctx.names.qualify(base) in _TENSOR_SUBCLASS_BASES:
                    yield _finding("monkeypatch", _line(base), f"class {node.name}",
                                   "subclasses torch.Tensor, which can override how the evaluator "
                                   "compares and inspects outputs")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.name in _TORCH_HOOKS:
            yield _finding("monkeypatch", node.lineno, node.name, _INTERCEPTS)


def _check_handlers(ctx: _Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        if isinstance(node, ast.ExceptHandler) and not _catches_only_import_errors(node):
            body, detail = node.body, None
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))) and node.finalbody:
            body, detail = node.finalbody, ("computes with PyTorch in a `finally` block, which "
                                            "runs (and can return) after a failed kernel")
        else:
            continue
        hits = [hit for stmt in body for hit in _torch_compute(stmt, ctx)]
        if hits:
            line, subject = min(hits)
            yield _finding("fallback_handler", line, subject, detail)


def _catches_only_import_errors(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return False
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return all(_last_name(c) in ("ImportError", "ModuleNotFoundError") for c in caught)


def _torch_compute(stmt: ast.AST, ctx: _Context,
                   follow_helpers: bool = True) -> Iterator[tuple[int, str]]:
    """(line, subject) of each PyTorch computation under `stmt`, skipping `raise` statements."""
    stack = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Raise):
            continue
        stack.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            yield node.lineno, "@"
        elif isinstance(node, ast.Call):
            subject = _torch_call_subject(node, ctx, follow_helpers)
            if subject:
                yield node.lineno, subject


def _torch_call_subject(call: ast.Call, ctx: _Context, follow_helpers: bool) -> Optional[str]:
    target = ctx.names.qualify(call.func)
    if target is not None:
        computes = target.startswith("torch.") and target not in _NON_COMPUTE_TORCH and \
            not target.startswith(_NON_COMPUTE_TORCH_PREFIXES)
        return target if computes and not _is_own_op(target) else None
    func = call.func
    if follow_helpers and _helper_name(func) in ctx.torch_only_helpers:
        return f"{_helper_name(func)}(...)"
    if not isinstance(func, ast.Attribute):
        return None
    receiver = func.value
    if func.attr == "forward" and isinstance(receiver, ast.Call) and \
            isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
        return "super().forward"
    if isinstance(receiver, ast.Name) and receiver.id == "self" and func.attr in ctx.torch_modules:
        return f"self.{func.attr}(...)"
    if func.attr in _TENSOR_METHODS and not _looks_like_logger(receiver):
        return f".{func.attr}()"
    return None


def _helper_name(func: ast.AST) -> Optional[str]:
    """`f` for `f(...)` and `self.f(...)`: a call of the candidate's own function or method."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
            func.value.id in ("self", "cls"):
        return func.attr
    return None


def _looks_like_logger(node: ast.AST) -> bool:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and node.id.lower().lstrip("_").startswith("log")


def _check_raises(ctx: _Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in ("SystemExit", "KeyboardInterrupt"):
                yield _finding("process_exit", node.lineno, f"raise {exc.id}")


def _check_calls(ctx: _Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        if isinstance(node, ast.Call):
            yield from _call_findings(node, ctx)


def _call_findings(call: ast.Call, ctx: _Context) -> Iterator[Finding]:
    names, line = ctx.names, call.lineno
    target = names.qualify(call.func) or ""
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("__setattr__", "__delattr__"):
        yield from _dunder_setattr(call, call.func, ctx)
    elif target in _OPEN_FUNCTIONS:
        yield _open_finding(call, target)
    elif target in ("<builtin>.__import__", "importlib.import_module"):
        yield from _dynamic_import_findings(call, target)
    elif target in ("<builtin>.setattr", "<builtin>.delattr") and call.args:
        yield from _foreign_store(call.args[0], _const_str(call.args[1]) if len(call.args) > 1
                                  else None, line, ctx)
    elif target in _GRAD_SWITCHES and isinstance(ctx.parents.get(call), ast.Expr):
        yield _finding("global_state", line, target,
                       "switches autograd for the whole thread (use it as a `with` block)")
    elif target.startswith("torch.backends.") and _switches_backend(target, call):
        yield _finding("global_state", line, target)
    elif target.startswith("torch.library.") and _targets_aten(call):
        yield _finding("monkeypatch", line, target, "registers kernels for built-in ATen operators")
    elif target == "<builtin>.vars" and call.args and names.qualify(call.args[0]):
        yield _finding("frame_inspection", line, "vars(...)", "reads another module's globals")
    elif target in ("<builtin>.getattr", "<builtin>.hasattr") and len(call.args) > 1:
        yield from _getattr_findings(call, ctx)
    elif isinstance(call.func, ast.Attribute) and not target:
        yield from _method_findings(call, call.func, ctx)


def _open_finding(call: ast.Call, target: str) -> Finding:
    mode_node = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    mode = _const_str(mode_node) or ""
    detail = (f"opens a file for writing (mode {mode!r})" if any(c in mode for c in "wax+")
              else "opens a file, and a candidate may not read files either")
    return _finding("file_io", call.lineno, f"{target.replace('<builtin>.', '')}(...)", detail)


def _dynamic_import_findings(call: ast.Call, target: str) -> Iterator[Finding]:
    function = target.replace("<builtin>.", "")
    module = _const_str(call.args[0]) if call.args else None
    if module is None:
        yield _finding("frame_inspection", call.lineno, function,
                       "imports a module whose name is computed at run time")
    else:
        yield from _import_findings(module, call.lineno, f"{function}({module!r})")


def _getattr_findings(call: ast.Call, ctx: _Context) -> Iterator[Finding]:
    name = _const_str(call.args[1])
    module = (ctx.names.qualify(call.args[0]) or "").split(".")[0]
    if name == "Model":
        yield _finding("reference_model", call.lineno, "getattr(..., 'Model')")
    elif name is None and module in _SENSITIVE_ROOTS:
        yield _finding("frame_inspection", call.lineno, f"getattr({module}, ...)",
                       "looks up a module attribute by a name computed at run time")


def _dunder_setattr(call: ast.Call, func: ast.Attribute, ctx: _Context) -> Iterator[Finding]:
    receiver = ctx.names.qualify(func.value)
    if receiver in ("<builtin>.object", "<builtin>.type") and call.args:
        yield from _foreign_store(call.args[0], None, call.lineno, ctx)
    else:
        yield from _foreign_store(func.value, None, call.lineno, ctx)


def _method_findings(call: ast.Call, func: ast.Attribute, ctx: _Context) -> Iterator[Finding]:
    if func.attr == "elapsed_time":
        yield _finding("timer", call.lineno, ".elapsed_time()")
    elif func.attr in _PATH_METHODS:
        yield _finding("file_io", call.lineno, f".{func.attr}()")


def _switches_backend(target: str, call: ast.Call) -> bool:
    last = target.rsplit(".", 1)[-1]
    has_args = bool(call.args or call.keywords)
    return last.startswith(("enable_", "set_", "allow_")) or (
        last.startswith("preferred_") and has_args)


def _targets_aten(call: ast.Call) -> bool:
    values = [_const_str(v) or "" for v in [*call.args, *(k.value for k in call.keywords)]]
    return any(v in ("aten", "prims") or v.startswith(("aten::", "prims::")) for v in values)


def _foreign_root(node: ast.AST, ctx: _Context) -> Optional[str]:
    """The dotted name of `node` when it is a module, class or object the candidate does not own."""
    target = ctx.names.qualify(node)
    if target is not None:
        return target.replace("<builtin>.", "")
    if isinstance(node, ast.Name) and node.id == "__builtins__":
        return "__builtins__"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            ctx.names.qualify_name(node.func.id) == "<builtin>.type":
        return "type(...)"
    return None


def _foreign_store(obj: ast.AST, attr: Optional[str], line: int,
                   ctx: _Context) -> Iterator[Finding]:
    root = _foreign_root(obj, ctx)
    if root is None:
        return
    dotted = f"{root}.{attr}" if attr else root
    if dotted.startswith("torch.backends."):
        yield _finding("global_state", line, dotted)
    else:
        yield _finding("monkeypatch", line, dotted)


def _check_stores(ctx: _Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        if not isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
            continue
        if isinstance(node, ast.Attribute):
            if _foreign_root(node.value, ctx) is not None:
                yield from _foreign_store(node.value, node.attr, node.lineno, ctx)
            elif node.attr in _IDENTITY_ATTRS:
                yield _finding("monkeypatch", node.lineno, f".{node.attr}",
                               "replaces an object's class, code or namespace")
        elif isinstance(node, ast.Subscript):
            yield from _subscript_store(node, ctx)


def _subscript_store(node: ast.Subscript, ctx: _Context) -> Iterator[Finding]:
    value = node.value
    if isinstance(value, ast.Call) and ctx.names.qualify(value.func) == "<builtin>.vars" \
            and value.args and _foreign_root(value.args[0], ctx):
        yield _finding("monkeypatch", node.lineno, "vars(...)[...]")
        return
    root = _foreign_root(value, ctx)
    if root is not None and not root.startswith("os.environ"):
        yield from _foreign_store(value, "[...]", node.lineno, ctx)


def _check_imports(ctx: _Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _import_findings(alias.name, getattr(alias, "lineno", node.lineno),
                                            f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            prefix = module if module.endswith(".") else module + "."
            for alias in node.names:
                dotted = module if alias.name == "*" else prefix + alias.name
                yield from _import_findings(dotted, getattr(alias, "lineno", node.lineno),
                                            f"from {module} import {alias.name}")


def _import_findings(dotted: str, line: int, shown: str) -> Iterator[Finding]:
    lowered = dotted.lower()
    if any(word in lowered for word in ("reference", "task", "__main__")) or \
            "Model" in dotted.split("."):
        yield _finding("reference_model", line, shown)
    check = _rule_for(dotted)
    if check is not None:
        yield _finding(check, line, shown)


def _check_references(ctx: _Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        yield from _namespace_findings(node, ctx)
        yield from _model_findings(node, ctx)
        if _is_chain_head(node, ctx):
            yield from _rule_findings(node, ctx)


def _namespace_findings(node: ast.AST, ctx: _Context) -> Iterator[Finding]:
    """Frame attributes, `__builtins__`, and other modules' `__dict__`."""
    if isinstance(node, ast.Attribute) and node.attr in _FRAME_ATTRS:
        yield _finding("frame_inspection", node.lineno, f".{node.attr}")
    elif isinstance(node, ast.Name) and node.id == "__builtins__":
        yield _finding("frame_inspection", node.lineno, "__builtins__")
    elif isinstance(node, ast.Attribute) and node.attr == "__dict__" and \
            isinstance(node.ctx, ast.Load) and ctx.names.qualify(node.value):
        yield _finding("frame_inspection", node.lineno, f"{ctx.names.qualify(node)}",
                       "reads another module's or class's namespace")


def _model_findings(node: ast.AST, ctx: _Context) -> Iterator[Finding]:
    """`Model`, `x.Model`, `[...]["Model"]`, and the task's get_inputs/get_init_inputs."""
    if _last_name(node) == "Model" and isinstance(getattr(node, "ctx", None), ast.Load):
        yield _finding("reference_model", _line(node), "Model")
    elif isinstance(node, ast.Subscript) and _const_str(node.slice) == "Model":
        yield _finding("reference_model", node.lineno, "[...]['Model']")
    elif isinstance(node, ast.Name) and node.id in _TASK_FUNCTIONS and \
            node.id not in ctx.names.bound and node.id not in ctx.names.imports:
        yield _finding("reference_model", node.lineno, node.id,
                       "is the task's input generator, which the candidate never sees")


def _rule_findings(node: ast.AST, ctx: _Context) -> Iterator[Finding]:
    dotted = ctx.names.qualify(node)
    check = _rule_for(dotted) if dotted else None
    if dotted and check:
        detail = _INTERCEPTS if check == "monkeypatch" else None
        yield _finding(check, _line(node), dotted.replace("<builtin>.", ""), detail)


def _is_chain_head(node: ast.AST, ctx: _Context) -> bool:
    if not (isinstance(node, (ast.Name, ast.Attribute)) or ctx.names.is_getattr(node)):
        return False
    parent = ctx.parents.get(node)
    return not (isinstance(parent, ast.Attribute) and parent.value is node)


def _check_strings(ctx: _Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        text = _const_str(node)
        if text is None:
            continue
        if text == "__builtins__":
            yield _finding("frame_inspection", node.lineno, "'__builtins__'")
        if text == "__main__" and not _compares_module_name(ctx.parents.get(node)):
            yield _finding("reference_model", node.lineno, "'__main__'",
                           "names the module the task or evaluator runs as")
        for marker in _PTX_TIMERS:
            if marker in text:
                yield _finding("timer", _string_line(node, text, text.index(marker)), marker,
                               "reads a GPU clock register")
        if any(marker in text for marker in _CPP_MARKERS):
            for check, offset, subject in _scan_cpp(text):
                yield _finding(check, _string_line(node, text, offset), subject,
                               f"in CUDA/C++ source {_MESSAGES[check][0]}")


def _compares_module_name(node: Optional[ast.AST]) -> bool:
    return isinstance(node, ast.Compare) and any(
        _last_name(side) == "__name__" for side in [node.left, *node.comparators])


def _string_line(node: ast.AST, text: str, offset: int) -> int:
    line = node.lineno + text.count("\n", 0, offset)  # type: ignore[attr-defined]
    return min(line, getattr(node, "end_lineno", None) or line)


# ---------------------------------------------------------------------------- CUDA C++ scan

def _scan_cpp(text: str) -> Iterator[tuple[str, int, str]]:
    """(check, offset, subject) for each forbidden include or identifier in C++ source."""
    code = _blank_comments_and_literals(text)
    yield from _scan_includes(code)
    tokens = _cpp_tokens(code)
    for index, (name, offset) in enumerate(tokens):
        if not (name[0].isalpha() or name[0] in "_:") or name == "::":
            continue
        before = tokens[index - 1][0] if index else ""
        after = tokens[index + 1][0] if index + 1 < len(tokens) else ""
        check = _cpp_check(name, before, after)
        if check is not None:
            yield check, offset, name


def _cpp_check(name: str, before: str, after: str) -> Optional[str]:
    qualified = name.lstrip(":")
    for pattern, check in _CPP_QUALIFIED:
        if qualified == pattern or qualified.startswith(pattern + "::"):
            return check
    last = qualified.rsplit("::", 1)[-1]
    if last in _CPP_ANY:
        return _CPP_ANY[last]
    is_free_call = after == "(" and before not in (".", "->")
    if is_free_call and qualified in (last, "std::" + last):
        return _CPP_CALLS.get(last)
    return None


def _scan_includes(code: str) -> Iterator[tuple[str, int, str]]:
    """System headers (`#include <...>`); quoted includes were blanked with the literals."""
    offset = 0
    for line in code.splitlines(keepends=True):
        directive = line.strip().lstrip("#").lstrip()
        if line.lstrip().startswith("#") and directive.startswith("include"):
            header = directive[len("include"):].strip().lstrip("<").split(">")[0].strip()
            if header in _CPP_INCLUDES:
                yield _CPP_INCLUDES[header], offset, f"#include <{header}>"
        offset += len(line)


def _blank_comments_and_literals(text: str) -> str:
    """`text` with comments and string/char literals replaced by spaces (newlines kept)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = -1 if end < 0 else end + 2
        elif text[i] in "\"'":
            end = _literal_end(text, i)
        else:
            out.append(text[i])
            i += 1
            continue
        end = n if end < 0 else end
        out.append("".join(c if c == "\n" else " " for c in text[i:end]))
        i = end
    return "".join(out)


def _literal_end(text: str, start: int) -> int:
    quote, i = text[start], start + 1
    while i < len(text) and text[i] not in (quote, "\n"):
        i += 2 if text[i] == "\\" else 1
    return min(i + 1, len(text)) if i < len(text) and text[i] == quote else i


def _cpp_tokens(code: str) -> list[tuple[str, int]]:
    """Identifiers (merged with `::` into qualified names), `->` and single punctuation."""
    tokens: list[tuple[str, int]] = []
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c.isalpha() or c == "_" or (code.startswith("::", i)):
            start = i
            while i < n and (code[i].isalnum() or code[i] == "_" or code.startswith("::", i)):
                i += 2 if code.startswith("::", i) else 1
            tokens.append((code[start:i], start))
        elif c.isspace():
            i += 1
        else:
            width = 2 if code.startswith("->", i) else 1
            tokens.append((code[i:i + width], i))
            i += width
    return tokens
