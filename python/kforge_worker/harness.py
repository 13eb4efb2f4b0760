"""What runs inside a candidate's own sandboxed process: import the candidate, build it with the
reference's parameters, call it on every input set while watching for cheating, time it and
trace its kernels. Everything it finds goes into result.json; the C++ side decides the verdict.

This process is untrusted once the candidate is imported, so nothing here ever sees a reference
output: the trusted worker compares the saved outputs afterwards.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
import traceback
from typing import Any, Callable, Iterator

import torch

from . import compile_ahead, kernel_profile, provenance, timing, tuning
from .file_watch import FileWatch
from .guards import TIMER_NAMES, GlobalState, Identities
from .inputs import call_seed, is_dense
from .protocol import finite_json, read_message, write_message
from .shared_memory import Arena, arena_bytes, dtype_name, put_values, view_values
from .task_loader import import_file

PRECISION_FLAGS = {
    "fp32": (False, "highest"),
    "tf32": (True, "high"),
    "bf16": (False, "highest"),
}


class CandidateFailure(Exception):
    """The candidate failed in a way that ends its evaluation with `kind`."""

    def __init__(self, kind: str, phase: str, message: str, detail: str = ""):
        super().__init__(message)
        self.kind, self.phase, self.message, self.detail = kind, phase, message, detail


class HackFound(Exception):
    """A runtime check fired; the finding is already recorded."""


def apply_precision(policy: str) -> None:
    allow_tf32, matmul_precision = PRECISION_FLAGS.get(policy, PRECISION_FLAGS["fp32"])
    torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    torch.backends.cudnn.allow_tf32 = allow_tf32
    torch.set_float32_matmul_precision(matmul_precision)


def _is_compile_error(error: BaseException) -> bool:
    chain = [error]
    while chain[-1].__cause__ is not None and len(chain) < 8:
        chain.append(chain[-1].__cause__)
    for item in chain:
        module = type(item).__module__ or ""
        name = type(item).__name__
        text = str(item)
        if isinstance(item, SyntaxError) or "CompilationError" in name or module.startswith("triton.compiler"):
            return True
        if "Error building extension" in text or "ninja: build stopped" in text:
            return True
        if name in ("AttributeError", "NameError") and "triton.language" in text:
            return True
        if name == "InterpreterError" and ("has no attribute" in text or "is not defined" in text):
            return True
    return False


def _candidate_traceback(error: BaseException, candidate_path: str) -> str:
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    text = "".join(lines)
    return text[-6000:].replace(candidate_path, "candidate.py")


def run_phase(phase: str, candidate_path: str, action: Callable[[], Any]) -> Any:
    try:
        return action()
    except (SystemExit, KeyboardInterrupt) as error:
        raise CandidateFailure("crashed", phase, f"the candidate tried to exit the process ({type(error).__name__}"
                               f"{'(' + str(error) + ')' if str(error) else ''}) during {phase}") from None
    except Exception as error:
        kind = "compile_error" if _is_compile_error(error) else "runtime_error"
        message = f"{type(error).__name__}: {error}".strip()
        raise CandidateFailure(kind, phase, message[:2000], _candidate_traceback(error, candidate_path)) from None


def _storage_range(tensor: torch.Tensor) -> tuple[int, int]:
    storage = tensor.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[0] != a[1] and b[0] != b[1]


class SessionClient:
    """The candidate process's end of the live session with the trusted worker: it asks what to
    call next and hands every call's outputs back through the shared output slot as the call ends."""

    def __init__(self, fd: int, arenas: dict[str, Arena]):
        self.fd = fd
        self.inputs_arena, self.outputs_arena = arenas["inputs"], arenas["outputs"]

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        write_message(self.fd, message)
        reply = read_message(self.fd)
        if reply is None:
            raise RuntimeError("the trusted worker closed the evaluation session")
        return reply

    def inputs(self, described: list[dict[str, Any]]) -> list:
        """A call's inputs: views of the shared input slot, which the trusted worker checks after the call."""
        return view_values(self.inputs_arena, described)

    def hand_off(self, op: str, outputs: list, buffers: list | None = None, **fields: Any) -> dict[str, Any]:
        """Copies `outputs` (and after them `buffers`, the model's buffers a forward mutates) into
        the output slot and reports them; tensors too large for the slot are described by shape only."""
        self.outputs_arena.rewind(0)
        described = self._put(outputs)
        if buffers is not None:
            fields["buffers"] = self._put(buffers)
        self.outputs_arena.synchronize()
        return self.request({"op": op, "outputs": described, **fields})

    def _put(self, values: list) -> list[dict[str, Any]]:
        tensors = [t for t in values if isinstance(t, torch.Tensor)]
        if self.outputs_arena.room_for(arena_bytes(tensors)) and all(not t.is_meta for t in tensors):
            return put_values(self.outputs_arena, values)
        return [{"unsent": True, "shape": list(t.shape), "dtype": dtype_name(t.dtype)}
                if isinstance(t, torch.Tensor) else {"value": t} for t in values]


