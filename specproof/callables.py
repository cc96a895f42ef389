"""A callable named on a command line as ``module:function``, imported as ``python -m`` would
(the current directory first), with one-line errors for what the user's module does wrong."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any


def first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def import_module(module_name: str, path: str) -> Any:
    """The module, or ValueError with one line: not found, or its import raised (a syntax
    error, an exception, ``sys.exit``)."""
    cwd = os.getcwd()
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and module_name.startswith(error.name.split(".")[0]):
            raise ValueError(
                f"no module named {error.name!r} in the current directory ({cwd}) or on "
                f"sys.path; run from the folder that holds it, or add that folder to PYTHONPATH"
            ) from error
        raise ValueError(f"{path}: importing {module_name} failed: {first_line(error)}") from error
    except SyntaxError as error:
        where = f" ({error.filename}, line {error.lineno})" if error.filename else ""
        raise ValueError(f"{path}: {module_name} has a syntax error{where}: {error.msg}") from error
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # its import raised or exited: the user's module, not ours
        if isinstance(error, SystemExit):
            error = ValueError(f"it called sys.exit({error.code!r})")
        raise ValueError(f"{path}: importing {module_name} failed: {first_line(error)}") from None


def load_callable(path: str) -> Callable[..., Any]:
    """Import ``module:function`` (the function may be a dotted attribute path), looking in the
    current directory first, as ``python -m`` does."""
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"expected module:function, got {path!r}")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    target: Any = import_module(module_name, path)
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"{module_name} has no attribute {attribute!r}")
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"{path} is not callable")
    return target
