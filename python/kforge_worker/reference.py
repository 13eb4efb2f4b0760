"""The trusted side of an evaluation: the task's reference model, its inputs and its outputs.

`prepare` builds the reference with randomized parameters, writes the input sets a candidate may
read into the exchange folder, and keeps the reference outputs in this process only. `compare`
loads a candidate's saved outputs (weights-only, so a file cannot run code here) and judges them.
`time_reference` times the reference (eager or torch.compile) with the candidates' method.
"""
from __future__ import annotations

import contextlib
import copy
import gc
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch.utils.flop_counter import FlopCounterMode

from . import timing
from .compare import Tolerance, bitwise_equal, compare_outputs
from .errors import UserError
from .harness import apply_precision
from .inputs import (DISTRIBUTIONS, check_input_values, derive_distribution, flatten_outputs, is_dense, move_inputs,
                     randomize_parameters, rolled_inputs, seed_everything, tensor_bytes)
from . import output_sample
from .shared_memory import Arena, DescriptorOffer, arena_bytes
from .task_loader import call_task_function, load_task
from .tensor_files import load_values, save_tensor, save_values

ARENA_LIMIT_BYTES = {"cuda": 16 << 30, "cpu": 1 << 30}  # beyond this, tensors travel as files


@dataclass
class InputSet:
    name: str
    seed: int
    distribution: str
    inputs: list
    files: list[dict[str, Any]] = field(default_factory=list)  # where a candidate reads them
    outputs: list[torch.Tensor] = field(default_factory=list)


@dataclass
class Session:
    task_path: str
    device: torch.device
    precision: str
    model: torch.nn.Module
    sets: dict[str, InputSet]
    timing_set: InputSet | None
    keys: torch.Tensor | None = None  # where sampled outputs are looked at (output_sample)
    model64: torch.nn.Module | None = None  # the reference in fp64, made when first needed
    noise: dict[str, list | None] = field(default_factory=dict)  # per set: the fp32 reference's noise
    exchange: "SharedExchange | None" = None


class SharedExchange:
    """An evaluation's shared arenas: `inputs` (what the candidate reads) and `outputs` (where it
    writes its results), offered once to the zygote, which passes them to the candidate."""

    def __init__(self, device: torch.device, input_bytes: int, output_bytes: int):
        self.folder = tempfile.mkdtemp(prefix="kforge-arenas-")
        self.arenas: dict[str, Arena] = {}
        self.offer: DescriptorOffer | None = None
        try:
            self.arenas["inputs"] = Arena.create("inputs", device, input_bytes)
            self.arenas["outputs"] = Arena.create("outputs", device, output_bytes)
        except BaseException:
            self.close()
            raise

    def publish(self) -> dict[str, Any]:
        """Makes the arenas' contents visible and offers their descriptors; returns what the
        zygote needs to fetch them."""
        for arena in self.arenas.values():
            arena.synchronize()
        self.offer = DescriptorOffer(self.folder, [arena.descriptor for arena in self.arenas.values()])
        return {"socket": self.offer.path, "arenas": [arena.describe() for arena in self.arenas.values()]}

    def close(self) -> None:
        if self.offer is not None:
            self.offer.close()
        for arena in self.arenas.values():
            arena.close()
        self.arenas.clear()
        shutil.rmtree(self.folder, ignore_errors=True)


