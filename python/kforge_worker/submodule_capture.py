"""When torch.export cannot capture a task's whole Model: the largest submodules it can capture on
their own, each on the inputs the Model actually called it with, and why every other part stays
PyTorch.

One forward of the Model on the task's inputs records every submodule's calls (forward hooks).
The search then runs top-down from the Model's children: a submodule that exports is taken whole
(its descendants are not tried); one that does not is kept in PyTorch and its children are tried.
A submodule is kept without trying when its calls cannot be replayed from the record (keyword or
non-tensor arguments, an output that is not a tensor or a tuple of tensors) or when it was called
with more than one input signature (shape, dtype, strides): the generated kernels are specialized
to one signature, so such a submodule stays PyTorch and its children are tried instead.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Optional

import torch

from .capture import describe_export_failure, export_graph, export_program
from .errors import UserError
from .forward_source import FORWARD_PREFIX, forward_source

PARTIAL_FORMAT = "kforge-partial-1"
NOT_CALLED = "not called on the task's inputs"


@dataclass
class Calls:
    """What one submodule was called with during the recorded forward."""

    signatures: set[tuple] = field(default_factory=set)
    args: Optional[tuple[torch.Tensor, ...]] = None  # the first call's arguments, copied
    unreplayable: Optional[str] = None  # why a call cannot be replayed from the record


def _signature(args: tuple[torch.Tensor, ...]) -> tuple:
    return tuple((tuple(a.shape), a.dtype, a.stride(), a.device) for a in args)


def _replay_problem(args: tuple, kwargs: dict[str, Any], output: Any) -> Optional[str]:
    if kwargs:
        return f"called with keyword arguments ({', '.join(sorted(kwargs))})"
    for index, arg in enumerate(args):
        if not isinstance(arg, torch.Tensor):
            return f"called with a {type(arg).__name__} as argument {index}, not a tensor"
    if isinstance(output, torch.Tensor):
        return None
    if isinstance(output, tuple) and len(output) > 1 and all(isinstance(o, torch.Tensor) for o in output):
        return None
    return f"returns a {type(output).__name__}, not a tensor or a tuple of tensors"


def record_calls(model: torch.nn.Module, inputs: list, path: str) -> dict[str, Calls]:
    """Every submodule's calls in one forward of `model` on `inputs`, by qualified name."""
    calls: dict[str, Calls] = {}

    def hook_for(name: str) -> Any:
        def hook(module: torch.nn.Module, args: tuple, kwargs: dict[str, Any], output: Any) -> None:
            entry = calls.setdefault(name, Calls())
            problem = _replay_problem(args, kwargs, output)
            if problem is not None:
                entry.unreplayable = entry.unreplayable or problem
                return
            entry.signatures.add(_signature(args))
            if entry.args is None:
                entry.args = tuple(a.detach().clone() for a in args)
        return hook

    handles = [module.register_forward_hook(hook_for(name), with_kwargs=True)
               for name, module in model.named_modules() if name]
    try:
        with torch.no_grad():
            model(*inputs)
    except Exception as error:
        raise UserError(f"{path}: Model(...)(*get_inputs()) raised {type(error).__name__}: {error}") from None
    finally:
        for handle in handles:
            handle.remove()
    return calls


def why_not_replayable(calls: Optional[Calls]) -> Optional[str]:
    """Why a submodule cannot be exported on its recorded inputs, or None when it can be tried."""
    if calls is None:
        return NOT_CALLED
    if calls.unreplayable is not None:
        return calls.unreplayable
    if len(calls.signatures) > 1:
        return (f"called with {len(calls.signatures)} different input shapes or layouts "
                "(generated kernels are specialized to one)")
    return None


@dataclass
class Search:
    """The outcome of the top-down search: exported submodules in the Model's order, and the
    submodules kept in PyTorch with the reason (containers that are never called themselves,
    such as an nn.ModuleList, are searched without being listed)."""

    exported: list[tuple[str, Any]] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)


def find_exportable(model: torch.nn.Module, calls: dict[str, Calls], path: str) -> Search:
    """The top-down search over `model`'s submodules, each exported on its recorded inputs."""
    search = Search()
    first_name = {id(module): name for name, module in model.named_modules()}

    def called_within(name: str) -> bool:
        return any(called == name or called.startswith(name + ".") for called in calls)

    def visit(prefix: str, module: torch.nn.Module) -> None:
        for child_name, child in module.named_children():
            name = f"{prefix}.{child_name}" if prefix else child_name
            if first_name[id(child)] != name:
                search.kept.append((name, f"the same module as {first_name[id(child)]}"))
                continue
            reason = why_not_replayable(calls.get(name))
            if reason is None:
                try:
                    search.exported.append((name, export_program(child, calls[name].args or ())))
                    continue
                except Exception as error:
                    reason = describe_export_failure(error, path, name)
            if reason != NOT_CALLED or not called_within(name):
                search.kept.append((name, reason))
            if called_within(name):
                visit(name, child)

    visit("", model)
    return search


def capture_submodules(task: ModuleType, path: str, model: torch.nn.Module, inputs: list, export_error: str,
                       task_name: str, cpu_sizes: bool) -> dict[str, Any]:
    """The partial capture ("kforge-partial-1"): why the Model did not export, each exported
    submodule's kforge-graph-1 graph under its qualified name, the parts kept in PyTorch with the
    reason, and the task's own code to run them (forward_source)."""
    search = find_exportable(model, record_calls(model, inputs, path), path)
    with open(path, encoding="utf-8") as handle:
        source = forward_source(handle.read(), getattr(task, "KFORGE_CPU_SIZES", None) if cpu_sizes else None)
    return {
        "format": PARTIAL_FORMAT,
        "task": task_name,
        "export_error": export_error,
        "submodules": [{"name": name, "graph": export_graph(program, f"{task_name}:{name}")}
                       for name, program in search.exported],
        "kept": [{"name": name, "reason": reason} for name, reason in search.kept],
        "forward": {"source": source, "class": FORWARD_PREFIX + "Model"},
    }
