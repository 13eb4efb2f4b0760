"""One module's top-level names under a prefix, so that several modules' programs can live in one
file: `prefix_module_names(source, "kf_p0_")` renames every function, class and global the module
defines (and every use of them that is not shadowed by a local of the same name) to kf_p0_<name>.
Imports keep their names (two modules importing `triton.language as tl` agree); `from __future__`
imports are dropped (they may only open a file). Comments do not survive (ast.unparse)."""
from __future__ import annotations

import ast
from typing import Any


def _defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _local_names(function: ast.AST) -> set[str]:
    """Arguments and names a function (or lambda, or comprehension) binds itself, unless it
    declares them global."""
    names: set[str] = set()
    declared_global: set[str] = set()
    args = getattr(function, "args", None)
    if isinstance(args, ast.arguments):
        for arg in args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]:
            names.add(arg.arg)
    for node in ast.walk(function):
        if isinstance(node, ast.Global):
            declared_global.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not function:
            names.add(node.name)
    return names - declared_global


class _Renamer(ast.NodeTransformer):
    def __init__(self, renamed: set[str], prefix: str):
        self.renamed = renamed
        self.prefix = prefix
        self.shadowed: list[set[str]] = [set()]

    def _rename(self, name: str) -> str:
        return self.prefix + name if name in self.renamed and name not in self.shadowed[-1] else name

    def _scoped(self, node: Any, local_names: set[str]) -> Any:
        """A function, class or lambda: its own name (at module level) renamed, its decorators, bases
        and defaults visited outside it, its body inside with `local_names` shadowing globals."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and len(self.shadowed) == 1:
            node.name = self._rename(node.name)
        args = getattr(node, "args", None)
        defaults = args.defaults + [d for d in args.kw_defaults if d is not None] if isinstance(args, ast.arguments) else []
        for outside in getattr(node, "decorator_list", []) + getattr(node, "bases", []) + defaults:
            self.visit(outside)
        self.shadowed.append(self.shadowed[-1] | local_names)
        node.body = [self.visit(child) for child in node.body] if isinstance(node.body, list) else self.visit(node.body)
        self.shadowed.pop()
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        return self._scoped(node, _local_names(node))

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> Any:
        return self._scoped(node, _local_names(node))

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        # A class body's names are attributes, not globals: methods keep theirs.
        methods = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        return self._scoped(node, methods)

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        return self._scoped(node, _local_names(node))

    def visit_Name(self, node: ast.Name) -> Any:
        node.id = self._rename(node.id)
        return node


def prefix_module_names(source: str, prefix: str) -> str:
    tree = ast.parse(source)
    tree.body = [node for node in tree.body
                 if not (isinstance(node, ast.ImportFrom) and node.module == "__future__")]
    renamed = _defined_names(tree)
    tree = _Renamer(renamed, prefix).visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
