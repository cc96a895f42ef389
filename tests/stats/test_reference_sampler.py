"""The reference's seeded sampler against its exact laws: lossless rule x causal scheduler passes,
global search and the token-gated scheduler are rejected at the same n.

Every test: false-fail rate <= ALPHA (non-asymptotic, specproof.stats.bounds), and n chosen so
that any sampler law at TV >= DELTA from the exact law is rejected with probability >= 1 - BETA.
Seeds are fixed, so each outcome is reproducible; the rates are over the choice of seeds.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest
from specproof.reference import (
    Algorithm1,
    BlockRule,
    Case,
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
    VerificationRule,
    default_case,
    exact_law,
    reference_law,
    sample,
    tv_distance,
)
from specproof.reference.schedulers import BlockScheduler

from specproof.audit.cases import previous_token_case
from specproof.stats import (
    HashPartition,
    accepted_length_law,
    detection_power,
    goodness_of_fit,
    required_samples,
    sample_accepted_lengths,
)

ALPHA = 1e-6
BETA = 1e-4
DELTA = 0.15
"""Stated discrepancy for the previous-token case; both lookahead schedulers exceed it."""
TOLERANCE = 1e-12
"""The seeded source draws 53-bit uniforms: each choice is off its exact law by <= 2^-53."""

CASE = previous_token_case()
CELLS = 4  # two binary output tokens
N = required_samples(DELTA, ALPHA, BETA, CELLS + 1, TOLERANCE)

RULES: list[VerificationRule] = [
    ChainRule(),
    GreedyRule(),
    TreeRule(2),
    SpecInferRule(2),
    BlockRule(),
]
CAUSAL: list[BlockScheduler] = [
    Algorithm1(),
    FixedGamma(),
    StaticThreshold("1/2"),
    FixedTopK(2),
    StaleCapacity(),
]
LOOKAHEAD: list[BlockScheduler] = [GlobalSearch(), TokenGated("1/2")]


def seeded_counts(
    case: Case, scheduler: BlockScheduler, rule: VerificationRule, n: int, first_seed: int
) -> Counter[object]:
    decoder = case.decoder(scheduler, rule)
    return Counter(
        sample(decoder, case.prompts, case.num_tokens, source=seed)
        for seed in range(first_seed, first_seed + n)
    )


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
@pytest.mark.parametrize("scheduler", CAUSAL, ids=lambda s: s.name)
def test_lossless_rules_with_causal_schedulers_pass(
    rule: VerificationRule, scheduler: BlockScheduler
) -> None:
    """Previous-token case, 2 tokens: alpha = 1e-6, power 1 - 1e-4 against TV >= 0.15."""
    decoder = CASE.decoder(scheduler, rule)
    law = reference_law(decoder, CASE.prompts, CASE.num_tokens)
    assert exact_law(decoder, CASE.prompts, CASE.num_tokens) == law, "lossless per the oracle"
    fit = goodness_of_fit(
        seeded_counts(CASE, scheduler, rule, N, first_seed=0),
        law,
        alpha=ALPHA,
        beta=BETA,
        delta=DELTA,
        tolerance=TOLERANCE,
        name=f"{rule.name}+{scheduler.name}",
    )
    assert fit.powered, fit.describe()
    assert not fit.rejected, fit.describe()


@pytest.mark.parametrize("scheduler", LOOKAHEAD, ids=lambda s: s.name)
@pytest.mark.parametrize("rule", [ChainRule(), SpecInferRule(2), BlockRule()], ids=lambda r: r.name)
def test_lookahead_schedulers_are_rejected_at_the_same_n(
    scheduler: BlockScheduler, rule: VerificationRule
) -> None:
    """Same n as the lossless tests. The exact TV from the reference is >= DELTA, so the n
    suffices for power >= 1 - BETA (asserted distribution-free and for this exact law);
    a pass here would be a miss of probability <= BETA."""
    decoder = CASE.decoder(scheduler, rule)
    lossy = exact_law(decoder, CASE.prompts, CASE.num_tokens)
    target = reference_law(decoder, CASE.prompts, CASE.num_tokens)
    exact = tv_distance(lossy, target)
    assert exact >= Fraction(DELTA), f"exact TV {exact} is below the stated delta {DELTA}"
    assert required_samples(float(exact), ALPHA, BETA, CELLS + 1, TOLERANCE) <= N
    power = detection_power(N, target, lossy, alpha=ALPHA, tolerance=TOLERANCE)
    assert power >= 1 - BETA, f"power {power} < 1 - beta at n = {N}"
    fit = goodness_of_fit(
        seeded_counts(CASE, scheduler, rule, N, first_seed=0),
        target,
        alpha=ALPHA,
        beta=BETA,
        delta=DELTA,
        tolerance=TOLERANCE,
    )
    assert fit.rejected, f"exact TV {float(exact):.4f}; " + fit.describe()


# The default case: 2 requests x 3 tokens over V = 3 (up to 729 outcomes), hashed into 8 bins.

DEFAULT_DELTA = 0.1
BINS = HashPartition(8, salt=2025)


@pytest.mark.parametrize(
    ("rule", "scheduler"),
    [(rule, Algorithm1()) for rule in RULES]
    + [(ChainRule(), scheduler) for scheduler in CAUSAL[1:]],
    ids=lambda x: x.name,
)
def test_default_case_passes_on_hash_bins(
    rule: VerificationRule, scheduler: BlockScheduler
) -> None:
    """Binned law (exact push-forward): alpha = 1e-6, power 1 - 1e-4 against a binned TV >= 0.1."""
    case = default_case()
    decoder = case.decoder(scheduler, rule)
    law = reference_law(decoder, case.prompts, case.num_tokens)
    cells = len(BINS.law(law))
    n = required_samples(DEFAULT_DELTA, ALPHA, BETA, cells + 1, TOLERANCE)
    fit = goodness_of_fit(
        seeded_counts(case, scheduler, rule, n, first_seed=10**6),
        law,
        alpha=ALPHA,
        beta=BETA,
        delta=DEFAULT_DELTA,
        tolerance=TOLERANCE,
        partition=BINS,
    )
    assert not fit.rejected, fit.describe()


@pytest.mark.parametrize("rule", [ChainRule(), SpecInferRule(2), BlockRule()], ids=lambda r: r.name)
def test_accepted_length_follows_its_exact_law(rule: VerificationRule) -> None:
    """Tokens per round in the default case (gamma + 1 cells): alpha = 1e-6, power 1 - 1e-4
    against TV >= 0.1; and a law shifted by one token is rejected (exact TV stated)."""
    case = default_case()
    decoder = case.decoder(FixedGamma(), rule)
    prompt = case.prompts[0]
    law = accepted_length_law(decoder, prompt)
    n = required_samples(DEFAULT_DELTA, ALPHA, BETA, len(law) + 1, TOLERANCE)
    counts = sample_accepted_lengths(decoder, prompt, range(2 * 10**6, 2 * 10**6 + n))
    fit = goodness_of_fit(
        counts, law, alpha=ALPHA, beta=BETA, delta=DEFAULT_DELTA, tolerance=TOLERANCE
    )
    assert not fit.rejected, fit.describe()
    shifted = {length + 1: mass for length, mass in law.items()}
    assert tv_distance(shifted, law) >= Fraction(DEFAULT_DELTA)
    wrong = goodness_of_fit(
        counts, shifted, alpha=ALPHA, beta=BETA, delta=DEFAULT_DELTA, tolerance=TOLERANCE
    )
    assert wrong.rejected, wrong.describe()
