"""The trusted worker's live session, driven in this process by a stand-in for the candidate's
process (harness.SessionClient calling plain PyTorch functions): every call judged as it is handed
over, the probes, the second size, the timed calls' secret sample, protocol violations, and the
memory it holds (one set at a time, nothing left after release)."""
from __future__ import annotations

import gc
import weakref
from typing import Any, Callable

import pytest
import torch

from kforge_worker import input_sets, memory_plan, shared_memory
from kforge_worker.harness import SessionClient
from kforge_worker.inputs import call_seed
from kforge_worker.reference import ReferenceWorker

RELU_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


rows, cols = ROWS, 64


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
'''

BATCH_NORM_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(8)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(16, 8)]


def get_init_inputs():
    return []
'''

FP32 = {"rtol": 1e-4, "atol": 1e-4}


def write_task(tmp_path, source: str, name: str = "task.py") -> str:
    path = tmp_path / name
    path.write_text(source)
    return str(path)


def relu_task(tmp_path, rows: int = 32) -> str:
    return write_task(tmp_path, RELU_TASK.replace("ROWS", str(rows)))


class Candidate:
    """The candidate's side of a run: what harness.Run does, with `forward` for the model and
    `client` hooks to misbehave."""

    def __init__(self, prepared: dict[str, Any], forward: Callable[..., Any], module: torch.nn.Module | None = None):
        shared = prepared["shared"]
        descriptors = shared_memory.fetch_descriptors(shared["socket"], len(shared["arenas"]) + 1)
        arenas = {entry["name"]: shared_memory.Arena.open(entry["name"], torch.device("cpu"), fd, int(entry["bytes"]))
                  for entry, fd in zip(shared["arenas"], descriptors)}
        self.client = SessionClient(descriptors[-1], arenas)
        self.forward, self.module = forward, module
        if module is not None:
            module.load_state_dict({name: arenas["inputs"].view(meta).clone() for name, meta in prepared["state"].items()})
        self.calls: list[str] = []

    def buffers(self, names: list[str]) -> list:
        named = dict(self.module.named_buffers()) if self.module is not None else {}
        return [named[name] for name in names]

    def checked_calls(self) -> None:
        step = self.client.request({"op": "start"})["step"]
        inputs: list = []
        while step:
            if step["fresh"] or not inputs:
                inputs = self.client.inputs(step["inputs"])
            self.calls.append(step["name"])
            seed(step.get("seed"))
            with torch.no_grad():
                outputs = [self.forward(*inputs)]
            step = self.client.hand_off("done", outputs, self.buffers(step.get("buffers", [])), name=step["name"])["step"]

    def timed_calls(self, count: int = 6) -> int:
        answer = self.client.request({"op": "timing"})
        base = self.client.inputs(answer["inputs"])
        for call in range(count):
            rolled = input_sets_rolled(base, call + 1)
            if answer.get("seed_base") is not None:
                seed(call_seed(answer["seed_base"], f"shift:{call + 1}"))
            self.client.hand_off("timed", [self.forward(*rolled)], call=call, shift=call + 1)
        return count

    def profiled(self) -> None:
        answer = self.client.request({"op": "profile"})
        inputs = self.client.inputs(answer["inputs"])
        seed(answer.get("seed"))
        self.client.hand_off("profiled", [self.forward(*inputs)])

    def second_size(self) -> None:
        answer = self.client.request({"op": "resized"})
        described = answer["inputs"]
        if described is None:
            self.client.request({"op": "resized_done"})
            return
        seed(answer.get("seed"))
        try:
            outputs = [self.forward(*self.client.inputs(described))]
        except ValueError as error:
            self.client.request({"op": "resized_done", "refused": str(error)})
            return
        self.client.hand_off("resized_done", outputs)

    def run(self) -> int:
        self.checked_calls()
        count = self.timed_calls()
        self.profiled()
        self.second_size()
        self.client.request({"op": "end"})
        return count


def seed(value: int | None) -> None:
    """What the harness does before a call when the trusted side sends a seed."""
    if value is not None:
        torch.manual_seed(value)


def input_sets_rolled(base: list, shift: int) -> list:
    from kforge_worker.inputs import rolled_inputs
    return rolled_inputs(base, shift)


SEEDS = [11, 12, 13]  # the evaluations' input seeds, so that a test can make the same sets


def prepare(worker: ReferenceWorker, task: str, tmp_path, eval_id: str = "e1", timing: bool = True) -> dict[str, Any]:
    exchange = tmp_path / eval_id
    exchange.mkdir()
    return worker.prepare({"eval_id": eval_id, "task_path": task, "exchange_dir": str(exchange), "seeds": SEEDS,
                           "timing_seed": 99 if timing else None, "tolerance": FP32, "profile": True})


