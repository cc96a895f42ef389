"""Drafting mutants as reference rules: tokens drawn from one law, another reported as q."""

from __future__ import annotations

from fractions import Fraction

from specproof.reference import ChainRule, DraftBlock, Drafter, Tokens
from specproof.reference.choices import Chooser
from specproof.subjects.mutants.rules import normalised


def drawn_law(bug: str, q: tuple[Fraction, ...]) -> tuple[Fraction, ...]:
    if bug == "draft-greedy-report-softmax":
        best = max(range(len(q)), key=lambda v: (q[v], -v))
        return tuple(Fraction(int(v == best)) for v in range(len(q)))
    if bug == "draft-top-k-report-raw":
        kept = sorted(range(len(q)), key=lambda v: (-q[v], v))[:2]
        return normalised([q[v] if v in kept else Fraction(0) for v in range(len(q))])
    return q


class DraftMutantChain(ChainRule):
    """The correct chain rule behind a drafter that draws from ``drawn_law`` and reports q."""

    def __init__(self, bug: str) -> None:
        self.bug = bug
        self.name = f"chain[{bug}]"

    def draft(self, context: Tokens, drafter: Drafter, gamma: int, chooser: Chooser) -> DraftBlock:
        tokens: list[int] = []
        proposals = []
        confidences = []
        for k in range(1, gamma + 1):
            q = drafter.proposal(context, tuple(tokens))
            proposals.append(q)
            confidences.append(drafter.confidence(context, tuple(tokens)))
            tokens.append(chooser.categorical(drawn_law(self.bug, q), "draft", k))
        return DraftBlock(tuple(tokens), tuple(proposals), tuple(confidences))
