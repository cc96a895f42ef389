"""Every lossless rule x every causal scheduler reproduces the target law exactly (T1, T2, T3,
T6, T8 in proofs/), on generated models; lookahead schedulers do not (T5)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

import pytest
from hypothesis import find, given, settings
from specproof.reference import (
    Algorithm1,
    BlockRule,
    ChainRule,
    FixedGamma,
    FixedTopK,
    GlobalSearch,
    GreedyRule,
    SpecInferRule,
    StaleCapacity,
    StaticThreshold,
    TokenGated,
    TreeRule,
    distance_from_target,
    exact_law,
    reference_law,
)
from specproof.reference.rules import VerificationRule
from specproof.reference.schedulers import SPS, BlockScheduler, ScheduleFn
from strategies import Problem, problems


def leading_confident(confidences: Sequence[Sequence[Fraction]], sps: SPS | None) -> list[int]:
    """A user-supplied scheduler: admit positions while c_k >= 1/2 (causal: c_k sees x_<k)."""
    lengths = []
    for row in confidences:
        admitted = 0
        while admitted < len(row) and row[admitted] >= Fraction(1, 2):
            admitted += 1
        lengths.append(admitted)
    return lengths


RULES: dict[str, Callable[[], VerificationRule]] = {
    "chain": ChainRule,
    "greedy": GreedyRule,
    "tree": lambda: TreeRule(width=2),
    "specinfer": lambda: SpecInferRule(width=2),
    "block": BlockRule,
}
CAUSAL: dict[str, Callable[[], BlockScheduler | ScheduleFn]] = {
    "fixed-gamma": FixedGamma,
    "threshold": lambda: StaticThreshold(Fraction(1, 2)),
    "algorithm1": Algorithm1,
    "top-k": lambda: FixedTopK(2),
    "stale-capacity": lambda: StaleCapacity(initial_capacity=1),
    "user-callable": lambda: leading_confident,
}


@pytest.mark.parametrize("scheduler", list(CAUSAL))
@pytest.mark.parametrize("rule", list(RULES))
@given(problem=problems())
def test_exact_law_equals_target_law(rule: str, scheduler: str, problem: Problem) -> None:
    decoder = problem.decoder(RULES[rule](), CAUSAL[scheduler]())
    law = exact_law(decoder, problem.prompts, problem.num_tokens)
    assert sum(law.values()) == 1
    assert law == reference_law(decoder, problem.prompts, problem.num_tokens)


def _lossy(
    rule: VerificationRule, scheduler: BlockScheduler | ScheduleFn
) -> Callable[[Problem], bool]:
    def biased(problem: Problem) -> bool:
        decoder = problem.decoder(rule, scheduler)
        return distance_from_target(decoder, problem.prompts, problem.num_tokens) > 0

    return biased


@pytest.mark.parametrize(
    "scheduler", [GlobalSearch(), TokenGated(Fraction(1, 2))], ids=["global-search", "token-gated"]
)
def test_hypothesis_finds_a_counterexample(
    scheduler: BlockScheduler | ScheduleFn, capsys: pytest.CaptureFixture[str]
) -> None:
    """Expects a counterexample; the shrunk one is printed (pytest -rA shows it)."""
    small = problems(max_vocab=3, max_gamma=2, max_tokens=1, max_requests=1)
    found = find(small, _lossy(ChainRule(), scheduler), settings=settings(max_examples=2000))
    decoder = found.decoder(ChainRule(), scheduler)
    law = exact_law(decoder, found.prompts, found.num_tokens)
    target = reference_law(decoder, found.prompts, found.num_tokens)
    tv = distance_from_target(decoder, found.prompts, found.num_tokens)
    assert tv > 0, f"{found}: expected a biased law"
    print(f"shrunk counterexample: {found}\n  decoder law {law}\n  target law {target}\n  TV {tv}")
