"""What the checks know about one parsed candidate (`Context`): the nodes that can run, parent
links, resolved names, and which of its own functions compute with PyTorch without launching a
kernel. Also the PyTorch-computation and kernel-definition tests the checks share; a Context is
built once by Context.build and only read afterwards.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Iterator, Optional

from .name_resolution import Names, const_str
from .static_rules import (JIT_DECORATORS, KERNEL_BUILDERS, NON_COMPUTE_TORCH,
                           NON_COMPUTE_TORCH_PREFIXES, TENSOR_METHODS)


@dataclass
class Context:
    tree: ast.Module
    nodes: list[ast.AST]  # every node that can run, in source order (no dead main-guard bodies)
    parents: dict[ast.AST, ast.AST]
    names: Names
    torch_modules: frozenset[str]  # self.<attr> names assigned a torch.nn module instance
    torch_only_helpers: frozenset[str] = frozenset()  # functions computing with torch, no kernel

    @staticmethod
    def build(tree: ast.Module) -> Context:
        names = Names(tree)
        nodes = _live_nodes(tree)
        parents = {child: parent for parent in ast.walk(tree)
                   for child in ast.iter_child_nodes(parent)}
        context = Context(tree, nodes, parents, names, _torch_module_attrs(nodes, names))
        return replace(context, torch_only_helpers=_torch_only_helpers(context))


def _torch_module_attrs(nodes: list[ast.AST], names: Names) -> frozenset[str]:
    attrs: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            constructor = names.qualify(node.value.func) or ""
            if constructor.startswith("torch.nn.") and ".Parameter" not in constructor:
                attrs.update(target.attr for target in node.targets
                             if isinstance(target, ast.Attribute)
                             and isinstance(target.value, ast.Name) and target.value.id == "self")
    return frozenset(attrs)


def _torch_only_helpers(ctx: Context) -> frozenset[str]:
    """Names of the candidate's functions and methods that compute with PyTorch and neither
    launch a kernel nor call another of the candidate's functions (every definition of a name)."""
    functions = [n for n in ctx.nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    defined = {function.name for function in functions}
    handles = _kernel_handles(ctx)
    verdicts: dict[str, bool] = {}
    for function in functions:
        computes = any(True for stmt in function.body for _ in torch_compute(stmt, ctx, False))
        delegates = any(_delegates(node, defined, handles, ctx) for node in ast.walk(function))
        verdicts[function.name] = verdicts.get(function.name, True) and computes and not delegates
    return frozenset(name for name, torch_only in verdicts.items() if torch_only)


def _kernel_handles(ctx: Context) -> set[str]:
    """Names (or self attributes) bound to a load_inline/cpp_extension.load result."""
    handles: set[str] = set()
    for node in ctx.nodes:
        if isinstance(node, ast.Assign) and defines_kernel(node.value, ctx.names):
            for target in node.targets:
                if isinstance(target, (ast.Name, ast.Attribute)):
                    handles.add(target.id if isinstance(target, ast.Name) else target.attr)
    return handles


def _delegates(node: ast.AST, defined: set[str], handles: set[str], ctx: Context) -> bool:
    """Whether `node` launches a kernel, calls a compiled extension (`handles`) or calls one of
    the candidate's own functions (`defined`)."""
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Subscript):  # kernel[grid](...)
        return True
    if _is_own_op(ctx.names.qualify(node.func) or "") or _helper_name(node.func) in defined:
        return True
    func = node.func
    while isinstance(func, ast.Attribute):
        if func.attr in handles:
            return True
        func = func.value
    return isinstance(func, ast.Name) and func.id in handles


def _is_own_op(target: str) -> bool:
    """A torch.ops call into a namespace other than ATen's: the candidate's own custom op."""
    return target.startswith("torch.ops.") and not target.startswith(
        ("torch.ops.aten.", "torch.ops.prims."))


def _is_main_guard(node: ast.AST) -> bool:
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides)
            and any(const_str(side) == "__main__" for side in sides))


def _main_guard_is_dead(tree: ast.Module) -> bool:
    """True when nothing in the file can make `__name__ == "__main__"` hold on import."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and (
                node.id in ("globals", "vars", "locals", "setattr", "exec", "eval", "compile",
                            "__import__", "__builtins__")
                or (node.id == "__name__" and not isinstance(node.ctx, ast.Load))):
            return False
        if isinstance(node, ast.Attribute) and node.attr in ("__dict__", "modules", "f_globals",
                                                             "__setattr__", "import_module"):
            return False
        if "__name__" in (const_str(node) or ""):
            return False
        if (isinstance(node, ast.arg) and node.arg == "__name__") or (
                isinstance(node, ast.keyword) and node.arg == "__name__") or (
                isinstance(node, ast.alias) and "__name__" in (node.name, node.asname)):
            return False
    return True


def _live_nodes(tree: ast.Module) -> list[ast.AST]:
    """All nodes in source order, without the bodies of `if __name__ == "__main__":` blocks when
    those cannot run on import (the evaluator never imports a candidate as __main__)."""
    skip_main = _main_guard_is_dead(tree)
    nodes: list[ast.AST] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        children = list(ast.iter_child_nodes(node))
        if skip_main and _is_main_guard(node):
            children = [node.test, *node.orelse]  # type: ignore[attr-defined]
        stack.extend(reversed(children))
    return nodes


def defines_kernel(node: ast.AST, names: Names) -> bool:
    """Whether `node` is a jit-decorated kernel function or a call that builds a kernel
    (load_inline, cpp_extension.load, a jiterator or CuPy kernel)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return any(names.qualify(d.func if isinstance(d, ast.Call) else d) in JIT_DECORATORS
                   for d in node.decorator_list)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id == "load_inline":
            return True
        return names.qualify(node.func) in KERNEL_BUILDERS
    return False


def torch_compute(stmt: ast.AST, ctx: Context,
                  follow_helpers: bool = True) -> Iterator[tuple[int, str]]:
    """(line, subject) of each PyTorch computation under `stmt`, skipping `raise` statements."""
    stack = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Raise):
            continue
        stack.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            yield node.lineno, "@"
        elif isinstance(node, ast.Call):
            subject = _torch_call_subject(node, ctx, follow_helpers)
            if subject:
                yield node.lineno, subject


def _torch_call_subject(call: ast.Call, ctx: Context, follow_helpers: bool) -> Optional[str]:
    target = ctx.names.qualify(call.func)
    if target is not None:
        computes = target.startswith("torch.") and target not in NON_COMPUTE_TORCH and \
            not target.startswith(NON_COMPUTE_TORCH_PREFIXES)
        return target if computes and not _is_own_op(target) else None
    func = call.func
    if follow_helpers and _helper_name(func) in ctx.torch_only_helpers:
        return f"{_helper_name(func)}(...)"
    if not isinstance(func, ast.Attribute):
        return None
    receiver = func.value
    if func.attr == "forward" and isinstance(receiver, ast.Call) and \
            isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
        return "super().forward"
    if isinstance(receiver, ast.Name) and receiver.id == "self" and func.attr in ctx.torch_modules:
        return f"self.{func.attr}(...)"
    if func.attr in TENSOR_METHODS and not _looks_like_logger(receiver):
        return f".{func.attr}()"
    return None


def _helper_name(func: ast.AST) -> Optional[str]:
    """`f` for `f(...)` and `self.f(...)`: a call of the candidate's own function or method."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
            func.value.id in ("self", "cls"):
        return func.attr
    return None


def _looks_like_logger(node: ast.AST) -> bool:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and node.id.lower().lstrip("_").startswith("log")
