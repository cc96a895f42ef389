"""Where a verifier audit's time goes: the rounds each case needs at the default delta (0.05)
and at --quick's (0.1), and the CPU cost per round of calling each verifier of
``specproof/runners/audit_time.py`` on that case, measured over a batch of rounds (one thread).

    python -m specproof.runners.audit_rows --json benchmarks/audit_rows.json

CPU time (``time.process_time``) is measured rather than wall time: on a shared machine it is
the closer guide to a quiet machine's wall time. Rounds times cost is the verifier's share of a
case; the harness's own drafting, completion and counting come on top (for the vectorised
verifier they are most of it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

from specproof.audit.calls import rows_needed
from specproof.audit.cases import applies, verifier_problems
from specproof.audit.drafting import draft_rounds
from specproof.audit.problems import TableProblem
from specproof.audit.run import audit_problem
from specproof.audit.settings import ErrorRates
from specproof.audit.signatures import call_flashinfer, call_hf, signature_named
from specproof.commands.audit import QUICK_DELTA
from specproof.runners.audit_time import loop_chain_speculative_sampling
from specproof.subjects import examples

SAMPLE = 200


def planned_rounds(problem: TableProblem, delta: float) -> int:
    """The n audit_problem plans for the case (read from the row it returns when the round
    function stops at once, so the sizing is the audit's own)."""

    def stop(*args: Any) -> Any:
        raise RuntimeError("sizing only")

    rows = audit_problem(
        problem,
        stop,
        rates=ErrorRates(delta=delta),
        seed=0,
    )
    assert rows[0].n is not None
    return rows[0].n


def cost_per_round(problem: TableProblem, verifier: str) -> float:
    generator = torch.Generator().manual_seed(0)
    drafts = draft_rounds(problem, SAMPLE, generator)
    start = time.process_time()
    if verifier == "per-request loop (hf)":
        call_hf(examples.speculative_sampling, drafts, problem, generator)
    elif verifier == "per-request loop (flashinfer)":
        call_flashinfer(loop_chain_speculative_sampling, drafts, generator)
    else:
        call_flashinfer(examples.chain_speculative_sampling, drafts, generator)
    return (time.process_time() - start) / SAMPLE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    verifiers = {
        "vectorised (flashinfer)": "flashinfer",
        "per-request loop (hf)": "hf",
        "per-request loop (flashinfer)": "flashinfer",
    }
    cases: dict[str, Any] = {}
    for problem in verifier_problems():
        if not any(applies(problem, signature_named(s)) for s in ("hf", "flashinfer")):
            continue
        row: dict[str, Any] = {
            "rounds_default": planned_rounds(problem, ErrorRates().delta),
            "rounds_quick": planned_rounds(problem, QUICK_DELTA),
        }
        for name, signature in verifiers.items():
            if applies(problem, signature_named(signature)):
                row[f"{name}: ms CPU per round"] = round(1e3 * cost_per_round(problem, name), 4)
        cases[problem.name] = row
        print(problem.name, row, flush=True)
    calls = {"rows_default": rows_needed(ErrorRates())}
    calls["rows_quick"] = rows_needed(ErrorRates(delta=QUICK_DELTA))
    totals = {}
    for name in verifiers:
        for preset in ("default", "quick"):
            seconds = sum(
                c[f"rounds_{preset}"] * c.get(f"{name}: ms CPU per round", 0.0) / 1e3
                for c in cases.values()
            )
            totals[f"{name}, {preset}: verifier CPU s over the battery"] = round(seconds, 1)
    report = {
        "load_average_at_end": [round(v, 1) for v in os.getloadavg()],
        "note": "shared 2-core machine under heavy load; CPU times, one torch thread",
        "sample_rounds_per_cost": SAMPLE,
        "cases": cases,
        "calls_rows_per_call": calls,
        "totals": totals,
    }
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(totals, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
