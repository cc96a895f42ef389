"""How far a lower-precision copy of the target moves its law: per position, the total
variation distance between the softmax (T = 1) of the two copies' logits over the same tokens,
and whether their argmaxes agree.

TV(p, q) = 0.5 * sum_x |p(x) - q(x)| is what a verifier loses: a drafter equal to one copy
is accepted by the other with probability 1 - TV at that position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..models.llama_target import LlamaTarget


@dataclass(frozen=True)
class LawGap:
    tv: list[float]
    """Per position."""
    argmax_agree: list[bool]
    top_probability: list[float]
    """The reference copy's top probability at each position (how sharp its law is)."""

    def summary(self) -> dict[str, float]:
        tv = np.array(self.tv)
        return {
            "positions": len(tv),
            "tv_mean": float(tv.mean()),
            "tv_median": float(np.median(tv)),
            "tv_p90": float(np.quantile(tv, 0.9)),
            "tv_p99": float(np.quantile(tv, 0.99)),
            "tv_max": float(tv.max()),
            "argmax_agreement": float(np.mean(self.argmax_agree)),
            "reference_top_probability_mean": float(np.mean(self.top_probability)),
        }


@torch.no_grad()
def law_gap(
    reference: LlamaTarget,
    other: LlamaTarget,
    sequences: Sequence[Sequence[int]],
    first_positions: Sequence[int],
) -> LawGap:
    """The gap at the positions ``first_positions[i] - 1 ..`` of sequence i (the laws of the
    tokens from ``first_positions[i]`` on), each sequence in its own forward pass."""
    tv: list[float] = []
    agree: list[bool] = []
    top: list[float] = []
    for sequence, first in zip(sequences, first_positions, strict=True):
        tokens = torch.tensor([list(sequence)])
        p = torch.softmax(reference(tokens).logits[0, first - 1 : -1].double(), dim=-1)
        q = torch.softmax(other(tokens).logits[0, first - 1 : -1].double(), dim=-1)
        tv += (0.5 * (p - q).abs().sum(-1)).tolist()
        agree += (p.argmax(-1) == q.argmax(-1)).tolist()
        top += p.max(-1).values.tolist()
    return LawGap(tv, agree, top)
