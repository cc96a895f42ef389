"""The rules every specproof command keeps about its arguments and exit status.

- 0: every row passed, at the power the report states (or the command did what it was asked).
- 1: a row failed, and nothing else (a subject that raises, hangs or returns the wrong thing is
  a failed row, printed with the rows already run).
- 2: usage error, one line on stderr naming the argument, before any work starts.
- 3: the command itself failed (a bug in specproof, or the report could not be written); the
  message says so, with the traceback below it.
- 4: inconclusive: no row failed, but the rows did not reach the power the report states as
  its goal (too few runs or rounds, a row skipped or stopped at a limit of the run); never a
  pass, and the verdict line gives the power reached. A failed row outranks it (exit 1): a
  failure is evidence at any power.

A subject that calls ``sys.exit`` (any code, at any call) fails a row like one that raises. A
command run as a program ends through :func:`end_process`: its status is the status above,
never a signal, whatever threads or native calls the subject left running.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import operator
import os
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

PASSED = 0
ROW_FAILED = 1
USAGE_ERROR = 2
INTERNAL_ERROR = 3
INCONCLUSIVE = 4

MAX_SEED = 2**62
"""The largest seed a command or a check takes: an engine audit's run i uses seed + i, and
torch's generators take seeds below 2^64."""
MAX_SECONDS = min(threading.TIMEOUT_MAX, 2.0**53)
"""The longest time limit a thread wait on this platform takes (about 292 years on Linux)."""

EXIT_STATUS_HELP = (
    "Exit status: 0 every row passes, 1 a row fails (a subject that raises, exits, hangs or "
    "returns the wrong thing fails a row), 2 usage error (one line, before any work), 3 "
    "specproof's own failure, 4 inconclusive (no row failed, but the rows fall short of the "
    "power the report states as its goal, or a row was skipped or stopped at a limit: never a "
    "pass)."
)


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


def write_report(prog: str, path: str, text: str) -> int | None:
    """Write a report checked beforehand; None on success, :data:`INTERNAL_ERROR` if it fails
    anyway (the disk filled up, the folder went away)."""
    try:
        Path(path).write_text(text)
    except OSError as error:
        print(f"{prog}: could not write {path}: {error}", file=sys.stderr)
        return INTERNAL_ERROR
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


def seed_problem(name: str, value: object) -> str | None:
    """Why ``value`` is no seed (one line naming ``name``), or None: a seed is a whole number
    (not a bool) in 0..2^62."""
    try:
        seed = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        seed = None
    if seed is None or isinstance(value, bool):
        return f"{name} must be a whole number in 0..2^62, got {value!r}"
    if not 0 <= seed <= MAX_SEED:
        return f"{name} must be in 0..2^62 ({MAX_SEED}), got {seed}"
    return None


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
