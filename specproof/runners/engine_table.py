"""docs/results/engine_audit.md's engine-audit table: the installed transformers under each setting
of :data:`specproof.subjects.tiny.CONFIGS` (and greedy), each glue mutant of
:mod:`specproof.subjects.hf_mutants`, specproof's own e2e decoders, and the block rounds of
:mod:`specproof.subjects.block_examples`, every one audited at the default alpha, beta and delta of
``specproof audit-engine``, the mutants at its default n (the sampled correct transformers settings
at n = ``--hf-runs`` when given: each run costs model calls); exit status 1 when a verdict differs
from the expected one (PASS for a correct engine, FAIL for a mutant).

    python -m specproof.runners.engine_table --hf-runs 600 \\
        --markdown benchmarks/engine_audit.md --json benchmarks/engine_audit.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from specproof.audit.engine.audit import DEFAULT_TOKENS, EngineReport, audit_engine
from specproof.audit.engine.subject import Engine
from specproof.audit.run import progress_bar

EXPECTED_PASS = "PASS"
EXPECTED_FAIL = "FAIL"


def subjects() -> list[tuple[str, str, Callable[[], Engine]]]:
    """(name, expected verdict, engine factory), in table order."""
    from specproof.adapters.hf import hf_engine
    from specproof.subjects import hf_mutants, tiny

    def hf(setup: Callable[[], Any], name: str) -> Callable[[], Engine]:
        return lambda: hf_engine(*setup(), name=name)

    out = [
        (f"transformers, {name}", EXPECTED_PASS, hf(fn, name)) for name, fn in tiny.CONFIGS.items()
    ]
    out.append(("transformers, greedy", EXPECTED_PASS, hf(tiny.greedy, "greedy")))
    out.append(
        ("transformers, HF assistant defaults", EXPECTED_PASS, hf(tiny.hf_defaults, "defaults"))
    )
    out += [
        (f"transformers, {name}", EXPECTED_PASS, hf(fn, name))
        for name, fn in tiny.NEW_GENERATORS.items()
    ]
    out += [
        (f"transformers, {name} (biased by its docs)", EXPECTED_FAIL, hf(fn, name))
        for name, fn in tiny.BIASED.items()
    ]
    out += [
        (f"mutant: {name}", EXPECTED_FAIL, hf(fn, name)) for name, fn in hf_mutants.MUTANTS.items()
    ]
    out += e2e_subjects()
    out += block_subjects()
    return out


def block_subjects() -> list[tuple[str, str, Callable[[], Engine]]]:
    from specproof.subjects.block_examples import BLOCK_ENGINES

    return [(name, expected, fn) for name, (expected, fn) in BLOCK_ENGINES.items()]


def e2e_subjects() -> list[tuple[str, str, Callable[[], Engine]]]:
    from specproof.subjects.e2e_decoders import E2E_DECODERS

    return [(f"specproof e2e: {name}", EXPECTED_PASS, fn) for name, fn in E2E_DECODERS.items()]


def is_hf(name: str) -> bool:
    return name.startswith(("transformers", "mutant:"))


def failed_checks(report: EngineReport) -> str:
    failed = [r.check for r in report.results if not r.passed and r.verdict == "FAIL"]
    return ", ".join(failed) if failed else "-"


def run(
    names: list[str] | None = None,
    runs: int | None = None,
    hf_runs: int | None = None,
    quiet: bool = False,
) -> list[dict[str, Any]]:
    rows = []
    for name, expected, factory in subjects():
        if names and not any(part in name for part in names):
            continue
        start = time.perf_counter()
        engine = factory()
        report = audit_engine(
            engine,
            num_new_tokens=DEFAULT_TOKENS,
            runs=hf_runs
            if hf_runs and is_hf(name) and expected == EXPECTED_PASS and not engine.greedy
            else runs,
            bars=None if quiet else progress_bar(),
            # The table's rows: layout, support, exact or PIT, coverage; its V = 256 subjects
            # regenerate their committed figures only without the binned row.
            binned_cells=0,
        )
        verdict = report.verdict
        coverage = next((r for r in report.results if r.check == "coverage"), None)
        rows.append(
            {
                "subject": name,
                "expected": expected,
                "verdict": verdict,
                "rows": len(report.results),
                "failed": failed_checks(report),
                "n": report.results[0].n,
                "seconds": round(time.perf_counter() - start, 1),
                "coverage": coverage.verdict if coverage else "-",
                "report": report.as_dict(),
            }
        )
        print(report.table(), file=sys.stderr, flush=True)
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| engine or mutant | rows | failed rows | verdict | n | seconds | coverage |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['subject']} | {row['rows']} | {row['failed']} | {row['verdict']} | "
            f"{row['n']} | {row['seconds']} | {row['coverage']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", help="subjects whose name contains one of these")
    parser.add_argument("--runs", type=int, help="n for every subject (default: the audit's)")
    parser.add_argument(
        "--hf-runs",
        type=int,
        help="n for the correct sampled transformers subjects (default: the audit's)",
    )
    parser.add_argument("--markdown", metavar="PATH")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = run(args.only, args.runs, args.hf_runs, args.quiet)
    table = markdown(rows)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["verdict"] == r["expected"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
