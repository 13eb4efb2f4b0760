"""The trusted side of one candidate's run, live while the candidate's process runs.

The trusted worker serves the candidate's process on a private socket pair (its end reaches the
process with the shared arenas' descriptors). For each checked call it makes the call's inputs
from their seed, runs the reference on its own copy of them, copies them into the shared input
slot and says which call is next; the process calls the candidate on views of the slot and hands
the outputs back through the shared output slot; the trusted worker judges them there and then,
chunk by chunk, while the process waits. So neither side ever holds more than one call's tensors,
and everything about a call is judged as it was at the end of that call:

- outputs against the reference's (compare.py), and the buffers the reference's forward mutates;
- the input slot against the fingerprint of what was put there (the candidate wrote its inputs);
- the repeated call and the in-place probes against the first call's fingerprints (memoization);
- the timed calls: every one is handed over when it ends, and the trusted worker keeps a secret
  sample of a few chosen at random (reservoir sampling), so the process can neither tell which
  are looked at nor fix them up later; they are judged after the process is gone;
- the second size: the task's inputs with the leading dimension one longer; the candidate must be
  right there or refuse with an exception.

Everything the process sends is untrusted: a malformed or out-of-order message ends the session
as tampering. One thread serves a session; `finish` joins it.
"""
from __future__ import annotations

import random
import socket
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from . import memory_plan, output_sample
from .compare import Noise, Tolerance, compare_outputs
from .fingerprint import Fingerprinter
from .input_sets import InputSets
from .inputs import call_seed, rolled_inputs, seeded
from .protocol import ProtocolError, read_message, write_message
from .shared_memory import Arena, dtype_named, put_values, view_values

TIMED_CHECKS = 3            # timed calls judged per evaluation, chosen at random among all
MAX_TIMED_CALLS = 100_000   # more hand-overs than any timing budget makes is tampering


class Tampered(Exception):
    """The candidate's process broke the session's protocol."""


@dataclass(frozen=True)
class CallStep:
    name: str     # "seed0", "repeat", "probe_seed1", "signed", ...
    source: str   # the input set whose values the call sees
    fresh: bool   # new input tensors, or the previous call's (rewritten in place for a probe)


def call_steps(sets: InputSets) -> list[CallStep]:
    """The checked calls in order: each set once; right after seed0, the same call again and the
    in-place probes (seed0's input tensors rewritten with another seed's values, then twice with two
    elements swapped, each time two others)."""
    steps = []
    for name in sets.checked_sets():
        steps.append(CallStep(name, name, True))
        if name == "seed0":
            steps.append(CallStep("repeat", "seed0", False))
            steps += [CallStep(f"probe_{source}", source, False) for source in ("seed1", "swapped", "reswapped")
                      if source in sets.specs]
    return steps


@dataclass
class TimedSample:
    call: int
    shift: int
    outputs: list


@dataclass
class SessionReport:
    sets: dict[str, Any] = field(default_factory=dict)
    probes: dict[str, Any] = field(default_factory=dict)
    repeat: dict[str, Any] | None = None
    input_mutations: list[dict[str, Any]] = field(default_factory=list)
    skipped_distributions: list[str] = field(default_factory=list)
    timed: list[TimedSample] = field(default_factory=list)
    timed_calls: int = 0
    handoff_gaps_ms: list[float] = field(default_factory=list)  # this process's clock, between hand-overs
    timing_started: bool = False
    profiled: list | None = None
    resized: dict[str, Any] | None = None
    ended: bool = False
    # This process's allocator peak while the candidate's process ran (against the memory plan)
    reserved_peak_bytes: int = 0
    tampered: str | None = None
    internal_error: str | None = None


class Reference:
    """The trusted reference model, called once per candidate call so that the buffers its forward
    mutates (batch norm's running statistics) evolve in lockstep with the candidate's."""

    def __init__(self, model: torch.nn.Module, call: Callable[[list], list[torch.Tensor]],
                 mutated_buffers: list[str], noise: Callable[..., Noise | None]):
        self.model, self.call, self.mutated_buffers, self.noise = model, call, mutated_buffers, noise

    def buffers(self) -> list[torch.Tensor]:
        return [self.model.get_buffer(name) for name in self.mutated_buffers]

    def snapshot(self) -> list[torch.Tensor]:
        return [buffer.detach().clone() for buffer in self.buffers()]

    def restore(self, kept: list[torch.Tensor]) -> None:
        with torch.no_grad():
            for buffer, value in zip(self.buffers(), kept):
                buffer.copy_(value)


