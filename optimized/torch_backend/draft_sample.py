"""Draft-token sampling in torch, with the semantics of the Triton kernel."""

from __future__ import annotations

import torch

from ..philox import DRAFT, address_uniforms
from .rows import inverse_cdf, row_lse, row_probs


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
    inv_temperature = torch.where(greedy, 1.0, 1.0 / torch.where(greedy, 1.0, temperature))
    inv_temperature = inv_temperature.to(torch.float32)
    lse = row_lse(scores, inv_temperature) if is_logits else inv_temperature * 0
    probs = row_probs(scores, is_logits, inv_temperature, lse)
    u = address_uniforms(seed, DRAFT, torch.full_like(requests, index), requests, round, offset)
    sampled = inverse_cdf(probs, u)
    return torch.where(greedy, scores.to(torch.float32).argmax(dim=-1), sampled)
