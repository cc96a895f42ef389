"""The mutants as reference verification rules, in exact arithmetic: each ``verify`` is the
reference's ``ChainRule`` (or ``GreedyRule``) with the same bug as the torch mutant, so the
reference's ``round_law`` gives the mutant's exact law. Float effects are modelled only where
they are the bug (the precision of the uniform, q rounded to bf16), exactly: a float32 uniform
is k / 2^24, k uniform in 0..2^24 - 1.
"""

from __future__ import annotations

import bisect
import math
from fractions import Fraction
from functools import cache

import torch

from specproof.reference import ChainRule, DraftBlock, Drafter, GreedyRule, TargetModel, Tokens
from specproof.reference.choices import Chooser

from ..flagged import THRESHOLD_EPS, TINY_EPS, TOP_K

Dist = tuple[Fraction, ...]
ONE = Fraction(1)
ZERO = Fraction(0)
FLOAT32_STEPS = 2**24


def normalised(weights: list[Fraction]) -> Dist:
    """Weights scaled to sum 1; an all-zero vector becomes a point mass on token 0 (what the
    torch verifier's inverse CDF returns for an empty row)."""
    total = sum(weights, ZERO)
    if total == 0:
        return tuple(ONE if i == 0 else ZERO for i in range(len(weights)))
    return tuple(w / total for w in weights)


def ratio(p: Fraction, q: Fraction) -> Fraction:
    """min(1, p / q); a zero q accepts whenever p > 0 (u * 0 < p)."""
    if q == 0:
        return ONE if p > 0 else ZERO
    return min(ONE, p / q)


@cache
def bf16_uniform_values() -> tuple[list[Fraction], list[int]]:
    """The law of a float32 uniform rounded to bfloat16: sorted values and their counts."""
    u = (torch.arange(FLOAT32_STEPS, dtype=torch.float64) / FLOAT32_STEPS).to(torch.float32)
    values, counts = torch.unique(u.to(torch.bfloat16).to(torch.float64), return_counts=True)
    return [Fraction(float(v)) for v in values], [int(c) for c in counts]


@cache
def _bf16_cumulative() -> list[int]:
    out, total = [], 0
    for c in bf16_uniform_values()[1]:
        total += c
        out.append(total)
    return out


def accept_probability(bug: str | None, p: Fraction, q: Fraction) -> Fraction:
    """P(accept) of a drafted token with target mass p and (as the verifier reads it) q."""
    if bug == "ratio-swapped":
        return ratio(q, p)
    if bug == "threshold-eps":
        return min(ONE, ratio(p, q) + Fraction(THRESHOLD_EPS)) if q else ratio(p, q)
    if bug == "threshold-tiny-eps":
        return min(ONE, ratio(p, q) + Fraction(TINY_EPS)) if q else ratio(p, q)
    if bug == "no-uniform":
        return ONE if q <= p else ZERO
    if q == 0:
        return ONE if p > 0 else ZERO
    if bug == "uniform-float32-le":  # #{k : k q / 2^24 <= p}
        return Fraction(min(FLOAT32_STEPS, math.floor(p * FLOAT32_STEPS / q) + 1), FLOAT32_STEPS)
    if bug == "uniform-bf16":  # #{v : v q < p} over the rounded uniform's law
        values, _ = bf16_uniform_values()
        below = bisect.bisect_left(values, p / q)
        return Fraction(_bf16_cumulative()[below - 1] if below else 0, FLOAT32_STEPS)
    return ratio(p, q)


def bf16(dist: Dist) -> Dist:
    rounded = torch.tensor([float(v) for v in dist], dtype=torch.float64).to(torch.bfloat16)
    return tuple(Fraction(float(v)) for v in rounded.to(torch.float64))


def top_k(dist: Dist) -> Dist:
    kept = sorted(range(len(dist)), key=lambda v: (-dist[v], v))[:TOP_K]
    return normalised([dist[v] if v in kept else ZERO for v in range(len(dist))])


def residual(bug: str | None, p: Dist, q: Dist) -> Dist:
    """The law of the correction token after a rejection, as the mutant draws it."""
    clamped = [max(ZERO, a - b) for a, b in zip(p, q, strict=True)]
    if bug == "residual-from-p":
        return p
    if bug == "residual-abs":
        return normalised([abs(a - b) for a, b in zip(p, q, strict=True)])
    if bug == "residual-softmax-clamp":
        return normalised([Fraction(math.exp(float(c))) for c in clamped])
    if bug == "residual-unnormalised":  # u in [0, 1) past the cumulative mass lands on V - 1
        return (*tuple(clamped[:-1]), clamped[-1] + ONE - sum(clamped, ZERO))
    return normalised(clamped)


def interval_residual(r: Fraction, dist: Dist) -> Dist:
    """The inverse CDF of ``dist`` read at u uniform on [r, 1)."""
    out, low = [], ZERO
    for mass in dist:
        high = low + mass
        out.append(max(ZERO, min(high, ONE) - max(low, r)))
        low = high
    return normalised(out)


