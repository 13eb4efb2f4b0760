"""The task's own code as a partial candidate carries it, to run what torch.export could not
capture: every top-level statement but the input generators (get_inputs, get_init_inputs,
KFORGE_CPU_SIZES and an `if __name__ == "__main__":` block), with every name the task defines
under FORWARD_PREFIX (so `Model` becomes `kf_task_Model`: a candidate may not name the reference)
and, when the task was captured at its CPU sizes, those sizes assigned after it, as the task
loader applies them. Comments do not survive (ast.unparse)."""
from __future__ import annotations

import ast
from typing import Any, Optional

from .module_names import prefix_module_names
from .task_loader import CPU_SIZES_ATTRIBUTE

FORWARD_PREFIX = "kf_task_"
_INPUT_GENERATORS = frozenset({"get_inputs", "get_init_inputs", CPU_SIZES_ATTRIBUTE})


def _is_main_block(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and any(
        isinstance(side, ast.Name) and side.id == "__name__" for side in [node.test.left, *node.test.comparators])


def _generates_inputs(node: ast.stmt) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name in _INPUT_GENERATORS
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return all(isinstance(t, ast.Name) and t.id in _INPUT_GENERATORS for t in targets)
    return _is_main_block(node)


def forward_source(task_source: str, cpu_sizes: Optional[dict[str, Any]]) -> str:
    tree = ast.parse(task_source)
    tree.body = [node for node in tree.body if not _generates_inputs(node)]
    source = prefix_module_names(ast.unparse(tree), FORWARD_PREFIX)
    overrides = "".join(f"{FORWARD_PREFIX}{name} = {value!r}\n" for name, value in (cpu_sizes or {}).items())
    return source + overrides
