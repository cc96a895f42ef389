"""Certificate of T1: chain speculative sampling with a bonus token is lossless.

Checks, exactly: (a) one round with one draft, for every pair (p, q) on a grid (V = 2, 3),
p == q included, the emitted token has law p and a rejection has probability 0 when p == q;
(b) one round with gamma <= 3 drafts of seeded bigram models is a stopped target sample;
(c) N-token laws of the whole decoder equal the target law.
"""

from __future__ import annotations

import sys
from fractions import Fraction

from certificate_tools import (
    Outcome,
    assert_lossless,
    constant_drafter,
    constant_target,
    grid_dists,
    random_models,
    require,
    round_inconsistency,
)
from specproof.reference import ChainRule, FixedGamma, SpeculativeDecoder, round_law


def one_step_grid(vocab_size: int, denominator: int) -> int:
    """Every (p, q) on the grid: the first emitted token has law p; returns pairs checked."""
    dists = grid_dists(vocab_size, denominator)
    for p in dists:
        for q in dists:
            dec = SpeculativeDecoder(
                constant_target(p), constant_drafter(q), ChainRule(), FixedGamma(), 1
            )
            law = round_law(dec, [()])
            first = [Fraction(0)] * vocab_size
            for (out,), w in law.items():
                first[out[0]] += w
            require(tuple(first) == p, f"T1 one step: p={p}, q={q}: first token law {first}")
            if p == q:
                accepted_all = sum((w for (out,), w in law.items() if len(out) == 2), Fraction(0))
                require(accepted_all == 1, f"T1 p == q: a rejection has mass {1 - accepted_all}")
    return len(dists) ** 2


def main(thorough: bool = False) -> Outcome:
    pairs = one_step_grid(2, 12 if thorough else 6)
    pairs += one_step_grid(3, 6 if thorough else 4)
    seeds = range(60 if thorough else 40)
    rounds = 0
    for seed in seeds:
        gamma = 1 + seed % 3
        target, drafter = random_models(seed, 3, 1, gamma)
        dec = SpeculativeDecoder(target, drafter, ChainRule(), FixedGamma(), gamma)
        for context in ((0,), (1,), (2,)):
            law = {out[0]: w for out, w in round_law(dec, [context]).items()}
            why = round_inconsistency(law, target, context)
            require(why is None, f"T1 round, seed {seed}, context {context}: {why}")
            rounds += 1
    decodes = 0
    for seed in seeds:
        gamma = 1 + seed % 3
        target, drafter = random_models(1000 + seed, 2 + seed % 2, 1, gamma)
        dec = SpeculativeDecoder(target, drafter, ChainRule(), FixedGamma(), gamma)
        for n in (1, 2, 3) if thorough else (1, 3):
            assert_lossless(dec, [(0,)], n, f"T1 N={n}, seed {seed}")
            decodes += 1
    return Outcome(
        "T1",
        "proved",
        f"{pairs} (p, q) grid pairs incl. p == q; {rounds} exact rounds (gamma <= 3) are stopped "
        f"target samples; {decodes} exact N-token laws equal the target",
    )


if __name__ == "__main__":
    print(main("--thorough" in sys.argv[1:]))
