"""Bad input to the real kforge binary gets a clear message and exit status 2, never a traceback."""
from __future__ import annotations

import os
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))
HONEST = os.path.join(REPO, "tests", "corpus", "candidates", "l1_01_relu", "honest_relu.py")

TASKS = {
    "syntax": ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x)\n        return x\n",
               "syntax.py:3: syntax error in the task"),
    "missing": ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
                "def get_init_inputs():\n    return []\n", "missing: get_inputs"),
    "not_a_list": ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
                   "def get_inputs():\n    return 'abc'\ndef get_init_inputs():\n    return []\n",
                   "get_inputs() must return a list, got str"),
    "bad_init": ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
                 "def get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return [1, 2]\n",
                 "Model(*get_init_inputs()) raised TypeError"),
    "raises": ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
               "def get_inputs():\n    raise ValueError('no data')\ndef get_init_inputs():\n    return []\n",
               "get_inputs() raised ValueError: no data"),
    "not_a_task": ("print('hello')\n", "not a KernelBench task"),
}


def run(args: list[str], workspace) -> subprocess.CompletedProcess:
    return subprocess.run([BINARY, "-q", "--workspace", str(workspace), "--device", "cpu", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_broken_task_is_a_clear_usage_error(name, tmp_path):
    source, expected = TASKS[name]
    task = tmp_path / f"{name}.py"
    task.write_text(source)
    done = run(["eval", str(task), HONEST], tmp_path / "ws")
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


@pytest.mark.parametrize("args, expected", [
    (["eval", "/nonexistent/task.py", HONEST], "no such task file"),
    (["eval", os.path.join(REPO, "tasks", "level1", "01_relu.py"), "/nonexistent/candidate.py"], "cannot read"),
    (["eval", os.path.join(REPO, "tasks", "level1", "01_relu.py"), HONEST, "--seeds", "0"], "--seeds"),
    (["eval", os.path.join(REPO, "tasks", "level1", "01_relu.py"), HONEST, "--mode", "lenient"], "--mode"),
    (["--precision", "fp8", "eval", os.path.join(REPO, "tasks", "level1", "01_relu.py"), HONEST], "--precision"),
])
def test_bad_arguments_are_usage_errors(args, expected, tmp_path):
    done = run(args, tmp_path / "ws")
    assert done.returncode == 2
    assert expected in done.stderr


def test_a_gpu_device_without_a_gpu_is_a_usage_error(tmp_path):
    if os.path.exists("/dev/nvidiactl"):
        pytest.skip("this machine has a GPU")
    done = subprocess.run([BINARY, "-q", "--workspace", str(tmp_path), "--device", "cuda:0", "eval",
                           os.path.join(REPO, "tasks", "level1", "01_relu.py"), HONEST],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "sees no CUDA device" in done.stderr


def test_show_lists_and_shows_what_eval_stored(tmp_path):
    task = os.path.join(REPO, "tasks", "level1", "01_relu.py")
    assert run(["eval", task, HONEST], tmp_path / "ws").returncode == 0
    listing = run(["show"], tmp_path / "ws")
    assert listing.returncode == 0 and "level1/01_relu" in listing.stdout and "accepted" in listing.stdout
    shown = run(["show", "1"], tmp_path / "ws")
    assert shown.returncode == 0 and "verdict      accepted" in shown.stdout
    assert run(["show", "99"], tmp_path / "ws").returncode == 2


@pytest.mark.parametrize("content", [b"", b"this is not an SQLite database, only some bytes" * 100])
def test_a_store_that_cannot_be_read_is_exit_2_and_left_alone(content, tmp_path):
    """A truncated or corrupt kforge.db is never replaced by a new, empty store."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = workspace / "kforge.db"
    store.write_bytes(content)
    done = run(["eval", os.path.join(REPO, "tasks", "level1", "01_relu.py"), HONEST], workspace)
    assert done.returncode == 2, done.stderr[-2000:]
    assert str(store) in done.stderr and "move it away" in done.stderr
    assert store.read_bytes() == content
    listed = run(["show"], workspace)
    assert listed.returncode == 2 and str(store) in listed.stderr


def test_global_options_work_after_the_subcommand(tmp_path):
    task = os.path.join(REPO, "tasks", "level1", "01_relu.py")
    done = subprocess.run([BINARY, "ir", task, "--device", "cpu", "-q", "--workspace", str(tmp_path / "ws")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "aten.relu.default" in done.stdout
    refused = subprocess.run([BINARY, "-q", "eval", task, HONEST, "--workspace", str(tmp_path / "ws"), "--device", "cpu",
                              "--precision", "fp8"], capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2
    assert "--precision" in refused.stderr


def test_every_subcommand_help_names_the_global_options():
    for sub in ("optimize", "resume", "bench", "eval", "baseline", "show", "ir"):
        done = subprocess.run([BINARY, sub, "--help"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, sub
        assert "Global options, before or after the subcommand" in done.stdout, sub
        assert "--device" in done.stdout and "--workspace" in done.stdout, sub
