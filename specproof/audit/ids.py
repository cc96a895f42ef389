"""What a verifier returns, read as token ids: integers only. A float 2.4 converted with
``.to(torch.int64)`` would be read as 2, and the audit would test an output the verifier never
gave."""

from __future__ import annotations

from typing import Any

import torch

from .errors import VerifierError


def integer_ids(value: Any, what: str) -> torch.Tensor:
    """``value`` as an int64 tensor; :class:`VerifierError` when it is not integer ids."""
    try:
        out = torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as error:
        raise VerifierError(f"{what} is {type(value).__name__}, not token ids") from error
    if out.dtype.is_floating_point or out.dtype.is_complex or out.dtype == torch.bool:
        raise VerifierError(f"{what} has dtype {out.dtype}, not integer token ids")
    return out.to(torch.int64)
