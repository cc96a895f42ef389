"""What the draft phase hands to the scheduler and the verifier."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .distributions import Dist, Tokens


@dataclass(frozen=True)
class DraftBlock:
    """gamma drafted tokens x_1..x_gamma for one request.

    ``proposals[k-1]`` is q_k (the law x_k was drawn from), ``confidences[k-1]`` is c_k, which
    was computed from the context and x_<k only.
    """

    tokens: Tokens
    proposals: tuple[Dist, ...]
    confidences: tuple[Fraction, ...]

    @property
    def draft_probs(self) -> tuple[Fraction, ...]:
        """q_k(x_k) for each drafted token."""
        return tuple(q[x] for q, x in zip(self.proposals, self.tokens, strict=True))

    @property
    def survival(self) -> tuple[Fraction, ...]:
        """Prefix survival a_k = c_1 * ... * c_k."""
        out: list[Fraction] = []
        running = Fraction(1)
        for c in self.confidences:
            running *= c
            out.append(running)
        return tuple(out)

    def truncated(self, length: int) -> DraftBlock:
        return DraftBlock(self.tokens[:length], self.proposals[:length], self.confidences[:length])