def evaluate(tmp_path, task: str, forward: Callable[..., Any], module: torch.nn.Module | None = None,
             eval_id: str = "e1", worker: ReferenceWorker | None = None) -> dict[str, Any]:
    worker = worker or ReferenceWorker("cpu")
    prepared = prepare(worker, task, tmp_path, eval_id)
    candidate = Candidate(prepared, forward, module)
    timed = candidate.run()
    result = worker.compare({"eval_id": eval_id, "timing_calls": timed, "profiled": True})
    worker.release({"eval_id": eval_id})
    result["calls"] = candidate.calls
    return result


def test_an_honest_candidate_passes_every_call_in_order(tmp_path):
    result = evaluate(tmp_path, relu_task(tmp_path), torch.relu)
    assert "tampered" not in result, result.get("tampered")
    assert result["calls"][:5] == ["seed0", "repeat", "probe_seed1", "probe_swapped", "probe_reswapped"]
    assert set(result["sets"]) == {"seed0", "seed1", "seed2", "signed", "scaled_up", "scaled_down", "shifted", "swapped"}
    assert all(report["passed"] for report in result["sets"].values())
    assert result["repeat"]["passed"] and result["repeat"]["bitwise_equal_to_first"]
    assert all(p["passed"] for p in result["probes"].values())
    assert not result["probes"]["probe_seed1"]["unchanged_from_before_rewrite"]
    assert result["resized"]["checked"] and result["resized"]["passed"]
    assert result["timed_calls"] == 6
    assert len(result["timed"]) == 4 and all(t["passed"] for t in result["timed"])  # 3 chosen + the profiled call
    assert result["input_mutations"] == []


