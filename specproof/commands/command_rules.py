"""The rules every specproof command keeps about its arguments: one-line usage errors (exit 2,
before any work), argument types, output paths checked before the work, and the end of the
process. The exit statuses themselves are :mod:`specproof.exit_status`'s."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from specproof.exit_status import (
    EXIT_STATUS_HELP,
    INCONCLUSIVE,
    INTERNAL_ERROR,
    PASSED,
    ROW_FAILED,
    USAGE_ERROR,
    write_report,
)
from specproof.value_limits import MAX_SECONDS, MAX_SEED, seed_problem

__all__ = [
    "EXIT_STATUS_HELP",
    "INCONCLUSIVE",
    "INTERNAL_ERROR",
    "MAX_SECONDS",
    "MAX_SEED",
    "PASSED",
    "ROW_FAILED",
    "USAGE_ERROR",
    "seed_problem",
    "write_report",
]


FOLDER = "DIR"
"""The metavar of a folder argument: an empty one (``--out ''``, the current folder in
disguise) is a usage error."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line naming the argument, exit 2; a
    folder argument (metavar ``DIR``) given an empty name is one of them."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see --help)", file=sys.stderr)
        raise SystemExit(USAGE_ERROR)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        for action in self._actions:
            value = getattr(parsed, action.dest, None)
            if action.metavar == FOLDER and isinstance(value, str) and not value.strip():
                name = "/".join(action.option_strings) or action.dest
                self.error(f"argument {name}: is empty: name a folder")
        return parsed, extras


def usage_error(prog: str, message: str) -> int:
    """Print one usage line and return :data:`USAGE_ERROR`."""
    text = " ".join(str(message).split())
    print(f"{prog}: {text}", file=sys.stderr)
    return USAGE_ERROR


def internal_error(prog: str, error: BaseException) -> int:
    """Report specproof's own failure (not the subject's, not a usage error)."""
    print(
        f"{prog}: internal error, not a verdict on the subject: {type(error).__name__}: {error}",
        file=sys.stderr,
    )
    traceback.print_exception(error, file=sys.stderr)
    return INTERNAL_ERROR


def output_path_problem(option: str, path: str) -> str | None:
    """Why a report cannot be written at ``path`` (checked before the work, by opening it for
    appending: a folder, a missing folder or an unwritable place), or None. A file the check
    creates is removed again."""
    target = Path(path)
    if target.is_dir():
        return f"{option} {path}: is a folder, not a file"
    if not target.parent.is_dir():
        return f"{option} {path}: no folder {target.parent.resolve()}"
    existed = target.exists()
    try:
        with open(target, "a"):
            pass
    except OSError as error:
        return f"{option} {path}: cannot be written ({error.strerror or error})"
    if not existed:
        os.unlink(target)
    return None


def finite_float(
    name: str, low: float, high: float = math.inf, ceiling: str = ""
) -> Callable[[str], float]:
    """An argparse type: a finite number with ``low < value <= high`` (inf and NaN refused);
    ``ceiling`` says what ``high`` is."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{name} must be a finite number, got {text}")
        if not low < value <= high:
            bound = f"at most {high:g}{ceiling}" if value > low else f"> {low:g}"
            raise argparse.ArgumentTypeError(f"{name} must be {bound}, got {text}")
        return value

    return parse


def whole_number_text(name: str, text: str) -> int:
    """``text`` as an integer; an argparse type error naming ``name`` otherwise."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {text!r}") from None


def seed_argument(name: str) -> Callable[[str], int]:
    """An argparse type for a seed: a whole number in 0..2^62."""

    def parse(text: str) -> int:
        value = whole_number_text(name, text)
        problem = seed_problem(name, value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    return parse


def positive_whole_number(name: str) -> Callable[[str], int]:
    """An argparse type: a whole number >= 1."""

    def parse(text: str) -> int:
        value = whole_number_text(name, text)
        if value < 1:
            raise argparse.ArgumentTypeError(f"{name} must be >= 1, got {text}")
        return value

    return parse


def number_above(
    kind: type, name: str, low: float = 0.0, high: float | None = None
) -> Callable[[str], Any]:
    """An argparse type: ``kind`` above ``low`` and at most ``high``; a float must be finite."""
    if kind is float:
        return finite_float(name, low, math.inf if high is None else high)

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not value > low:
            raise argparse.ArgumentTypeError(f"{name} must be > {low:g}, got {text}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{name} must be at most {high:g}, got {text}")
        return value

    return parse


def rate_argument(name: str) -> Callable[[str], float]:
    """An argparse type: an error rate in (0, 1)."""

    def parse(text: str) -> float:
        value = number_above(float, name)(text)
        if not value < 1:
            raise argparse.ArgumentTypeError(f"{name} must be in (0, 1), got {text}")
        return float(value)

    return parse


def tolerance_argument(text: str) -> float:
    """An argparse type: a TV tolerance in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"tolerance must be a number, got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"tolerance must be in [0, 1), got {text}")
    return value


def seconds(name: str) -> Callable[[str], float]:
    """An argparse type for a time limit: finite, > 0 and no longer than a thread wait takes."""
    return finite_float(name, 0.0, MAX_SECONDS, " s, the longest wait a thread takes here")


def end_process(status: int) -> NoReturn:
    """End the program with ``status`` once its output is flushed, without the interpreter's
    shutdown.

    At shutdown CPython stops every daemon thread that next asks for the GIL with
    ``pthread_exit``; a thread inside a torch call that released the GIL (the guard's worker
    on an abandoned call, or a thread the subject started) unwinds through a ``noexcept`` C++
    frame and the process aborts (``terminate called without an active exception``, status
    134) after the verdict was printed. A non-daemon thread the subject left running would
    instead keep the process from ending. Nothing of the command is left to finalize: reports
    are written and closed before this is called."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: the status still holds
            stream.flush()
    os._exit(status)


T = TypeVar("T")


def integer_at_least(name: str, low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{name} must be at least {low}, got {text}")
        return value

    return parse


def number_in(name: str, low: float, high: float) -> Callable[[str], float]:
    """A finite number with low < value <= high."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not (math.isfinite(value) and low < value <= high):
            raise argparse.ArgumentTypeError(f"{name} must be in ({low:g}, {high:g}], got {text}")
        return value

    return parse


def loaded(prog: str, option: str, load: Callable[[], T]) -> T:
    """``load()``; a missing or bad weights file (ValueError, OSError) exits 2 with one line
    naming ``option`` and the file."""
    try:
        return load()
    except (ValueError, OSError) as error:
        usage_error(prog, f"{option}: {error}")
        raise SystemExit(USAGE_ERROR) from None


def write_result(result: dict[str, Any], out: Path | None) -> str:
    """``result`` as indented JSON, written to ``out`` when one is given; the text is returned."""
    text = json.dumps(result, indent=1) + "\n"
    if out is not None:
        out.write_text(text)
    return text


def json_object(
    parser: argparse.ArgumentParser, path: Path, what: str, keys: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The JSON object in ``path``; otherwise a usage error (one line, exit 2) naming ``what``
    and the file: missing, unreadable, not JSON, not an object, or without one of ``keys``."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        parser.error(f"{what}: cannot read {path}: {getattr(error, 'strerror', None) or error}")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        parser.error(f"{what}: {path} is not JSON ({error.msg}, line {error.lineno})")
    if not isinstance(value, dict):
        parser.error(f"{what}: {path} holds a JSON {type(value).__name__}, not an object")
    missing = [key for key in keys if key not in value]
    if missing:
        parser.error(f"{what}: {path} has no {', '.join(repr(k) for k in missing)}")
    return value
