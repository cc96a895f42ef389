"""Per-request arguments given as a scalar, a tensor or None, made into [B] tensors."""

from __future__ import annotations

import torch


def as_row_tensor(
    value: torch.Tensor | float | int | None,
    batch: int,
    default: float | int,
    dtype: torch.dtype,
    device: torch.device,
) -> torch.Tensor:
    """A per-request [B] tensor from a scalar, a tensor or None."""
    if value is None:
        return torch.full((batch,), default, dtype=dtype, device=device)
    if isinstance(value, torch.Tensor):
        if value.dim() == 0:
            return value.to(dtype).expand(batch).contiguous()
        return value.to(device=value.device, dtype=dtype).contiguous()
    return torch.full((batch,), value, dtype=dtype, device=device)
