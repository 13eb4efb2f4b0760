"""Capturing a task's Model as a graph of core ATen operators (torch.export, then the core
decompositions), serialized as kforge-graph-1 JSON: inputs, parameters and buffers by their
original names, constants, nodes with their arguments and output types, the outputs, and the
mutations (each parameter or buffer forward() updates in place, with its new value).
Multi-output operators are referred to as (node, index); getitem nodes do not appear.
Recurrent layers (aten.lstm, aten.gru, aten.rnn_tanh, aten.rnn_relu) stay whole: decomposed,
each would unroll into one subgraph per time step (tens of thousands of nodes), and the compiler
lowers them itself (passes/recurrence.h)."""
from __future__ import annotations

import contextlib
import gc
import math
import operator
import time
import traceback
from typing import Any, Sequence

import torch

from .errors import UserError
from .inputs import move_inputs, seed_everything
from .task_loader import call_task_function, load_task

FORMAT = "kforge-graph-1"


def _tensor_type(value: Any) -> dict[str, Any]:
    if not isinstance(value, torch.Tensor):
        return {"shape": [], "dtype": "opaque", "stride": []}
    return {"shape": [int(s) for s in value.shape], "dtype": str(value.dtype).replace("torch.", ""),
            "stride": [int(s) for s in value.stride()]}


def _output_types(node: torch.fx.Node) -> list[dict[str, Any]]:
    value = node.meta.get("val")
    if isinstance(value, (list, tuple)):
        return [_tensor_type(v) for v in value]
    return [_tensor_type(value)]


class _Encoder:
    def __init__(self) -> None:
        self.getitems: dict[str, tuple[str, int]] = {}

    def ref(self, node: torch.fx.Node) -> dict[str, Any]:
        if node.name in self.getitems:
            source, index = self.getitems[node.name]
            return {"node": source, "index": index}
        return {"node": node.name}

    def encode(self, value: Any) -> dict[str, Any]:
        if isinstance(value, torch.fx.Node):
            return self.ref(value)
        if isinstance(value, bool):
            return {"bool": value}
        if isinstance(value, int):
            return {"int": value}
        if isinstance(value, float):
            return {"float": value if math.isfinite(value) else str(value)}
        if value is None:
            return {"none": True}
        if isinstance(value, str):
            return {"str": value}
        if isinstance(value, torch.dtype):
            return {"dtype": str(value).replace("torch.", "")}
        if isinstance(value, torch.device):
            return {"device": str(value)}
        if isinstance(value, torch.layout):
            return {"layout": str(value).replace("torch.", "")}
        if isinstance(value, torch.memory_format):
            return {"memory_format": str(value).replace("torch.", "")}
        if isinstance(value, (list, tuple)):
            return {"list": [self.encode(v) for v in value]}
        return {"str": repr(value)}


_RECURRENT_OPS = ("lstm", "gru", "rnn_tanh", "rnn_relu")


@contextlib.contextmanager
def _lstm_hidden_shapes_fixed():
    """torch's LSTM decomposition, which export runs to infer shapes, returns each layer's final
    state as [1, B, H] (it squeezes dim 1, not 0), so the stacked h_n and c_n come out as
    [layers, 1, B, H] instead of [layers, B, H], and every op after them is traced with that shape.
    Within this context the per-layer function drops the extra dim."""
    from torch._decomp import decompositions

    original = decompositions.one_layer_lstm

    def one_layer_lstm(*args: Any, **kwargs: Any) -> Any:
        out, (h, c) = original(*args, **kwargs)
        if h.dim() == 3:
            h, c = h.reshape(h.shape[1:]), c.reshape(c.shape[1:])
        return out, (h, c)

    decompositions.one_layer_lstm = one_layer_lstm
    try:
        yield
    finally:
        decompositions.one_layer_lstm = original


