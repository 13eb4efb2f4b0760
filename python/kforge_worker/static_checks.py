"""Static tripwire checks on an untrusted candidate's source text: the public API and the checks.

analyze_candidate() parses a candidate with `ast` (it never imports or runs it) and returns the
constructs an honest kernel never needs, CUDA C++ and PTX in string constants included: at most
one Finding per check and line, sorted by line; a SyntaxError from ast.parse propagates unchanged.
These are tripwires, not the defence (the runtime checks are), so they aim at no false positives
on honest kernel code; pure function, no global state.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional

from .candidate_context import Context, defines_kernel, torch_compute
from .cuda_source_scan import scan_cpp
from .name_resolution import const_str
from .static_rules import (CPP_MARKERS, FRAME_ATTRS, GRAD_SWITCHES, IDENTITY_ATTRS, INTERCEPTS,
                           MESSAGES, OPEN_FUNCTIONS, PATH_METHODS, PTX_TIMERS, SENSITIVE_ROOTS,
                           TASK_FUNCTIONS, TENSOR_SUBCLASS_BASES, TORCH_HOOKS, rule_for)


@dataclass(frozen=True)
class Finding:
    """One tripwire hit: the check's name, the 1-based line, and a message one can act on."""

    check: str
    line: int
    message: str


CHECKS: tuple[str, ...] = (
    "reference_model", "fallback_handler", "process_exit", "frame_inspection", "monkeypatch",
    "global_state", "threads", "subprocess", "timer", "file_io", "no_kernel", "missing_model_new",
)


def analyze_candidate(source: str, filename: str = "<candidate>") -> list[Finding]:
    """All findings, sorted by line.

    Raises SyntaxError (unchanged, from ast.parse) when the source does not parse.
    """
    tree = ast.parse(source, filename)
    context = Context.build(tree)
    findings: list[Finding] = []
    # Specific checks come before the generic reference scan so their messages win the dedupe.
    for check in (_check_structure, _check_classes, _check_handlers, _check_raises, _check_calls,
                  _check_stores, _check_imports, _check_references, _check_strings):
        findings.extend(check(context))
    return _dedupe_and_sort(findings)


def _finding(check: str, line: int, subject: str, detail: Optional[str] = None) -> Finding:
    found, why = MESSAGES[check]
    return Finding(check, line, f"`{subject}` {detail or found}. {why}")


def _dedupe_and_sort(findings: Iterable[Finding]) -> list[Finding]:
    seen: set[tuple[str, int]] = set()
    unique: list[Finding] = []
    for finding in findings:
        if (finding.check, finding.line) not in seen:
            seen.add((finding.check, finding.line))
            unique.append(finding)
    return sorted(unique, key=lambda f: (f.line, CHECKS.index(f.check)))


