"""Helpers for the optimized package's tests: dyadic models, reference replays, margins."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from fractions import Fraction

import torch
from hypothesis import HealthCheck, settings
from specproof.reference import ChainRule, DraftBlock, Drafter, TargetModel
from specproof.reference.choices import SamplingChooser
from specproof.reference.philox import PhiloxSource

DEVICE = os.environ.get("SPECPROOF_DEVICE", "cpu")
DENOMINATOR = 256
"""Probabilities are multiples of 1/256: float32 holds them, and all their partial sums,
exactly, so verification decisions are exact and compared token for token."""

MARGIN_COUNTS = {"fired": 0, "near": 0, "decisions": 0}

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"


def examples(n: int) -> settings:
    """Hypothesis settings for interpreted kernels: no deadline, ``n`` examples (x10 thorough)."""
    return settings(
        max_examples=n * (10 if THOROUGH else 1),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def backends() -> list[str]:
    return ["torch", "triton"]


def dyadic_dist(rng: random.Random, vocab: int, style: str = "random") -> list[int]:
    """Numerators over DENOMINATOR of a distribution. Styles: random, one-hot, uniform-ish,
    sparse (most tokens zero)."""
    if style == "one-hot":
        out = [0] * vocab
        out[rng.randrange(vocab)] = DENOMINATOR
        return out
    if style == "sparse":
        support = rng.sample(range(vocab), k=min(vocab, rng.randint(1, 3)))
        out = [0] * vocab
        cuts = sorted(rng.randint(0, DENOMINATOR) for _ in range(len(support) - 1))
        edges = [0, *cuts, DENOMINATOR]
        for i, v in enumerate(support):
            out[v] = edges[i + 1] - edges[i]
        if sum(out) != DENOMINATOR or max(out) == 0:
            out = [0] * vocab
            out[support[0]] = DENOMINATOR
        return out
    cuts = sorted(rng.randint(0, DENOMINATOR) for _ in range(vocab - 1))
    edges = [0, *cuts, DENOMINATOR]
    return [edges[i + 1] - edges[i] for i in range(vocab)]


def draw_from(rng: random.Random, numerators: Sequence[int]) -> int:
    """A token with positive mass (the draft token must have been possible)."""
    return rng.choices(range(len(numerators)), weights=numerators)[0]


def as_fractions(numerators: Sequence[int]) -> tuple[Fraction, ...]:
    return tuple(Fraction(m, DENOMINATOR) for m in numerators)


def as_tensor(rows: Sequence[Sequence[Sequence[int]]], vocab: int) -> torch.Tensor:
    """[B, positions, V] float32 from numerators (empty positions allowed)."""
    tensor = torch.tensor(rows, dtype=torch.float64).reshape(len(rows), -1, vocab)
    return (tensor / DENOMINATOR).to(torch.float32).to(DEVICE)


def reference_chain(
    target_rows: Sequence[Sequence[Fraction]],
    draft_rows: Sequence[Sequence[Fraction]],
    tokens: Sequence[int],
    *,
    seed: int,
    round: int,
    request: int,
    offset: int = 0,
) -> tuple[int, ...]:
    """The reference ChainRule's emitted tokens for one request, replayed through Philox.

    ``target_rows[j]`` is p after j accepted tokens, ``draft_rows[k]`` is q_{k+1}.
    """
    vocab = len(target_rows[0])
    target = TargetModel(vocab, lambda ctx: target_rows[len(ctx)], name="rows")
    unused = Drafter(vocab, lambda ctx, d: target_rows[0], lambda ctx, d: Fraction(1))
    block = DraftBlock(tuple(tokens), tuple(tuple(q) for q in draft_rows), ())
    chooser = SamplingChooser(PhiloxSource(seed, offset), round, request)
    return ChainRule().verify((), block, target, unused, chooser)


def emitted(tokens: torch.Tensor) -> list[tuple[int, ...]]:
    """Rows of a -1 padded token tensor as tuples of the emitted tokens."""
    return [tuple(int(t) for t in row if t >= 0) for row in tokens.cpu()]


MARGIN = Fraction(1, 10_000)
"""The margin rule. Where rows come from float32 logits, the kernels' probabilities carry
relative errors of about 1e-6 (exp, log-sum-exp, cumulative sums). A request's tokens may then
differ from the exact reference only if some decision on the reference path had its uniform
within MARGIN of the exact threshold: relative to p/q for an acceptance test, absolute on the
normalised CDF for a residual or bonus draw. Such requests are excused and counted."""


def exact_softmax(logits: Sequence[float], temperature: float) -> tuple[Fraction, ...]:
    """softmax(l / T) in float64, then made an exact distribution by exact normalisation."""
    scaled = torch.tensor(logits, dtype=torch.float64) / temperature
    probs = torch.softmax(scaled, dim=-1).tolist()
    exact = [Fraction(p) for p in probs]
    total = sum(exact, Fraction(0))
    return tuple(p / total for p in exact)


def chain_margin(
    target_rows: Sequence[Sequence[Fraction]],
    draft_rows: Sequence[Sequence[Fraction]],
    tokens: Sequence[int],
    *,
    seed: int,
    round: int,
    request: int,
) -> bool:
    """True when a decision on the exact chain path falls within MARGIN of its threshold."""
    from specproof.reference import Address
    from specproof.reference.distributions import residual

    source = PhiloxSource(seed)

    def u(phase: str, index: int) -> Fraction:
        return source.uniform(Address(round, request, phase, index))

    def cdf_near(dist: Sequence[Fraction], value: Fraction) -> bool:
        cumulative = Fraction(0)
        for mass in dist:
            cumulative += mass
            if abs(value - cumulative) <= MARGIN:
                return True
        return False

    for k, (x, q) in enumerate(zip(tokens, draft_rows, strict=False), start=1):
        p = target_rows[k - 1]
        ratio = p[x] / q[x]
        uniform = u("accept", k)
        if abs(uniform - ratio) <= MARGIN * ratio:
            return True
        if uniform >= ratio:
            rest = residual(p, q)
            return rest is None or cdf_near(rest, u("residual", k))
    return cdf_near(target_rows[len(tokens)], u("bonus", len(tokens) + 1))


def record_margin(near: bool, disagreed: bool) -> None:
    """Count a compared request: ``near`` when a decision fell within the margin, and whether
    the margin rule had to excuse a disagreement."""
    MARGIN_COUNTS["decisions"] += 1
    MARGIN_COUNTS["near"] += int(near)
    MARGIN_COUNTS["fired"] += int(near and disagreed)
