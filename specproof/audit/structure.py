"""Exact checks of a verifier's output layout (alpha = 0): every row, every round."""

from __future__ import annotations

import torch

from .drafting import Drafts
from .errors import VerifierError
from .problems import PLACEHOLDER


def emitted_lengths(out: torch.Tensor) -> torch.Tensor:
    """Entries before the first placeholder in each row."""
    filled = out != PLACEHOLDER
    return filled.to(torch.int64).cumprod(1).sum(1)


def _first(mask: torch.Tensor) -> int | None:
    rows = torch.nonzero(mask.reshape(mask.shape[0], -1).any(1) if mask.dim() > 1 else mask)
    return int(rows[0, 0]) if len(rows) else None


def check_structure(out: torch.Tensor, drafts: Drafts, vocab: int) -> None:
    """Exact checks on every row (alpha = 0): ids in range, padding only at the end, at least
    one token, at most length + 1 tokens, and the kept drafts equal the drafted tokens."""
    lengths = emitted_lengths(out)
    filled = out != PLACEHOLDER
    gamma = drafts.tokens.shape[1]
    kept = torch.arange(gamma).unsqueeze(0) < (lengths - 1).unsqueeze(1)
    checks = [
        ((out < PLACEHOLDER) | (out >= vocab), "a token id is outside the vocabulary 0..V-1"),
        (filled.sum(1) != lengths, "a placeholder -1 is followed by a token"),
        (lengths < 1, "a row emitted no token"),
        (lengths > drafts.lengths + 1, "a row emitted more than its drafts plus one"),
        (kept & (out[:, :gamma] != drafts.tokens), "an accepted position differs from its draft"),
    ]
    for mask, message in checks:
        row = _first(mask)
        if row is not None:
            raise VerifierError(message, row)
