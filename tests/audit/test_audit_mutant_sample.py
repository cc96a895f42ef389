"""A sample of the mutation table in the default session (``nox -s mutants`` runs them all).

The exact TVs come from the reference rules with the same bug (``mutants/rules.py``); the
verdicts from the audit at alpha = 1e-6 per row, beta = 1e-4, delta = 0.05 (killed mutants)
or delta = 0.2 (the equivalent one: passing has probability >= 1 - rows x 1e-6 for a correct
verifier, and this mutant's exact law equals the correct one on every case).
"""

from __future__ import annotations

import pytest

from specproof.audit import audit_verifier
from specproof.audit.cases import verifier_problems
from specproof.runners.mutant_table import mutant_laws
from specproof.subjects import bugs
from specproof.subjects.mutants import make_verifier

SMALL = [p for p in verifier_problems(0, 64) if p.vocab <= 16 and not p.positions]


@pytest.mark.parametrize("bug", ["bonus-wrong-row", "residual-softmax-clamp"])
def test_a_mutant_above_delta_is_killed(bug: str) -> None:
    small_vocab = next(p for p in SMALL if p.name == "small-vocab")
    round_tv, tokens_tv = mutant_laws(bugs.mutant(bug), small_vocab)
    assert round_tv >= tokens_tv - 1e-12 >= 0.05 - 1e-12  # completion cannot add TV
    report = audit_verifier(make_verifier(bug), "vllm", problems=[small_vocab], calls=False)
    assert not report.passed, report.table()


def test_the_wrong_bonus_row_is_caught_by_the_round_law() -> None:
    """The old blind spot: the bonus token after full acceptance. Only p-equals-q rows, where
    every round ends with the bonus, are given: the round and tokens rows both fail."""
    case = next(p for p in SMALL if p.name == "p-equals-q")
    report = audit_verifier(make_verifier("bonus-wrong-row"), "vllm", problems=[case], calls=False)
    failed = {r.check for r in report.results if not r.passed}
    assert {"round", "tokens"} <= failed, report.table()


def test_an_equivalent_mutant_has_exact_tv_zero_and_passes() -> None:
    mutant = bugs.mutant("pq-fallback-draft")
    for problem in SMALL:
        round_tv, tokens_tv = mutant_laws(mutant, problem)
        assert round_tv == 0 and tokens_tv < 1e-12, problem.name
    # Equivalent in law: its law rows pass. (Its non-finite robustness rows are another
    # question: on a +inf draft entry it emits the rejected draft.)
    report = audit_verifier(make_verifier(mutant.name), "vllm", problems=SMALL[:4], delta=0.2)
    assert all(r.passed for r in report.results), report.table()
