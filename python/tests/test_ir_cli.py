"""`kforge ir`: every task in the corpus is captured by the worker, imported, verified and printed
by the C++ IR."""
from __future__ import annotations

import glob
import json
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))


def test_every_task_becomes_verified_ir(tmp_path):
    tasks = sorted(glob.glob(os.path.join(REPO, "tasks", "level*", "*.py")))
    done = subprocess.run([BINARY, "-q", "--workspace", str(tmp_path), "--device", "cpu", "ir", *tasks],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("\ngraph ") + done.stdout.startswith("graph ") == len(tasks)
    assert "# opaque" not in done.stdout, "every op in the corpus is known to the op registry"


def test_json_output_is_the_captured_graph(tmp_path):
    task = os.path.join(REPO, "tasks", "level2", "01_linear_relu.py")
    done = subprocess.run([BINARY, "-q", "--workspace", str(tmp_path), "--device", "cpu", "ir", "--json", task],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    graph = json.loads(done.stdout)
    assert graph["format"] == "kforge-graph-1"
    assert [n["op"] for n in graph["nodes"]] == ["aten.permute.default", "aten.addmm.default", "aten.relu.default"]


def test_a_model_that_does_not_export_whole_shows_its_submodules(tmp_path):
    task = os.path.join(REPO, "python", "tests", "tasks", "branchy_submodules.py")
    done = subprocess.run([BINARY, "-q", "--workspace", str(tmp_path), "--device", "cpu", "ir", task],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert "torch.export could not capture the Model" in first and "branchy_submodules.py:" in first
    assert "# submodule mlp (--mode partial compiles it)" in done.stdout
    assert "# submodule norm" in done.stdout
    assert done.stdout.count("\ngraph ") == 2
