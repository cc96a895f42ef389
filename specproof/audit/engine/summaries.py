"""What the rows read of the target's law behind each emitted token, taken chunk by chunk.

The support, greedy and PIT rows need four numbers per run and position, not the row of V
masses behind them: the emitted token's probability, the cumulative mass below it, the argmax
and its probability. :func:`token_summaries` makes the same teacher-forced calls as before (one
group per distinct prompt, :data:`.laws.CHUNK` sequences per call) and keeps only these, so the
audit holds O(runs x tokens) numbers plus one call's rows, whatever V is. Each number comes
from the same float64 row by the same arithmetic as a [runs, tokens + 1, V] array would give
(the cumulative mass is ``np.cumsum`` of the row up to the token, minus its mass), so the
rows' verdicts do not depend on how the calls were chunked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .laws import next_token_chunks
from .subject import Emission


@dataclass(frozen=True)
class TokenSummaries:
    """[runs, width] arrays, width the longest run: entry [r, k] is about run r's token k
    (entries past a run's end are 0 and mean nothing)."""

    mass: np.ndarray
    """The target's probability of the emitted token."""
    below: np.ndarray
    """The target's mass below it: cumsum(row)[token] - mass."""
    best: np.ndarray
    """The target's argmax (the first, at a tie)."""
    best_mass: np.ndarray
    """The argmax's probability."""

    @classmethod
    def zeros(cls, runs: int, width: int) -> TokenSummaries:
        def floats() -> np.ndarray:
            return np.zeros((runs, width), dtype=np.float64)

        return cls(floats(), floats(), np.zeros((runs, width), dtype=np.int64), floats())

    def fill(self, index: Sequence[int], runs: Sequence[Emission], rows: np.ndarray) -> None:
        """Entries of runs ``index`` (the runs themselves in ``runs``) from their rows [C, >= K +
        1, V], rows[c, k] the law of run c's token k."""
        best = np.argmax(rows[:, : self.mass.shape[1]], axis=-1)
        for chunk_row, (at, run) in enumerate(zip(index, runs, strict=True)):
            for position, token in enumerate(run.tokens):
                row = rows[chunk_row, position]
                mass = row[token]
                self.mass[at, position] = mass
                # The running sum up to the token: the same additions, in the same order, as
                # np.cumsum of the whole row read at the token.
                self.below[at, position] = np.cumsum(row[: token + 1])[-1] - mass
                top = best[chunk_row, position]
                self.best[at, position] = top
                self.best_mass[at, position] = rows[chunk_row, position, top]


def summarise(runs: Sequence[Emission], rows: np.ndarray) -> TokenSummaries:
    """The summaries of runs whose rows are all at hand: ``rows[r, k]`` the law of run r's
    token k."""
    width = max((len(r.tokens) for r in runs), default=0)
    out = TokenSummaries.zeros(len(runs), width)
    out.fill(range(len(runs)), runs, rows)
    return out


def token_summaries(
    probs: Callable[[torch.Tensor], torch.Tensor],
    prompts: list[tuple[int, ...]],
    emitted: list[Emission],
    vocab: int,
) -> TokenSummaries:
    """The summaries of every run, from teacher-forced calls on each distinct prompt's runs,
    one chunk of rows held at a time."""
    width = max((len(r.tokens) for r in emitted), default=0)
    out = TokenSummaries.zeros(len(emitted), width)
    for prompt in dict.fromkeys(prompts):
        index = [i for i, p in enumerate(prompts) if p == prompt]
        continuations = [emitted[i].tokens for i in index]
        for start, rows in next_token_chunks(probs, prompt, continuations, vocab):
            at = index[start : start + len(rows)]
            out.fill(at, [emitted[i] for i in at], rows)
    return out
