"""The seeded sampler and the exact enumerator are two readings of the same decoder.

Both uniform sources are checked: Python's generator draws in program order, Philox draws one
uniform per address, so a rule that reused an address for two choices would fail here.

Statistical check: with n samples over an outcome space of K outcomes, the
Bretagnolle-Huber-Carol inequality gives P(||p_hat - p||_1 >= eps) <= 2^K exp(-n eps^2 / 2).
Choosing eps = sqrt(2 (K ln 2 + ln(1/alpha)) / n) makes the false-fail rate at most alpha.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction

import pytest
from specproof.reference import (
    Algorithm1,
    BlockRule,
    ChainRule,
    SeededSource,
    SpecInferRule,
    TreeRule,
    UniformSource,
    default_case,
    exact_law,
    sample,
)
from specproof.reference.philox import PhiloxSource
from specproof.reference.rules import VerificationRule

ALPHA = 1e-6
SAMPLES = 3000


def l1_bound(outcomes: int, samples: int, alpha: float) -> float:
    return math.sqrt(2 * (outcomes * math.log(2) + math.log(1 / alpha)) / samples)


def philox(seed: int) -> UniformSource:
    return PhiloxSource(seed)


def mersenne(seed: int) -> UniformSource:
    return SeededSource(seed)


@pytest.mark.parametrize("source", [mersenne, philox])
@pytest.mark.parametrize(
    "rule", [ChainRule(), TreeRule(2), SpecInferRule(3), BlockRule()], ids=lambda r: r.name
)
def test_seeded_samples_follow_the_exact_law(
    rule: VerificationRule, source: Callable[[int], UniformSource]
) -> None:
    """False-fail rate <= 1e-6 (BHC bound). Power: if the sampler's true law were at L1 distance
    >= 2 eps (TV >= eps) from the exact one, the check fails with probability >= 1 - 1e-6."""
    case = default_case()
    decoder = case.decoder(Algorithm1(), rule)
    prompts, n_tokens = case.prompts[:1], 2
    law = exact_law(decoder, prompts, n_tokens)
    counts = Counter(
        sample(decoder, prompts, n_tokens, source=source(seed)) for seed in range(SAMPLES)
    )
    assert set(counts) <= set(law), "sampled an outcome the exact law gives probability 0"
    l1 = sum(abs(Fraction(counts[x], SAMPLES) - w) for x, w in law.items())
    bound = l1_bound(len(law), SAMPLES, ALPHA)
    assert float(l1) < bound, f"L1 {float(l1):.4f} >= bound {bound:.4f} at alpha = {ALPHA}"


def test_the_bound_detects_a_wrong_law() -> None:
    """The same check fails when compared against a law that differs by more than the bound."""
    case = default_case()
    decoder = case.decoder(Algorithm1(), ChainRule())
    law = exact_law(decoder, case.prompts[:1], 1)
    counts = Counter(sample(decoder, case.prompts[:1], 1, source=seed) for seed in range(SAMPLES))
    bound = l1_bound(len(law), SAMPLES, ALPHA)
    shifted = {x: Fraction(1, len(law)) for x in law}
    l1_truth = sum(abs(shifted[x] - w) for x, w in law.items())
    assert float(l1_truth) > 2 * bound, "the wrong law must be far enough to be detectable"
    l1 = sum(abs(Fraction(counts[x], SAMPLES) - shifted[x]) for x in law)
    assert float(l1) >= bound
