"""The trusted side of an evaluation: the task's reference model, its inputs and its outputs.

`prepare` builds the reference with randomized parameters, measures one call of it (memory,
FLOPs, the buffers its forward mutates, whether it runs at a second size), plans the evaluation's
memory against what is free, and opens the live session (evaluation_session.py) that feeds the
candidate's process its inputs and judges its outputs as they come. `compare` collects what the
session judged once the process is gone. `time_reference` times the reference (eager or
torch.compile) with the candidates' method. `release` returns the worker to its memory before
the evaluation. Reference outputs never leave this process.
"""
from __future__ import annotations

import contextlib
import copy
import gc
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import torch
from torch.utils.flop_counter import FlopCounterMode

from . import memory_plan, timing
from .compare import Noise, Tolerance, rounding_noise
from .errors import UserError
from .evaluation_session import EvaluationSession, Reference, SessionReport
from .harness import apply_precision
from .input_sets import InputSets, grow_leading_dim, second_size_candidates
from .inputs import (call_seed, draws_random_numbers, flatten_outputs, is_dense, move_inputs, randomize_parameters,
                     seed_everything, tensor_bytes)
from .random_draws import Draws
from .shared_memory import Arena, DescriptorOffer, aligned, arena_bytes, put_values
from .task_loader import call_task_function, load_task


@dataclass
class Session:
    task_path: str
    device: torch.device
    precision: str
    model: torch.nn.Module
    sets: InputSets
    live: EvaluationSession | None = None
    exchange: "SharedExchange | None" = None
    model64: torch.nn.Module | None = None  # the reference in fp64, made when first needed
    model_channels_last: torch.nn.Module | None = None  # the fp32 reference in channels-last layout, likewise
    random_forward: bool = False  # its forward draws random numbers: every call is seeded alike


class SharedExchange:
    """An evaluation's shared arenas: `inputs` (the state, then the slot each call's inputs go
    into) and `outputs` (the slot each call's outputs come back through), offered once to the
    zygote together with the candidate's end of the session's socket."""

    def __init__(self, device: torch.device, input_bytes: int, output_bytes: int, folder: str | None = None):
        # The offer's socket lives in the evaluation's exchange folder, which the zygote sees too
        # (the worker's own /tmp is private to it).
        self.folder = tempfile.mkdtemp(prefix="kforge-arenas-", dir=folder)
        self.arenas: dict[str, Arena] = {}
        self.offer: DescriptorOffer | None = None
        try:
            self.arenas["inputs"] = Arena.create("inputs", device, input_bytes)
            self.arenas["outputs"] = Arena.create("outputs", device, output_bytes)
        except BaseException:
            self.close()
            raise

    def publish(self, live: EvaluationSession) -> dict[str, Any]:
        """Offers the arenas' descriptors and the candidate's end of the session; returns what the
        zygote needs to fetch them."""
        for arena in self.arenas.values():
            arena.synchronize()
        descriptors = [arena.descriptor for arena in self.arenas.values()] + [live.candidate_descriptor()]
        self.offer = DescriptorOffer(self.folder, descriptors, served=live.forget_candidate_end)
        return {"socket": self.offer.path, "arenas": [arena.describe() for arena in self.arenas.values()],
                "session": True}

    def close(self) -> None:
        if self.offer is not None:
            self.offer.close()
        for arena in self.arenas.values():
            arena.close()
        self.arenas.clear()
        shutil.rmtree(self.folder, ignore_errors=True)


def _describe(tensors: list[torch.Tensor]) -> list[dict[str, Any]]:
    return [{"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
             "dense": is_dense(t)} for t in tensors]


def _count_flops(model: torch.nn.Module, inputs: list) -> int:
    try:
        counter = FlopCounterMode(display=False)
        with counter, torch.no_grad():
            model(*inputs)
        return int(counter.get_total_flops())
    except Exception:
        return 0


def _graph_cache_counts() -> dict[str, int]:
    """The graphs Inductor has compiled in this process so far, found in its compile cache
    ("hits") and compiled anew ("misses")."""
    from torch._dynamo.utils import counters
    inductor = counters["inductor"]
    return {"hits": inductor["fxgraph_cache_hit"], "misses": inductor["fxgraph_cache_miss"]}


