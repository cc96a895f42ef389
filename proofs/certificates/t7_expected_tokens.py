"""Certificate of T7: expected tokens per round.

Checks, exactly: (a) E[tokens] = 1 + sum_j P(A_1..A_j) = 1 + sum_j b_1 ... b_j with b_j the
conditional acceptance probabilities, on seeded models with gamma <= 3; (b) one step accepts
with probability sum_x min(p, q) = 1 - TV(p, q) for every grid pair; (c) with per-step
acceptance 17/20 at every prefix: 37/20 = 1.85 (k = 1), 1 + b + ... + b^5 = 4.1523365625 (k = 5),
and the gap to 20/3 is b^(k+1) / (1 - b); (d) the drafted-path product of prefix-conditional
confidences, a_j = c_1(x_<1) ... c_j(x_<j), does not have expectation P(A_1..A_j) in general.
"""

from __future__ import annotations

import itertools
import sys
from fractions import Fraction

from certificate_tools import (
    Outcome,
    constant_drafter,
    constant_target,
    grid_dists,
    random_models,
    require,
)
from specproof.reference import (
    ChainRule,
    Chooser,
    Drafter,
    FixedGamma,
    SpeculativeDecoder,
    Tokens,
    acceptance_probabilities,
    conditional_acceptance,
    expected_tokens_per_round,
    law_of,
    overlap,
    sample_block,
    total_variation,
    with_true_confidences,
)
from specproof.reference.distributions import Dist

BETA = Fraction(17, 20)


def tail_sum(seed: int, gamma: int) -> tuple[Fraction, Fraction]:
    """(a) on one model; returns (P(A_1..A_gamma), E_q[a_gamma]) with true confidences."""
    target, drafter = random_models(seed, 3, 1, gamma, denominator=5)
    drafter = with_true_confidences(drafter, target)
    dec = SpeculativeDecoder(target, drafter, ChainRule(), FixedGamma(), gamma)
    prompt = (seed % 3,)
    tau = expected_tokens_per_round(dec, prompt)
    reach = acceptance_probabilities(dec, prompt)
    require(tau == 1 + sum(reach, Fraction(0)), f"T7 tail sum, seed {seed}: {tau} vs {reach}")
    running, total = Fraction(1), Fraction(1)
    for b in conditional_acceptance(dec, prompt):
        running *= b or 0
        total += running
    require(tau == total, f"T7: tau {tau} != 1 + sum of products of b_j ({total})")

    def path_product(chooser: Chooser) -> Fraction:
        block = sample_block(prompt, drafter, gamma, chooser)
        return block.survival[-1]

    expected_product = sum((a * w for a, w in law_of(path_product).items()), Fraction(0))
    return reach[-1], expected_product


def path_product_counterexample() -> None:
    """p = (1/2, 1/2); q_1 = (3/4, 1/4); q_2 = p after A and (1, 0) after B: P(A_1 A_2) = 5/8,
    while E_q[c_1 c_2(x_1)] = 21/32."""
    half = (Fraction(1, 2), Fraction(1, 2))

    def proposal(context: Tokens, drafted: Tokens) -> Dist:
        if not drafted:
            return (Fraction(3, 4), Fraction(1, 4))
        return half if drafted[-1] == 0 else (Fraction(1), Fraction(0))

    target = constant_target(half)
    drafter = with_true_confidences(Drafter(2, proposal, lambda c, d: 1, order=0), target)
    dec = SpeculativeDecoder(target, drafter, ChainRule(), FixedGamma(), 2)
    require(acceptance_probabilities(dec, ())[1] == Fraction(5, 8), "T7: P(A_1 A_2) != 5/8")

    def path_product(chooser: Chooser) -> Fraction:
        return sample_block((), drafter, 2, chooser).survival[-1]

    expected = sum((a * w for a, w in law_of(path_product).items()), Fraction(0))
    require(expected == Fraction(21, 32), f"T7: E_q[a_2] = {expected}, expected 21/32")


def main(thorough: bool = False) -> Outcome:
    path_product_counterexample()
    models = 0
    mismatched = 0
    for seed in range(40 if thorough else 25):
        reach, product = tail_sum(seed, 1 + seed % 3)
        models += 1
        mismatched += reach != product
    require(mismatched > 0, "T7: the drafted-path product always matched P(A_1..A_j)")
    pairs = 0
    for vocab, denominator in ((2, 12), (3, 6)) if thorough else ((2, 6), (3, 4)):
        for p, q in itertools.product(grid_dists(vocab, denominator), repeat=2):
            dec = SpeculativeDecoder(
                constant_target(p), constant_drafter(q), ChainRule(), FixedGamma(), 1
            )
            accept = acceptance_probabilities(dec, ())[0]
            require(accept == overlap(p, q) == 1 - total_variation(p, q), f"T7: p={p} q={q}")
            pairs += 1
    p = (Fraction(1, 2), Fraction(1, 2))
    q = (Fraction(7, 20), Fraction(13, 20))
    require(overlap(p, q) == BETA, "T7: the i.i.d. example must have overlap 17/20")
    values = []
    for k in range(1, 6):
        dec = SpeculativeDecoder(
            constant_target(p), constant_drafter(q), ChainRule(), FixedGamma(), k
        )
        tau = expected_tokens_per_round(dec, ())
        require(tau == sum((BETA**i for i in range(k + 1)), Fraction(0)), f"T7: k={k}, {tau}")
        require(1 / (1 - BETA) - tau == BETA ** (k + 1) / (1 - BETA), f"T7: gap at k={k}")
        values.append(tau)
    require(values[0] == Fraction(37, 20), "T7: k = 1 must give 1.85")
    require(round(float(values[4]), 2) == 4.15, f"T7: k = 5 gives {float(values[4])}")
    require(Fraction(20, 3) == 1 / (1 - BETA), "T7: the limit must be 20/3")
    return Outcome(
        "T7",
        "proved (tau identity with conditional acceptance; 1 - TV; geometric case); "
        "drafted-path product as an unbiased tau refuted",
        f"{models} models: tau = 1 + sum_j b_1..b_j ({mismatched} where E_q[a_j] != P(A_<=j); "
        "example 21/32 vs 5/8); "
        f"{pairs} grid pairs accept w.p. 1 - TV; b = 17/20: 1.85, {float(values[4]):.4f}, 20/3",
    )


if __name__ == "__main__":
    print(main("--thorough" in sys.argv[1:]))