NOISY_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x + torch.randn_like(x)


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return []
'''


def test_a_forward_that_draws_random_numbers_is_seeded_alike_on_both_sides(tmp_path):
    """KernelBench's rule: the reference and the candidate are called from the same RNG state, so
    a candidate drawing the same numbers passes every call (checked, timed, profiled, resized)."""
    task = write_task(tmp_path, NOISY_TASK)
    result = evaluate(tmp_path, task, lambda x: x + torch.randn_like(x))
    assert "tampered" not in result, result.get("tampered")
    assert result["random_forward"] is True
    assert all(report["passed"] for report in result["sets"].values()), result["sets"]
    assert result["repeat"]["passed"] and result["repeat"]["bitwise_equal_to_first"]
    assert all(p["passed"] for p in result["probes"].values())
    assert result["resized"]["passed"]
    assert all(t["passed"] for t in result["timed"])


def test_other_random_numbers_are_wrong_and_a_deterministic_forward_gets_no_seed(tmp_path):
    task = write_task(tmp_path, NOISY_TASK)
    other = evaluate(tmp_path, task, lambda x: x + torch.randn_like(x).flip(0), eval_id="e2")
    assert other["random_forward"] is True
    assert not other["sets"]["seed0"]["passed"]
    worker = ReferenceWorker("cpu")
    prepared = prepare(worker, relu_task(tmp_path), tmp_path, "e3")
    client = Candidate(prepared, torch.relu).client
    step = client.request({"op": "start"})["step"]
    assert step["seed"] is None
    client.close() if hasattr(client, "close") else None
    worker.release({"eval_id": "e3"})


def test_wrong_values_are_found_where_they_are(tmp_path):
    result = evaluate(tmp_path, relu_task(tmp_path), lambda x: x.clone())  # identity: wrong on negative inputs
    assert not result["sets"]["signed"]["passed"] and result["sets"]["seed0"]["passed"] is False


def test_an_input_written_by_the_candidate_is_seen_by_the_trusted_side(tmp_path):
    def clobbering(x):
        out = torch.relu(x)
        x.mul_(2)
        return out

    result = evaluate(tmp_path, relu_task(tmp_path), clobbering)
    assert result["input_mutations"] and result["input_mutations"][0] == {"call": "seed0", "inputs": [0]}


def test_a_cache_keyed_on_the_input_address_returns_the_old_answer_after_the_rewrite(tmp_path):
    cache: dict[int, torch.Tensor] = {}

    def memoized(x):
        if x.data_ptr() not in cache:
            cache[x.data_ptr()] = torch.relu(x)
        return cache[x.data_ptr()].clone()

    result = evaluate(tmp_path, relu_task(tmp_path), memoized)
    probe = result["probes"]["probe_seed1"]
    assert not probe["passed"] and probe["unchanged_from_before_rewrite"] and probe["reference_changed"]


def test_a_cache_keyed_on_sampled_values_is_caught_even_where_one_swap_touches_a_sample(tmp_path):
    """The unlucky case of a value-sampling cache: the first swap moves exactly the sampled
    elements (so the cache misses and the candidate recomputes); the second swap, two other
    elements, leaves the samples and gets the old answer."""
    from kforge_worker.task_loader import load_task

    task = relu_task(tmp_path)
    sets = input_sets.InputSets(load_task(task, cpu_sizes=True), task, torch.device("cpu"), SEEDS, None, True)
    seed0, swapped = sets.make("seed0")[0].reshape(-1), sets.make("swapped")[0].reshape(-1)
    samples = (seed0 != swapped).nonzero().reshape(-1)
    assert samples.numel() == 2
    cache: dict[tuple, torch.Tensor] = {}

    def memoized(x):
        key = tuple(x.reshape(-1)[samples].tolist())
        if key not in cache:
            cache[key] = torch.relu(x)
        return cache[key].clone()

    result = evaluate(tmp_path, task, memoized)
    assert result["probes"]["probe_swapped"]["passed"]
    probe = result["probes"]["probe_reswapped"]
    assert not probe["passed"] and probe["unchanged_from_before_rewrite"] and probe["reference_changed"]


def test_a_candidate_specialized_to_the_first_size_fails_the_second(tmp_path):
    seen: list[int] = []

    def specialized(x):
        seen.append(seen[0] if seen else x.shape[0])
        out = torch.zeros_like(x)
        out[:seen[0]] = torch.relu(x[:seen[0]])
        return out

    result = evaluate(tmp_path, relu_task(tmp_path), specialized)
    assert all(report["passed"] for report in result["sets"].values())
    assert result["resized"]["checked"] and not result["resized"]["passed"]


def test_a_candidate_may_refuse_the_second_size(tmp_path):
    def refusing(x):
        if x.shape[0] != 32:
            raise ValueError("generated for 32 rows")
        return torch.relu(x)

    result = evaluate(tmp_path, relu_task(tmp_path), refusing)
    assert result["resized"] == {"checked": True, "refused": "generated for 32 rows",
                                 "expected_shapes": {"task": [[33, 64]]}}


class Wrapped(torch.nn.Module):
    def __init__(self, bn: torch.nn.Module):
        super().__init__()
        self.bn = bn

    def forward(self, x):
        return self.bn(x)


def test_the_buffers_a_training_forward_updates_are_compared_after_every_call(tmp_path):
    task = write_task(tmp_path, BATCH_NORM_TASK)
    honest_model = Wrapped(torch.nn.BatchNorm1d(8))
    honest = evaluate(tmp_path, task, honest_model, honest_model, eval_id="honest")
    assert all(report["buffers"]["passed"] for report in honest["sets"].values())
    assert honest["sets"]["seed0"]["buffers"]["names"] == ["bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]

    class Stale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = torch.nn.BatchNorm1d(8)

        def forward(self, x):  # batch statistics, running ones never written
            return torch.nn.functional.batch_norm(x, None, None, self.bn.weight, self.bn.bias, True, 0.1, self.bn.eps)

    stale = Stale()
    result = evaluate(tmp_path, task, stale, stale, eval_id="stale")
    assert all(report["passed"] for report in result["sets"].values())  # the outputs are right
    assert not result["sets"]["seed0"]["buffers"]["passed"]


def test_protocol_violations_end_the_session_as_tampering(tmp_path):
    task = relu_task(tmp_path)
    worker = ReferenceWorker("cpu")

    prepared = prepare(worker, task, tmp_path, "wrong-name")
    candidate = Candidate(prepared, torch.relu)
    candidate.client.request({"op": "start"})
    with pytest.raises(RuntimeError):  # the session is over for the process
        candidate.client.hand_off("done", [torch.zeros(32, 64)], name="seed1")
        candidate.client.request({"op": "end"})
    assert "not handed out" in worker.compare({"eval_id": "wrong-name", "timing_calls": 0})["tampered"]
    worker.release({"eval_id": "wrong-name"})

    prepared = prepare(worker, task, tmp_path, "early-end")
    candidate = Candidate(prepared, torch.relu)
    candidate.client.request({"op": "start"})
    with pytest.raises(RuntimeError):
        candidate.client.request({"op": "end"})
        candidate.client.request({"op": "end"})
    assert "ended before" in worker.compare({"eval_id": "early-end", "timing_calls": 0})["tampered"]
    worker.release({"eval_id": "early-end"})

    prepared = prepare(worker, task, tmp_path, "forged")
    candidate = Candidate(prepared, torch.relu)
    step = candidate.client.request({"op": "start"})["step"]
    with pytest.raises(RuntimeError):
        candidate.client.request({"op": "done", "name": step["name"], "outputs": step["inputs"]})
        candidate.client.request({"op": "end"})
    assert "outside the output slot" in worker.compare({"eval_id": "forged", "timing_calls": 0})["tampered"]
    worker.release({"eval_id": "forged"})


def test_a_run_that_reports_more_timed_calls_than_it_handed_over_is_tampered(tmp_path):
    worker = ReferenceWorker("cpu")
    prepared = prepare(worker, relu_task(tmp_path), tmp_path)
    timed = Candidate(prepared, torch.relu).run()
    assert "handed over the outputs of" in worker.compare({"eval_id": "e1", "timing_calls": timed + 3,
                                                           "profiled": True})["tampered"]
    worker.release({"eval_id": "e1"})


def test_the_trusted_side_holds_one_input_set_at_a_time_and_nothing_after_release(tmp_path, monkeypatch):
    made: list[weakref.ref] = []
    most_alive = [0]
    original = input_sets.InputSets.make

    def tracked(self, name):
        values = original(self, name)
        made.extend(weakref.ref(v) for v in values if isinstance(v, torch.Tensor))
        return values

    monkeypatch.setattr(input_sets.InputSets, "make", tracked)

    def forward(x):
        gc.collect()
        most_alive[0] = max(most_alive[0], sum(ref() is not None for ref in made))
        return torch.relu(x)

    result = evaluate(tmp_path, relu_task(tmp_path, rows=256), forward)
    assert all(report["passed"] for report in result["sets"].values())
    assert len(made) >= 12 and most_alive[0] <= 1  # while the candidate runs, at most the timing base it rolls
    gc.collect()
    assert sum(ref() is not None for ref in made) == 0


def live_tensor_bytes() -> int:
    """Bytes of every tensor storage reachable from Python objects in this process."""
    gc.collect()
    storages = {}
    for item in gc.get_objects():
        if isinstance(item, torch.Tensor) and not item.is_meta:
            try:
                storage = item.untyped_storage()
                storages[storage.data_ptr()] = storage.nbytes()
            except RuntimeError:  # a fake tensor left by a tracing test: no memory of its own
                continue
    return sum(storages.values())


def test_the_worker_returns_to_its_memory_after_every_evaluation(tmp_path):
    """Eight input sets of 4 MiB and their outputs would be 64 MiB held at once;
    streamed, and released after each evaluation, nothing of them stays."""
    task = relu_task(tmp_path, rows=1 << 14)  # 4 MiB per input set
    worker = ReferenceWorker("cpu")
    before = live_tensor_bytes()
    after = []
    for index in range(3):
        evaluate(tmp_path, task, torch.relu, eval_id=f"big{index}", worker=worker)
        after.append(live_tensor_bytes() - before)
    assert max(after) < 1 << 20, after


def test_a_task_that_cannot_fit_is_refused_with_the_numbers(tmp_path, monkeypatch):
    monkeypatch.setattr(memory_plan, "free_memory", lambda device: (1 << 20, 1 << 30))
    worker = ReferenceWorker("cpu")
    prepared = prepare(worker, relu_task(tmp_path, rows=4096), tmp_path)
    assert "shared" not in prepared and not prepared["memory"]["fits"]
    assert "GiB of host memory" in prepared["does_not_fit"] and "are free" in prepared["does_not_fit"]
    worker.release({"eval_id": "e1"})


def test_the_plan_counts_every_holder_and_caps_the_candidate():
    footprint = memory_plan.Footprint(parameter_bytes=100, input_bytes=1000, output_bytes=500, transient_bytes=200)
    plan = memory_plan.plan_evaluation(footprint, free_bytes=10_000, total_bytes=20_000, reserve_bytes=50)
    assert plan.trusted_bytes == 1000 + max(1000, 500 + 200)
    assert plan.arena_bytes == 100 + 1000 + 500
    assert plan.candidate_bytes == 100 + 1000 + 1000 + 200 + 50
    assert plan.fits and plan.candidate_limit_bytes == 10_000 - 2000 - 1600 - 50
    tight = memory_plan.plan_evaluation(footprint, free_bytes=3000, total_bytes=20_000, reserve_bytes=50)
    assert not tight.fits and tight.candidate_limit_bytes == tight.candidate_bytes - 50


def test_the_second_size_grows_the_batch_or_else_the_first_input():
    a, b = torch.zeros(4, 3), torch.zeros(4, 5)
    assert input_sets.second_size_candidates([a, b, 7]) == [[0, 1], [0]]
    assert input_sets.second_size_candidates([a, torch.zeros(3, 4)]) == [[0]]
    grown = input_sets.grow_leading_dim([a, torch.arange(4.0).reshape(4, 1)], [1])
    assert grown[0] is a and torch.equal(grown[1][:, 0], torch.tensor([0.0, 1.0, 2.0, 3.0, 0.0]))
