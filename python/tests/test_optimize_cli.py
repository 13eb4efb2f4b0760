"""`kforge optimize`: capture, fusion, Triton code generation and the evaluator's verdict, end to
end through the real binary on the CPU (Triton's interpreter)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))


def run_optimize(task: str, tmp_path, *extra: str) -> subprocess.CompletedProcess:
    """`kforge optimize` on the CPU; `task` is under tasks/ unless absolute."""
    return subprocess.run([BINARY, "-q", "--workspace", str(tmp_path / "ws"), "--device", "cpu", "optimize",
                           "--out", str(tmp_path / "out"), *extra, os.path.join(REPO, "tasks", task)],
                          capture_output=True, text=True, timeout=600)


def optimize(task: str, tmp_path, *extra: str) -> tuple[int, dict]:
    done = run_optimize(task, tmp_path, "--json", *extra)
    assert done.stdout.strip(), done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("task", ["level1/01_relu.py", "level1/20_softplus.py", "level1/21_hardtanh.py"])
def test_pointwise_tasks_become_accepted_triton_kernels_in_strict_mode(task, tmp_path):
    code, report = optimize(task, tmp_path)
    assert code == 0, report["evaluation"]["message"]
    assert report["evaluation"]["verdict"] == "accepted"
    source = open(report["model_new"], encoding="utf-8").read()
    assert "@triton.jit" in source and "torch.ops.aten" not in source
    assert os.path.exists(os.path.join(os.path.dirname(report["model_new"]), "report.json"))
    assert all(g["kind"] == "pointwise" for g in report["compile"]["groups"])


@pytest.mark.parametrize("task,kinds", [("level2/01_linear_relu.py", {"matmul"}),
                                        ("level1/03_softmax.py", {"reduction"}),
                                        ("level1/27_max_pool2d.py", {"window"})])
def test_gemm_reduction_and_pooling_tasks_become_accepted_kernels_in_strict_mode(task, kinds, tmp_path):
    code, report = optimize(task, tmp_path)
    assert code == 0 and report["evaluation"]["verdict"] == "accepted", report["evaluation"]["message"]
    assert {g["kind"] for g in report["compile"]["groups"]} - {"view"} == kinds  # views cost no kernel
    source = open(report["model_new"], encoding="utf-8").read()
    assert all(".permute." in line or ".view." in line for line in source.splitlines() if "torch.ops.aten" in line)


def test_an_op_without_a_kernel_is_rejected_in_strict_mode_and_accepted_in_partial_mode(tmp_path):
    # sort has no kernel form: it stays a library call.
    task = os.path.join(REPO, "python", "tests", "tasks", "sort_rows.py")
    code, report = optimize(task, tmp_path)
    assert code == 1 and report["evaluation"]["verdict"] == "rejected_hack(library_compute)"
    code, report = optimize(task, tmp_path, "--mode", "partial")
    assert code == 0 and report["evaluation"]["verdict"] == "accepted", report["evaluation"]["message"]
    source = open(report["model_new"], encoding="utf-8").read()
    assert "torch.ops.aten.sort" in source and "@triton.jit" in source


def test_a_forward_that_draws_random_numbers_is_matched_from_the_same_seed(tmp_path):
    # torch.randn for the initial state and dropout: both sides are called from the same RNG state.
    # The random fill counts as data movement; dropout computes, so it needs partial mode.
    task = os.path.join(REPO, "python", "tests", "tasks", "random_initial_state.py")
    code, report = optimize(task, tmp_path)
    evaluation = report["evaluation"]
    assert evaluation["verdict"] == "rejected_hack(library_compute)", evaluation["message"]
    assert "native_dropout" in evaluation["message"] and "randn" not in evaluation["message"]
    correctness = evaluation["evidence"]["correctness"]
    assert correctness["random_forward"] is True
    assert all(report["passed"] for report in correctness["sets"].values())
    code, report = optimize(task, tmp_path, "--mode", "partial")
    assert code == 0 and report["evaluation"]["verdict"] == "accepted", report["evaluation"]["message"]


def test_cross_entropy_is_all_kernels_in_strict_mode(tmp_path):
    # The target's log-probability is gathered from the logits in the log-softmax's row kernel, the
    # count of targets not ignored is a float sum: nothing is left to the library.
    code, report = optimize("level1/31_cross_entropy_loss.py", tmp_path)
    assert code == 0 and report["evaluation"]["verdict"] == "accepted", report["evaluation"]["message"]
    assert {g["kind"] for g in report["compile"]["groups"]} - {"view"} == {"pointwise", "reduction"}
    source = open(report["model_new"], encoding="utf-8").read()
    assert all(".squeeze." in line or ".unsqueeze." in line for line in source.splitlines() if "torch.ops.aten" in line)


def test_passes_can_be_disabled_and_their_ir_dumped(tmp_path):
    code, fused = optimize("level1/20_softplus.py", tmp_path, "--dump-ir")
    assert code == 0
    dumps = os.path.join(os.path.dirname(fused["model_new"]), "ir")
    assert sorted(os.listdir(dumps)) == ["01_recurrence.txt", "02_attention.txt", "03_attention_products.txt", "04_decompose.txt",
                                        "05_copies.txt", "06_epilogues.txt", "07_dead_code.txt", "08_concatenations.txt",
                                        "09_fuse.txt"]
    code, unfused = optimize("level1/20_softplus.py", tmp_path, "--disable-pass", "fuse")
    assert code == 0 and unfused["evaluation"]["verdict"] == "accepted"
    assert len(unfused["compile"]["groups"]) > len(fused["compile"]["groups"])
    assert unfused["compile"]["pass_s"]["fuse"] == "disabled"


def test_generated_model_refuses_shapes_it_was_not_generated_for(tmp_path):
    import importlib.util

    import torch

    code, report = optimize("level1/21_hardtanh.py", tmp_path)
    assert code == 0
    spec = importlib.util.spec_from_file_location("generated_hardtanh", report["model_new"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(ValueError, match="regenerate it for these shapes"):
        module.ModelNew()(torch.randn(3, 5))


# torch.export cannot capture it whole: `if y.mean() > 0:` between an MLP and a LayerNorm.
BRANCHY = os.path.join(REPO, "python", "tests", "tasks", "branchy_submodules.py")


def test_partial_mode_compiles_the_submodules_of_a_model_that_does_not_export_whole(tmp_path):
    done = run_optimize(BRANCHY, tmp_path, "--mode", "partial")
    folder = tmp_path / "out" / "branchy_submodules"
    report = json.loads((folder / "report.json").read_text())
    assert done.returncode == 0 and report["evaluation"]["verdict"] == "accepted", report["evaluation"]["message"]
    partial = report["compile"]["partial"]
    assert partial["compiled"] == ["mlp", "norm"] and partial["pytorch"] == []
    assert "branchy_submodules.py:16: torch.export could not capture the Model" in partial["export_error"]
    assert {g["submodule"] for g in report["compile"]["groups"]} == {"mlp", "norm"}
    assert "partial      the Model was not captured whole: " in done.stdout
    assert "compiled     mlp, norm (generated kernels)" in done.stdout
    source = (folder / "model_new.py").read_text()
    assert "class ModelNew(kf_task_Model):" in source and "@triton.jit" in source
    assert 'self.add_module("mlp", ModelNew_mlp())' in source


# Reference Model and generated ModelNew (same state dict) over three training-mode calls: the
# outputs, and every parameter and buffer after each call.
COMPARE_STATE = """
import importlib.util, sys, torch
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
task, generated = load("task", sys.argv[1]), load("generated", sys.argv[2])
for key, value in task.KFORGE_CPU_SIZES.items():
    setattr(task, key, value)