def _last_name(node: ast.AST) -> Optional[str]:
    """`c` for `a.b.c`, `c` for `c`, else None."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _line(node: ast.AST) -> int:
    return getattr(node, "lineno", 1)


def _check_structure(ctx: Context) -> Iterator[Finding]:
    if not any(defines_kernel(node, ctx.names) for node in ctx.nodes):
        yield Finding("no_kernel", 1, "The file defines no kernel: no @triton.jit function and no "
                      "load_inline/cpp_extension.load call. ModelNew must launch a kernel the "
                      "candidate wrote, not only call PyTorch.")
    if not any(_defines_model_new(node, ctx.parents) for node in ctx.nodes):
        yield Finding("missing_model_new", 1, "No top-level `class ModelNew` found. The evaluator "
                      "instantiates ModelNew as the drop-in replacement for the reference Model.")


def _defines_model_new(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    if isinstance(node, ast.ClassDef):
        named = node.name == "ModelNew"
    elif isinstance(node, ast.Assign):
        named = any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in node.targets)
    else:
        return False
    scope = parents.get(node)
    while scope is not None and not isinstance(scope, ast.Module):
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return False
        scope = parents.get(scope)
    return named


def _check_classes(ctx: Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                if node.name == "ModelNew" and _last_name(base) == "Model":
                    yield _finding("reference_model", _line(base), "class ModelNew(Model)",
                                   "subclasses the reference model")
                if ctx.names.qualify(base) in TENSOR_SUBCLASS_BASES:
                    yield _finding("monkeypatch", _line(base), f"class {node.name}",
                                   "subclasses torch.Tensor, which can override how the evaluator "
                                   "compares and inspects outputs")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.name in TORCH_HOOKS:
            yield _finding("monkeypatch", node.lineno, node.name, INTERCEPTS)


def _check_handlers(ctx: Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        if isinstance(node, ast.ExceptHandler) and not _catches_only_import_errors(node):
            body, detail = node.body, None
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))) and node.finalbody:
            body, detail = node.finalbody, ("computes with PyTorch in a `finally` block, which "
                                            "runs (and can return) after a failed kernel")
        else:
            continue
        hits = [hit for stmt in body for hit in torch_compute(stmt, ctx)]
        if hits:
            line, subject = min(hits)
            yield _finding("fallback_handler", line, subject, detail)


def _catches_only_import_errors(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return False
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return all(_last_name(c) in ("ImportError", "ModuleNotFoundError") for c in caught)


def _check_raises(ctx: Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in ("SystemExit", "KeyboardInterrupt"):
                yield _finding("process_exit", node.lineno, f"raise {exc.id}")


def _check_calls(ctx: Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        if isinstance(node, ast.Call):
            yield from _call_findings(node, ctx)


def _call_findings(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    names, line = ctx.names, call.lineno
    target = names.qualify(call.func) or ""
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("__setattr__", "__delattr__"):
        yield from _dunder_setattr(call, call.func, ctx)
    elif target in OPEN_FUNCTIONS:
        yield _open_finding(call, target)
    elif target in ("<builtin>.__import__", "importlib.import_module"):
        yield from _dynamic_import_findings(call, target)
    elif target in ("<builtin>.setattr", "<builtin>.delattr") and call.args:
        yield from _foreign_store(call.args[0], const_str(call.args[1]) if len(call.args) > 1
                                  else None, line, ctx)
    elif target in GRAD_SWITCHES and isinstance(ctx.parents.get(call), ast.Expr):
        yield _finding("global_state", line, target,
                       "switches autograd for the whole thread (use it as a `with` block)")
    elif target.startswith("torch.backends.") and _switches_backend(target, call):
        yield _finding("global_state", line, target)
    elif target.startswith("torch.library.") and _targets_aten(call):
        yield _finding("monkeypatch", line, target, "registers kernels for built-in ATen operators")
    elif target == "<builtin>.vars" and call.args and names.qualify(call.args[0]):
        yield _finding("frame_inspection", line, "vars(...)", "reads another module's globals")
    elif target in ("<builtin>.getattr", "<builtin>.hasattr") and len(call.args) > 1:
        yield from _getattr_findings(call, ctx)
    elif isinstance(call.func, ast.Attribute) and not target:
        yield from _method_findings(call, call.func, ctx)


def _open_finding(call: ast.Call, target: str) -> Finding:
    mode_node = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    mode = const_str(mode_node) or ""
    detail = (f"opens a file for writing (mode {mode!r})" if any(c in mode for c in "wax+")
              else "opens a file, and a candidate may not read files either")
    return _finding("file_io", call.lineno, f"{target.replace('<builtin>.', '')}(...)", detail)


def _dynamic_import_findings(call: ast.Call, target: str) -> Iterator[Finding]:
    function = target.replace("<builtin>.", "")
    module = const_str(call.args[0]) if call.args else None
    if module is None:
        yield _finding("frame_inspection", call.lineno, function,
                       "imports a module whose name is computed at run time")
    else:
        yield from _import_findings(module, call.lineno, f"{function}({module!r})")


def _getattr_findings(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    name = const_str(call.args[1])
    module = (ctx.names.qualify(call.args[0]) or "").split(".")[0]
    if name == "Model":
        yield _finding("reference_model", call.lineno, "getattr(..., 'Model')")
    elif name is None and module in SENSITIVE_ROOTS:
        yield _finding("frame_inspection", call.lineno, f"getattr({module}, ...)",
                       "looks up a module attribute by a name computed at run time")


def _dunder_setattr(call: ast.Call, func: ast.Attribute, ctx: Context) -> Iterator[Finding]:
    receiver = ctx.names.qualify(func.value)
    if receiver in ("<builtin>.object", "<builtin>.type") and call.args:
        yield from _foreign_store(call.args[0], None, call.lineno, ctx)
    else:
        yield from _foreign_store(func.value, None, call.lineno, ctx)


def _method_findings(call: ast.Call, func: ast.Attribute, ctx: Context) -> Iterator[Finding]:
    if func.attr == "elapsed_time":
        yield _finding("timer", call.lineno, ".elapsed_time()")
    elif func.attr in PATH_METHODS:
        yield _finding("file_io", call.lineno, f".{func.attr}()")


def _switches_backend(target: str, call: ast.Call) -> bool:
    last = target.rsplit(".", 1)[-1]
    has_args = bool(call.args or call.keywords)
    return last.startswith(("enable_", "set_", "allow_")) or (
        last.startswith("preferred_") and has_args)


def _targets_aten(call: ast.Call) -> bool:
    values = [const_str(v) or "" for v in [*call.args, *(k.value for k in call.keywords)]]
    return any(v in ("aten", "prims") or v.startswith(("aten::", "prims::")) for v in values)


def _foreign_root(node: ast.AST, ctx: Context) -> Optional[str]:
    """The dotted name of `node` when it is a module, class or object the candidate does not own."""
    target = ctx.names.qualify(node)
    if target is not None:
        return target.replace("<builtin>.", "")
    if isinstance(node, ast.Name) and node.id == "__builtins__":
        return "__builtins__"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            ctx.names.qualify_name(node.func.id) == "<builtin>.type":
        return "type(...)"
    return None


def _foreign_store(obj: ast.AST, attr: Optional[str], line: int,
                   ctx: Context) -> Iterator[Finding]:
    root = _foreign_root(obj, ctx)
    if root is None:
        return
    dotted = f"{root}.{attr}" if attr else root
    if dotted.startswith("torch.backends."):
        yield _finding("global_state", line, dotted)
    else:
        yield _finding("monkeypatch", line, dotted)


def _check_stores(ctx: Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        if not isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
            continue
        if isinstance(node, ast.Attribute):
            if _foreign_root(node.value, ctx) is not None:
                yield from _foreign_store(node.value, node.attr, node.lineno, ctx)
            elif node.attr in IDENTITY_ATTRS:
                yield _finding("monkeypatch", node.lineno, f".{node.attr}",
                               "replaces an object's class, code or namespace")
        elif isinstance(node, ast.Subscript):
            yield from _subscript_store(node, ctx)


def _subscript_store(node: ast.Subscript, ctx: Context) -> Iterator[Finding]:
    value = node.value
    if isinstance(value, ast.Call) and ctx.names.qualify(value.func) == "<builtin>.vars" \
            and value.args and _foreign_root(value.args[0], ctx):
        yield _finding("monkeypatch", node.lineno, "vars(...)[...]")
        return
    root = _foreign_root(value, ctx)
    if root is not None and not root.startswith("os.environ"):
        yield from _foreign_store(value, "[...]", node.lineno, ctx)


def _check_imports(ctx: Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _import_findings(alias.name, getattr(alias, "lineno", node.lineno),
                                            f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            prefix = module if module.endswith(".") else module + "."
            for alias in node.names:
                dotted = module if alias.name == "*" else prefix + alias.name
                yield from _import_findings(dotted, getattr(alias, "lineno", node.lineno),
                                            f"from {module} import {alias.name}")


def _import_findings(dotted: str, line: int, shown: str) -> Iterator[Finding]:
    lowered = dotted.lower()
    if any(word in lowered for word in ("reference", "task", "__main__")) or \
            "Model" in dotted.split("."):
        yield _finding("reference_model", line, shown)
    check = rule_for(dotted)
    if check is not None:
        yield _finding(check, line, shown)


def _check_references(ctx: Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        yield from _namespace_findings(node, ctx)
        yield from _model_findings(node, ctx)
        if _is_chain_head(node, ctx):
            yield from _rule_findings(node, ctx)


def _namespace_findings(node: ast.AST, ctx: Context) -> Iterator[Finding]:
    """Frame attributes, `__builtins__`, and other modules' `__dict__`."""
    if isinstance(node, ast.Attribute) and node.attr in FRAME_ATTRS:
        yield _finding("frame_inspection", node.lineno, f".{node.attr}")
    elif isinstance(node, ast.Name) and node.id == "__builtins__":
        yield _finding("frame_inspection", node.lineno, "__builtins__")
    elif isinstance(node, ast.Attribute) and node.attr == "__dict__" and \
            isinstance(node.ctx, ast.Load) and ctx.names.qualify(node.value):
        yield _finding("frame_inspection", node.lineno, f"{ctx.names.qualify(node)}",
                       "reads another module's or class's namespace")


