"""A generated forward replayed as one CUDA graph (`--graph-replay`): the evaluator accepts it,
and the replay logic gives fresh outputs from fresh inputs, never lets a later call overwrite an
earlier call's outputs, and captures again when the parameters move.

There is no CUDA graph on the CPU. The replay's bookkeeping (signatures, static inputs, output
clones, state addresses) is what these tests drive: `CpuGraphReplay` captures a "graph" that, like
a real one, recomputes from the static input buffers into the same output buffers on every replay.
The real capture runs on the GPU in bench/graph_probe.py (`bench/gpu_checks.sh graphs`)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kforge_worker.static_checks import analyze_candidate

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))
TASK = os.path.join(REPO, "tasks", "level3", "01_mlp.py")


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The MLP task compiled with graph replay forced on, judged by the evaluator on the CPU."""
    tmp = tmp_path_factory.mktemp("graph_replay")
    done = subprocess.run([BINARY, "-q", "--workspace", str(tmp / "ws"), "--device", "cpu", "optimize", "--json",
                           "--graph-replay", "always", "--out", str(tmp / "out"), TASK],
                          capture_output=True, text=True, timeout=900)
    assert done.stdout.strip(), done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout)


def test_a_forced_graph_replay_is_written_and_accepted(generated):
    code, report = generated
    assert code == 0 and report["evaluation"]["verdict"] == "accepted", report["evaluation"]["message"]
    assert report["graph_replay"] == "always" and report["compile"]["graph_replay"] is True
    source = open(report["model_new"], encoding="utf-8").read()
    assert "class KfGraphReplay" in source and "return self.kf_replay(self, self.kf_forward, (x,))" in source
    assert analyze_candidate(source) == []


def test_auto_writes_the_plain_forward_on_the_cpu(tmp_path):
    done = subprocess.run([BINARY, "-q", "--workspace", str(tmp_path / "ws"), "--device", "cpu", "optimize", "--json",
                           "--out", str(tmp_path / "out"), os.path.join(REPO, "tasks", "level1", "01_relu.py")],
                          capture_output=True, text=True, timeout=600)
    report = json.loads(done.stdout)
    assert report["graph_replay"] == "auto" and report["compile"]["graph_replay"] is False
    assert "KfGraphReplay" not in open(report["model_new"], encoding="utf-8").read()


def test_a_bad_graph_replay_setting_is_refused(tmp_path):
    done = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "optimize",
                           "--graph-replay", "sometimes", "--out", str(tmp_path / "out"), TASK],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--graph-replay must be auto, always or never" in done.stderr


# The replay scenarios run in a fresh interpreter with TRITON_INTERPRET=1 from the start: Triton
# read in a process that imported it without (as other tests here do) cannot interpret kernels.
SCENARIOS = r"""
import importlib.util
import sys

import torch


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def flat(outputs):
    return [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)


task_path, candidate_path, scenario = sys.argv[1:4]
task = load("mlp_task", task_path)
for name, value in task.KFORGE_CPU_SIZES.items():  # the sizes the candidate was generated for
    setattr(task, name, value)
candidate = load("mlp_candidate", candidate_path)


class CpuGraphReplay(candidate.KfGraphReplay):
    # A CPU stand-in for torch.cuda.graph: replay recomputes from the captured input buffers into
    # the captured output buffers, as a CUDA graph's kernels do.
    captures = 0

    def capturable(self, inputs):
        return True

    def capture(self, forward, inputs):
        CpuGraphReplay.captures += 1
        outputs = forward(*inputs)

        def replay():
            for buffer, value in zip(flat(outputs), flat(forward(*inputs))):
                buffer.copy_(value)
        return replay, outputs


torch.manual_seed(0)
reference = task.Model(*task.get_init_inputs())
new = candidate.ModelNew(*task.get_init_inputs())
new.load_state_dict(reference.state_dict())
new.kf_replay = CpuGraphReplay()


def close(got, want):
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


with torch.no_grad():
    if scenario == "fresh":
        inputs = [task.get_inputs()[0] for _ in range(5)]
        outputs = [new(x) for x in inputs]
        for x, y in zip(inputs, outputs):  # every result still the one its own inputs give
            close(y, reference(x))
        assert CpuGraphReplay.captures == 1, CpuGraphReplay.captures  # warmed up by call 1, captured by call 2
        assert not torch.equal(outputs[3], outputs[4])
        assert len({y.data_ptr() for y in outputs}) == len(outputs)
    elif scenario == "signature":
        x = task.get_inputs()[0]
        strided = torch.empty(x.shape[1], x.shape[0]).t()  # same shape, other strides: another signature
        for _ in range(3):
            new(x)
        for _ in range(3):
            strided.copy_(task.get_inputs()[0])
            close(new(strided), reference(strided))
        assert CpuGraphReplay.captures == 2, CpuGraphReplay.captures
        assert len(new.kf_replay.entries) == 2
    elif scenario == "moved":
        x = task.get_inputs()[0]
        for _ in range(3):
            new(x)
        assert CpuGraphReplay.captures == 1
        for p in reference.parameters():  # load_state_dict copies in place: the graph sees new values
            p.mul_(0.5)
        new.load_state_dict(reference.state_dict())
        close(new(x), reference(x))
        assert CpuGraphReplay.captures == 1
        for p in new.parameters():  # new storage, as module.to() gives: captured again
            p.data = p.data.clone()
        close(new(x), reference(x))
        assert CpuGraphReplay.captures == 2, CpuGraphReplay.captures
print("ok")
"""


def run_scenario(generated, scenario: str) -> None:
    _, report = generated
    done = subprocess.run([sys.executable, "-c", SCENARIOS, TASK, report["model_new"], scenario],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout[-2000:] + done.stderr[-4000:]


def test_fresh_inputs_give_fresh_outputs_and_no_call_overwrites_another(generated):
    run_scenario(generated, "fresh")


def test_a_new_signature_is_warmed_up_and_captured_on_its_own(generated):
    run_scenario(generated, "signature")


def test_moved_parameters_are_captured_again_and_in_place_updates_are_seen(generated):
    run_scenario(generated, "moved")
