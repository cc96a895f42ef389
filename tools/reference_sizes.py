"""How large an exact law the reference computes within a time budget.

Chain rule + Algorithm 1, dense bigram models (every probability positive, the worst case for
enumeration). For each (R, gamma, V) it grows N until one exact law takes longer than the
budget, and prints a Markdown table of the largest N that stayed under it
(capped at 10).

    python tools/reference_sizes.py [--budget 60]
"""

from __future__ import annotations

import argparse
import random
import time
from fractions import Fraction

from specproof.reference import (
    Algorithm1,
    ChainRule,
    Drafter,
    SpeculativeDecoder,
    TargetModel,
    exact_law,
)
from specproof.reference.models import all_contexts, draft_keys


def dense_dist(rng: random.Random, vocab: int) -> tuple[Fraction, ...]:
    weights = [rng.randint(1, 9) for _ in range(vocab)]
    return tuple(Fraction(w, sum(weights)) for w in weights)


def dense_decoder(vocab: int, gamma: int, seed: int = 0) -> SpeculativeDecoder:
    rng = random.Random(seed)
    target = TargetModel.from_table(
        vocab, 1, {ctx: dense_dist(rng, vocab) for ctx in all_contexts(vocab, 1)}
    )
    keys = draft_keys(vocab, 1, gamma)
    drafter = Drafter.from_tables(
        vocab,
        1,
        gamma,
        {key: dense_dist(rng, vocab) for key in keys},
        {key: Fraction(rng.randint(1, 9), 10) for key in keys},
    )
    return SpeculativeDecoder(
        target, drafter, ChainRule(), Algorithm1(), gamma, lambda b: 1 / (1 + Fraction(b - 1, 8))
    )


def seconds_for(vocab: int, gamma: int, tokens: int, requests: int) -> float:
    decoder = dense_decoder(vocab, gamma)
    prompts = [(r % vocab,) for r in range(requests)]
    start = time.perf_counter()
    exact_law(decoder, prompts, tokens)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per exact law")
    args = parser.parse_args()
    print(f"| R | gamma | V | largest N under {args.budget:g} s | seconds at that N |")
    print("|---|---|---|---|---|")
    for requests, gamma, vocab in [
        (1, 3, 4),
        (1, 3, 8),
        (1, 3, 16),
        (1, 5, 4),
        (1, 7, 2),
        (2, 2, 4),
        (2, 3, 3),
        (2, 3, 4),
    ]:
        tokens, last = 0, 0.0
        while True:
            took = seconds_for(vocab, gamma, tokens + 1, requests)
            if took > args.budget:
                break
            tokens, last = tokens + 1, took
            if tokens >= 10:
                break
        print(f"| {requests} | {gamma} | {vocab} | {tokens} | {last:.1f} |", flush=True)


if __name__ == "__main__":
    main()
