"""Row-level helpers of the torch backend, mirroring :mod:`specproof.optimized.kernels.rows`."""

from __future__ import annotations

import torch


def row_probs(
    rows: torch.Tensor, is_logits: bool, inv_temperature: torch.Tensor, lse: torch.Tensor
) -> torch.Tensor:
    """Probabilities of [R, V] rows; logits go through exp(l / T - lse) in float32."""
    values = rows.to(torch.float32)
    if is_logits:
        return torch.exp(values * inv_temperature[:, None] - lse[:, None])
    return values


def row_lse(rows: torch.Tensor, inv_temperature: torch.Tensor) -> torch.Tensor:
    """log-sum-exp of logits / T per row, in float32."""
    return torch.logsumexp(rows.to(torch.float32) * inv_temperature[:, None], dim=-1)


def threshold_below(u: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
    """The largest float32 t <= u * total (product exact in float64); see the Triton twin."""
    exact = u.to(torch.float64) * total.to(torch.float64)
    nearest = exact.to(torch.float32)
    lowered = torch.nextafter(nearest, torch.zeros_like(nearest))
    return torch.where((nearest.to(torch.float64) > exact) & (nearest > 0), lowered, nearest)


def inverse_cdf(mass: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Per row: the smallest v with mass > 0 and u * total < cumsum(mass)[v]; the last
    positive token when rounding leaves none. ``mass`` is [R, V] non-negative float32."""
    total = mass.sum(dim=-1)
    threshold = threshold_below(u, total)
    positive = mass > 0
    hit = positive & (mass.cumsum(dim=-1) > threshold[:, None])
    vocab = mass.shape[-1]
    columns = torch.arange(vocab, device=mass.device)
    first_hit = torch.where(hit, columns, vocab).amin(dim=-1)
    last_positive = torch.where(positive, columns, -1).amax(dim=-1)
    return torch.where(first_hit < vocab, first_hit, last_positive)
