"""Sampling filters (temperature, top-k, top-p, min-p) on an exact law, under a declared order.

Engines apply the same four parameters in different orders; each order is a sequence of steps
(:data:`ORDER_STEPS`), each step cutting the law left by the steps before it, renormalised:

- ``vllm`` (vLLM's V1 sampler, ``vllm/v1/sample/sampler.py``): temperature, then min-p (an
  argmax-invariant logits processor), then top-k and top-p, top-p on the renormalised law left
  by min-p and top-k.
- ``sequential`` (HF transformers' warpers, ``_get_logits_processor`` in
  ``transformers/generation/utils.py``, 5.25.0): temperature, top-k, top-p, then min-p.
- ``joint`` (FlashInfer's joint top-k/top-p sampling, SGLang's regular sampler): temperature,
  top-k and top-p both cut on the same law, then min-p.
- ``llama.cpp`` (the default chain of ``common_params_sampling::samplers`` in ggml-org/llama.cpp
  ``common/common.h``): top-k, top-p, min-p, and the temperature last, so every cut is taken on
  the untempered law softmax(logits).

Top-k at a tie (:data:`TOP_K_TIES`): tokens as probable as the k-th are all kept (``keep ties``)
or cut to exactly k (``exactly k``), as each order's engine does, read in its source:

- ``vllm``: ``apply_top_k_only`` and ``apply_top_k_top_p`` in ``vllm/v1/sample/ops/
  topk_topp_sampler.py`` mask the logits strictly below the k-th largest: keep ties.
- ``sequential``: ``TopKLogitsWarper.__call__`` in ``transformers/generation/logits_process.py``
  masks ``scores < torch.topk(scores, top_k)[0][..., -1, None]``: keep ties.
- ``joint``: FlashInfer's ``TopKTopPSamplingFromProbKernel`` (``include/flashinfer/sampling.cuh``)
  accepts a sampled token when fewer than k tokens are strictly more probable, and its
  ``top_k_renorm_probs`` / ``top_k_mask_logits`` (``RadixTopK*Kernel_MultiCTA`` in
  ``include/flashinfer/topk.cuh``) keep every value >= the k-th: keep ties. (SGLang's torch
  fallback, ``top_k_top_p_min_p_sampling_from_probs_torch``, cuts at k sorted positions.)
- ``llama.cpp``: ``llama_sampler_top_k_impl`` in ``src/llama-sampler.cpp`` partially sorts the
  candidates (``std::partial_sort`` for k <= 128, buckets above) and sets their size to k:
  exactly k. Which of the tied tokens survive is the sort's choice (``std::partial_sort`` is
  not stable); the reference keeps the lower ids.

The nucleus is the smallest set of most probable tokens holding at least ``top_p`` of the mass:
a token is kept when the mass strictly more probable than it (ties broken by id) is below
``top_p``. (At a tie on the nucleus edge HF and vLLM keep whichever tied token their
``torch.sort`` puts first; FlashInfer keeps a token when the mass strictly above it is below
``top_p``, so all of them.)

min-p keeps the tokens with mass >= ``min_p`` times the largest; every cut keeps the argmax,
so min-p's own cut is the same wherever it stands among the cuts, but the cuts after it see the
law it renormalised (vLLM's nucleus), and before the temperature its ratio is
(p_i / p_max)^T instead of p_i / p_max (llama.cpp's). The result is renormalised exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

FilterOrder = Literal["sequential", "joint", "vllm", "llama.cpp"]
FILTER_ORDERS: tuple[FilterOrder, ...] = ("sequential", "joint", "vllm", "llama.cpp")
Step = Literal["temperature", "top-k", "top-p", "top-k and top-p", "min-p"]
ORDER_STEPS: dict[FilterOrder, tuple[Step, ...]] = {
    "sequential": ("temperature", "top-k", "top-p", "min-p"),
    "joint": ("temperature", "top-k and top-p", "min-p"),
    "vllm": ("temperature", "min-p", "top-k", "top-p"),
    "llama.cpp": ("top-k", "top-p", "min-p", "temperature"),
}
"""Each order's steps; ``top-k and top-p`` takes both cuts on the same law."""
TieRule = Literal["keep ties", "exactly k"]
TOP_K_TIES: dict[FilterOrder, TieRule] = {
    "sequential": "keep ties",
    "joint": "keep ties",
    "vllm": "keep ties",
    "llama.cpp": "exactly k",
}
"""Each order's top-k at a tie with the k-th token (see the module docstring for the source)."""


def ranked(probs: Sequence[Fraction]) -> list[int]:
    """Token ids from the most probable down; equal masses by increasing id."""
    return sorted(range(len(probs)), key=lambda token: (-probs[token], token))


