"""docs/results/engine_audit.md's sequence-row table: each engine of
:data:`specproof.subjects.sequence_examples.SEQUENCE_ENGINES`
audited by ``specproof audit-engine --tokens 4 --sequence 64`` at its defaults (alpha = 1e-6
per row, power >= 1 - 1e-4 against TV >= 0.1, and against a shift of the mean length by 0.1 x
64 tokens), with what the sequence rows cost. Exit status 1 when a verdict differs from the
expected one.

    python -m specproof.runners.sequence_table \\
        --markdown benchmarks/engine_sequence.md --json benchmarks/engine_sequence.json

``--subjects hf``: transformers' DFlash and MTP generators on their EOS settings
(:func:`specproof.subjects.tiny.dflash_eos`, :func:`specproof.subjects.tiny.mtp_eos`, which need
transformers 5.25), whose blocks can carry EOS in the middle (transformers issue 47912's class),
written to benchmarks/engine_sequence_hf.{md,json}. """

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from specproof.audit.engine.audit import DEFAULT_TOKENS, audit_engine
from specproof.audit.engine.sequence import SEQUENCE_TOKENS
from specproof.audit.engine.subject import Engine
from specproof.audit.run import progress_bar
from specproof.subjects.sequence_examples import SEQUENCE_ENGINES

SEQUENCE_CHECKS = ("stop", "length")


def hf_generators() -> dict[str, tuple[str, Callable[[], Engine]]]:
    """transformers' candidate generators that draft blocks, on their EOS settings."""
    from specproof.adapters.hf import hf_engine
    from specproof.subjects import tiny

    return {
        "transformers, DFlash eos": ("PASS", lambda: hf_engine(*tiny.dflash_eos())),
        "transformers, MTP eos": ("PASS", lambda: hf_engine(*tiny.mtp_eos())),
    }


SUBJECTS: dict[str, Callable[[], dict[str, tuple[str, Callable[[], Engine]]]]] = {
    "examples": lambda: dict(SEQUENCE_ENGINES),
    "hf": hf_generators,
}


def run(quiet: bool = False, subjects: str = "examples") -> list[dict[str, Any]]:
    rows = []
    for name, (expected, factory) in SUBJECTS[subjects]().items():
        start = time.perf_counter()
        report = audit_engine(
            factory(),
            num_new_tokens=DEFAULT_TOKENS,
            sequence_tokens=SEQUENCE_TOKENS,
            bars=None if quiet else progress_bar(),
        )
        results = report.results
        per_position = [r for r in results if r.check not in SEQUENCE_CHECKS]
        sequence = [r for r in results if r.check in SEQUENCE_CHECKS]
        failed = [r.check for r in per_position if r.verdict == "FAIL"]
        rows.append(
            {
                "subject": name,
                "expected": expected,
                "verdict": report.verdict,
                "per_position_failed": ", ".join(failed) or "-",
                "per_position_n": per_position[0].n,
                "sequence": {r.check: r.result() for r in sequence},
                "sequence_verdicts": {r.check: r.verdict for r in sequence},
                "sequence_n": sequence[0].n,
                "seconds": round(time.perf_counter() - start, 1),
                "notes": report.notes,
                "report": report.as_dict(),
            }
        )
        print(report.table(), file=sys.stderr, flush=True)
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| engine (sequence rows) | verdict | failed 4-token rows (n) | `stop` | `length` | "
        "sequence runs | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        stop, length = (
            f"{row['sequence'][c]}: {row['sequence_verdicts'][c]}" for c in SEQUENCE_CHECKS
        )
        lines.append(
            f"| {row['subject']} | {row['verdict']} | {row['per_position_failed']} "
            f"({row['per_position_n']}) | {stop} | {length} | {row['sequence_n']} | "
            f"{row['seconds']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--markdown", metavar="PATH")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--subjects", choices=sorted(SUBJECTS), default="examples")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = run(args.quiet, args.subjects)
    table = markdown(rows)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["verdict"] == r["expected"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
