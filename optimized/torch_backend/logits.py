"""Logits read as probabilities at a temperature, as the Triton row passes read them.

z = (l - max l) / T, divided (never multiplied by 1 / T), so z <= 0 with z = 0 at the largest
logit: no T > 0 overflows into a row with no token, and T -> 0 tends to one-hot at the largest
logit with exact ties split evenly. See :mod:`specproof.optimized.kernels.rows`.
"""

from __future__ import annotations

import torch


def logit_probs(rows: torch.Tensor, temperature: torch.Tensor) -> torch.Tensor:
    """softmax((l - max l) / T) of [R, V] logit rows in float32; ``temperature`` [R] > 0."""
    values = rows.to(torch.float32)
    scaled = (values - values.amax(dim=-1, keepdim=True)) / temperature.to(torch.float32)[:, None]
    return torch.exp(scaled - torch.logsumexp(scaled, dim=-1, keepdim=True))
