"""Loading KernelBench-format task files: `Model`, `get_inputs()`, `get_init_inputs()`.

A task is trusted user code. Loading it never touches a candidate. Errors are UserErrors that
name the file and line.
"""
from __future__ import annotations

import importlib.util
import itertools
import sys
import traceback
from types import ModuleType

from .errors import UserError

CPU_SIZES_ATTRIBUTE = "KFORGE_CPU_SIZES"
_module_counter = itertools.count()


def _where(path: str, error: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == path]
    return f"{path}:{frames[-1].lineno}" if frames else path


def import_file(path: str, module_prefix: str) -> ModuleType:
    """Imports a Python file as a fresh module; the caller classifies any exception."""
    name = f"{module_prefix}_{next(_module_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"{path}: not a Python file that can be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_task(path: str, cpu_sizes: bool) -> ModuleType:
    """Imports the task, checks its shape, and applies its CPU sizes when asked to."""
    try:
        module = import_file(path, "kforge_task")
    except FileNotFoundError:
        raise UserError(f"{path}: no such task file") from None
    except SyntaxError as error:
        raise UserError(f"{path}:{error.lineno}: syntax error in the task: {error.msg}") from None
    except UserError:
        raise
    except Exception as error:  # the task's own import-time code failed
        raise UserError(f"{_where(path, error)}: importing the task raised "
                        f"{type(error).__name__}: {error}") from None
    missing = [name for name in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, name)]
    if missing:
        raise UserError(f"{path}: a KernelBench task must define Model, get_inputs() and "
                        f"get_init_inputs(); missing: {', '.join(missing)}")
    if cpu_sizes:
        apply_cpu_sizes(module, path)
    return module


def apply_cpu_sizes(module: ModuleType, path: str) -> bool:
    sizes = getattr(module, CPU_SIZES_ATTRIBUTE, None)
    if sizes is None:
        return False
    if not isinstance(sizes, dict):
        raise UserError(f"{path}: {CPU_SIZES_ATTRIBUTE} must be a dict of module globals to values")
    for name, value in sizes.items():
        if not hasattr(module, name):
            raise UserError(f"{path}: {CPU_SIZES_ATTRIBUTE} names '{name}', which the task does not define")
        setattr(module, name, value)
    return True


def call_task_function(module: ModuleType, path: str, name: str) -> list:
    """Calls get_inputs/get_init_inputs and checks that it returned a list or tuple."""
    try:
        values = getattr(module, name)()
    except Exception as error:
        raise UserError(f"{_where(path, error)}: {name}() raised {type(error).__name__}: {error}") from None
    if not isinstance(values, (list, tuple)):
        raise UserError(f"{path}: {name}() must return a list, got {type(values).__name__}")
    return list(values)