def _model_findings(node: ast.AST, ctx: Context) -> Iterator[Finding]:
    """`Model`, `x.Model`, `[...]["Model"]`, and the task's get_inputs/get_init_inputs."""
    if _last_name(node) == "Model" and isinstance(getattr(node, "ctx", None), ast.Load):
        yield _finding("reference_model", _line(node), "Model")
    elif isinstance(node, ast.Subscript) and const_str(node.slice) == "Model":
        yield _finding("reference_model", node.lineno, "[...]['Model']")
    elif isinstance(node, ast.Name) and node.id in TASK_FUNCTIONS and \
            node.id not in ctx.names.bound and node.id not in ctx.names.imports:
        yield _finding("reference_model", node.lineno, node.id,
                       "is the task's input generator, which the candidate never sees")


def _rule_findings(node: ast.AST, ctx: Context) -> Iterator[Finding]:
    dotted = ctx.names.qualify(node)
    check = rule_for(dotted) if dotted else None
    if dotted and check:
        detail = INTERCEPTS if check == "monkeypatch" else None
        yield _finding(check, _line(node), dotted.replace("<builtin>.", ""), detail)


def _is_chain_head(node: ast.AST, ctx: Context) -> bool:
    if not (isinstance(node, (ast.Name, ast.Attribute)) or ctx.names.is_getattr(node)):
        return False
    parent = ctx.parents.get(node)
    return not (isinstance(parent, ast.Attribute) and parent.value is node)


