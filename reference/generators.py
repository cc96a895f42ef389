"""Seeded generators of exact tabular models, for tests, certificates and the default matrix."""

from __future__ import annotations

import random
from fractions import Fraction

from .distributions import Dist
from .models import Drafter, TargetModel, all_contexts, draft_keys


def random_dist(rng: random.Random, vocab_size: int, denominator: int = 12) -> Dist:
    """A distribution with masses in multiples of 1/denominator (zeros allowed)."""
    cuts = sorted(rng.randint(0, denominator) for _ in range(vocab_size - 1))
    edges = [0, *cuts, denominator]
    return tuple(Fraction(edges[i + 1] - edges[i], denominator) for i in range(vocab_size))


def random_target(
    rng: random.Random, vocab_size: int, order: int, denominator: int = 12
) -> TargetModel:
    table = {
        ctx: random_dist(rng, vocab_size, denominator) for ctx in all_contexts(vocab_size, order)
    }
    return TargetModel.from_table(vocab_size, order, table)


def random_drafter(
    rng: random.Random, vocab_size: int, order: int, gamma: int, denominator: int = 12
) -> Drafter:
    """Semi-autoregressive tables: q_k and c_k depend on (context, k, x_{k-1})."""
    keys = draft_keys(vocab_size, order, gamma)
    proposals = {key: random_dist(rng, vocab_size, denominator) for key in keys}
    confidences = {key: Fraction(rng.randint(0, denominator), denominator) for key in keys}
    return Drafter.from_tables(vocab_size, order, gamma, proposals, confidences)