@contextlib.contextmanager
def _empty_compile_caches() -> Iterator[None]:
    """Inductor's and Triton's compile caches in a new empty folder while a torch.compile is
    compiled and timed, and the folder removed after. Each timing so compiles as a user's first
    torch.compile does, a cache miss with the cache on. A program loaded from the workspace's cache
    (kept between runs) can run slower: on an H100 ShuffleNet's took 11.21-11.77 ms from the cache
    against 10.69-11.17 ms compiled first (bench/RESULTS.md, thirty-fourth session)."""
    folder = tempfile.mkdtemp(prefix="kforge-timed-compile-")
    fresh = {"TORCHINDUCTOR_CACHE_DIR": os.path.join(folder, "inductor"),
             "TRITON_CACHE_DIR": os.path.join(folder, "triton")}
    saved = {name: os.environ.get(name) for name in fresh}
    os.environ.update(fresh)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(folder, ignore_errors=True)


def _under_bf16_autocast(model: Any, device_type: str) -> Any:
    def call(*args: Any) -> Any:
        with torch.autocast(device_type, dtype=torch.bfloat16):
            return model(*args)
    return call


def _buffers(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: buffer.detach().clone() for name, buffer in model.named_buffers()}


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        return bool(torch.equal(a.nan_to_num(0.5), b.nan_to_num(0.5)) and torch.equal(a.isnan(), b.isnan()))
    return bool(torch.equal(a, b))


def _doubled(values: list) -> list:
    return [v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in values]


def _channels_last(values: list) -> list:
    return [v.contiguous(memory_format=torch.channels_last) if isinstance(v, torch.Tensor) and v.dim() == 4 else v
            for v in values]


def _has_4d_tensors(model: torch.nn.Module, inputs: list) -> bool:
    """Whether the channels-last layout changes anything: a 4-D input, parameter or buffer."""
    return any(isinstance(v, torch.Tensor) and v.dim() == 4 for v in inputs) or \
        any(t.dim() == 4 for t in list(model.parameters()) + list(model.buffers()))


def _larger(a: torch.Tensor | None, b: torch.Tensor | None) -> torch.Tensor | None:
    return b if a is None else a if b is None else torch.maximum(a, b)