def _check_strings(ctx: Context) -> Iterator[Finding]:
    for node in ctx.nodes:
        text = const_str(node)
        if text is None:
            continue
        if text == "__builtins__":
            yield _finding("frame_inspection", node.lineno, "'__builtins__'")
        if text == "__main__" and not _compares_module_name(ctx.parents.get(node)):
            yield _finding("reference_model", node.lineno, "'__main__'",
                           "names the module the task or evaluator runs as")
        for marker in PTX_TIMERS:
            if marker in text:
                yield _finding("timer", _string_line(node, text, text.index(marker)), marker,
                               "reads a GPU clock register")
        if any(marker in text for marker in CPP_MARKERS):
            for check, offset, subject in scan_cpp(text):
                yield _finding(check, _string_line(node, text, offset), subject,
                               f"in CUDA/C++ source {MESSAGES[check][0]}")


def _compares_module_name(node: Optional[ast.AST]) -> bool:
    return isinstance(node, ast.Compare) and any(
        _last_name(side) == "__name__" for side in [node.left, *node.comparators])


def _string_line(node: ast.AST, text: str, offset: int) -> int:
    line = node.lineno + text.count("\n", 0, offset)  # type: ignore[attr-defined]
    return min(line, getattr(node, "end_lineno", None) or line)
