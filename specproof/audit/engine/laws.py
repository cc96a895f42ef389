"""Exact laws from the target's teacher-forced pass: the rows behind each emitted token, and
the law of the first N tokens when V^N is small."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .subject import TargetProbs

CHUNK = 256
"""Sequences per teacher-forced call."""


def probability_rows(rows: torch.Tensor) -> np.ndarray:
    """float64 rows, renormalised: the float32 law the target computed, as exact as it gets."""
    out = rows.detach().to(torch.float64).cpu().numpy()
    if not np.isfinite(out).all() or (out < 0).any():
        raise ValueError("target_probs returned a row with a negative or non-finite mass")
    sums = out.sum(axis=-1, keepdims=True)
    if (sums <= 0).any():
        raise ValueError("target_probs returned a row of zeros")
    return np.asarray(out / sums)


def next_token_rows(
    target_probs: TargetProbs, prompt: Sequence[int], continuations: Sequence[Sequence[int]]
) -> np.ndarray:
    """[R, K + 1, V]: the target's law of the token after prompt + continuation[:k], for k =
    0..K, where K is the longest continuation (shorter ones are padded; their rows past the
    end mean nothing)."""
    width = max((len(c) for c in continuations), default=0)
    out: list[np.ndarray] = []
    for start in range(0, len(continuations), CHUNK):
        chunk = continuations[start : start + CHUNK]
        batch = torch.tensor(
            [[*prompt, *c, *([0] * (width - len(c)))] for c in chunk], dtype=torch.long
        )
        rows = target_probs(batch)
        if rows.dim() != 3 or rows.shape[:2] != batch.shape:
            raise ValueError(
                f"target_probs returned shape {tuple(rows.shape)} for sequences "
                f"{tuple(batch.shape)}; expected [B, L, V]"
            )
        out.append(probability_rows(rows[:, len(prompt) - 1 :]))
    return np.concatenate(out) if out else np.zeros((0, width + 1, 0))


def first_tokens_law(
    target_probs: TargetProbs, prompt: Sequence[int], tokens: int, eos: frozenset[int]
) -> dict[tuple[int, ...], float]:
    """The target's law of its first ``tokens`` emitted tokens (a tuple shorter than that ends
    with EOS), from one teacher-forced pass per prefix length."""
    law: dict[tuple[int, ...], float] = {}
    open_prefixes: dict[tuple[int, ...], float] = {(): 1.0}
    for depth in range(tokens):
        prefixes = list(open_prefixes)
        if not prefixes:
            break
        rows = next_token_rows(target_probs, prompt, prefixes)[:, depth]
        following: dict[tuple[int, ...], float] = {}
        for prefix, row in zip(prefixes, rows, strict=True):
            for token in np.flatnonzero(row > 0):
                path = (*prefix, int(token))
                mass = open_prefixes[prefix] * float(row[token])
                ends = int(token) in eos or depth == tokens - 1
                (law if ends else following)[path] = mass
        open_prefixes = following
    return law
