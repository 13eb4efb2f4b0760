"""Capture of every task in the corpus as core-ATen graph JSON (CPU sizes)."""
from __future__ import annotations

import glob
import os
import warnings

import pytest
import torch

from kforge_worker.capture import FORMAT, capture
from kforge_worker.errors import UserError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASKS = sorted(glob.glob(os.path.join(REPO, "tasks", "level*", "*.py")))


def _names_defined(graph: dict) -> set[str]:
    names = {v["name"] for key in ("inputs", "parameters", "constants") for v in graph[key]}
    return names


@pytest.mark.parametrize("path", TASKS, ids=[os.path.relpath(p, os.path.join(REPO, "tasks")) for p in TASKS])
def test_every_task_captures_to_a_well_formed_graph(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = capture({"task_path": path, "cpu_sizes": True, "task_name": os.path.basename(path)}, torch.device("cpu"))
    assert graph["format"] == FORMAT
    assert graph["inputs"] and graph["outputs"]
    defined = _names_defined(graph)
    outputs_of: dict[str, int] = {}
    for node in graph["nodes"]:
        assert node["op"].startswith("aten."), node["op"]
        for argument in node["args"]:
            if "node" in argument:
                assert argument["node"] in defined, f"{node['name']} uses {argument['node']} before it exists"
                assert argument.get("index", 0) < outputs_of.get(argument["node"], 1)
        defined.add(node["name"])
        outputs_of[node["name"]] = len(node["outputs"])
        assert all(len(t["shape"]) == len(t["stride"]) for t in node["outputs"])
    for output in graph["outputs"]:
        assert output["node"] in defined


def test_parameters_keep_their_module_names():
    path = os.path.join(REPO, "tasks", "level2", "01_linear_relu.py")
    graph = capture({"task_path": path, "cpu_sizes": True}, torch.device("cpu"))
    assert {p["target"] for p in graph["parameters"]} == {"linear.weight", "linear.bias"}
    assert [n["op"] for n in graph["nodes"]] == ["aten.permute.default", "aten.addmm.default", "aten.relu.default"]


def test_multi_output_operators_are_referenced_by_index():
    path = os.path.join(REPO, "tasks", "level1", "04_layer_norm.py")
    graph = capture({"task_path": path, "cpu_sizes": True}, torch.device("cpu"))
    assert graph["outputs"] == [{"node": "native_layer_norm", "index": 0}]
    assert len(graph["nodes"][0]["outputs"]) == 3


def test_data_dependent_control_flow_is_a_clear_error(tmp_path):
    task = tmp_path / "branchy.py"
    task.write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        if x.sum() > 0:\n"
        "            return x * 2\n"
        "        return x\n"
        "def get_inputs():\n    return [torch.randn(4)]\n"
        "def get_init_inputs():\n    return []\n")
    with pytest.raises(UserError, match="torch.export could not capture"):
        capture({"task_path": str(task)}, torch.device("cpu"))