class MutantChain(ChainRule):
    """Chain verification with one bug, for random (temperature-1) rows."""

    def __init__(self, bug: str | None, ngram: bool = False) -> None:
        self.bug = bug
        self.ngram = ngram
        self.name = f"chain[{bug}]"

    def _q(self, q: Dist) -> Dist:
        if self.ngram and self.bug == "ngram-q-uniform":
            return tuple(Fraction(1, len(q)) for _ in q)
        if self.bug == "q-bf16":
            return bf16(q)
        if self.bug == "q-top-k":
            return top_k(q)
        return q

    def _p(self, p: Dist) -> Dist:
        return normalised([v * v for v in p]) if self.bug == "p-tempered" else p

    def verify(
        self,
        context: Tokens,
        block: DraftBlock,
        target: TargetModel,
        drafter: Drafter,
        chooser: Chooser,
    ) -> Tokens:
        bug, drafts = self.bug, block.tokens
        n = len(drafts)
        verified = max(n - 1, 0) if bug == "last-draft-skipped" else n

        def rows(k: int) -> tuple[Dist, Dist]:  # 0-based position k, after drafts[:k]
            return self._p(target.dist(context + drafts[:k])), self._q(block.proposals[k])

        ratios = [
            accept_probability(bug, rows(k)[0][drafts[k]], rows(k)[1][drafts[k]])
            for k in range(verified)
        ]
        if bug == "shared-uniform":  # one u: the first k with u >= r_k
            levels = [ONE]
            for r in ratios:
                levels.append(min(levels[-1], r))
            outcome = [levels[k] - levels[k + 1] for k in range(verified)] + [levels[-1]]
            accepted = chooser.categorical(outcome, "shared", 0)
        elif bug == "independent-acceptance":
            accepted = sum(chooser.bernoulli(r, "accept", k) for k, r in enumerate(ratios, 1))
        else:
            accepted = verified
            for k, r in enumerate(ratios):
                if not chooser.bernoulli(r, "accept", k + 1):
                    accepted = k
                    break
        emitted = drafts[:accepted]
        if accepted < verified:
            stop = min(accepted + 1, n - 1) if bug == "residual-wrong-position" else accepted
            p, q = rows(stop)
            if bug == "residual-reuses-uniform":
                correction = interval_residual(ratios[accepted], residual(None, p, q))
            else:
                correction = residual(bug, p, q)
            if (
                bug == "pq-fallback-draft"
                and sum(max(ZERO, a - b) for a, b in zip(p, q, strict=True)) == 0
            ):
                correction = tuple(ONE if v == drafts[stop] else ZERO for v in range(len(p)))
            if bug == "drop-correction":
                return self._pad(emitted, n)
            return self._pad((*emitted, chooser.categorical(correction, "residual", 0)), n)
        if bug == "zero-length-dropped" and n == 0:
            return self._pad((), n)
        bonus_context = context + drafts  # the given bonus follows every draft
        if bug == "bonus-wrong-row" and n > 0:
            bonus_context = context + drafts[:-1]
        bonus = chooser.categorical(target.dist(bonus_context), "bonus", 0)
        return self._pad((*emitted, bonus), n)

    def _pad(self, emitted: Tokens, n: int) -> Tokens:
        if self.bug == "padding-zero":
            return emitted + (0,) * (max(n, 1) + 1 - len(emitted))
        return emitted


class MutantGreedy(GreedyRule):
    """Greedy verification with one bug (ties to the highest id; or verified as random)."""

    def __init__(self, bug: str | None) -> None:
        self.bug = bug
        self.name = f"greedy[{bug}]"

    def verify(
        self,
        context: Tokens,
        block: DraftBlock,
        target: TargetModel,
        drafter: Drafter,
        chooser: Chooser,
    ) -> Tokens:
        if self.bug == "greedy-as-random":
            return _chain_with_greedy_bonus(context, block, target, chooser)
        if self.bug != "greedy-tie-last":
            out = super().verify(context, block, target, drafter, chooser)
            if self.bug == "zero-length-dropped" and not block.tokens:
                return ()
            if self.bug == "padding-zero":
                return out + (0,) * (max(len(block.tokens), 1) + 1 - len(out))
            return out

        def best(dist: Dist) -> int:
            top = max(dist)
            return max(v for v, m in enumerate(dist) if m == top)

        emitted: list[int] = []
        for x in block.tokens:
            choice = best(target.dist(context + tuple(emitted)))
            if x != choice:
                return (*emitted, choice)
            emitted.append(x)
        first_best = GreedyRule().verify(context, block, target, drafter, chooser)
        return (*emitted, first_best[-1])  # the given bonus is the argmax, ties to the lowest id


def _chain_with_greedy_bonus(
    context: Tokens, block: DraftBlock, target: TargetModel, chooser: Chooser
) -> Tokens:
    """Random-row verification of a greedy row: the engine's bonus token is still the argmax."""
    emitted: list[int] = []
    for k, (x, q) in enumerate(zip(block.tokens, block.proposals, strict=True), start=1):
        p = target.dist(context + tuple(emitted))
        if chooser.bernoulli(ratio(p[x], q[x]), "accept", k):
            emitted.append(x)
            continue
        return (*emitted, chooser.categorical(residual(None, p, q), "residual", k))
    p = target.dist(context + tuple(emitted))
    return (*emitted, max(range(len(p)), key=lambda v: (p[v], -v)))
