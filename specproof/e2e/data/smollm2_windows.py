"""Training windows for drafters of SmolLM2-135M-Instruct: half from the target's own
continuations (the self-distillation shards), half from real training text under its tokenizer.

Every drafter loss is against the target's full law at each position, recomputed from the
token ids, so a window's tokens are only contexts: the continuations give the contexts the
drafter meets when the target writes, real text widens them beyond the few shards there are.
Both come from the training splits only; the continuations are read by
:func:`specproof.e2e.training.self_distillation.distilled_streams`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .corpora import DOMAIN_WEIGHTS, Corpus, WindowSampler

SLICE_BYTES = 4096
"""Most bytes taken from one document (from a line start) before tokenising."""


def real_text_stream(
    corpus: Corpus, encode: Callable[[str], list[int]], tokens: int, seed: int
) -> np.ndarray:
    """The first ``tokens`` token ids of the corpus's training documents in a seeded order,
    each cut to at most :data:`SLICE_BYTES` from a seeded line start, tokenised and joined."""
    documents = corpus.documents("train")
    if not documents:
        raise ValueError(f"the {corpus.domain} corpus has no training documents")
    rng = np.random.default_rng(seed)
    ids: list[int] = []
    while len(ids) < tokens:
        for index in rng.permutation(len(documents)):
            data = documents[int(index)].data
            if len(data) > SLICE_BYTES:
                lines = [0, *(i + 1 for i in range(len(data) - SLICE_BYTES) if data[i] == 10)]
                start = int(lines[int(rng.integers(len(lines)))])
                data = data[start : start + SLICE_BYTES]
            ids += encode(data.decode("utf-8", "ignore"))
            if len(ids) >= tokens:
                break
    return np.array(ids[:tokens], dtype=np.int64)


class HalfAndHalf:
    """Each window from ``first`` or ``second`` with probability one half (a seeded coin)."""

    def __init__(self, first: WindowSampler, second: WindowSampler, seed: int) -> None:
        self.first = first
        self.second = second
        self.generator = torch.Generator().manual_seed(seed)

    def batch(self, batch_size: int, length: int) -> torch.Tensor:
        coins = torch.rand(batch_size, generator=self.generator) < 0.5
        rows = [
            (self.first if coin else self.second).batch(1, length)[0] for coin in coins.tolist()
        ]
        return torch.stack(rows)

    def generators(self) -> dict[str, torch.Generator]:
        return {
            "coin": self.generator,
            "distilled": self.first.generator,
            "text": self.second.generator,
        }


def smollm2_windows(
    distilled: dict[str, np.ndarray], text: dict[str, np.ndarray]
) -> Callable[[int], tuple[HalfAndHalf, dict[str, torch.Generator]]]:
    """A seed to the half-and-half sampler (domains mixed by the training weights) and its
    generators."""

    def make(seed: int) -> tuple[HalfAndHalf, dict[str, torch.Generator]]:
        weights = {d: DOMAIN_WEIGHTS[d] for d in distilled}
        sampler = HalfAndHalf(
            WindowSampler(distilled, weights, seed),
            WindowSampler(text, DOMAIN_WEIGHTS, seed + 7919),
            seed + 104729,
        )
        return sampler, sampler.generators()

    return make