class ReferenceWorker:
    def __init__(self, device: str):
        self.device = torch.device(device)
        self.sessions: dict[str, Session] = {}

    # -- the reference --------------------------------------------------------------------------
    def _reference_outputs(self, model: torch.nn.Module, inputs: list, where: str) -> list[torch.Tensor]:
        with torch.no_grad():
            try:
                output = model(*move_inputs(inputs, self.device))
            except Exception as error:
                raise UserError(f"the reference Model's forward failed on {where}: {type(error).__name__}: {error}") from None
        return [t.detach().contiguous().clone() for t in flatten_outputs(output, "the reference Model")]

    def _noise_then_release(self, session: Session, *args: Any) -> Noise | None:
        """The noise, then the fp64 and channels-last calls' cached blocks go back to the device
        (they are several times a call's tensors, and the candidate's process runs beside)."""
        try:
            return self._noise(session, *args)
        finally:
            memory_plan.release_cached(self.device)

    def _noise(self, session: Session, buffer_names: list[str], inputs: list, outputs: list[torch.Tensor],
               buffers: tuple[list[torch.Tensor], Callable[[], Iterable[list]], list[torch.Tensor] | None],
               seed: int | None = None) -> Noise | None:
        """How far honest fp32 computations of this call stray from the exact result, per floating
        output and, given the buffers after the call, per floating mutated buffer (None for the
        others): |fp32 reference - fp64 reference|, and where the model has 4-D tensors the larger
        of that and |the reference in channels-last layout - fp64| (other convolution and
        normalization kernels: an honest fp32 candidate may round as either does). None when the
        reference cannot run in fp64 (a dtype fixed inside its forward, or no memory).
        `buffers` is (the mutated buffers the fp32 reference started from, the inputs of its calls
        since, its buffers after this call or None): each copy starts from the same buffers and
        goes through the same calls, so the state a forward reads and the running statistics it
        updates differ only by the rounding of those calls.
        A forward that draws random numbers was called from `seed`: each copy is called from it
        too, the fp64 one drawing in fp32 (random_draws.py), and a copy counts only where it drew
        what the fp32 reference draws again from that seed. Such a forward that also mutates
        buffers gets no noise (its earlier calls drew from seeds of their own)."""
        start, earlier, after = buffers
        drawn = None
        if seed is not None:
            if buffer_names:
                return None
            drawn = Draws(seed)
            try:
                with drawn:
                    again = self._reference_outputs(session.model, inputs, "a seeded call")
            except UserError:
                return None
            if len(again) != len(outputs) or not all(_same(a, o) for a, o in zip(again, outputs)):
                return None
        try:
            if session.model64 is None:
                session.model64 = copy.deepcopy(session.model).double()
            exact = self._replayed(session.model64, buffer_names, start, earlier, inputs, _doubled,
                                   None if drawn is None else Draws(seed, narrow=True), drawn)
        except Exception:
            return None
        if exact is None or len(exact) != len(outputs):
            return None
        noise = Noise(outputs=[rounding_noise(o, e) for o, e in zip(outputs, exact)])
        if after is not None:
            noise.buffers = [rounding_noise(a, session.model64.get_buffer(name)) for name, a in zip(buffer_names, after)]
        if not _has_4d_tensors(session.model, inputs):
            return noise
        try:
            if session.model_channels_last is None:
                session.model_channels_last = copy.deepcopy(session.model).to(memory_format=torch.channels_last)
            other = self._replayed(session.model_channels_last, buffer_names, start, earlier, inputs, _channels_last,
                                   None if drawn is None else Draws(seed), drawn)
        except Exception:  # the layout is only a second opinion: without it, the fp64 noise alone
            return noise
        if other is None or len(other) != len(exact):
            return noise
        noise.outputs = [_larger(n, rounding_noise(o, e)) for n, o, e in zip(noise.outputs, other, exact)]
        if after is not None:
            noise.buffers = [_larger(n, rounding_noise(session.model_channels_last.get_buffer(name), session.model64.get_buffer(name)))
                             for n, name in zip(noise.buffers, buffer_names)]
        return noise

    def _replayed(self, model: torch.nn.Module, buffer_names: list[str], start: list[torch.Tensor],
                  earlier: Callable[[], Iterable[list]], inputs: list, prepare: Callable[[list], list],
                  draws: Draws | None = None, expected: Draws | None = None) -> list[torch.Tensor] | None:
        """`model`'s outputs on `inputs`, its mutated buffers set to `start` and taken through the
        calls on `earlier` first; `prepare` makes each call's inputs (moved to the device). With
        `draws`, the last call runs inside it and the outputs count only where it drew what
        `expected` did (None otherwise)."""
        def call(values: list) -> list[torch.Tensor]:
            with torch.no_grad():
                return flatten_outputs(model(*prepare(move_inputs(values, self.device))), "the reference Model")

        with torch.no_grad():
            for name, value in zip(buffer_names, start):
                model.get_buffer(name).copy_(value)
        for values in earlier():
            call(values)
        if draws is None:
            return call(inputs)
        with draws:
            result = call(inputs)
        return result if expected is not None and draws.matches(expected) else None

    def _on_device(self) -> Any:
        """Tensor factories in the task's code default to the GPU inside this context."""
        return torch.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext()

    def _build(self, request: dict[str, Any]) -> tuple[Any, torch.nn.Module, dict[str, torch.Tensor], list]:
        path = request["task_path"]
        task = load_task(path, cpu_sizes=bool(request.get("cpu_sizes", False)))
        seed_everything(int(request["seeds"][0]))
        init_inputs = call_task_function(task, path, "get_init_inputs")
        try:
            with self._on_device():  # large layers initialise on the GPU in milliseconds
                model = task.Model(*init_inputs)
        except Exception as error:
            raise UserError(f"{path}: Model(*get_init_inputs()) raised {type(error).__name__}: {error}") from None
        if not isinstance(model, torch.nn.Module):
            raise UserError(f"{path}: Model must be a torch.nn.Module")
        model = model.to(self.device)
        randomize_parameters(model, int(request["seeds"][0]) ^ 0x5EED)
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return task, model, state, init_inputs

    # -- requests -------------------------------------------------------------------------------
    def prepare(self, request: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        path, exchange = request["task_path"], request["exchange_dir"]
        apply_precision("fp32")  # the reference outputs are computed in full fp32
        task, model, state, init_inputs = self._build(request)
        torch.save(init_inputs, os.path.join(exchange, "init.pt"))
        timing_seed = request.get("timing_seed")
        sets = InputSets(task, path, self.device, [int(s) for s in request["seeds"]],
                         None if timing_seed is None else int(timing_seed), bool(request.get("distributions", True)))
        if not sets.has_float_inputs():
            sets.drop_distributions()
        session = Session(path, self.device, request.get("precision", "fp32"), model, sets)
        self.sessions[request["eval_id"]] = session
        measured = self._measure(session, state)
        model.load_state_dict(state)  # the measuring calls moved the buffers a forward mutates
        result: dict[str, Any] = {
            "outputs": measured["outputs"], "input_bytes": measured["input_bytes"],
            "output_bytes": measured["output_bytes"], "parameter_bytes": measured["parameter_bytes"],
            "flops": measured["flops"], "mutated_buffers": measured["mutated_buffers"],
            "second_size": measured["second_size"], "sets": [spec.to_json() for spec in sets.specs.values()],
            "cpu_sizes_applied": bool(request.get("cpu_sizes", False)) and hasattr(task, "KFORGE_CPU_SIZES"),
        }
        if request.get("candidate", True):
            gc.collect()
            memory_plan.release_cached(self.device)
            plan = memory_plan.plan_evaluation(measured["footprint"], *memory_plan.free_memory(self.device),
                                               memory_plan.reserve_for(self.device))
            result["memory"] = plan.to_json()
            if not plan.fits:
                result["does_not_fit"] = plan.refusal(self.device.type)
            else:
                result.update(self._open_session(session, state, measured, request))
        result["prepare_s"] = time.perf_counter() - started
        return result

    def _measure(self, session: Session, state: dict[str, torch.Tensor]) -> dict[str, Any]:
        """One call of the reference on seed0, measured: its bytes, transient peak, FLOPs and the
        buffers it mutates; then the second size it accepts, if any."""
        model, sets = session.model, session.sets
        inputs = sets.make("seed0")
        before = _buffers(model)
        with memory_plan.PeakMeter(self.device) as meter:
            outputs, session.random_forward = draws_random_numbers(
                lambda: self._reference_outputs(model, inputs, "input set seed0"))
        after = dict(model.named_buffers())
        mutated = [name for name, value in before.items() if not _same(value, after[name])]
        input_bytes, output_bytes = tensor_bytes(inputs), tensor_bytes(outputs)
        flops = _count_flops(model, inputs)
        second = {"grown_inputs": [], "leading_dim": None}
        resized_in = resized_out = 0
        for grown in second_size_candidates(inputs):
            try:
                resized = grow_leading_dim(inputs, grown)
                resized_outputs = self._reference_outputs(model, resized, "the second size")
            except (UserError, RuntimeError):
                continue
            sets.set_second_size(grown)
            second = {"grown_inputs": grown, "leading_dim": [int(inputs[grown[0]].shape[0]), int(resized[grown[0]].shape[0])]}
            resized_in, resized_out = arena_bytes(resized), arena_bytes(resized_outputs)
            del resized, resized_outputs
            break
        parameter_bytes = tensor_bytes(list(state.values()))
        buffer_bytes = arena_bytes([after[name] for name in mutated])
        footprint = memory_plan.Footprint(
            parameter_bytes=arena_bytes(list(state.values())),
            input_bytes=max(arena_bytes(inputs), resized_in),
            output_bytes=max(arena_bytes(outputs), resized_out) + buffer_bytes,
            transient_bytes=max(0, meter.peak_bytes - output_bytes))
        return {"outputs": _describe(outputs), "input_bytes": input_bytes, "output_bytes": output_bytes,
                "parameter_bytes": parameter_bytes, "flops": flops, "mutated_buffers": mutated,
                "second_size": second, "footprint": footprint}

    def _open_session(self, session: Session, state: dict[str, torch.Tensor], measured: dict[str, Any],
                      request: dict[str, Any]) -> dict[str, Any]:
        footprint: memory_plan.Footprint = measured["footprint"]
        state_bytes = footprint.parameter_bytes
        session.exchange = SharedExchange(self.device, state_bytes + footprint.input_bytes,
                                          max(footprint.output_bytes, aligned(1)), request.get("exchange_dir"))
        inputs_arena = session.exchange.arenas["inputs"]
        state_described = dict(zip(state, put_values(inputs_arena, list(state.values()))))
        model = session.model
        reference = Reference(model, lambda inputs: self._reference_outputs(model, inputs, "a checked call"),
                              measured["mutated_buffers"],
                              lambda inputs, outputs, buffers, seed: self._noise_then_release(
                                  session, measured["mutated_buffers"], inputs, outputs, buffers, seed))
        session.live = EvaluationSession(session.sets, reference, Tolerance.from_json(request["tolerance"]),
                                         session.exchange.arenas, inputs_arena.used,
                                         timing=request.get("timing_seed") is not None,
                                         profile=bool(request.get("profile", True)),
                                         random_forward=session.random_forward)
        shared = session.exchange.publish(session.live)
        memory_plan.start_reserved_peak(self.device)
        session.live.start()
        return {"shared": shared, "state": state_described}

    def _session(self, request: dict[str, Any]) -> Session:
        session = self.sessions.get(request["eval_id"])
        if session is None:
            raise KeyError(f"no prepared evaluation {request['eval_id']}")
        return session

    def compare(self, request: dict[str, Any]) -> dict[str, Any]:
        """What the live session judged, once the candidate's process is gone; `tampered` when the
        process broke the session's protocol or left part of its run unreported."""
        session = self._session(request)
        if session.live is None:
            raise ValueError("the evaluation was prepared without a candidate session")
        report = session.live.finish(timeout_s=60)
        if report.internal_error:
            raise RuntimeError(f"the evaluation session failed: {report.internal_error}")
        clean = bool(request.get("clean_run", True))
        problem = report.tampered or (_missing(report, session.live, request) if clean else None)
        if problem:
            return {"tampered": problem}
        result: dict[str, Any] = {"sets": report.sets, "probes": report.probes, "repeat": report.repeat,
                                  "input_mutations": report.input_mutations,
                                  "skipped_distributions": report.skipped_distributions,
                                  "resized": report.resized, "timed_calls": report.timed_calls,
                                  "handoff_gaps_ms": report.handoff_gaps_ms,
                                  "random_forward": session.random_forward,
                                  # against the plan's trusted_bytes, beside the reference's state
                                  "trusted_reserved_peak_bytes": report.reserved_peak_bytes}
        # A process that failed is judged by how it failed; its timed calls are not worth a reference run.
        result["timed"] = session.live.judge_timed() if clean else []
        # The arenas are not needed any more: their memory goes back before the reference is timed.
        session.exchange.close()
        session.exchange = None
        return result

    def time_reference(self, request: dict[str, Any]) -> dict[str, Any]:
        session = self._session(request)
        if "timing" not in session.sets.specs:
            raise ValueError("the evaluation was prepared without a timing input set")
        mode = request.get("mode", "eager")
        apply_precision(session.precision)
        model: Any = session.model
        autocast = session.precision == "bf16"
        compile_s = 0.0
        inputs = session.sets.make("timing")
        graphs = None
        with contextlib.ExitStack() as scope:
            if mode.startswith("compile"):
                scope.enter_context(_empty_compile_caches())
                before = _graph_cache_counts()
                started = time.perf_counter()
                model = torch.compile(session.model, mode="max-autotune" if mode == "compile_max_autotune" else None)
                with torch.no_grad():
                    model(*inputs)
                compile_s = time.perf_counter() - started
                graphs = {key: count - before[key] for key, count in _graph_cache_counts().items()}
            measured = self._time_model(session, request, model, inputs, autocast)
        measured["compile_s"] = compile_s
        if graphs is not None:
            measured["compile_cache"] = graphs
        measured["mode"] = mode
        return measured

    def _time_model(self, session: Any, request: dict[str, Any], model: Any, inputs: list, autocast: bool) -> dict[str, Any]:
        # fp32 and tf32 time the model itself: no wrapper in the timed call.
        call = _under_bf16_autocast(model, self.device.type) if autocast else model
        try:
            # A forward that draws random numbers is seeded before each call, as the candidate's
            # is, so both pay for it alike.
            base = int(request.get("timing_seed") or 0)
            measured = timing.time_calls(call, inputs, self.device, timing.TimingConfig.from_json(request.get("config")),
                                         timing.LocalHandOff(self.device),
                                         seed_for_shift=(lambda shift: call_seed(base, f"shift:{shift}"))
                                         if session.random_forward else None)
        finally:
            apply_precision("fp32")
        return measured

    def release(self, request: dict[str, Any]) -> dict[str, Any]:
        session = self.sessions.pop(request["eval_id"], None)
        if session is not None:
            if session.live is not None:
                session.live.close()
            if session.exchange is not None:
                session.exchange.close()
        del session
        # The evaluation's object graphs (models, fp64 copies, torch.compile's) are collected now,
        # at the evaluation's cost, not by a later full collection inside another request.
        gc.collect()
        memory_plan.release_cached(self.device)
        return {"released": True, "memory": memory_plan.process_memory(self.device)}


def _missing(report: SessionReport, live: EvaluationSession, request: dict[str, Any]) -> str | None:
    """What the candidate's process left unreported although its run ended cleanly (its harness
    reports every call, so a gap means the run was tampered with)."""
    if not report.ended:
        return "the candidate's process ended its run without finishing the evaluation's protocol"
    timed = int(request.get("timing_calls", 0))
    if live.expect_timing and (not report.timing_started or report.timed_calls != timed or timed == 0):
        return (f"the candidate's process reported {timed} timed calls but handed over the outputs of "
                f"{report.timed_calls}; every timed call's outputs are handed over as it ends")
    if live.expect_profile and request.get("profiled") and report.profiled is None:
        return "the candidate's process profiled a call whose outputs it did not hand over"
    if report.resized is None:
        return "the candidate's process skipped the call at the second size"
    return None