model = task.Model(*task.get_init_inputs())
model_new = generated.ModelNew(*task.get_init_inputs())
model_new.load_state_dict(model.state_dict(), strict=True)
for call in range(3):
    inputs = task.get_inputs()
    with torch.no_grad():
        assert torch.allclose(model_new(*inputs), model(*inputs), rtol=1e-4, atol=1e-4), call
    state = model_new.state_dict()
    for name, value in model.state_dict().items():
        assert torch.allclose(state[name].double(), value.double(), rtol=1e-4, atol=1e-6), (call, name, state[name], value)
print("OK")
"""


def test_partial_mode_updates_the_buffers_of_a_captured_submodule(tmp_path):
    task = os.path.join(REPO, "python", "tests", "tasks", "branchy_batch_norm.py")
    code, report = optimize(task, tmp_path, "--mode", "partial")
    assert code == 0 and report["evaluation"]["verdict"] == "accepted", report["evaluation"]["message"]
    assert report["compile"]["partial"]["compiled"] == ["block"]
    source = open(report["model_new"], encoding="utf-8").read()
    assert 'b_1_running_mean = self.get_buffer("1.running_mean")' in source
    # written back by a copy, or in place by the kernel that computes it
    assert "b_1_running_mean.copy_(" in source or "# b_1_running_mean was written in place" in source
    done = subprocess.run([sys.executable, "-c", COMPARE_STATE, task, report["model_new"]], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0 and "OK" in done.stdout, done.stdout + done.stderr[-3000:]


def test_strict_mode_refuses_a_model_that_does_not_export_whole_and_says_what_partial_mode_would_do(tmp_path):
    done = run_optimize(BRANCHY, tmp_path)
    assert done.returncode == 2
    assert "branchy_submodules.py:16: torch.export could not capture the Model" in done.stderr
    assert "cannot be captured whole" in done.stderr
    assert "--mode partial would compile its submodules mlp, norm on their own" in done.stderr


def test_repeated_blocks_launch_one_kernel(tmp_path):
    # Four identical blocks emit one kernel between them (Triton compiles and tunes it once).
    task = os.path.join(REPO, "python", "tests", "tasks", "repeated_blocks.py")
    code, report = optimize(task, tmp_path)
    assert code == 0 and report["evaluation"]["verdict"] == "accepted", report["evaluation"]["message"]
    source = open(report["model_new"], encoding="utf-8").read()
    kernels = [line.split("(")[0][4:] for line in source.splitlines() if line.startswith("def ")]
    matmuls = [name for name in kernels if name.startswith("matmul")]
    assert len(matmuls) == 3, kernels  # stem, the blocks' one, head
    block_kernel = max(matmuls, key=lambda name: source.count(name + "["))
    assert source.count(block_kernel + "[") == 4
