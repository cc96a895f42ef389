"""Verification rules. Each drafts a block, then verifies the admitted prefix of it.

Every rule returns the tokens it emits in one round (at least one). Randomness goes through a
:class:`~specproof.reference.choices.Chooser` only, so the same code samples and enumerates.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Protocol

from .blocks import DraftBlock
from .choices import Chooser, sibling_index
from .distributions import Dist, Tokens, argmax, normalise, residual, top_tokens
from .models import Drafter, TargetModel


class VerificationRule(Protocol):
    name: str
    lossless: bool
    """True when the rule is meant to reproduce the target law (a claim the tests check)."""

    def draft(self, context: Tokens, drafter: Drafter, gamma: int, chooser: Chooser) -> DraftBlock:
        """Draft gamma tokens and their confidences; the scheduler sees the result."""
        ...

    def verify(
        self,
        context: Tokens,
        block: DraftBlock,
        target: TargetModel,
        drafter: Drafter,
        chooser: Chooser,
    ) -> Tokens:
        """Verify the admitted block (already cut to its scheduled length)."""
        ...

    def law_target(self, target: TargetModel) -> TargetModel:
        """The target whose sampling law this rule must reproduce."""
        ...


def sample_block(context: Tokens, drafter: Drafter, gamma: int, chooser: Chooser) -> DraftBlock:
    """Draft x_1..x_gamma; q_k and c_k see only x_<k (semi-autoregressive drafting)."""
    tokens: list[int] = []
    proposals: list[Dist] = []
    confidences: list[Fraction] = []
    for k in range(1, gamma + 1):
        drafted = tuple(tokens)
        q = drafter.proposal(context, drafted)
        confidences.append(drafter.confidence(context, drafted))
        proposals.append(q)
        tokens.append(chooser.categorical(q, "draft", k))
    return DraftBlock(tuple(tokens), tuple(proposals), tuple(confidences))


class SampledDraftRule:
    """Shared by rules whose drafts are sampled from the drafter and whose law is the target's."""

    name = "sampled-draft"
    lossless = True

    def draft(self, context: Tokens, drafter: Drafter, gamma: int, chooser: Chooser) -> DraftBlock:
        return sample_block(context, drafter, gamma, chooser)

    def law_target(self, target: TargetModel) -> TargetModel:
        return target


class ChainRule(SampledDraftRule):
    """Chain speculative sampling: accept x_k with prob min(1, p_k(x_k)/q_k(x_k)); at the first
    rejection emit a token from norm(max(0, p_k - q_k)); if all pass, a bonus token from p."""

    name = "chain"
    lossless = True

    def verify(
        self,
        context: Tokens,
        block: DraftBlock,
        target: TargetModel,
        drafter: Drafter,
        chooser: Chooser,
    ) -> Tokens:
        emitted: list[int] = []
        for k, (x, q) in enumerate(zip(block.tokens, block.proposals, strict=True), start=1):
            p = target.dist(context + tuple(emitted))
            if chooser.bernoulli(min(Fraction(1), p[x] / q[x]), "accept", k):
                emitted.append(x)
                continue
            correction = residual(p, q)
            assert correction is not None, "a rejection has probability 0 when p == q"
            return (*emitted, chooser.categorical(correction, "residual", k))
        p = target.dist(context + tuple(emitted))
        return (*emitted, chooser.categorical(p, "bonus", len(emitted) + 1))


class GreedyRule(SampledDraftRule):
    """Temperature 0: keep drafts while they equal the target argmax; then emit the argmax."""

    name = "greedy"
    lossless = True

    def verify(
        self,
        context: Tokens,
        block: DraftBlock,
        target: TargetModel,
        drafter: Drafter,
        chooser: Chooser,
    ) -> Tokens:
        emitted: list[int] = []
        for x in block.tokens:
            best = argmax(target.dist(context + tuple(emitted)))
            if x != best:
                return (*emitted, best)
            emitted.append(x)
        return (*emitted, argmax(target.dist(context + tuple(emitted))))

    def law_target(self, target: TargetModel) -> TargetModel:
        return target.greedy()


class TreeRule(SampledDraftRule):
    """Target-only tree verification (SGLang / EAGLE semantics).

    The tree is deterministic: every node expands the ``width`` most likely draft tokens, down
    to the scheduled depth. At a node one coin u walks the children in order and accepts the
    first child c_i with u < p(c_1) + ... + p(c_i) (one-hot proposals: the same law as trying
    each child with its mass renormalised over the children not yet rejected). If all children
    fail, the round ends with a token from p with the children removed. The scheduler sees the
    top-1 path's confidences.
    """

    lossless = True

    def __init__(self, width: int = 2) -> None:
        if width < 1:
            raise ValueError(f"tree width must be >= 1, got {width}")
        self.width = width
        self.name = f"tree(width={width})"

    def draft(self, context: Tokens, drafter: Drafter, gamma: int, chooser: Chooser) -> DraftBlock:
        tokens: list[int] = []
        proposals: list[Dist] = []
        confidences: list[Fraction] = []
        for _ in range(gamma):
            q = drafter.proposal(context, tuple(tokens))
            confidences.append(drafter.confidence(context, tuple(tokens)))
            proposals.append(q)
            tokens.append(top_tokens(q, 1)[0])
        return DraftBlock(tuple(tokens), tuple(proposals), tuple(confidences))

    def verify(
        self,
        context: Tokens,
        block: DraftBlock,
        target: TargetModel,
        drafter: Drafter,
        chooser: Chooser,
    ) -> Tokens:
        path: list[int] = []
        for depth in range(1, len(block.tokens) + 1):
            row = target.dist(context + tuple(path))
            children = top_tokens(drafter.proposal(context, tuple(path)), self.width)
            masses = [row[child] for child in children]
            none_accepted = 1 - sum(masses, Fraction(0))
            choice = chooser.categorical((*masses, none_accepted), "accept", depth)
            if choice < len(children):
                path.append(children[choice])
                continue
            rest = normalise([Fraction(0) if v in children else m for v, m in enumerate(row)])
            assert rest is not None, "no child is accepted only when mass remains outside them"
            return (*path, chooser.categorical(rest, "residual", depth))
        bonus = target.dist(context + tuple(path))
        return (*path, chooser.categorical(bonus, "bonus", len(path) + 1))