def export_program(module: torch.nn.Module, inputs: Sequence[Any]) -> Any:
    """`module` exported on `inputs` and lowered to core ATen, recurrent layers kept whole; raises
    whatever torch.export raises."""
    table = torch.export.default_decompositions()
    for name in _RECURRENT_OPS:
        for overload in ("input", "data"):
            table.pop(getattr(getattr(torch.ops.aten, name), overload), None)
    with _lstm_hidden_shapes_fixed():
        return torch.export.export(module, tuple(inputs)).run_decompositions(table)


def describe_export_failure(error: Exception, path: str, what: str) -> str:
    """`path:line: torch.export could not capture <what> (Kind: first line of the message)`, the
    line being the last frame of the task file in the traceback (the statement that failed)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == path]
    where = f"{path}:{frames[-1].lineno}" if frames else path
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return f"{where}: torch.export could not capture {what} ({type(error).__name__}: {first_line[:500]})"


def _signature_entries(program: Any) -> list[dict[str, Any]]:
    """Placeholders in order, with what they are: user input, parameter, buffer or constant."""
    from torch.export.graph_signature import InputKind

    kinds = {InputKind.USER_INPUT: "input", InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer",
             InputKind.CONSTANT_TENSOR: "constant"}
    return [{"name": spec.arg.name, "kind": kinds.get(spec.kind, "opaque"), "target": spec.target}
            for spec in program.graph_signature.input_specs]


def _is_assertion(node: torch.fx.Node) -> bool:
    """A check export records for a conversion (`h0.to(x.device)` gives `_assert_tensor_metadata`)
    or a shape guard: it computes nothing and nothing reads it."""
    name = getattr(node.target, "__name__", str(node.target))
    return not node.users and (name.startswith("_assert") or name.startswith("sym_constrain_range"))


def export_graph(program: Any, task_name: str) -> dict[str, Any]:
    from torch.export.graph_signature import OutputKind

    graph = program.graph_module.graph
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    result: dict[str, Any] = {"format": FORMAT, "task": task_name, "inputs": [], "parameters": [], "constants": [],
                              "nodes": [], "outputs": [], "mutations": []}
    for index, entry in enumerate(e for e in _signature_entries(program) if e["kind"] == "input"):
        result["inputs"].append({"name": entry["name"], "index": index,
                                 **_tensor_type(placeholders[entry["name"]].meta.get("val"))})
    for entry in _signature_entries(program):
        node_type = _tensor_type(placeholders[entry["name"]].meta.get("val"))
        if entry["kind"] in ("parameter", "buffer"):
            result["parameters"].append({"name": entry["name"], "target": entry["target"], "kind": entry["kind"], **node_type})
        elif entry["kind"] == "constant":
            value = program.constants.get(entry["target"])
            constant = {"name": entry["name"], "target": entry["target"], "kind": "constant", **node_type}
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                constant["value"] = value.item()
            result["constants"].append(constant)
    encoder = _Encoder()
    for node in graph.nodes:
        if node.op != "call_function" or _is_assertion(node):
            continue
        if node.target is operator.getitem:
            source, index = node.args
            encoder.getitems[node.name] = (source.name, int(index))
            continue
        result["nodes"].append({"name": node.name, "op": str(node.target),
                                "args": [encoder.encode(a) for a in node.args],
                                "kwargs": {k: encoder.encode(v) for k, v in node.kwargs.items()},
                                "outputs": _output_types(node)})
    output_node = next(n for n in graph.nodes if n.op == "output")
    values = output_node.args[0] if isinstance(output_node.args[0], (list, tuple)) else [output_node.args[0]]
    for spec, value in zip(program.graph_signature.output_specs, values):
        encoded = encoder.encode(value)
        if spec.kind == OutputKind.USER_OUTPUT:
            result["outputs"].append(encoded)
        elif spec.kind in (OutputKind.BUFFER_MUTATION, OutputKind.PARAMETER_MUTATION):
            result["mutations"].append({"target": spec.target, "value": encoded})
    return result


_warmed_up = False


def warm_up(device: torch.device) -> dict[str, Any]:
    """torch.export's one-time start-up in this process (its imports, the first trace, the
    device's first use), paid on a tiny module so that each task's capture measures its own work.
    Returns the seconds it took: 0 once done."""
    global _warmed_up
    if _warmed_up:
        return {"seconds": 0.0}
    started = time.perf_counter()
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).to(device)
    export_graph(export_program(model, [torch.randn(2, 4, device=device)]), "warm_up")
    # What torch.export loaded stays for the process's life: out of the collector's way, so that
    # no later full collection inside a capture walks it again.
    gc.collect()
    gc.freeze()
    _warmed_up = True
    return {"seconds": time.perf_counter() - started}


def capture(request: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """The task's Model captured on its own inputs (the CPU sizes when asked for). When torch.export
    cannot capture it whole, a UserError naming the line and the reason; or, with "fallback" in
    the request, the largest submodules it can capture (submodule_capture.capture_submodules)."""
    path = request["task_path"]
    cpu_sizes = bool(request.get("cpu_sizes", False))
    task = load_task(path, cpu_sizes=cpu_sizes)
    seed_everything(int(request.get("seed", 0)))
    init_inputs = call_task_function(task, path, "get_init_inputs")
    try:
        model = task.Model(*init_inputs).to(device)
    except Exception as error:
        raise UserError(f"{path}: Model(*get_init_inputs()) raised {type(error).__name__}: {error}") from None
    # The inputs are made where they will be used: capture needs only their shapes (and some values
    # for the fallback's recording forward), and the CPU's generator took 1-3 s for the largest
    # tasks' 0.8-1 GB, more than all the rest of the compile.
    with device:
        inputs = call_task_function(task, path, "get_inputs")
    inputs = move_inputs(inputs, device)
    task_name = request.get("task_name", path)
    try:
        program, numbers = _export_numbers_as_tensors(model, inputs, path)
    except Exception as error:
        failure = describe_export_failure(error, path, "the Model")
        if not request.get("fallback"):
            raise UserError(failure) from None
        from .submodule_capture import capture_submodules  # it imports this module

        return capture_submodules(task, path, model, inputs, failure, task_name, cpu_sizes)
    graph = export_graph(program, task_name)
    for entry in graph["inputs"]:
        if entry["index"] in numbers:
            entry["python_number"] = True
    return graph


def _export_numbers_as_tensors(model: torch.nn.Module, inputs: Sequence[Any], path: str) -> tuple[Any, set[int]]:
    """The program, and the positions of the inputs that are Python numbers (not bools): export
    would bake their values into the graph as constants, so they are passed as 0-d tensors
    (float32 or int64) and the graph reads them as inputs. Where the model cannot take a tensor
    there (a number used as a size, a dim or in control flow), a UserError: exported as given, the
    graph would hold the captured value, and a generated model would ignore the one it is given."""
    numbers = {i for i, value in enumerate(inputs) if isinstance(value, (int, float)) and not isinstance(value, bool)}
    if numbers:
        device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), torch.device("cpu"))
        as_tensors = [torch.tensor(value, dtype=torch.float32 if isinstance(value, float) else torch.int64, device=device)
                      if i in numbers else value for i, value in enumerate(inputs)]
        try:
            return export_program(model, as_tensors), numbers
        except Exception:
            pass
    program = export_program(model, inputs)
    if numbers:
        named = ", ".join(f"get_inputs()[{i}] = {inputs[i]!r}" for i in sorted(numbers))
        raise UserError(f"{path}: the Model uses a Python number among its inputs ({named}) where a tensor cannot stand "
                        "(a size, a dim or a branch): the graph would hold the captured value and a generated model would "
                        "ignore the one it is given; pass such a number through get_init_inputs() instead")
    return program, set()
