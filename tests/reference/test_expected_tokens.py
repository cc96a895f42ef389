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


def survival_along_accepted_paths(problem: Problem, drafter: Drafter) -> list[Fraction]:
    """s_j = sum over x_<j of prod_{i<j} min(p_i, q_i)(x_i) * c_j(x_<j).

    This is E[a_j] when each x_i follows the law of an *accepted* token, norm(min(p_i, q_i)).
    """
    prompt = problem.prompts[0]
    paths: dict[tuple[int, ...], Fraction] = {(): Fraction(1)}  # x_<j -> prod min(p_i, q_i)(x_i)
    out = []
    for _ in range(problem.gamma):
        out.append(sum((w * drafter.confidence(prompt, x) for x, w in paths.items()), Fraction(0)))
        grown: dict[tuple[int, ...], Fraction] = {}
        for x, w in paths.items():
            p, q = problem.target.dist(prompt + x), drafter.proposal(prompt, x)
            for v in range(len(p)):
                if min(p[v], q[v]) > 0:
                    grown[(*x, v)] = w * min(p[v], q[v])
        paths = grown
    return out


def survival_along_draft_paths(problem: Problem, drafter: Drafter) -> list[Fraction]:
    """E[a_j] with x drawn from the drafter itself."""
    prompt = problem.prompts[0]
    blocks = law_of(lambda chooser: sample_block(prompt, drafter, problem.gamma, chooser))
    return [
        sum((w * block.survival[j] for block, w in blocks.items()), Fraction(0))
        for j in range(problem.gamma)
    ]


@given(problem=problems(max_requests=1))
def test_tau_is_one_plus_expected_survival_under_true_confidences(problem: Problem) -> None:
    """tau = 1 + sum_j E[a_j], the expectation taken along accepted paths."""
    drafter = with_true_confidences(problem.drafter, problem.target)
    decoder = SpeculativeDecoder(problem.target, drafter, ChainRule(), FixedGamma(), problem.gamma)
    survival = survival_along_accepted_paths(problem, drafter)
    prompt = problem.prompts[0]
    assert expected_tokens_per_round(decoder, prompt) == 1 + sum(survival)
    assert acceptance_probabilities(decoder, prompt) == survival


def test_draft_law_expectation_of_a_is_not_tau() -> None:
    """Averaging a_j over the drafter's own law is not the acceptance probability: with
    q = (1/2, 1/2), p(.|0) = (0, 1) and p(.|1) = (1/2, 1/2), P(x_1, x_2 accepted) = 1/2 while
    the draft-law average of a_2 is 3/8."""
    problem = find_problem_where_draft_average_differs()
    drafter = with_true_confidences(problem.drafter, problem.target)
    assert survival_along_accepted_paths(problem, drafter) == [Fraction(1, 2), Fraction(1, 2)]
    assert survival_along_draft_paths(problem, drafter) == [Fraction(1, 2), Fraction(3, 8)]
    decoder = SpeculativeDecoder(problem.target, drafter, ChainRule(), FixedGamma(), 2)
    assert acceptance_probabilities(decoder, (0,)) == [Fraction(1, 2), Fraction(1, 2)]


def find_problem_where_draft_average_differs() -> Problem:
    half = (Fraction(1, 2), Fraction(1, 2))
    target = TargetModel.from_table(
        2, 1, {(0,): (Fraction(0), Fraction(1)), (1,): (Fraction(1, 2), Fraction(1, 2))}
    )
    drafter = Drafter(2, lambda ctx, d: half, lambda ctx, d: Fraction(1), order=0)
    return Problem(target, drafter, 2, (Fraction(1),) * 3, ((0,),), 1, False)


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
