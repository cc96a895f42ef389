"""The DSpark release's threshold, beside the paper's (``StaticThreshold`` of the reference,
on the product a_k = c_1 ... c_k): verify the drafts before the first position whose own
confidence c_k is below the threshold."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction


class PerPositionThreshold:
    causal = True

    def __init__(self, threshold: Fraction) -> None:
        self.threshold = Fraction(threshold)
        self.name = f"per-position threshold({self.threshold})"

    def __call__(
        self, confidences: Sequence[Sequence[float]], sps: Callable[[int], float] | None
    ) -> list[int]:
        lengths = []
        for row in confidences:
            length = 0
            while length < len(row) and row[length] >= self.threshold:
                length += 1
            lengths.append(length)
        return lengths