def _shared_exchange(device: torch.device, input_bytes: int, output_bytes: int) -> SharedExchange | None:
    """Arenas for an evaluation, unless they would be too large, KFORGE_SHARED_MEMORY=0 turns
    them off, or the machine cannot make them (then tensors travel as files, as they always can)."""
    if os.environ.get("KFORGE_SHARED_MEMORY", "1") == "0":
        return None
    limit = ARENA_LIMIT_BYTES.get(device.type, 0)
    if device.type == "cuda":
        limit = min(limit, torch.cuda.get_device_properties(device).total_memory // 8)
    if input_bytes + output_bytes > limit:
        return None
    try:
        return SharedExchange(device, input_bytes, output_bytes)
    except (OSError, RuntimeError):
        return None


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


def _under_bf16_autocast(model: Any, device_type: str) -> Any:
    def call(*args: Any) -> Any:
        with torch.autocast(device_type, dtype=torch.bfloat16):
            return model(*args)
    return call


class ReferenceWorker:
    PROBE_SOURCES = ("seed1", "swapped")

    def __init__(self, device: str):
        self.device = torch.device(device)
        self.sessions: dict[str, Session] = {}

    def _reference_outputs(self, session_model: torch.nn.Module, inputs: list, where: str) -> list[torch.Tensor]:
        with torch.no_grad():
            try:
                output = session_model(*move_inputs(inputs, self.device))
            except Exception as error:
                raise UserError(f"the reference Model's forward failed on {where}: {type(error).__name__}: {error}") from None
        return [t.detach().clone() for t in flatten_outputs(output, "the reference Model")]

    def _noise(self, session: Session, inputs: list, outputs: list[torch.Tensor]) -> list | None:
        """|fp32 reference - fp64 reference| per floating output (None for the others), or None
        when the reference cannot run in fp64 (a dtype fixed inside its forward)."""
        try:
            if session.model64 is None:
                session.model64 = copy.deepcopy(session.model).double()
            doubled = [v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                       for v in move_inputs(inputs, self.device)]
            with torch.no_grad():
                exact = flatten_outputs(session.model64(*doubled), "the reference Model")
        except Exception:
            return None
        if len(exact) != len(outputs):
            return None
        return [(o.double() - e.double()).abs() if o.is_floating_point() and e.shape == o.shape else None
                for o, e in zip(outputs, exact)]

    def _set_noise(self, session: Session, name: str) -> Callable[[], list | None]:
        def noise() -> list | None:
            if name not in session.noise:
                entry = session.sets[name]
                session.noise[name] = self._noise(session, entry.inputs, entry.outputs)
            return session.noise[name]
        return noise

    def _on_device(self) -> Any:
        """Tensor factories in the task's code default to the GPU inside this context."""
        return torch.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext()

    def _task_inputs(self, task: Any, path: str, seed: int) -> list:
        """get_inputs() under `seed`, created directly on the device where it is a GPU (the task's
        factory calls follow the default device), so big inputs cost no host work."""
        seed_everything(seed)
        with self._on_device():
            inputs = call_task_function(task, path, "get_inputs")
        check_input_values(inputs, f"{path}: get_inputs()")
        return move_inputs(inputs, self.device)

    @staticmethod
    def _describe_set(entry: InputSet, base: InputSet) -> dict[str, Any]:
        described: dict[str, Any] = {"name": entry.name, "seed": entry.seed, "distribution": entry.distribution}
        if entry.distribution == "task":
            described["inputs"] = entry.files
        else:
            described["derive"] = {"from": base.files, "kind": entry.distribution, "seed": entry.seed}
        return described

    def _probes(self, sets: dict[str, InputSet]) -> list[dict[str, Any]]:
        """In-place rewrites of seed0's input tensors after its call: with all of another seed's
        values (caught: caches keyed on tensor identity) and with two elements swapped (caught:
        caches keyed on a sample of values)."""
        return [{"name": f"probe_{source}", "target": "seed0", "source": source,
                 "set": self._describe_set(sets[source], sets["seed0"])} for source in self._probe_sources(sets)]

    @classmethod
    def _probe_sources(cls, sets: dict[str, InputSet]) -> list[str]:
        return [source for source in cls.PROBE_SOURCES if source in sets]

    @staticmethod
    def _full_sets(sets: dict[str, InputSet]) -> list[str]:
        """Calls whose outputs are compared whole: the task's seeds, and the probe that swaps two
        input elements, whose right answer may differ from the old one in a single element (a
        cache keyed on a few sampled input values returns the old answer there)."""
        return [name for name, entry in sets.items() if entry.distribution == "task"] + ["probe_swapped"]

    def prepare(self, request: dict[str, Any]) -> dict[str, Any]:
        path, exchange = request["task_path"], request["exchange_dir"]
        precision = request.get("precision", "fp32")
        seeds = [int(s) for s in request["seeds"]]
        started = time.perf_counter()
        task = load_task(path, cpu_sizes=bool(request.get("cpu_sizes", False)))
        seed_everything(seeds[0])
        init_inputs = call_task_function(task, path, "get_init_inputs")
        try:
            with self._on_device():  # large layers initialise on the GPU in milliseconds
                model = task.Model(*init_inputs)
        except Exception as error:
            raise UserError(f"{path}: Model(*get_init_inputs()) raised {type(error).__name__}: {error}") from None
        if not isinstance(model, torch.nn.Module):
            raise UserError(f"{path}: Model must be a torch.nn.Module")
        model = model.to(self.device)
        randomize_parameters(model, seeds[0] ^ 0x5EED)
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        apply_precision("fp32")  # the reference outputs are computed in full fp32
        torch.save(init_inputs, os.path.join(exchange, "init.pt"))

        sets: dict[str, InputSet] = {}
        for seed in seeds:
            name = f"seed{len(sets)}"
            sets[name] = InputSet(name, seed, "task", self._task_inputs(task, path, seed))
        base = sets["seed0"].inputs
        if request.get("distributions", True) and any(isinstance(v, torch.Tensor) and v.is_floating_point() for v in base):
            for index, kind in enumerate(DISTRIBUTIONS):
                seed = (seeds[0] + index + 1) % (1 << 62)
                sets[kind] = InputSet(kind, seed, kind, derive_distribution(base, kind, seed))
        skipped = []
        for entry in list(sets.values()):
            entry.outputs = self._reference_outputs(model, entry.inputs, f"input set {entry.name}")
            finite = all(bool(torch.isfinite(t).all()) for t in entry.outputs if t.is_floating_point())
            if entry.distribution != "task" and not finite:
                skipped.append(entry.name)
                del sets[entry.name]

        timing_set = None
        if request.get("timing_seed") is not None:
            timing_set = InputSet("timing", int(request["timing_seed"]), "task",
                                  self._task_inputs(task, path, int(request["timing_seed"])))

        first = sets["seed0"]
        device_inputs = move_inputs(first.inputs, self.device)
        flops = _count_flops(model, device_inputs)
        param_bytes = tensor_bytes(list(state.values()))
        keys = output_sample.make_keys()
        session = Session(path, self.device, precision, model, sets, timing_set, keys=keys.to(self.device))
        self.sessions[request["eval_id"]] = session
        # Checked calls (each set, the repeat, each probe) and kept timed calls.
        calls = len(sets) + 1 + len(self._probe_sources(sets)) + timing.TimingConfig().kept_outputs
        session.exchange = self._make_exchange(state, sets, timing_set, keys, calls)
        arena = session.exchange.arenas["inputs"] if session.exchange else None
        state_files = {name: save_tensor(exchange, f"state_{index}.bin", tensor, arena)
                       for index, (name, tensor) in enumerate(state.items())}
        for entry in sets.values():
            if entry.distribution == "task":
                entry.files = save_values(exchange, f"set_{entry.name}", entry.inputs, arena)
        if timing_set is not None:
            timing_set.files = save_values(exchange, "set_timing", timing_set.inputs, arena)
        sample_keys = save_tensor(exchange, "sample_keys.bin", keys, arena)
        return {
            "shared": session.exchange.publish() if session.exchange else None,
            "sample": {"keys": sample_keys, "full_sets": self._full_sets(sets)},
            "sets": [self._describe_set(s, sets["seed0"]) for s in sets.values()],
            "probes": self._probes(sets),
            "state": state_files,
            "timing_inputs": timing_set.files if timing_set else None,
            "skipped_distributions": skipped,
            "outputs": _describe(first.outputs),
            "input_bytes": tensor_bytes(first.inputs),
            "output_bytes": tensor_bytes(first.outputs),
            "parameter_bytes": param_bytes,
            "flops": flops,
            "cpu_sizes_applied": bool(request.get("cpu_sizes", False)) and hasattr(task, "KFORGE_CPU_SIZES"),
            "prepare_s": time.perf_counter() - started,
        }

    def _make_exchange(self, state: dict[str, torch.Tensor], sets: dict[str, InputSet], timing_set: InputSet | None,
                       keys: torch.Tensor, calls: int) -> SharedExchange | None:
        """Arenas sized for every tensor a candidate reads and the outputs of `calls` calls."""
        given = list(state.values()) + [keys] + [v for entry in sets.values() if entry.distribution == "task"
                                                 for v in entry.inputs]
        if timing_set is not None:
            given += timing_set.inputs
        return _shared_exchange(self.device, arena_bytes(given), arena_bytes(sets["seed0"].outputs) * calls)

    def _session(self, request: dict[str, Any]) -> Session:
        session = self.sessions.get(request["eval_id"])
        if session is None:
            raise KeyError(f"no prepared evaluation {request['eval_id']}")
        return session

    @staticmethod
    def _load_outputs(session: Session, folder: str, described: Any) -> list:
        """A candidate's saved outputs, copied out of the output arena or read from its files."""
        if not isinstance(described, list) or not all(isinstance(meta, dict) for meta in described):
            raise ValueError("malformed description of candidate outputs")
        arenas = {"outputs": session.exchange.arenas["outputs"]} if session.exchange else {}
        return output_sample.wrap_loaded(load_values(folder, described, session.device, arenas), described)

    @staticmethod
    def _same_bits(later: list, earlier: list, session: Session) -> bool:
        """Whether a later call's outputs (maybe sampled) carry the earlier call's very bits."""
        return bitwise_equal(output_sample.plain(later),
                             output_sample.like(output_sample.plain(earlier), later, session.keys))

    @staticmethod
    def _missing_outputs(session: Session, request: dict[str, Any]) -> list[str]:
        """Calls whose outputs the candidate's process should have reported and did not. Its
        harness reports every one after a clean run, so a gap means the report was tampered with
        (dropping the outputs of the calls that would fail is a way to pass)."""
        files = request["outputs"] if isinstance(request.get("outputs"), dict) else {}
        expected = list(session.sets) + [probe["name"] for probe in request.get("probes", [])]
        if request.get("repeat_set") in session.sets:
            expected.append("repeat")
        missing = [name for name in expected if name not in files]
        kept = timing.TimingConfig().kept_outputs
        if request.get("timing_ran") and len(request.get("timed", [])) < kept:
            missing.append(f"timed calls ({len(request.get('timed', []))} of {kept})")
        return missing

    def compare(self, request: dict[str, Any]) -> dict[str, Any]:
        """Judges every saved output; returns per-set reports plus the probe and repeat facts, or
        `tampered` when the candidate's report of its outputs is incomplete or malformed."""
        session = self._session(request)
        missing = self._missing_outputs(session, request)
        if missing:
            return {"tampered": f"the candidate's process reported no outputs for {', '.join(missing)}; its harness "
                                "reports every call, so the report was changed"}
        try:
            return self._compare(session, request)
        except (ValueError, KeyError, TypeError, OSError) as error:
            return {"tampered": f"the candidate's process described its outputs in a way that cannot be read "
                                f"({type(error).__name__}: {error})"}

    def _compare(self, session: Session, request: dict[str, Any]) -> dict[str, Any]:
        tolerance = Tolerance.from_json(request["tolerance"])
        folder, files = request["private_dir"], request["outputs"]
        reports: dict[str, Any] = {}
        loaded: dict[str, list] = {}
        for name, entry in session.sets.items():
            loaded[name] = self._load_outputs(session, folder, files[name])
            reports[name] = compare_outputs(loaded[name], entry.outputs, tolerance, self._set_noise(session, name),
                                            session.keys)
        result: dict[str, Any] = {"sets": reports, "probes": {}}
        repeat_set = request.get("repeat_set")
        if repeat_set in session.sets:
            again = self._load_outputs(session, folder, files["repeat"])
            result["repeat"] = compare_outputs(again, session.sets[repeat_set].outputs, tolerance,
                                               self._set_noise(session, repeat_set), session.keys)
            result["repeat"]["bitwise_equal_to_first"] = self._same_bits(again, loaded.get(repeat_set, []), session)
        for probe in request.get("probes", []):
            if probe["source"] not in session.sets:
                continue
            probed = self._load_outputs(session, folder, files[probe["name"]])
            expected = session.sets[probe["source"]].outputs
            report = compare_outputs(probed, expected, tolerance, self._set_noise(session, probe["source"]),
                                     session.keys)
            report["unchanged_from_before_rewrite"] = self._same_bits(probed, loaded.get(probe["target"], []), session)
            report["reference_changed"] = not bitwise_equal(expected, session.sets[probe["target"]].outputs)
            report["target"] = probe["target"]
            result["probes"][probe["name"]] = report
        timed = []
        for kept in request.get("timed", []):
            if session.timing_set is None:
                break
            outputs = self._load_outputs(session, folder, files[kept["key"]])
            rolled = rolled_inputs(session.timing_set.inputs, kept["shift"])
            expected = self._reference_outputs(session.model, rolled, f"timed call {kept['call']}")
            noise = lambda rolled=rolled, expected=expected: self._noise(session, rolled, expected)  # noqa: E731
            timed.append({"call": kept["call"], "shift": kept["shift"],
                          **compare_outputs(outputs, expected, tolerance, noise, session.keys)})
        result["timed"] = timed
        return result

    def time_reference(self, request: dict[str, Any]) -> dict[str, Any]:
        session = self._session(request)
        if session.timing_set is None:
            raise ValueError("the evaluation was prepared without a timing input set")
        mode = request.get("mode", "eager")
        apply_precision(session.precision)
        model: Any = session.model
        autocast = session.precision == "bf16"
        compile_s = 0.0
        if mode.startswith("compile"):
            started = time.perf_counter()
            model = torch.compile(session.model, mode="max-autotune" if mode == "compile_max_autotune" else None)
            with torch.no_grad():
                model(*move_inputs(session.timing_set.inputs, self.device))
            compile_s = time.perf_counter() - started
        # fp32 and tf32 time the model itself: no wrapper in the timed call.
        call = _under_bf16_autocast(model, self.device.type) if autocast else model
        try:
            measured = timing.time_calls(call, move_inputs(session.timing_set.inputs, self.device), self.device,
                                         timing.TimingConfig.from_json(request.get("config")))
        finally:
            apply_precision("fp32")
        measured["compile_s"] = compile_s
        measured["mode"] = mode
        return measured

    def release(self, request: dict[str, Any]) -> dict[str, Any]:
        session = self.sessions.pop(request["eval_id"], None)
        if session is not None and session.exchange is not None:
            session.exchange.close()
        del session
        # The evaluation's object graphs (models, fp64 copies, torch.compile's) are collected now,
        # at the evaluation's cost, not by a later full collection inside another request.
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        return {"released": True}