class EvaluationSession:
    def __init__(self, sets: InputSets, reference: Reference, tolerance: Tolerance, arenas: dict[str, Arena],
                 slot_offset: int, timing: bool, profile: bool, random_forward: bool = False):
        self.sets, self.reference, self.tolerance = sets, reference, tolerance
        # A forward that draws random numbers is called, on both sides, from the same RNG state
        # per call (inputs.call_seed); a secret base, drawn here, and the call's label give it.
        self.seed_base = random.SystemRandom().getrandbits(62) if random_forward else None
        self.inputs_arena, self.outputs_arena = arenas["inputs"], arenas["outputs"]
        self.slot_offset = slot_offset
        self.expect_timing, self.expect_profile = timing, profile
        self.steps = call_steps(sets)
        self.report = SessionReport()
        self.fingerprints = Fingerprinter()
        self.keys = output_sample.make_keys()
        self.chooser = random.SystemRandom()
        self.ours, self.theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.thread = threading.Thread(target=self._serve, name="kforge-session", daemon=True)
        self.first_outputs: list | None = None      # fingerprints of seed0's outputs
        self.first_reference: list | None = None    # fingerprints of seed0's reference outputs
        self.pending: dict[str, Any] | None = None  # the call handed out and not yet answered
        self.stage = "start"
        self.profile_source = "seed0"
        self.answered_at: float | None = None  # when the last answer went out
        self.resized_expected: list | None = None
        self.resized_start: list = []  # the mutated buffers before the reference's call at the second size
        self._slot_described: list[dict[str, Any]] = []
        # The mutated buffers before the first checked call, and the input sets of the checked
        # calls made since (in order): a candidate's buffers carry every call's rounding, so their
        # noise comes from an fp64 copy taken through the same calls.
        self.buffers_at_start = reference.snapshot()
        self.checked_sources: list[str] = []

    # -- life ---------------------------------------------------------------------------------
    def start(self) -> None:
        self.thread.start()

    def candidate_descriptor(self) -> int:
        """The candidate's end of the socket pair, to hand over with the arenas."""
        return self.theirs.fileno()

    def forget_candidate_end(self) -> None:
        """Once the candidate's end has been handed over, only the candidate holds it: its death
        ends the session."""
        self.theirs.close()

    def finish(self, timeout_s: float) -> SessionReport:
        self.theirs.close()
        self.thread.join(timeout_s)
        if self.thread.is_alive():
            self.ours.shutdown(socket.SHUT_RDWR)
            self.thread.join(10)
        return self.report

    def close(self) -> None:
        for end in (self.theirs, self.ours):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()
        if self.thread.is_alive():
            self.thread.join(10)

    def _serve(self) -> None:
        try:
            while not self.report.ended:
                try:
                    message = read_message(self.ours.fileno())
                except (ProtocolError, ValueError, UnicodeDecodeError) as error:
                    raise Tampered(f"unreadable message: {error}") from None
                if message is None:
                    return
                received = time.perf_counter()
                if message.get("op") == "timed" and self.answered_at is not None and message.get("call"):
                    self.report.handoff_gaps_ms.append((received - self.answered_at) * 1e3)
                write_message(self.ours.fileno(), self._answer(message))
                self.answered_at = time.perf_counter()
        except Tampered as error:
            self.report.tampered = str(error)
            self.ours.shutdown(socket.SHUT_RDWR)  # the process's next request finds the session over
        except OSError:
            pass  # the process died or the session was closed: what it did not hand over is missing
        except Exception:
            self.report.internal_error = traceback.format_exc()[-6000:]
        finally:
            self.pending = None

    # -- the protocol -------------------------------------------------------------------------
    def _answer(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message.get("op")
        handlers = {"start": self._on_start, "done": self._on_done, "timing": self._on_timing,
                    "timed": self._on_timed, "profile": self._on_profile, "profiled": self._on_profiled, "resized": self._on_resized,
                    "resized_done": self._on_resized_done, "end": self._on_end}
        if op not in handlers:
            raise Tampered(f"unknown request {op!r}")
        return handlers[op](message)

    def _expect_stage(self, *stages: str) -> None:
        if self.stage not in stages:
            raise Tampered(f"request out of order (in stage {self.stage})")

    def _on_start(self, message: dict[str, Any]) -> dict[str, Any]:
        self._expect_stage("start")
        self.stage = "calls"
        return {"step": self._next_step(0)}

    def _on_done(self, message: dict[str, Any]) -> dict[str, Any]:
        self._expect_stage("calls")
        if self.pending is None or message.get("name") != self.pending["step"].name:
            raise Tampered("a call was reported that was not handed out")
        pending, self.pending = self.pending, None
        self._judge_call(pending, message)
        following = pending["index"] + 1
        del pending  # its reference outputs go before the next call's are made
        return {"step": self._next_step(following)}

    def _on_timing(self, message: dict[str, Any]) -> dict[str, Any]:
        self._expect_stage("calls")
        if self.pending is not None or not self.expect_timing:
            raise Tampered("timing asked for before the checked calls ended")
        self.stage = "timing"
        self.report.timing_started = True
        described = self._fill_slot(self.sets.make("timing"))
        # The checked calls' tensors are gone: their cached blocks go back to the device for the
        # candidate's timing, where it holds the most (the inputs' rotating copies).
        memory_plan.release_cached(self.inputs_arena.device)
        return {"inputs": described, "seed_base": self.seed_base}

    def _on_timed(self, message: dict[str, Any]) -> dict[str, Any]:
        self._expect_stage("timing")
        count = self.report.timed_calls
        if count >= MAX_TIMED_CALLS or message.get("call") != count:
            raise Tampered("timed calls were handed over out of order")
        self.report.timed_calls += 1
        # Reservoir sampling: each call so far is kept with the same chance, decided here.
        slot = count if count < TIMED_CHECKS else self.chooser.randrange(count + 1)
        if slot < TIMED_CHECKS:
            sample = TimedSample(count, int(message.get("shift", 0)), self._sampled(message.get("outputs")))
            if slot < len(self.report.timed):
                self.report.timed[slot] = sample
            else:
                self.report.timed.append(sample)
        return {"ok": True}

    def _on_profile(self, message: dict[str, Any]) -> dict[str, Any]:
        """The profiled call runs on the timing inputs (seed0's without timing)."""
        self._expect_stage("calls", "timing")
        if self.pending is not None:
            raise Tampered("the profiled call came before the checked calls ended")
        self.stage = "profile"
        self.profile_source = "timing" if "timing" in self.sets.specs else "seed0"
        return {"inputs": self._fill_slot(self.sets.make(self.profile_source)), "seed": self._seed("profile")}

    def _on_profiled(self, message: dict[str, Any]) -> dict[str, Any]:
        self._expect_stage("profile")
        self.stage = "profiled"
        self.report.profiled = self._sampled(message.get("outputs"))
        return {"ok": True}

    def _on_resized(self, message: dict[str, Any]) -> dict[str, Any]:
        self._expect_stage("calls", "timing", "profiled")
        if self.pending is not None:
            raise Tampered("the second size was asked for before the checked calls ended")
        if self.expect_profile and self.stage != "profiled":
            raise Tampered("the second size was asked for before the profiled call")
        self.stage = "resized"
        if "resized" not in self.sets.specs:
            self.report.resized = {"checked": False, "reason": "the reference runs at no second size"}
            return {"inputs": None}
        inputs = self.sets.make("resized")
        seed = self._seed("set:resized")
        self.resized_start = self.reference.snapshot()
        with torch.no_grad(), seeded(seed):
            expected = self.reference.call(inputs)
        self.resized_expected = expected
        return {"inputs": self._fill_slot(inputs), "seed": seed}

    def _on_resized_done(self, message: dict[str, Any]) -> dict[str, Any]:
        self._expect_stage("resized")
        self.stage = "resized_done"
        expected = self.resized_expected
        if expected is None:
            return {"ok": True}
        grown = self.sets.specs["seed0"]
        shapes = {"task": [list(t.shape) for t in expected]}
        if isinstance(message.get("refused"), str):
            self.report.resized = {"checked": True, "refused": message["refused"][:2000], "expected_shapes": shapes}
        else:
            outputs = self._outputs(message.get("outputs"), allow_unsent=True)
            noise = self._noise("resized", expected, self.resized_start)
            report = compare_outputs(outputs, expected, self.tolerance, noise.outputs)
            self.report.resized = {"checked": True, **report, "seed": grown.seed}
        self.resized_expected = None
        return {"ok": True}

    def _on_end(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.pending is not None or self.stage == "start":
            raise Tampered("the run ended before the checked calls did")
        self.report.ended = True
        self.report.reserved_peak_bytes = memory_plan.reserved_peak(self.inputs_arena.device)
        return {"ok": True}

    # -- checked calls --------------------------------------------------------------------------
    def _seed(self, label: str) -> int | None:
        """The RNG seed of the call labelled `label` (None: the forward draws no random numbers)."""
        return None if self.seed_base is None else call_seed(self.seed_base, label)

    def _next_step(self, index: int) -> dict[str, Any] | None:
        """Prepares and describes the next call: the reference runs on the trusted copy of its
        inputs, which then go into the slot. Distributions whose reference is not finite are skipped."""
        while index < len(self.steps):
            step = self.steps[index]
            inputs = self.sets.make(step.source)
            kept = self.reference.snapshot()
            seed = self._seed(f"set:{step.source}")
            with torch.no_grad(), seeded(seed):
                expected = self.reference.call(inputs)
            if self.sets.specs[step.source].distribution != "task" and not _finite(expected):
                # The reference is not finite on this distribution: no call (nor a probe with it).
                self.reference.restore(kept)
                if step.fresh:
                    self.report.skipped_distributions.append(step.name)
                index += 1
                continue
            described = self._fill_slot(inputs)
            self.pending = {"index": index, "step": step, "expected": expected,
                            "buffers": self.reference.snapshot(), "earlier": list(self.checked_sources),
                            "inputs": self.fingerprints.of_all(inputs)}
            self.checked_sources.append(step.source)
            return {"name": step.name, "fresh": step.fresh, "inputs": described,
                    "buffers": self.reference.mutated_buffers, "seed": seed}
        return None

    def _judge_call(self, pending: dict[str, Any], message: dict[str, Any]) -> None:
        step: CallStep = pending["step"]
        slot = view_values(self.inputs_arena, self._slot_described)
        changed = [index for index, (now, before) in enumerate(zip(self.fingerprints.of_all(slot), pending["inputs"]))
                   if now != before]
        if changed:
            self.report.input_mutations.append({"call": step.name, "inputs": changed})
        outputs = self._outputs(message.get("outputs"))
        expected = pending["expected"]
        stateful = bool(self.reference.mutated_buffers)
        noise = self._noise(step.source, expected, self.buffers_at_start if stateful else [],
                            earlier=pending["earlier"] if stateful else None, after=pending["buffers"])
        report = compare_outputs(outputs, expected, self.tolerance, noise.outputs)
        buffers = self._outputs(message.get("buffers", []))
        if pending["buffers"] or buffers:
            report["buffers"] = {"names": self.reference.mutated_buffers,
                                 **compare_outputs(buffers, pending["buffers"], self.tolerance, noise.buffers)}
        prints = self.fingerprints.of_all(outputs)
        if step.name == "seed0":
            self.first_outputs, self.first_reference = prints, self.fingerprints.of_all(expected)
            self.report.sets[step.name] = report
        elif step.name == "repeat":
            report["bitwise_equal_to_first"] = prints == self.first_outputs
            self.report.repeat = report
        elif step.name.startswith("probe_"):
            report["unchanged_from_before_rewrite"] = prints == self.first_outputs
            report["reference_changed"] = self.fingerprints.of_all(expected) != self.first_reference
            report["target"] = "seed0"
            self.report.probes[step.name] = report
        else:
            self.report.sets[step.name] = report

    def _noise(self, source: str, expected: list, start: list, label: str | None = None,
               earlier: list[str] | None = None, after: list | None = None) -> "_NoiseOnDemand":
        """The reference's own noise on set `source`, computed only if a comparison needs it (the
        sets are made again: nothing is kept for the rare failure), from the RNG state of the call
        labelled `label` (the set's by default). The fp64 copy starts from the mutated buffers
        `start` and first goes through the sets `earlier`, as the fp32 reference did; given the
        buffers `after` the call, their noise comes too."""
        seed = self._seed(label or f"set:{source}")
        history = lambda: (self.sets.make(s) for s in earlier or [])  # noqa: E731
        return _NoiseOnDemand(lambda: self._seeded_noise(seed, self.sets.make(source), expected,
                                                         (start, history, after)))

    def _seeded_noise(self, seed: int | None, inputs: list, expected: list, buffers: tuple[list, Any, Any]) -> Noise | None:
        """For a forward that draws random numbers, `seed` is its call's: the fp64 copy draws the
        same numbers from it (reference.py), or there is no noise."""
        return self.reference.noise(inputs, expected, buffers, seed)

    # -- slots ----------------------------------------------------------------------------------
    def _fill_slot(self, inputs: list) -> list[dict[str, Any]]:
        self.inputs_arena.rewind(self.slot_offset)
        described = put_values(self.inputs_arena, inputs)
        self.inputs_arena.synchronize()
        self._slot_described = described
        return described

    def _outputs(self, described: Any, allow_unsent: bool = False) -> list:
        """The handed-over tensors as views of the output slot (checked: the description comes from
        the untrusted process); an output too large for the slot counts only by its shape."""
        if not isinstance(described, list) or not all(isinstance(meta, dict) for meta in described):
            raise Tampered("malformed description of the outputs handed over")
        values = []
        for meta in described:
            try:
                if "arena" in meta:
                    if meta["arena"] != "outputs":
                        raise Tampered("outputs handed over outside the output slot")
                    values.append(self.outputs_arena.view(meta))
                elif meta.get("unsent") and allow_unsent:  # larger than the slot: its shape says enough
                    values.append(torch.empty([int(s) for s in meta["shape"]], dtype=dtype_named(str(meta["dtype"])),
                                              device="meta"))
                elif "value" in meta and isinstance(meta["value"], (int, float, bool)):
                    values.append(torch.tensor(meta["value"]))
                else:
                    raise Tampered(f"unreadable output description {str(meta)[:200]}")
            except (ValueError, KeyError, TypeError) as error:
                raise Tampered(f"unreadable output description ({type(error).__name__}: {error})") from None
        return values

    def _sampled(self, described: Any) -> list:
        return [output_sample.take(value, self.keys) if isinstance(value, torch.Tensor) else value
                for value in self._outputs(described)]

    # -- after the process is gone --------------------------------------------------------------
    def judge_timed(self) -> list[dict[str, Any]]:
        """The sampled timed calls against the reference on the same rotated inputs."""
        judged = []
        base = self.sets.make("timing") if self.report.timed else []
        for sample in sorted(self.report.timed, key=lambda s: s.call):
            rolled = rolled_inputs(base, sample.shift)
            seed = self._seed(f"shift:{sample.shift}")
            start = self.reference.snapshot()
            with torch.no_grad(), seeded(seed):
                expected = self.reference.call(rolled)
            noise = _NoiseOnDemand(lambda rolled=rolled, expected=expected, seed=seed, start=start:
                                   self._seeded_noise(seed, rolled, expected, (start, list, None)))
            judged.append({"call": sample.call, "shift": sample.shift,
                           **compare_outputs(sample.outputs, expected, self.tolerance, noise.outputs)})
            del rolled, expected
        if self.report.profiled is not None:
            inputs = self.sets.make(self.profile_source)  # before seeding: making a set seeds the RNG
            start = self.reference.snapshot()
            with torch.no_grad(), seeded(self._seed("profile")):
                expected = self.reference.call(inputs)
            del inputs
            noise = self._noise(self.profile_source, expected, start, "profile")
            judged.append({"call": "profiled", "shift": 0,
                           **compare_outputs(self.report.profiled, expected, self.tolerance, noise.outputs)})
        return judged


class _NoiseOnDemand:
    """One call's reference noise, computed the first time an output or a buffer comparison asks
    for it (the fp64 forward runs at most once) and never when every comparison passes."""

    def __init__(self, compute: Callable[[], Noise | None]):
        self._compute, self._done, self._value = compute, False, None

    def _get(self) -> Noise | None:
        if not self._done:
            self._value, self._done = self._compute(), True
        return self._value

    def outputs(self) -> list | None:
        noise = self._get()
        return None if noise is None else noise.outputs

    def buffers(self) -> list | None:
        noise = self._get()
        return None if noise is None else noise.buffers


def _finite(tensors: list[torch.Tensor]) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in tensors if t.is_floating_point())


