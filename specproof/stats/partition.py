"""Hash partitions: test the law of a few bins when the outcome space is too large.

A partition is a fixed function from outcomes to ``bins`` cells, so the law of the bin is the
exact push-forward of the outcome law: any sampler that matches the exact law also matches the
binned law, and the binned TV is a lower bound on the full TV. The hash is stable across
processes and platforms (no Python ``hash`` randomisation).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

_MASK64 = (1 << 64) - 1


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """The SplitMix64 finaliser, vectorised over uint64 (wrapping arithmetic)."""
    z = values.astype(np.uint64)
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@dataclass(frozen=True)
class HashPartition:
    """Outcomes -> ``bins`` cells by a salted, stable hash."""

    bins: int
    salt: int = 0

    def __post_init__(self) -> None:
        if self.bins < 1:
            raise ValueError(f"a partition needs at least one bin, got {self.bins}")

    def cell(self, outcome: Hashable) -> int:
        """The bin of any outcome whose ``repr`` is stable (ints, tuples of ints, strings)."""
        digest = hashlib.blake2b(
            repr(outcome).encode(), digest_size=8, key=self.salt.to_bytes(8, "little")
        ).digest()
        return int.from_bytes(digest, "little") % self.bins

    def tokens(self, ids: np.ndarray) -> np.ndarray:
        """The bin of each token id, vectorised (for vocabulary-sized arrays)."""
        salted = np.asarray(ids, dtype=np.uint64) ^ np.uint64(self.salt & _MASK64)
        return (_splitmix64(salted) % np.uint64(self.bins)).astype(np.int64)

    def token_masses(self, probs: np.ndarray) -> np.ndarray:
        """Bin masses of distributions over the vocabulary (last axis), in float64."""
        probs = np.asarray(probs, dtype=np.float64)
        bins = self.tokens(np.arange(probs.shape[-1]))
        flat = probs.reshape(-1, probs.shape[-1])
        out = np.stack([flat[:, bins == b].sum(axis=1) for b in range(self.bins)], axis=1)
        return out.reshape(*probs.shape[:-1], self.bins)

    def law(self, law: Mapping[Any, Fraction | float]) -> dict[Hashable, Fraction | float]:
        """The exact law of the bin (sums kept exact for ``Fraction`` masses)."""
        out: dict[Hashable, Fraction | float] = {}
        for outcome, mass in law.items():
            b = self.cell(outcome)
            out[b] = out.get(b, 0) + mass
        return out

    def counts(self, counts: Mapping[Any, int]) -> Counter[Hashable]:
        out: Counter[Hashable] = Counter()
        for outcome, count in counts.items():
            out[self.cell(outcome)] += count
        return out
