"""``python -m specproof.runners.mutant_table``: every mutant's exact TV (reference) and its
verdict under the default audit; writes ``benchmarks/mutants.md`` and ``benchmarks/mutants.json``.

Exact TV, per case of the battery with a small vocabulary (the reference enumerates them):
"round" is the TV of the mutant's round law from the chain rule's (what the audit's round row
tests); "tokens" the TV of the completed output from the target's own law (the loss a user
would see). Drafting mutants are judged by "tokens" only (a drafter may report any q it draws
from). The verdict is the default audit (alpha 1e-6, beta 1e-4, delta 0.05, tolerance 1e-4,
seed 0) run on the torch mutant, stopped at the first failing case.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from specproof.audit.audit_settings import AuditSettings
from specproof.audit.cases import applies, verifier_problems
from specproof.audit.hunt import hunt_case, hunt_cases, rounds_to_find
from specproof.audit.laws import (
    EXACT_VOCAB,
    completed_law,
    default_rule,
    exact_round_law,
    tokens_law,
)
from specproof.audit.problems import TableProblem
from specproof.audit.run import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    DEFAULT_DELTA,
    DEFAULT_TOLERANCE,
    audit_verifier,
)
from specproof.audit.settings import HuntSettings
from specproof.audit.signatures import signature_named
from specproof.stats import exact_tv, required_samples
from specproof.subjects.bugs import MUTANTS, Bug
from specproof.subjects.flagged import BugFlags, drafter
from specproof.subjects.mutants.rules import MutantChain, MutantGreedy
from specproof.subjects.mutants.rules_draft import DraftMutantChain
from specproof.subjects.mutants.verifier import make_verifier

OUT = Path(__file__).resolve().parents[2] / "benchmarks"
HUNT_RATES = {
    # per-round probability of the impossible output on the hunt case, exactly
    mutant.name: (mutant.caught.case, mutant.caught.rate)
    for mutant in MUTANTS
    if mutant.caught is not None and mutant.caught.rate is not None
}


@dataclass
class Row:
    bug: str
    description: str
    origin: str
    round_tv: float
    tokens_tv: float
    worst_case: str
    verdict: str
    failed: str
    n: int | None
    seconds: float
    needed: str


def mutant_laws(mutant: Bug, problem: TableProblem) -> tuple[float, float]:
    """(round TV, tokens TV) of the mutant on one small case, from the reference."""
    correct = exact_round_law(problem, default_rule)
    if mutant.subject == "drafter":
        law = exact_round_law(problem, lambda greedy: DraftMutantChain(mutant.name))
    else:
        law = exact_round_law(
            problem,
            lambda greedy: (
                MutantGreedy(mutant.name) if greedy else MutantChain(mutant.name, problem.ngram)
            ),
        )
    return exact_tv(law, correct), exact_tv(completed_law(problem, law), tokens_law(problem))


def row_for(mutant: Bug, problems: list[TableProblem], hunt_rounds: int) -> Row:
    small = [
        p
        for p in problems
        if p.vocab <= EXACT_VOCAB
        and applies(p, signature_named("vllm"))
        and not (mutant.subject == "drafter" and p.ngram)
        and not p.positions  # exact TVs over the cases whose joint round law is tested
    ]
    tvs = {p.name: mutant_laws(mutant, p) for p in small}
    key = 1 if mutant.subject == "drafter" else 0
    worst = max(tvs, key=lambda name: tvs[name][key])
    round_tv = 0.0 if mutant.subject == "drafter" else max(t[0] for t in tvs.values())
    tokens_tv = max(t[1] for t in tvs.values())
    tokens_tv = 0.0 if tokens_tv < 1e-12 else tokens_tv  # float sums of an exact zero
    start = time.perf_counter()
    if mutant.subject == "drafter":
        report = audit_verifier(
            make_verifier(None),
            "vllm",
            problems=problems,
            drafter=drafter(BugFlags.of(mutant.name)),
            fail_fast=True,
        )
    else:
        report = audit_verifier(
            make_verifier(mutant.name), "vllm", problems=problems, fail_fast=True
        )
    failed = [f"{r.case}/{r.check}" for r in report.results if not r.passed]
    n = max((r.n or 0 for r in report.results), default=0)
    verdict = "killed" if failed else "survived"
    tested = tvs[worst][key]
    needed = ""
    if not failed:
        if tested == 0 and mutant.name not in HUNT_RATES:
            verdict = "equivalent"
            needed = "exact TV 0 on every case"
        elif mutant.name in HUNT_RATES:
            case_name, rate = HUNT_RATES[mutant.name]
            find = rounds_to_find(rate)
            needed = f"--hunt {find} ({case_name}, rate {rate:.3g})"
            if hunt_rounds >= find:
                case = next(c for c in hunt_cases() if c.name == case_name)
                settings = AuditSettings.of("vllm", hunt=HuntSettings(hunt_rounds))
                hunted = hunt_case(make_verifier(mutant.name), case, settings)
                verdict = "killed by hunt" if not hunted.passed else "survived hunt"
                failed = [hunted.detail]
                n = hunted.n or 0
        elif tested > DEFAULT_TOLERANCE:
            cells = len(exact_round_law(next(p for p in small if p.name == worst))) + 1
            rounds = required_samples(tested, DEFAULT_ALPHA, DEFAULT_BETA, cells, DEFAULT_TOLERANCE)
            needed = f"--delta {tested:.4g}: n = {rounds} on {worst}"
        else:
            needed = "below the float tolerance 1e-4"
    return Row(
        mutant.name,
        mutant.breaks,
        mutant.seen,
        round_tv,
        tokens_tv,
        worst,
        verdict,
        "; ".join(failed[:2]),
        n,
        time.perf_counter() - start,
        needed,
    )


def markdown(rows: list[Row], large_vocab: int) -> str:
    killable = [r for r in rows if max(r.round_tv, r.tokens_tv) >= DEFAULT_DELTA]
    killed = [r for r in killable if r.verdict.startswith("killed")]
    lines = [
        "| mutant | exact TV (round) | exact TV (tokens) | verdict | n | seconds | to kill |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        name = f"{r.bug} ({r.origin})" if r.origin else r.bug
        round_tv = "-" if r.round_tv == 0 and r.bug.startswith("draft-") else f"{r.round_tv:.4g}"
        lines.append(
            f"| {name} | {round_tv} | {r.tokens_tv:.4g} | {r.verdict} | {r.n} | "
            f"{r.seconds:.1f} | {r.needed or '-'} |"
        )
    lines += [
        "",
        f"{len(killed)} of {len(killable)} mutants with exact TV >= delta = {DEFAULT_DELTA} "
        f"killed by the default audit (large-vocab case at V = {large_vocab}); "
        f"{sum(r.verdict == 'equivalent' for r in rows)} equivalent (exact TV 0 on every case).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--large-vocab", type=int, default=4096, help="V of the large-vocab case")
    parser.add_argument(
        "--hunt", type=int, default=60_000_000, help="hunt rounds for the rare-event mutants"
    )
    parser.add_argument("--only", nargs="*", help="run only these mutants")
    parser.add_argument("--out", type=Path, default=OUT, help="folder for mutants.md, mutants.json")
    args = parser.parse_args(argv)
    problems = verifier_problems(0, args.large_vocab)
    rows = []
    for mutant in MUTANTS:
        if args.only and mutant.name not in args.only:
            continue
        row = row_for(mutant, problems, args.hunt)
        print(
            f"{row.bug:30s} {row.verdict:14s} {row.seconds:6.1f} s  {row.failed}", file=sys.stderr
        )
        rows.append(row)
    table = markdown(rows, args.large_vocab)
    print(table)
    if not args.only:
        (args.out / "mutants.md").write_text(
            "# Mutation testing of `specproof audit`\n\nGenerated by `nox -s mutants` "
            "(`python -m specproof.runners.mutant_table`) on "
            f"{platform.machine()} Linux, {os.cpu_count()} CPU cores, torch {torch.__version__}. "
            "Exact TVs: the largest over the battery's small-vocabulary cases, from the "
            "reference rules in `rules.py`; n: rounds per case of the audit (for a hunt kill, "
            "the hunt rounds up to the impossible output); seconds: until the first failing "
            "case.\n\n" + table
        )
        payload = {
            "large_vocab": args.large_vocab,
            "hunt": args.hunt,
            "rows": [asdict(r) for r in rows],
        }
        (args.out / "mutants.json").write_text(json.dumps(payload, indent=2) + "\n")
    killable = [r for r in rows if max(r.round_tv, r.tokens_tv) >= DEFAULT_DELTA]
    return 0 if all(r.verdict.startswith("killed") for r in killable) else 1


if __name__ == "__main__":
    sys.exit(main())
