"""Execute every notebook here; fail if one raises (each asserts its claims) or runs too long.

    python notebooks/run_all.py [NAME ...] [--check-stripped]

``--check-stripped`` also fails if a committed notebook carries outputs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
TIMEOUT_SECONDS = 120


def has_outputs(notebook: nbformat.NotebookNode) -> bool:
    return any(
        cell.get("outputs") or cell.get("execution_count")
        for cell in notebook.cells
        if cell.cell_type == "code"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help="notebook file names (default: all)")
    parser.add_argument("--check-stripped", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("MPLBACKEND", "Agg")
    paths = [HERE / n for n in args.names] or sorted(HERE.glob("[0-9]*.ipynb"))
    failures = []
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        if args.check_stripped and has_outputs(notebook):
            failures.append(f"{path.name}: committed with outputs (strip them)")
            continue
        start = time.perf_counter()
        print(f"running {path.name} ...", flush=True)
        client = NotebookClient(
            notebook,
            timeout=TIMEOUT_SECONDS,
            kernel_name="python3",
            resources={"metadata": {"path": str(HERE)}},
        )
        try:
            client.execute()
        except Exception as error:  # the notebook's own assertion or error
            failures.append(f"{path.name}: {type(error).__name__}: {error}")
            print(f"  FAILED after {time.perf_counter() - start:.1f} s", flush=True)
            continue
        took = time.perf_counter() - start
        print(f"  ok in {took:.1f} s", flush=True)
        if took > TIMEOUT_SECONDS:
            failures.append(f"{path.name}: took {took:.0f} s, over {TIMEOUT_SECONDS} s")
    for failure in failures:
        print("FAIL", failure, file=sys.stderr)
    print(f"{len(paths) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
