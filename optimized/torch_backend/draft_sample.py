"""Draft-token sampling in torch, with the semantics of the Triton kernel."""

from __future__ import annotations

import torch

from ..philox import DRAFT, address_uniforms
from .logits import logit_probs
from .rows import inverse_cdf


def draft_sample_torch(
    scores: torch.Tensor,
    requests: torch.Tensor,
    temperature: torch.Tensor,
    *,
    is_logits: bool,
    seed: int,
    round: int,
    offset: int,
    index: int,
) -> torch.Tensor:
    """Same contract as :func:`~specproof.optimized.kernels.draft_sample.draft_sample_triton`."""
    greedy = temperature == 0
    probs = scores.to(torch.float32)
    if is_logits:
        probs = logit_probs(scores, torch.where(greedy, 1.0, temperature))
    u = address_uniforms(seed, DRAFT, torch.full_like(requests, index), requests, round, offset)
    sampled = inverse_cdf(probs, u)
    return torch.where(greedy, scores.to(torch.float32).argmax(dim=-1), sampled)