class SpecInferRule(SampledDraftRule):
    """Multi-draft verification with ``width`` i.i.d. draft chains (SpecInfer).

    The scheduled block is chain 0; the other chains are drafted independently to the same
    length. At each depth, the surviving chains' tokens are tried in order with
    min(1, p(x)/q(x)); after each rejection p <- norm(max(0, p - q)). An accepted token keeps
    every chain that carries it there. If all fail, the round ends with a token from p.
    """

    lossless = True

    def __init__(self, width: int = 2) -> None:
        if width < 1:
            raise ValueError(f"number of draft chains must be >= 1, got {width}")
        self.width = width
        self.name = f"specinfer(chains={width})"

    def verify(
        self,
        context: Tokens,
        block: DraftBlock,
        target: TargetModel,
        drafter: Drafter,
        chooser: Chooser,
    ) -> Tokens:
        length = len(block.tokens)
        chains = [block.tokens] + [
            self._draft_sibling(context, drafter, length, chain, chooser)
            for chain in range(1, self.width)
        ]
        path: list[int] = []
        for depth in range(1, length + 1):
            p: Dist | None = target.dist(context + tuple(path))
            q = drafter.proposal(context, tuple(path))
            accepted = None
            for sibling, x in enumerate(chain[depth - 1] for chain in chains):
                assert p is not None, "a rejection has probability 0 once p == q"
                coin = sibling_index(depth, sibling)
                if chooser.bernoulli(min(Fraction(1), p[x] / q[x]), "accept", coin):
                    accepted = x
                    break
                p = residual(p, q)
            if accepted is None:
                assert p is not None
                return (*path, chooser.categorical(p, "residual", depth))
            path.append(accepted)
            chains = [chain for chain in chains if chain[depth - 1] == accepted]
        bonus = target.dist(context + tuple(path))
        return (*path, chooser.categorical(bonus, "bonus", length + 1))

    @staticmethod
    def _draft_sibling(
        context: Tokens, drafter: Drafter, length: int, chain: int, chooser: Chooser
    ) -> Tokens:
        tokens: list[int] = []
        for k in range(1, length + 1):
            q = drafter.proposal(context, tuple(tokens))
            tokens.append(chooser.categorical(q, "draft", sibling_index(k, chain)))
        return tuple(tokens)


class BlockRule(SampledDraftRule):
    """Block verification (Sun et al., ICLR 2025).

    p_0 = 1; p_i = min(1, p_{i-1} P(x_i)/Q(x_i)); rho_i = sum_x max(p_i P(x|x_<=i) - Q(x|x_<=i), 0);
    h_i = rho_i / (rho_i + 1 - p_i) for i < l (1 when that is 0/0), h_l = p_l. With independent
    eta_i ~ U(0, 1), keep x_<=tau for the largest tau with eta_tau <= h_tau, then emit a token from
    norm(max(p_tau P(.|x_<=tau) - Q(.|x_<=tau), 0)), or from P(.|x_<=l) when tau = l.
    ``token_wise_residual=True`` is the known-wrong variant that uses norm(max(P - Q, 0)).
    """

    def __init__(self, token_wise_residual: bool = False) -> None:
        self.token_wise_residual = token_wise_residual
        self.lossless = not token_wise_residual
        self.name = "block(token-wise residual)" if token_wise_residual else "block"

    def _weighted_residual(self, weight: Fraction, big: Dist, small: Dist) -> list[Fraction]:
        if self.token_wise_residual:
            weight = Fraction(1)
        return [max(weight * b - s, Fraction(0)) for b, s in zip(big, small, strict=True)]

    def verify(
        self,
        context: Tokens,
        block: DraftBlock,
        target: TargetModel,
        drafter: Drafter,
        chooser: Chooser,
    ) -> Tokens:
        length = len(block.tokens)
        weights = [Fraction(1)]  # p_0 .. p_l
        tau = 0
        for i in range(1, length + 1):
            x, q = block.tokens[i - 1], block.proposals[i - 1]
            p = target.dist(context + block.tokens[: i - 1])
            weights.append(min(Fraction(1), weights[-1] * p[x] / q[x]))
            if i < length:
                rho = sum(
                    self._weighted_residual(
                        weights[i],
                        target.dist(context + block.tokens[:i]),
                        drafter.proposal(context, block.tokens[:i]),
                    ),
                    Fraction(0),
                )
                denominator = rho + 1 - weights[i]
                h = rho / denominator if denominator else Fraction(1)
            else:
                h = weights[i]
            if chooser.bernoulli(h, "accept", i):
                tau = i
        kept = block.tokens[:tau]
        big = target.dist(context + kept)
        if tau == length:
            return (*kept, chooser.categorical(big, "bonus", tau + 1))
        small = drafter.proposal(context, kept)
        correction = normalise(self._weighted_residual(weights[tau], big, small))
        assert correction is not None, "tau < l has probability 0 when the residual is empty"
        return (*kept, chooser.categorical(correction, "residual", tau + 1))
