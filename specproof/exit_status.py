"""The exit status of every specproof command, and the report file a command writes.

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

import sys
from pathlib import Path

PASSED = 0
ROW_FAILED = 1
USAGE_ERROR = 2
INTERNAL_ERROR = 3
INCONCLUSIVE = 4

EXIT_STATUS_HELP = (
    "Exit status: 0 every row passes, 1 a row fails (a subject that raises, exits, hangs or "
    "returns the wrong thing fails a row), 2 usage error (one line, before any work), 3 "
    "specproof's own failure, 4 inconclusive (no row failed, but the rows fall short of the "
    "power the report states as its goal, or a row was skipped or stopped at a limit: never a "
    "pass)."
)


def write_report(prog: str, path: str, text: str) -> int | None:
    """Write a report checked beforehand; None on success, :data:`INTERNAL_ERROR` if it fails
    anyway (the disk filled up, the folder went away)."""
    try:
        Path(path).write_text(text)
    except OSError as error:
        print(f"{prog}: could not write {path}: {error}", file=sys.stderr)
        return INTERNAL_ERROR
    return None
