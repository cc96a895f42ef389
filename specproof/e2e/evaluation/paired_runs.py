"""Decoders measured side by side: every chunk of prompts is decoded by each decoder back to
back, in a fresh random order per chunk, so slow phases of a shared machine hit them alike and
speeds can be compared as ratios on the same chunk."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..decoding.rounds import DecodeResult
from .measurements import full_batch_rate, full_batch_tokens_per_second, tokens_per_second

Decoder = Callable[[list[list[int]], int], DecodeResult]
"""Decodes one chunk of prompts; the second argument is the chunk's index (for seeds)."""


def interleaved(
    decoders: Mapping[str, Decoder], chunks: Sequence[list[list[int]]], seed: int
) -> dict[str, list[DecodeResult]]:
    """Each decoder's results, one per chunk, with the decoders shuffled afresh per chunk."""
    if not decoders:
        raise ValueError("no decoders to compare")
    rng = np.random.default_rng(seed)
    names = list(decoders)
    results: dict[str, list[DecodeResult]] = {name: [] for name in names}
    for index, chunk in enumerate(chunks):
        for position in rng.permutation(len(names)):
            name = names[int(position)]
            results[name].append(decoders[name](chunk, index))
    return results


def overall_rate(result: DecodeResult) -> float:
    """Tokens/s over the whole decode (prefill excluded)."""
    return result.tokens_per_second


def speed_ratios(
    results: Sequence[DecodeResult],
    baseline: Sequence[DecodeResult],
    rate: Callable[[DecodeResult], float] = overall_rate,
) -> list[float]:
    """``rate`` (tokens/s by default) relative to ``baseline`` on the same chunk, per chunk."""
    if len(results) != len(baseline) or not results:
        raise ValueError("need one result per chunk for both decoders")
    return [rate(r) / rate(b) for r, b in zip(results, baseline, strict=True)]


def speed_entry(
    results: Sequence[DecodeResult], baseline: Sequence[DecodeResult]
) -> dict[str, Any]:
    """Tokens/s and the speed relative to ``baseline`` (per chunk and the median over chunks),
    over the whole decode and over full-batch rounds."""
    ratios = speed_ratios(results, baseline)
    full_batch = speed_ratios(results, baseline, full_batch_rate)
    return {
        "tokens_per_second": tokens_per_second(results),
        "speed_vs_target": float(np.median(ratios)),
        "speed_vs_target_by_chunk": ratios,
        "full_batch_tokens_per_second": full_batch_tokens_per_second(results),
        "full_batch_speed_vs_target": float(np.median(full_batch)),
        "full_batch_speed_vs_target_by_chunk": full_batch,
    }
