"""Dense exact-law workloads for timing the reference (used by
``specproof/runners/readme_figures.py``).

Chain rule + Algorithm 1 over dense bigram models (every probability positive, the worst case
for enumeration).
"""

from __future__ import annotations

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
