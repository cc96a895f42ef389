"""Certificate of T2: non-anticipating admission (one filtration for the batch) is lossless.

Checks, exactly: (a) the tower identity Psi_m = E_q[Psi_{m+1}] of the chain verifier (the one
property of the verifier the proof uses); (b) seeded single-request admission rules that read
x_<k only; (c) batch-coupled two-request rules that are non-anticipating in one order of draws;
(d) the counterexample showing why one common order is needed: two rules, each non-anticipating
for its own request, that read each other's current draft, bias the joint law (41/80 vs 49/100).
"""

from __future__ import annotations

import random
import sys
from fractions import Fraction

from certificate_tools import (
    Outcome,
    PairCoupled,
    PrefixStop,
    assert_lossless,
    constant_drafter,
    constant_target,
    laws,
    random_models,
    random_pair_table,
    random_prefix_table,
    require,
    tower_identity,
)
from specproof.reference import ChainRule, SpeculativeDecoder, Tokens


def cross_coupled_counterexample() -> None:
    """l_1 = 1{x_{2,1} = A}, l_2 = 1{x_{1,1} = A}: marginals exact, joint law biased."""
    p = (Fraction(7, 10), Fraction(3, 10))
    q = (Fraction(1, 2), Fraction(1, 2))
    table: dict[tuple[int, Tokens, Tokens], bool] = {
        (1, (), ()): True,
        (1, (), (0,)): True,
        (1, (), (1,)): False,
    }
    table |= {(2, (0,), ()): True, (2, (1,), ()): False}
    dec = SpeculativeDecoder(
        constant_target(p), constant_drafter(q), ChainRule(), PairCoupled(table, lag=1), 1
    )
    law, reference = laws(dec, [(), ()], 1)
    require(
        law[((0,), (0,))] == Fraction(41, 80) and reference[((0,), (0,))] == Fraction(49, 100),
        f"T2 cross-coupled: P(A, A) = {law[((0,), (0,))]}, expected 41/80 (target 49/100)",
    )
    for request in (0, 1):
        marginal = sum((w for out, w in law.items() if out[request] == (0,)), Fraction(0))
        require(marginal == p[0], f"T2 cross-coupled: marginal of request {request} is {marginal}")


def main(thorough: bool = False) -> Outcome:
    seeds = range(40 if thorough else 25)
    towers = 0
    for seed in range(12 if thorough else 8):
        target, drafter = random_models(seed, 2, 1, 2, denominator=4)
        towers += tower_identity(ChainRule(), target, drafter, 2, (seed % 2,))
    single = 0
    for seed in seeds:
        rng = random.Random(seed)
        target, drafter = random_models(seed, 3, 1, 3, denominator=5)
        dec = SpeculativeDecoder(
            target, drafter, ChainRule(), PrefixStop(random_prefix_table(rng, 3, 3)), 3
        )
        assert_lossless(dec, [(0,)], 3, f"T2 single request, seed {seed}")
        single += 1
    coupled = 0
    for seed in seeds:
        rng = random.Random(500 + seed)
        target, drafter = random_models(500 + seed, 2, 0, 2, denominator=5)
        scheduler = PairCoupled(random_pair_table(rng, 2, 2), lag=0)
        dec = SpeculativeDecoder(target, drafter, ChainRule(), scheduler, 2)
        assert_lossless(dec, [(), ()], 2, f"T2 batch-coupled, seed {seed}")
        coupled += 1
    cross_coupled_counterexample()
    return Outcome(
        "T2",
        "proved",
        f"{towers} chain tower identities; {single} single-request and {coupled} batch-coupled "
        "non-anticipating rules exact; cross-coupled counterexample P(A,A) = 41/80 != 49/100",
    )


if __name__ == "__main__":
    print(main("--thorough" in sys.argv[1:]))
