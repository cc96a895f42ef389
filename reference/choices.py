"""The one interface through which every algorithm here makes a random choice.

Each choice carries an :class:`Address` that names it (round, request, phase, index). A sampler
draws one uniform per address; the exact enumerator ignores addresses and branches over every
outcome with its exact weight. The same algorithm code therefore yields samples and exact laws.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol, TypeVar

T = TypeVar("T", bound=Hashable)
Law = dict[T, Fraction]
"""An exact law: outcome -> probability; probabilities are positive and sum to 1."""


SIBLING_STRIDE = 1 << 16
"""Choices of sibling s (an extra draft chain, or the s-th candidate tried at one position)
use index = position + s * SIBLING_STRIDE, so no two choices of a round share an address."""


def sibling_index(position: int, sibling: int) -> int:
    return position + sibling * SIBLING_STRIDE


@dataclass(frozen=True)
class Address:
    """Names one random choice so that a counter-based generator can replay it.

    ``phase`` is one of "draft", "accept", "residual", "bonus"; ``index`` is the 1-based block
    position (see :func:`sibling_index` for multi-draft rules).
    """

    round: int
    request: int
    phase: str
    index: int


class Chooser(Protocol):
    def categorical(self, dist: Sequence[Fraction], phase: str, index: int) -> int:
        """Draw a token from ``dist``."""
        ...

    def bernoulli(self, p: Fraction, phase: str, index: int) -> bool:
        """True with probability ``p``."""
        ...


# Exact enumeration -------------------------------------------------------------------------


class _Replay:
    """Replays a forced path of choices, then takes the first option at each new choice."""

    def __init__(self, forced: tuple[int, ...]) -> None:
        self.forced = forced
        self.path: list[int] = []
        self.weight = Fraction(1)
        self.alternatives: list[tuple[int, ...]] = []

    def _choose(self, options: list[tuple[int, Fraction]]) -> int:
        depth = len(self.path)
        if depth < len(self.forced):
            option = self.forced[depth]
            weight = dict(options)[option]
        else:
            (option, weight), *others = options
            self.alternatives.extend((*self.path, alternative) for alternative, _ in others)
        self.path.append(option)
        self.weight *= weight
        return option

    def categorical(self, dist: Sequence[Fraction], phase: str, index: int) -> int:
        return self._choose([(v, m) for v, m in enumerate(dist) if m > 0])

    def bernoulli(self, p: Fraction, phase: str, index: int) -> bool:
        return bool(self._choose([(o, w) for o, w in ((1, p), (0, 1 - p)) if w > 0]))


def law_of(program: Callable[[Chooser], T]) -> Law[T]:
    """The exact law of ``program``'s return value over all of its random choices.

    Depth-first over the tree of choices: each run replays a forced path, records the
    alternatives it passed, and adds its exact weight to the outcome it returned.
    """
    law: dict[T, Fraction] = {}
    pending: list[tuple[int, ...]] = [()]
    while pending:
        replay = _Replay(pending.pop())
        outcome = program(replay)
        law[outcome] = law.get(outcome, Fraction(0)) + replay.weight
        pending.extend(replay.alternatives)
    return law


# Sampling -----------------------------------------------------------------------------------


class UniformSource(Protocol):
    def uniform(self, address: Address) -> Fraction:
        """An exact value in [0, 1) for the choice at ``address``."""
        ...


class SeededSource:
    """Python's Mersenne Twister, 53-bit uniforms drawn in program order (addresses unused)."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def uniform(self, address: Address) -> Fraction:
        return Fraction(self._rng.getrandbits(53), 1 << 53)


def inverse_cdf(dist: Sequence[Fraction], u: Fraction) -> int:
    """The smallest token v with u < P(X <= v); zero-mass tokens are never returned."""
    cumulative = Fraction(0)
    for v, mass in enumerate(dist):
        cumulative += mass
        if u < cumulative:
            return v
    raise ValueError(f"uniform {u} is not below the total mass {cumulative}")


@dataclass
class SamplingChooser:
    """Draws each choice from ``source`` at its address: bernoulli is u < p, categorical is the
    inverse CDF."""

    source: UniformSource
    round: int
    request: int

    def _u(self, phase: str, index: int) -> Fraction:
        return self.source.uniform(Address(self.round, self.request, phase, index))

    def categorical(self, dist: Sequence[Fraction], phase: str, index: int) -> int:
        return inverse_cdf(dist, self._u(phase, index))

    def bernoulli(self, p: Fraction, phase: str, index: int) -> bool:
        return self._u(phase, index) < p
