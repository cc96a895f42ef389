"""Checks of what the subject returns, before any statistics: token ids that are integers (a
float 2.4 is not read as 2, a string "0123" is not read as 0, 1, 2, 3), round traces that are
(draft length, accepted) pairs, and target rows that are probability laws of one vocabulary.
Each problem raises :class:`SubjectFailure` with its reason."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ..guard import SubjectFailure
from .subject import Emission

ROW_MASS_TOLERANCE = 0.01
"""How far a target row's total mass may be from 1: rounding in a float32 (or bf16) softmax is
far below it; logits or unnormalised scores passed as probabilities are far above it."""


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor | np.ndarray):
        return f"{type(value).__name__} of {value.dtype}"
    return type(value).__name__


def _integer_dtype(values: torch.Tensor | np.ndarray) -> bool:
    if isinstance(values, np.ndarray):
        return values.dtype.kind in ("i", "u")
    dtype = values.dtype
    return not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)


def _integer(value: Any, where: str) -> int:
    if isinstance(value, bool | np.bool_):
        raise SubjectFailure("generate", f"{where} is a bool ({value}), not an integer id")
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, torch.Tensor) and value.dim() == 0 and _integer_dtype(value):
        return int(value.item())
    raise SubjectFailure("generate", f"{where} is {_kind(value)} {value!r}, not an integer id")


def token_ids(out: Any, run: int) -> tuple[int, ...]:
    """The ids of one run, from a sequence of integers, an integer array or tensor of shape [K]
    or [1, K]."""
    where = f"run {run}"
    if isinstance(out, torch.Tensor | np.ndarray):
        if not _integer_dtype(out):
            raise SubjectFailure("generate", f"{where} returned ids of {out.dtype}, not integers")
        if out.ndim > 2 or (out.ndim == 2 and out.shape[0] != 1):
            raise SubjectFailure(
                "generate", f"{where} returned shape {tuple(out.shape)}; expected [K] or [1, K]"
            )
        return tuple(int(t) for t in out.reshape(-1).tolist())
    if isinstance(out, str) or not isinstance(out, Sequence):
        raise SubjectFailure(
            "generate", f"{where} returned {_kind(out)}, not a sequence of token ids"
        )
    return tuple(_integer(t, f"{where}, token {k}") for k, t in enumerate(out))


def emission_of(out: Any, run: int) -> Emission:
    """One run's :class:`Emission` from what ``generate`` returned, every field checked."""
    if not isinstance(out, Emission):
        return Emission(token_ids(out, run))
    rounds = out.rounds
    if not isinstance(rounds, Sequence) or not all(
        isinstance(r, Sequence) and len(r) == 2 for r in rounds
    ):
        raise SubjectFailure(
            "generate", f"run {run}: rounds {rounds!r} are not (draft length, accepted) pairs"
        )
    pairs = tuple(
        (_integer(d, f"run {run}, round {k}"), _integer(a, f"run {run}, round {k}"))
        for k, (d, a) in enumerate(rounds)
    )
    if any(d < 0 or a < 0 for d, a in pairs):
        raise SubjectFailure("generate", f"run {run}: a round has a negative count")
    return Emission(token_ids(out.tokens, run), pairs)


def emissions_of(out: Any, first_run: int, expected: int) -> list[Emission]:
    """The runs of one ``generate_many`` call."""
    if isinstance(out, str) or not isinstance(out, Sequence):
        raise SubjectFailure("generate", f"generate_many returned {_kind(out)}, not a list of runs")
    if len(out) != expected:
        raise SubjectFailure(
            "generate", f"generate_many returned {len(out)} runs for {expected} (from run "
            f"{first_run})"
        )  # fmt: skip
    return [emission_of(o, first_run + i) for i, o in enumerate(out)]


def checked_rows(out: Any, sequences: torch.Tensor, vocab: int | None) -> torch.Tensor:
    """``target_probs``' answer for ``sequences`` [B, L], checked to be [B, L, V] probability
    rows (``vocab``: the V every answer must have, once known)."""
    if not isinstance(out, torch.Tensor):
        raise SubjectFailure("target_probs", f"returned {_kind(out)}, not a torch.Tensor")
    if not out.dtype.is_floating_point:
        raise SubjectFailure("target_probs", f"returned {out.dtype} rows, not probabilities")
    batch = tuple(sequences.shape)
    if out.dim() != 3 or tuple(out.shape[:2]) != batch:
        raise SubjectFailure(
            "target_probs",
            f"returned shape {tuple(out.shape)} for sequences {batch}; expected [B, L, V]",
        )
    if vocab is not None and out.shape[-1] != vocab:
        raise SubjectFailure(
            "target_probs", f"the vocabulary changed from {vocab} to {out.shape[-1]} between calls"
        )
    rows = out.detach()
    # A NaN or an infinity anywhere in a row makes its sum non-finite: checking the sums checks
    # every entry. Summed in float32 (float64 rows in float64), with no copy of [B, L, V] at
    # float32 or wider; the 0.01 tolerance is far above a float32 sum's rounding.
    wide = torch.float64 if rows.dtype == torch.float64 else torch.float32
    sums = rows.sum(-1, dtype=wide).to(torch.float64).cpu()
    if not bool(torch.isfinite(sums).all()) or bool(rows.amin() < 0):
        raise SubjectFailure("target_probs", "returned a row with a negative or non-finite mass")
    worst = int(torch.argmax((sums - 1).abs()))
    total = float(sums.reshape(-1)[worst])
    if abs(total - 1) > ROW_MASS_TOLERANCE:
        raise SubjectFailure(
            "target_probs",
            f"a row sums to {total:.6g}, not 1 within {ROW_MASS_TOLERANCE:g}: not a law "
            "(logits passed as probabilities?)",
        )
    return out
