"""Exact laws from the target's teacher-forced pass: the rows behind each emitted token, and
the law of the first N tokens when V^N is small."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch

from .subject import TargetProbs

CHUNK = 256
"""Sequences per teacher-forced call, fewer where one call's rows would pass
:data:`MAX_CHUNK_BYTES` (a large vocabulary): :func:`chunk_size`."""
MAX_CHUNK_BYTES = 2 << 30
"""What one teacher-forced call may hold: the target's answer and the float64 rows taken from
it (:func:`sequence_bytes` per sequence)."""


def sequence_bytes(prompt_length: int, width: int, vocab: int) -> int:
    """Bytes one sequence of a teacher-forced call holds at its peak: the answer [L, V] (at
    most 8 bytes an entry), then the [width + 1, V] float64 rows and their renormalised copy."""
    return 8 * (prompt_length + width) * vocab + 16 * (width + 1) * vocab


def chunk_size(prompt_length: int, width: int, vocab: int | None) -> int:
    """Sequences per call: :data:`CHUNK`, or as many as fit :data:`MAX_CHUNK_BYTES` (at least
    one); ``vocab`` None (not known yet): :data:`CHUNK`."""
    if vocab is None:
        return CHUNK
    return max(1, min(CHUNK, MAX_CHUNK_BYTES // sequence_bytes(prompt_length, width, vocab)))


def probability_rows(rows: torch.Tensor) -> np.ndarray:
    """float64 rows, renormalised: the float32 law the target computed, as exact as it gets."""
    out = rows.detach().to(torch.float64).cpu().numpy()
    sums = out.sum(axis=-1, keepdims=True)
    # A NaN or an infinity in a row makes its sum non-finite (checked without a pass per entry).
    if not np.isfinite(sums).all() or out.min(initial=0.0) < 0:
        raise ValueError("target_probs returned a row with a negative or non-finite mass")
    if (sums <= 0).any():
        raise ValueError("target_probs returned a row of zeros")
    return np.asarray(out / sums)


def next_token_chunks(
    target_probs: TargetProbs,
    prompt: Sequence[int],
    continuations: Sequence[Sequence[int]],
    vocab: int | None = None,
) -> Iterator[tuple[int, np.ndarray]]:
    """(start, rows [C, K + 1, V]) for the continuations start..start + C - 1, one teacher-forced
    call each (:func:`next_token_rows`, a chunk at a time: nothing holds every row at once)."""
    width = max((len(c) for c in continuations), default=0)
    step = chunk_size(len(prompt), width, vocab)
    for start in range(0, len(continuations), step):
        chunk = continuations[start : start + step]
        batch = torch.tensor(
            [[*prompt, *c, *([0] * (width - len(c)))] for c in chunk], dtype=torch.long
        )
        rows = target_probs(batch)
        if rows.dim() != 3 or rows.shape[:2] != batch.shape:
            raise ValueError(
                f"target_probs returned shape {tuple(rows.shape)} for sequences "
                f"{tuple(batch.shape)}; expected [B, L, V]"
            )
        yield start, probability_rows(rows[:, len(prompt) - 1 :])


def next_token_rows(
    target_probs: TargetProbs, prompt: Sequence[int], continuations: Sequence[Sequence[int]]
) -> np.ndarray:
    """[R, K + 1, V]: the target's law of the token after prompt + continuation[:k], for k =
    0..K, where K is the longest continuation (shorter ones are padded; their rows past the
    end mean nothing)."""
    width = max((len(c) for c in continuations), default=0)
    out = [rows for _, rows in next_token_chunks(target_probs, prompt, continuations)]
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
