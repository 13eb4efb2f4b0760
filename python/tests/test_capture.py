"""Capture of every task in the corpus as core-ATen graph JSON (CPU sizes), and the fallback to the
largest exportable submodules when a Model does not export whole."""
from __future__ import annotations

import glob
import os
import warnings

import pytest
import torch

from kforge_worker.capture import FORMAT, capture
from kforge_worker.errors import UserError
from kforge_worker.forward_source import forward_source
from kforge_worker.submodule_capture import NOT_CALLED, PARTIAL_FORMAT

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


def test_training_batch_norm_records_the_buffers_it_updates():
    path = os.path.join(REPO, "tasks", "level1", "22_batch_norm.py")
    graph = capture({"task_path": path, "cpu_sizes": True}, torch.device("cpu"))
    assert graph["mutations"] == [
        {"target": "bn.running_mean", "value": {"node": "_native_batch_norm_legit_functional", "index": 3}},
        {"target": "bn.running_var", "value": {"node": "_native_batch_norm_legit_functional", "index": 4}},
        {"target": "bn.num_batches_tracked", "value": {"node": "add"}}]


def test_a_parameter_updated_in_place_is_a_mutation_too(tmp_path):
    task = tmp_path / "decay.py"
    task.write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.scale = torch.nn.Parameter(torch.ones(4))\n"
        "    def forward(self, x):\n"
        "        with torch.no_grad():\n"
        "            self.scale.mul_(0.5)\n"
        "        return x * self.scale\n"
        "def get_inputs():\n    return [torch.randn(2, 4)]\n"
        "def get_init_inputs():\n    return []\n")
    graph = capture({"task_path": str(task)}, torch.device("cpu"))
    assert [p["target"] for p in graph["parameters"]] == ["scale"]
    assert graph["mutations"] == [{"target": "scale", "value": {"node": "mul"}}]


def test_conversion_assertions_are_left_out(tmp_path):
    # `h0.to(x.device)` on a plain tensor attribute makes export record _assert_tensor_metadata,
    # a check with no value; the graph holds only what computes.
    task = tmp_path / "moved_state.py"
    task.write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.h0 = torch.ones(2, 4)\n"
        "    def forward(self, x):\n"
        "        return x + self.h0.to(x.device)\n"
        "def get_inputs():\n    return [torch.randn(2, 4)]\n"
        "def get_init_inputs():\n    return []\n")
    graph = capture({"task_path": str(task)}, torch.device("cpu"))
    assert all("assert" not in node["op"] for node in graph["nodes"])
    assert all(out["dtype"] != "opaque" for node in graph["nodes"] for out in node["outputs"])


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


BRANCHY = os.path.join(REPO, "python", "tests", "tasks", "branchy_submodules.py")


def test_without_a_whole_graph_the_fallback_captures_the_largest_exportable_submodules():
    partial = capture({"task_path": BRANCHY, "cpu_sizes": True, "fallback": True, "task_name": "branchy"},
                      torch.device("cpu"))
    assert partial["format"] == PARTIAL_FORMAT
    assert "branchy_submodules.py:16: torch.export could not capture the Model" in partial["export_error"]
    assert [s["name"] for s in partial["submodules"]] == ["mlp", "norm"]
    mlp = partial["submodules"][0]["graph"]
    assert mlp["format"] == FORMAT and mlp["task"] == "branchy:mlp"
    assert {p["target"] for p in mlp["parameters"]} == {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert [i["shape"] for i in mlp["inputs"]] == [[4, 8]]  # the CPU sizes, as the Model called it
    assert partial["kept"] == []
    assert partial["forward"]["class"] == "kf_task_Model"


SEARCH_TASK = '''
import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        y = self.linear(x)
        return y if y.sum() > 0 else -y


class Scale(nn.Module):
    def forward(self, x, factor):
        return x * factor


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate()
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
        self.shared = nn.Linear(8, 8)
        self.scale = Scale()
        self.unused = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        x = self.gate(x)
        for block in self.blocks:
            x = block(x)
        x = self.shared(x) + self.shared(x[:2]).sum()
        x = self.scale(x, 0.5)
        return self.norm(input=x)


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
'''


def test_the_search_runs_top_down_and_says_why_each_part_stays_pytorch(tmp_path):
    task = tmp_path / "search.py"
    task.write_text(SEARCH_TASK)
    partial = capture({"task_path": str(task), "fallback": True}, torch.device("cpu"))
    # A child that exports is taken whole; one that fails is searched; a never-called container
    # (the ModuleList) is searched without being listed.
    assert [s["name"] for s in partial["submodules"]] == ["gate.linear", "blocks.0", "blocks.1"]
    kept = {k["name"]: k["reason"] for k in partial["kept"]}
    assert list(kept) == ["gate", "shared", "scale", "unused", "norm"]
    assert f"{task}:13: torch.export could not capture gate" in kept["gate"]
    assert kept["shared"].startswith("called with 2 different input shapes")
    assert kept["scale"] == "called with a float as argument 1, not a tensor"
    assert kept["unused"] == NOT_CALLED
    assert kept["norm"] == "called with keyword arguments (input)"


def test_without_the_fallback_a_model_that_does_not_export_whole_stays_an_error(tmp_path):
    with pytest.raises(UserError, match=r"branchy_submodules.py:16: torch.export could not capture the Model"):
        capture({"task_path": BRANCHY, "cpu_sizes": True}, torch.device("cpu"))


def test_the_task_code_a_partial_candidate_carries_renames_model_and_drops_the_input_generators():
    with open(BRANCHY, encoding="utf-8") as handle:
        source = forward_source(handle.read(), {"batch": 4, "features": 8, "hidden": 16})
    assert "class kf_task_Model(nn.Module):" in source and "super(kf_task_Model, self).__init__()" in source
    assert "get_inputs" not in source and "get_init_inputs" not in source and "KFORGE_CPU_SIZES" not in source
    assert source.endswith("kf_task_batch = 4\nkf_task_features = 8\nkf_task_hidden = 16\n")


_NUMBERS_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, scale, dim):
        return torch.sum(x * scale, dim={dim})


def get_inputs():
    return [torch.randn(3, 4), 2.5, 1]


def get_init_inputs():
    return []
'''


def test_python_numbers_are_graph_inputs(tmp_path):
    path = tmp_path / "numbers.py"
    path.write_text(_NUMBERS_TASK.format(dim="1"))
    graph = capture({"task_path": str(path)}, torch.device("cpu"))
    numbers = [i for i in graph["inputs"] if i.get("python_number")]
    assert [(i["name"], i["dtype"], i["shape"]) for i in numbers] == [("scale", "float32", []), ("dim", "int64", [])]
    mul = next(n for n in graph["nodes"] if n["op"] == "aten.mul.Tensor")
    assert mul["args"][1] == {"node": "scale"}


def test_a_number_used_as_a_dim_is_refused_by_name(tmp_path):
    # A tensor cannot stand for a dim, and exported as given the graph would hold the captured
    # value whatever number a caller passes: a clear error naming the input.
    path = tmp_path / "numbers.py"
    path.write_text(_NUMBERS_TASK.format(dim="dim"))
    with pytest.raises(UserError, match=r"get_inputs\(\)\[1\] = 2.5, get_inputs\(\)\[2\] = 1\).*get_init_inputs"):
        capture({"task_path": str(path)}, torch.device("cpu"))
