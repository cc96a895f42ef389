"""Re-measure the pytest plugin's cost that docs/guide/ci_integration.md ("Time") quotes.

    python -m specproof.runners.plugin_time [--repeats 3]

For each signature's correct example verifier (specproof.subjects.examples), and the tiny
chain engine of tests/plugin/engines.py, one ``assert_lossless`` / ``assert_engine_lossless``
call (subject and twin together) at level full and at level quick, the best of ``--repeats``;
prints the Markdown table with the rows run and the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VERIFIERS = (
    ("flashinfer", "chain_speculative_sampling"),
    ("vllm", "rejection_sample"),
    ("vllm-logits", "rejection_sample_logits"),
    ("hf", "speculative_sampling"),
)


def best_of(repeats: int, call: Callable[[], Any]) -> tuple[float, Any]:
    """The shortest of ``repeats`` timed calls, and the last call's result (printing muted)."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            result = call()
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from plugin import engines  # tests/plugin/engines.py

    from specproof.subjects import examples
    from specproof.testing import assert_engine_lossless, assert_lossless

    print(f"load average {os.getloadavg()[0]:.1f}, best of {args.repeats}")
    print("| signature (example verifier) | rows (statistical) | full | quick |")
    print("|---|---|---|---|")
    for signature, name in VERIFIERS:
        verifier = getattr(examples, name)
        seconds = {}
        for level in ("full", "quick"):
            check = functools.partial(assert_lossless, verifier, signature, level=level)
            seconds[level], outcome = best_of(args.repeats, check)
        rows = outcome.report.results if outcome is not None else []
        statistical = sum(1 for row in rows if row.alpha > 0)
        print(f"| {signature} (`{name}`) | {len(rows)} ({statistical}) | "
              f"{seconds['full']:.1f} s | {seconds['quick']:.1f} s |")  # fmt: skip
    engine_seconds = {}
    for level in ("full", "quick"):
        check = functools.partial(
            assert_engine_lossless, engines.generate, engines.target_probs, engines.PROMPT,
            level=level, max_draft=engines.GAMMA,
        )  # fmt: skip
        engine_seconds[level], outcome = best_of(args.repeats, check)
    rows = outcome.report.results if outcome is not None else []
    statistical = sum(1 for row in rows if row.alpha > 0)
    print(f"| engine (`tests/plugin/engines.py`) | {len(rows)} ({statistical}) | "
          f"{engine_seconds['full']:.1f} s | {engine_seconds['quick']:.1f} s |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
