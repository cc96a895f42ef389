"""The audit battery: table problems for verifiers, exact-law cases for schedulers."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np

from specproof.reference import (
    Case,
    Drafter,
    TargetModel,
    Tokens,
    appendix_a,
    default_case,
    table_sps,
)
from specproof.stats import HashPartition

from .harness import TableProblem

LARGE_VOCAB = 50_257


def _rows(rng: np.random.Generator, shape: tuple[int, ...], zeros: float = 0.0) -> np.ndarray:
    """Random rows (Dirichlet-like) with a share ``zeros`` of exact zeros; never all-zero."""
    rows = rng.gamma(0.6, size=shape)
    if zeros:
        rows[rng.random(shape) < zeros] = 0.0
        empty = rows.sum(axis=-1) == 0
        rows[empty, 0] = 1.0
    return rows / rows.sum(axis=-1, keepdims=True)


def _one_hot(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    rows = np.zeros(shape)
    hot = rng.integers(0, shape[-1], size=shape[:-1])
    np.put_along_axis(rows, hot[..., None], 1.0, axis=-1)
    return rows


def verifier_problems(seed: int = 0, large_vocab: int = LARGE_VOCAB) -> list[TableProblem]:
    """Small and large vocabularies, one-hot drafts and targets, p == q, zeros, ragged rows."""
    rng = np.random.default_rng(seed)
    gamma, states, vocab = 3, 2, 6
    small_p = _rows(rng, (gamma + 1, states, vocab))
    small_q = _rows(rng, (gamma, states, vocab))
    bins = HashPartition(3, salt=seed)
    large_p = _rows(rng, (3, states, large_vocab))
    # The draft over-weights one hash bin, so residual errors show in the binned law.
    weight = np.where(bins.tokens(np.arange(large_vocab)) == 0, 8.0, 1.0)
    large_q = large_p[:2] * weight
    large_q /= large_q.sum(axis=-1, keepdims=True)
    zeros_p = _rows(rng, (gamma + 1, states, vocab), zeros=0.5)
    zeros_q = _rows(rng, (gamma, states, vocab), zeros=0.5)
    equal_p = _rows(rng, (gamma + 1, states, vocab))
    return [
        TableProblem(
            "small-vocab",
            small_p,
            small_q,
            tokens=3,
            description=f"V={vocab}, gamma={gamma}, bigram-state tables",
        ),
        TableProblem(
            "large-vocab",
            large_p,
            large_q,
            tokens=2,
            token_bins=bins,
            description=f"V={large_vocab}, gamma=2, tokens hashed into 3 bins",
        ),
        TableProblem(
            "one-hot-draft",
            small_p,
            _one_hot(rng, (gamma, states, vocab)),
            tokens=3,
            description="deterministic drafts (n-gram / tree style)",
        ),
        TableProblem(
            "one-hot-target",
            _one_hot(rng, (gamma + 1, states, vocab)),
            small_q,
            tokens=3,
            description="greedy-like target rows",
        ),
        TableProblem(
            "p-equals-q",
            equal_p,
            equal_p[:gamma].copy(),
            tokens=3,
            description="every draft accepted; the residual is empty",
        ),
        TableProblem(
            "zeros",
            zeros_p,
            zeros_q,
            tokens=3,
            description="half the entries of p and q are exact zeros",
        ),
        TableProblem(
            "ragged",
            small_p,
            small_q,
            tokens=3,
            ragged=True,
            description="draft lengths 0..gamma per row (vLLM layout)",
        ),
    ]


# Scheduler cases --------------------------------------------------------------------------


def previous_token_case() -> Case:
    """Appendix-A style: c_2 depends on the drafted x_1 (0.9 after token 0, 0 after token 1) and
    the draft q_1 = (0.6, 0.4) differs from p = (0.7, 0.3), so a scheduler that reads c_2 (or
    q_1(x_1)) before x_1 is verified leaks x_1 into its own admission; two output tokens."""
    half = Fraction(1, 2)
    target = TargetModel(2, lambda ctx: (Fraction(7, 10), Fraction(3, 10)), order=0, name="p")

    def proposal(context: Tokens, drafted: Tokens) -> tuple[Fraction, Fraction]:
        return (Fraction(3, 5), Fraction(2, 5)) if not drafted else (half, half)

    def confidence(context: Tokens, drafted: Tokens) -> Fraction:
        if not drafted:
            return Fraction(4, 5)
        return Fraction(9, 10) if drafted[-1] == 0 else Fraction(0)

    drafter = Drafter(2, proposal, confidence, order=0, name="q")
    sps = table_sps({1: Fraction(1), 2: Fraction(1, 2), 3: Fraction(9, 20)}, tail=Fraction(2, 5))
    return Case("previous-token", target, drafter, 2, sps, ((),), 2)


def random_case(seed: int) -> Case:
    """Seeded random bigram tables, two requests, gamma = 2."""
    from specproof.reference.generators import random_drafter, random_target

    rng = random.Random(seed)
    target = random_target(rng, 3, 1, denominator=10)
    drafter = random_drafter(rng, 3, 1, 2, denominator=10)
    sps = table_sps(
        {1: Fraction(1), 2: Fraction(1), 3: Fraction(3, 4), 4: Fraction(1, 2)},
        tail=Fraction(2, 5),
    )
    return Case(f"random-{seed}", target, drafter, 2, sps, ((0,), (2,)), 2)


def scheduler_cases() -> list[Case]:
    return [appendix_a(), previous_token_case(), default_case(), random_case(7)]
