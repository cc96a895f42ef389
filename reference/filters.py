"""Sampling filters (top-k, top-p, min-p) on an exact law, under a declared order.

Engines disagree on how top-k and top-p combine when both are set:

- ``sequential``: keep the k most probable tokens, renormalise, then keep the top-p nucleus of
  that renormalised law (vLLM's sampler, HF transformers' logits warpers).
- ``joint``: take both cuts on the full law and keep their intersection (FlashInfer's joint
  top-k/top-p sampling, SGLang's regular sampler).

The nucleus is the smallest set of most probable tokens holding at least ``top_p`` of the mass:
a token is kept when the mass strictly more probable than it (ties broken by id) is below
``top_p``. min-p keeps the tokens with mass >= ``min_p`` times the largest; it compares ratios
to the argmax, which every filter keeps, so where it is applied does not change its cut. The
result is renormalised exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

FilterOrder = Literal["sequential", "joint"]
FILTER_ORDERS: tuple[FilterOrder, ...] = ("sequential", "joint")


def ranked(probs: Sequence[Fraction]) -> list[int]:
    """Token ids from the most probable down; equal masses by increasing id."""
    return sorted(range(len(probs)), key=lambda token: (-probs[token], token))


def top_k_set(probs: Sequence[Fraction], k: int) -> set[int]:
    return set(ranked(probs)[:k])


def top_p_set(probs: Sequence[Fraction], top_p: Fraction) -> set[int]:
    kept: set[int] = set()
    before = Fraction(0)
    for token in ranked(probs):
        if probs[token] == 0 or before >= top_p:
            break
        kept.add(token)
        before += probs[token]
    return kept


def min_p_set(probs: Sequence[Fraction], min_p: Fraction) -> set[int]:
    largest = max(probs)
    return {token for token, mass in enumerate(probs) if mass > 0 and mass >= min_p * largest}


def restricted(probs: Sequence[Fraction], kept: set[int]) -> tuple[Fraction, ...]:
    """``probs`` on ``kept`` only, renormalised."""
    total = sum((probs[token] for token in kept), Fraction(0))
    if total == 0:
        raise ValueError("the filters removed every token with mass")
    return tuple(mass / total if token in kept else Fraction(0) for token, mass in enumerate(probs))


def filtered(
    probs: Sequence[Fraction],
    *,
    top_k: int | None = None,
    top_p: Fraction | None = None,
    min_p: Fraction | None = None,
    order: FilterOrder = "sequential",
) -> tuple[Fraction, ...]:
    """The law a request samples from: ``probs`` (already at its temperature) filtered."""
    if order not in FILTER_ORDERS:
        raise ValueError(f"filter order must be one of {FILTER_ORDERS}, got {order!r}")
    if any(mass < 0 for mass in probs) or sum(probs, Fraction(0)) != 1:
        raise ValueError("probs must be non-negative and sum to exactly 1")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    law = tuple(probs)
    kept = {token for token, mass in enumerate(law) if mass > 0}
    if top_k is not None:
        kept &= top_k_set(law, top_k)
        if order == "sequential":
            law = restricted(law, kept)
    if top_p is not None:
        kept &= top_p_set(law, top_p)
    if min_p is not None:
        kept &= min_p_set(law, min_p)
    return restricted(probs, kept)