def top_k_set(probs: Sequence[Fraction], k: int, ties: TieRule) -> set[int]:
    """The k most probable tokens (the lower ids of tied ones), and with ``keep ties`` every
    token as probable as the k-th."""
    first_k = ranked(probs)[:k]
    if ties == "exactly k":
        return set(first_k)
    kth = probs[first_k[-1]]
    return {token for token, mass in enumerate(probs) if mass >= kth}


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


def untempered_min_p_set(
    probs: Sequence[Fraction], min_p: Fraction, temperature: Fraction
) -> set[int]:
    """min-p on the law before temperature T = a / b: ``probs`` is softmax(logits / T), so the
    untempered ratio to the argmax is (p_i / p_max)^T, kept when (p_i / p_max)^a >= min_p^b."""
    largest = max(probs)
    a, b = temperature.numerator, temperature.denominator
    return {
        token for token, mass in enumerate(probs) if mass > 0 and (mass / largest) ** a >= min_p**b
    }


def untempered(probs: Sequence[Fraction], temperature: Fraction) -> tuple[Fraction, ...]:
    """softmax(logits) from softmax(logits / T): proportional to p^T, exact for integer T."""
    if temperature.denominator != 1:
        raise ValueError(
            f"top-p before the temperature has an exact law only at integer temperatures, got "
            f"{temperature}; pass the untempered law with temperature 1 and restrict the "
            "tempered law to the tokens it keeps"
        )
    powers = [mass**temperature.numerator for mass in probs]
    total = sum(powers, Fraction(0))
    return tuple(power / total for power in powers)


def restricted(probs: Sequence[Fraction], kept: set[int]) -> tuple[Fraction, ...]:
    """``probs`` on ``kept`` only, renormalised."""
    total = sum((probs[token] for token in kept), Fraction(0))
    if total == 0:
        raise ValueError("the filters removed every token with mass")
    return tuple(mass / total if token in kept else Fraction(0) for token, mass in enumerate(probs))


def checked_fraction(
    name: str, value: Fraction | float | None, low: float, high: float, low_open: bool = False
) -> Fraction | None:
    """``value`` as an exact Fraction, refused unless finite and in its range."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (Fraction, int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    exact = Fraction(value)
    if exact > high or exact < low or (low_open and exact == low):
        if math.isinf(high):
            raise ValueError(f"{name} must be > {low}, got {value}")
        bracket = "(" if low_open else "["
        raise ValueError(f"{name} must lie in {bracket}{low}, {high}], got {value}")
    return exact


def filtered(
    probs: Sequence[Fraction],
    *,
    top_k: int | None = None,
    top_p: Fraction | float | None = None,
    min_p: Fraction | float | None = None,
    order: FilterOrder = "sequential",
    temperature: Fraction | float = 1,
) -> tuple[Fraction, ...]:
    """The law a request samples from: ``probs`` = softmax(logits / ``temperature``), filtered
    by the steps of ``order``. The temperature matters only to cuts an order takes before it
    (llama.cpp's): there min-p compares (p_i / p_max)^T and top-p needs an integer T."""
    if order not in FILTER_ORDERS:
        raise ValueError(f"filter order must be one of {FILTER_ORDERS}, got {order!r}")
    if any(not isinstance(mass, (Fraction, int)) or mass < 0 for mass in probs):
        raise ValueError("probs must be non-negative exact numbers (Fractions)")
    if sum(probs, Fraction(0)) != 1:
        raise ValueError("probs must be non-negative and sum to exactly 1")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be an integer of at least 1, got {top_k!r}")
    top_p = checked_fraction("top_p", top_p, 0, 1, low_open=True)
    min_p = checked_fraction("min_p", min_p, 0, 1)
    exact_temperature = checked_fraction("temperature", temperature, 0, math.inf, low_open=True)
    if exact_temperature is None:
        raise ValueError("temperature must be a number, got None")
    law = tuple(Fraction(mass) for mass in probs)
    kept = {token for token, mass in enumerate(law) if mass > 0}
    after_temperature = False  # whether the engine has applied the temperature yet
    for step in ORDER_STEPS[order]:
        seen = restricted(law, kept)  # the law this step cuts: what the steps before it left
        if step == "temperature":
            after_temperature = True
        elif step in ("top-k", "top-k and top-p") and top_k is not None:
            kept &= top_k_set(seen, top_k, TOP_K_TIES[order])  # ranks ignore the temperature
        if step in ("top-p", "top-k and top-p") and top_p is not None:
            nucleus_law = seen if after_temperature else untempered(seen, exact_temperature)
            kept &= top_p_set(nucleus_law, top_p)
        elif step == "min-p" and min_p is not None:
            if after_temperature:
                kept &= min_p_set(seen, min_p)
            else:
                kept &= untempered_min_p_set(seen, min_p, exact_temperature)
    return restricted(law, kept)
