"""The audit's exact laws against the reference, and the coverage identity they rest on."""

from __future__ import annotations

import math

import pytest

from specproof.audit.cases import verifier_problems
from specproof.audit.laws import binned_round_law, completed_law, exact_round_law, tokens_law
from specproof.audit.problems import TableProblem
from specproof.stats import HashPartition

SMALL = [p for p in verifier_problems(0, 64) if p.vocab <= 16 and not p.positions]


def test_the_binned_round_law_is_the_references_pushed_through_the_bins() -> None:
    """binned_round_law (float64 closed form) == the reference's Fraction round law, binned."""
    source = next(p for p in SMALL if p.name == "ragged")
    bins = HashPartition(3, salt=5)
    problem = TableProblem("binned", source.target, source.draft, ragged=True, token_bins=bins)
    reference = exact_round_law(problem)  # V = 4 <= EXACT_VOCAB: enumerated by the reference
    closed_form = binned_round_law(problem)
    assert set(reference) == set(closed_form)
    assert max(abs(reference[k] - closed_form[k]) for k in reference) < 1e-12


@pytest.mark.parametrize("problem", SMALL, ids=lambda p: p.name)
def test_a_lossless_round_completed_from_the_target_is_the_target_law(
    problem: TableProblem,
) -> None:
    """Losslessness of the reference chain and greedy rules, seen through the audit's laws:
    completing each exact round outcome from the target gives the target's own law."""
    law = exact_round_law(problem)
    assert math.isclose(sum(law.values()), 1.0, abs_tol=1e-12)
    completed = completed_law(problem, law)
    target = tokens_law(problem)
    keys = set(completed) | set(target)
    assert max(abs(completed.get(k, 0) - target.get(k, 0)) for k in keys) < 1e-12


def test_every_emitted_position_is_a_coordinate_of_the_round_outcome() -> None:
    """Outcomes carry (draft length, row kind) and every emitted token, bonus included: on the
    ragged case the law has outcomes of every length 1..gamma + 1 for every draft length."""
    problem = next(p for p in SMALL if p.name == "ragged")
    law = exact_round_law(problem)
    for length in problem.draft_lengths:
        emitted = {len(key) - 2 for key in law if key[0] == length}
        assert emitted == set(range(1, length + 2))
