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
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path
from typing import NoReturn

PASSED = 0
ROW_FAILED = 1
USAGE_ERROR = 2
INTERNAL_ERROR = 3
INCONCLUSIVE = 4

EXIT_STATUS_HELP = (
    "Exit status: 0 every row passes, 1 a row fails (a subject that raises, hangs or returns "
    "the wrong thing fails a row), 2 usage error (one line, before any work), 3 specproof's "
    "own failure, 4 inconclusive (no row failed, but the rows fall short of the power the "
    "report states as its goal, or a row was skipped or stopped at a limit: never a pass)."
)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line naming the argument, exit 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see --help)", file=sys.stderr)
        raise SystemExit(USAGE_ERROR)


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
