"""Resolution of a candidate's names to the dotted paths they refer to (`Names`), built once from
a parsed module and only read afterwards. `const_str` is the constant-string test that the
resolver and the checks share.
"""
from __future__ import annotations

import ast
from typing import Optional

from .static_rules import BUILTIN_NAMES


def const_str(node: Optional[ast.AST]) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


class Names:
    """Resolves Name/Attribute chains to the dotted path they refer to, through imports, simple
    aliases (`f = os.system`), getattr with a constant name and constant-string dynamic imports."""

    def __init__(self, tree: ast.Module) -> None:
        self.imports: dict[str, str] = {}
        self.aliases: dict[str, str] = {}
        self.bound: set[str] = set()
        self.star_modules: list[str] = []
        for node in ast.walk(tree):
            self._collect(node)
        for _ in range(3):  # aliases of aliases
            self._collect_aliases(tree)

    def _collect(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                self.imports[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            prefix = module if module.endswith(".") else module + "."
            for alias in node.names:
                if alias.name == "*":
                    self.star_modules.append(module)
                else:
                    self.imports[alias.asname or alias.name] = prefix + alias.name
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            self.bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.bound.add(node.name)
        elif isinstance(node, ast.arg):
            self.bound.add(node.arg)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            self.bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            self.bound.add(node.rest)

    def _collect_aliases(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id not in self.imports):
                target = self.qualify(node.value)
                if target is not None:
                    self.aliases[node.targets[0].id] = target

    def qualify_name(self, name: str) -> Optional[str]:
        if name in self.imports:
            return self.imports[name]
        if name in self.aliases:
            return self.aliases[name]
        if name in self.bound:
            return None
        if name in BUILTIN_NAMES:
            return f"<builtin>.{name}"
        return f"{self.star_modules[-1]}.{name}" if self.star_modules else None

    def qualify(self, node: ast.AST) -> Optional[str]:
        """The dotted path `node` refers to, or None when it is not rooted in an import/builtin."""
        attrs: list[str] = []
        while True:
            if isinstance(node, ast.Attribute):
                attrs.append(node.attr)
                node = node.value
            elif self.is_getattr(node):
                attrs.append(const_str(node.args[1]) or "")
                node = node.args[0]
            else:
                break
        if isinstance(node, ast.Name):
            root = self.qualify_name(node.id)
        elif isinstance(node, ast.Call):
            root = self.dynamic_import(node)
        else:
            root = None
        return ".".join([root, *reversed(attrs)]) if root else None

    def is_getattr(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and self.qualify_name(node.func.id) == "<builtin>.getattr"
                and len(node.args) >= 2 and const_str(node.args[1]) is not None)

    def dynamic_import(self, call: ast.Call) -> Optional[str]:
        """The module named by `__import__("m")` / `importlib.import_module("m")`, else None."""
        func = self.plain_dotted(call.func)
        if func not in ("<builtin>.__import__", "importlib.import_module") or not call.args:
            return None
        module = const_str(call.args[0])
        if module is None:
            return None
        has_fromlist = len(call.args) >= 4 or any(k.arg == "fromlist" for k in call.keywords)
        return module if func.startswith("importlib") or has_fromlist else module.split(".")[0]

    def plain_dotted(self, node: ast.AST) -> Optional[str]:
        """qualify() for pure Name/Attribute chains only (never recurses into calls)."""
        attrs: list[str] = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        root = self.qualify_name(node.id) if isinstance(node, ast.Name) else None
        return ".".join([root, *reversed(attrs)]) if root else None
