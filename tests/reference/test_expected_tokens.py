"""Expected tokens per round (theorem T7 in proofs/)."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st
from specproof.reference import (
    ChainRule,
    Drafter,
    FixedGamma,
    SpeculativeDecoder,
    TargetModel,
    acceptance_probabilities,
    expected_tokens_per_round,
    law_of,
    overlap,
    sample_block,
    with_true_confidences,
)
from strategies import Problem, problems


def expected_prefix_survival(problem: Problem, drafter: Drafter) -> list[Fraction]:
    """E[a_j] for j = 1..gamma, with a_j = c_1 ... c_j over the drafted tokens."""
    prompt = problem.prompts[0]
    blocks = law_of(lambda chooser: sample_block(prompt, drafter, problem.gamma, chooser))
    return [
        sum((w * block.survival[j] for block, w in blocks.items()), Fraction(0))
        for j in range(problem.gamma)
    ]


@given(problem=problems(max_requests=1))
def test_tau_is_one_plus_expected_survival_under_true_confidences(problem: Problem) -> None:
    drafter = with_true_confidences(problem.drafter, problem.target)
    decoder = SpeculativeDecoder(problem.target, drafter, ChainRule(), FixedGamma(), problem.gamma)
    survival = expected_prefix_survival(problem, drafter)
    prompt = problem.prompts[0]
    assert expected_tokens_per_round(decoder, prompt) == 1 + sum(survival)
    assert acceptance_probabilities(decoder, prompt) == survival


@given(
    vocab=st.integers(2, 4),
    gamma=st.integers(1, 4),
    weights=st.data(),
)
def test_iid_case_is_a_geometric_sum(vocab: int, gamma: int, weights: st.DataObject) -> None:
    def row() -> tuple[Fraction, ...]:
        w = weights.draw(st.lists(st.integers(0, 4), min_size=vocab, max_size=vocab).filter(any))
        return tuple(Fraction(x, sum(w)) for x in w)

    p, q = row(), row()
    target = TargetModel(vocab, lambda ctx: p, order=0)
    drafter = Drafter(vocab, lambda ctx, d: q, lambda ctx, d: Fraction(1), order=0)
    decoder = SpeculativeDecoder(target, drafter, ChainRule(), FixedGamma(), gamma)
    b = overlap(p, q)
    expected = sum((b**i for i in range(gamma + 1)), Fraction(0))  # (1 - b^(k+1)) / (1 - b)
    if b != 1:
        assert expected == (1 - b ** (gamma + 1)) / (1 - b)
    assert expected_tokens_per_round(decoder, ()) == expected


def test_worked_numbers_for_b_085() -> None:
    b = Fraction(85, 100)
    tau = [sum((b**i for i in range(k + 1)), Fraction(0)) for k in range(1, 6)]
    assert tau[0] == Fraction(185, 100)
    assert abs(float(tau[4]) - 4.15) < 0.005
    assert 1 / (1 - b) == Fraction(20, 3)