class Run:
    """One candidate's evaluation inside its process."""

    def __init__(self, job: dict[str, Any], private_dir: str, result: dict[str, Any], arenas: dict[str, Arena],
                 session_fd: int):
        self.job = job
        self.private_dir = private_dir
        self.result = result
        self.spent: dict[str, float] = {}  # seconds per kind of work, to explain a slow evaluation
        self.device = torch.device(job["device"])
        self.exchange = job["exchange_dir"]
        self.candidate_path = os.path.join(self.exchange, "candidate.py")
        self.findings: list[dict[str, Any]] = result["findings"]
        self.arenas = arenas
        self.session = SessionClient(session_fd, arenas)

    @contextlib.contextmanager
    def timed(self, what: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.spent[what] = self.spent.get(what, 0.0) + time.perf_counter() - started

    # -- checks ---------------------------------------------------------------------------
    def finding(self, check: str, message: str) -> None:
        self.findings.append({"check": check, "message": message})
        raise HackFound()

    def expect_seed(self, seed: int) -> int:
        """`seed`, which the global RNG is about to be seeded with, as the guards' expected seed."""
        self.state.reseeded(seed)
        return seed

    def seed(self, seed: Any) -> None:
        """Seeds the global RNG before a call when the trusted side sent a seed: the reference,
        whose forward draws random numbers, was called from that state."""
        if seed is not None:
            torch.manual_seed(self.expect_seed(int(seed)))

    def check_guards(self, where: str) -> None:
        changes = self.state.changes()
        if changes:
            self.finding("global_state", f"global torch state changed during {where}: " + "; ".join(changes))
        replaced = self.identities.replaced()
        timers = [name for name in replaced if name in TIMER_NAMES]
        if timers:
            self.finding("timer_tamper", f"{', '.join(timers)} replaced during {where}; a kernel has no business "
                                         "touching the clocks the evaluator reads")
        if replaced:
            self.finding("monkeypatch", f"{', '.join(replaced)} replaced during {where}; candidates may not patch "
                                        "torch, time or threading")
        if self.file_watch.attempts:
            self.finding("file_tamper", f"the candidate tried to write outside its own folder during {where}: "
                                        + "; ".join(self.file_watch.attempts[:5]))
        if threading.active_count() > self.threads_before:
            self.finding("background_thread", f"{threading.active_count() - self.threads_before} thread(s) still "
                                              f"running after {where}; work done in the background escapes timing")

    def check_outputs(self, outputs: Any, inputs: list, earlier: list[torch.Tensor], where: str) -> list[torch.Tensor]:
        flat = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        dense = self.job.get("outputs_dense") or []
        for index, out in enumerate(flat):
            if type(out) is not torch.Tensor:
                self.finding("output_type", f"{where}: output {index} is a {type(out).__module__}.{type(out).__name__}, "
                                            "not a plain torch.Tensor")
            if out.layout != torch.strided or out.is_meta or out.device.type != self.device.type:
                self.finding("output_type", f"{where}: output {index} is {out.layout} on {out.device}; expected a "
                                            f"dense tensor on {self.device}")
            if index < len(dense) and dense[index] and not is_dense(out):
                self.finding("output_type", f"{where}: output {index} has strides {list(out.stride())}: a view "
                                            "that repeats memory (e.g. an expanded tensor) is not a computed output")
        own = [_storage_range(t) for t in flat]
        for index, span in enumerate(own):
            for other, input_tensor in enumerate(inputs):
                if isinstance(input_tensor, torch.Tensor) and _overlaps(span, _storage_range(input_tensor)):
                    self.finding("output_aliasing", f"{where}: output {index} shares memory with input {other}")
            for name, tensor in self.state_tensors:
                if _overlaps(span, _storage_range(tensor)):
                    self.finding("output_aliasing", f"{where}: output {index} shares memory with parameter {name}")
            for old in earlier:
                if _overlaps(span, _storage_range(old)):
                    self.finding("output_aliasing", f"{where}: output {index} reuses the memory of an earlier call's "
                                                    "output; every call must return a fresh tensor")
            for other in range(index):
                if _overlaps(span, own[other]):
                    self.finding("output_aliasing", f"{where}: outputs {other} and {index} share memory")
        return list(flat)

    # -- steps ----------------------------------------------------------------------------
    def load(self, name: str) -> Any:
        return torch.load(os.path.join(self.exchange, name), weights_only=True, map_location="cpu")

    def poison_allocator(self, nbytes: int) -> None:
        """Leaves NaN bit patterns where the next allocations land, so unwritten outputs show."""
        if self.device.type == "cuda" and nbytes > 0:
            poison = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
            poison.fill_(0xFF)
            del poison

    def forward(self, inputs: list, where: str, seed: int | None = None) -> Any:
        if self.device.type == "cuda" and "compile_ahead" not in self.result:
            # Before the first call: its kernels compiled all at once, where it allows that (the
            # result says how long that took).
            self.result["compile_ahead"] = run_phase(
                "forward", self.candidate_path, lambda: compile_ahead.compile_ahead(self.module, self.model, inputs))
            self.check_guards("compiling ahead")
        self.poison_allocator(self.job.get("output_bytes", 0))
        self.seed(seed)
        # The first call also loads the candidate's kernels into this process.
        with self.timed("calls" if self.spent.get("first_call") else "first_call"), torch.no_grad():
            outputs = run_phase("forward", self.candidate_path, lambda: self.model(*inputs))
            if self.device.type == "cuda":
                run_phase("forward", self.candidate_path, torch.cuda.synchronize)
        return outputs

    def checked_call(self, inputs: list, earlier: list[torch.Tensor], where: str, seed: int | None = None) -> list[torch.Tensor]:
        outputs = self.forward(inputs, where, seed)
        flat = self.check_outputs(outputs, inputs, earlier, where)
        self.check_guards(f"forward on {where}")
        return flat

    def buffers(self, names: list[str]) -> list:
        """The model's buffers the reference's forward mutates, as they are after a call."""
        named = dict(self.model.named_buffers())
        missing = torch.tensor(float("nan"))  # judged wrong by its shape
        return [named[name] if isinstance(named.get(name), torch.Tensor) else missing for name in names]

    def run(self) -> None:
        apply_precision(self.job.get("precision", "fp32"))
        limit = int(self.job.get("gpu_memory_limit_bytes", 0))
        if self.device.type == "cuda" and limit > 0:
            total = torch.cuda.get_device_properties(self.device).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, limit / total), self.device)
        self.state = GlobalState()
        self.identities = Identities()
        self.threads_before = threading.active_count()
        launches = provenance.InterpreterLaunches() if self.device.type == "cpu" else None
        if self.device.type == "cpu":
            tuning.measure_on_the_host()
        else:
            tuning.measure_briefly()
        sys.dont_write_bytecode = True  # the candidate's folder is read-only to it; no __pycache__
        self.file_watch = FileWatch([self.private_dir, os.environ.get("TRITON_CACHE_DIR", ""),
                                     os.environ.get("TORCH_EXTENSIONS_DIR", ""), os.environ.get("TMPDIR", "")])
        self.file_watch.active = True
        started = time.perf_counter()
        module = self.module = run_phase("import", self.candidate_path,
                                         lambda: import_file(self.candidate_path, "kforge_candidate"))
        model_class = getattr(module, "ModelNew", None)
        if not isinstance(model_class, type):
            raise CandidateFailure("compile_error", "import", "the candidate does not define class ModelNew")
        self.check_guards("import")
        init_inputs = self.load("init.pt")
        model = run_phase("construct", self.candidate_path, lambda: model_class(*init_inputs))
        state_dict = {name: self.arenas["inputs"].view(meta).to("cpu", copy=True)
                      for name, meta in self.job["state"].items()}
        run_phase("load_state_dict", self.candidate_path, lambda: model.load_state_dict(state_dict, strict=True))
        del state_dict
        self.model = run_phase("construct", self.candidate_path, lambda: model.to(self.device))
        self.state_tensors = [(n, t) for n, t in list(self.model.named_parameters()) + list(self.model.named_buffers())
                              if isinstance(t, torch.Tensor) and t.device.type == self.device.type]
        self.check_guards("construction")
        self.result["phase_s"] = {"load": time.perf_counter() - started}

        started = time.perf_counter()
        self.checked_calls()
        self.result["phase_s"]["correctness"] = time.perf_counter() - started
        self.result["phase_s"]["correctness_detail"] = dict(self.spent)
        if self.job.get("timing"):
            self.time_candidate()
        if self.job.get("profile"):
            self.profile(module, launches)
        self.second_size()
        self.session.request({"op": "end"})
        self.result["tuning"] = tuning.autotune_choices(module)
        self.check_guards("the whole run")

    def checked_calls(self) -> None:
        """Every checked call the trusted worker hands out, in its order: new inputs, or the same
        input tensors again (rewritten in place for a probe)."""
        step = self.session.request({"op": "start"})["step"]
        inputs: list = []
        previous: list[torch.Tensor] = []
        while step:
            if step["fresh"] or not inputs:
                inputs = self.session.inputs(step["inputs"])
            name = step["name"]
            where = {"repeat": "a second call on input set seed0"}.get(
                name, f"input set seed0 rewritten in place ({name})" if name.startswith("probe_") else f"input set {name}")
            outputs = self.checked_call(inputs, previous, where, step.get("seed"))
            with self.timed("outputs"):
                step = self.session.hand_off("done", outputs, self.buffers(step.get("buffers", [])), name=name)["step"]
            previous = outputs
        del previous, inputs

    def time_candidate(self) -> None:
        started = time.perf_counter()
        spec = self.job["timing"]
        answer = self.session.request({"op": "timing"})
        base = self.session.inputs(answer["inputs"])
        if self.device.type == "cuda":
            # The checked calls' cached blocks go back: timing's rotating copies of the inputs
            # are new allocations, and a multi-GB task's may not fit beside blocks of another size.
            torch.cuda.empty_cache()
        seed_base = answer.get("seed_base")

        def hand_off(index: int, shift: int, output: Any) -> None:
            flat = output if isinstance(output, (list, tuple)) else [output]
            self.session.hand_off("timed", [t for t in flat if isinstance(t, torch.Tensor)], call=index, shift=shift)

        config = timing.TimingConfig.from_json(spec.get("config"))
        measured = run_phase("timing", self.candidate_path,
                             lambda: timing.time_calls(self.model, base, self.device, config, hand_off,
                                                       seed_for_shift=None if seed_base is None else
                                                       lambda shift: self.expect_seed(call_seed(int(seed_base), f"shift:{shift}"))))
        self.result["timing"] = measured
        self.result["phase_s"]["timing"] = time.perf_counter() - started
        self.check_guards("timing")

    def profile(self, module: Any, launches: provenance.InterpreterLaunches | None) -> None:
        started = time.perf_counter()
        answer = self.session.request({"op": "profile"})
        inputs = self.session.inputs(answer["inputs"])
        seed = answer.get("seed")
        source = open(self.candidate_path, encoding="utf-8", errors="replace").read()
        authored = provenance.authored_kernel_names(module, source)
        outputs: list = []

        def one_forward() -> None:
            self.seed(seed)
            with torch.no_grad():
                outputs.append(self.model(*inputs))

        if self.device.type == "cuda":
            trace = run_phase("profile", self.candidate_path, lambda: provenance.profile_cuda(one_forward, authored))
        else:
            trace = run_phase("profile", self.candidate_path, lambda: provenance.profile_cpu(one_forward, launches))
        flat = outputs[-1] if isinstance(outputs[-1], (list, tuple)) else [outputs[-1]]
        self.session.hand_off("profiled", [t for t in flat if isinstance(t, torch.Tensor)])
        trace["authored_names"] = sorted(authored)
        self.result["provenance"] = trace
        self.result["phase_s"]["profile"] = time.perf_counter() - started
        if self.device.type == "cuda" and self.job.get("kernel_counters"):
            self.kernel_counters(inputs, authored)

    def kernel_counters(self, inputs: list, authored: set[str]) -> None:
        """The hardware counters of the candidate's kernels (advice for the next attempt, never
        evidence for the verdict); a failure here is reported, never the candidate's."""
        started = time.perf_counter()
        try:
            counters = kernel_profile.measure(self.candidate_path, os.path.join(self.exchange, "init.pt"), inputs,
                                              self.model, self.private_dir, authored,
                                              timeout_s=float(self.job.get("kernel_counters_timeout_s", 60)))
        except Exception as error:  # advisory: never the candidate's failure
            counters = {"skipped": f"{type(error).__name__}: {error}"[:500]}
        self.result["kernel_counters"] = counters
        self.result["phase_s"]["kernel_counters"] = time.perf_counter() - started

    def second_size(self) -> None:
        """The call at a second size: right there, or refused with an exception; last, since a
        kernel that faults there leaves no CUDA context to go on with."""
        answer = self.session.request({"op": "resized"})
        described = answer["inputs"]
        if described is None:
            self.session.request({"op": "resized_done"})
            return
        inputs = self.session.inputs(described)
        self.seed(answer.get("seed"))
        try:
            with torch.no_grad():
                outputs = self.model(*inputs)
                if self.device.type == "cuda":
                    torch.cuda.synchronize()
        except Exception as error:  # refusing another size is allowed; a wrong answer there is not
            self.session.request({"op": "resized_done", "refused": f"{type(error).__name__}: {error}"[:2000]})
            return
        flat = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        tensors = [t if isinstance(t, torch.Tensor) else torch.tensor(float("nan")) for t in flat]
        self.session.hand_off("resized_done", tensors)
        self.check_guards("the call at a second size")


def run_job(job: dict[str, Any], private_dir: str, sandbox_report: dict[str, Any],
            open_shared: Callable[[], tuple[dict[str, Arena], int]]) -> None:
    """Runs one job and writes result.json into the private folder, whatever happens.
    `open_shared` gives the evaluation's shared arenas and its session's socket."""
    result: dict[str, Any] = {"sandbox": sandbox_report, "findings": [], "error": None}
    try:
        arenas, session_fd = open_shared()
        Run(job, private_dir, result, arenas, session_fd).run()
    except HackFound:
        pass
    except CandidateFailure as failure:
        result["error"] = {"kind": failure.kind, "phase": failure.phase, "message": failure.message,
                           "traceback": failure.detail}
    except BaseException as error:  # the harness itself broke: report it, never hide it
        result["error"] = {"kind": "harness_error", "phase": "harness", "message": f"{type(error).__name__}: {error}",
                           "traceback": traceback.format_exc()[-6000:]}
    path = os.path.join(private_dir, "result.json")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(finite_json(result), handle)
    os.replace(path + ".tmp", path)
